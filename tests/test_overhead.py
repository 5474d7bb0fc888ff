"""The engine's shortcuts against per-operation overhead (issue 25, point 4) change no gradient: a leaf keeps its
gradient without a copy only when nothing else can reach that memory, a transposed weight gets its gradient in its
own layout with the same numbers, and the given fast paths (unbroadcast with nothing to sum, products of matrices
without reshapes, Tensor() of an array, _call_rule's one-pass check, the labels' one-pass range check) give what the
general code gives, messages included."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tinytorch  # noqa: F401  (enables autograd)
from tinytorch.core import losses
from tinytorch.core.autograd import run_backward
from tinytorch.core.elementwise import unbroadcast
from tinytorch.core.function import Function, attach
from tinytorch.core.gradcheck import check_backward
from tinytorch.core.reductions import MatmulBackward, is_transposed
from tinytorch.core.tensor import Tensor


def test_a_gradient_shared_through_a_view_is_copied_for_the_second_leaf():
    x = Tensor(np.ones((2, 3)), requires_grad=True)
    y = Tensor(np.ones((3, 2)), requires_grad=True)
    (x + y.T).sum().backward()  # AddBackward hands one array to x and y.T; y gets a transposed view of it
    assert not np.shares_memory(x.grad.data, y.grad.data)
    x.grad.data *= 0.5  # clipping one leaf's gradient in place leaves the other's alone
    assert np.allclose(y.grad.data, 1.0)


def test_a_gradient_nobody_else_holds_is_stored_as_it_is():
    x = Tensor(np.arange(3.0), requires_grad=True)
    ((x * 2.0).sum()).backward()
    first = x.grad
    assert np.allclose(first.data, 2.0) and first.data.flags.writeable
    ((x * 3.0).sum()).backward()  # a second backward() adds into a new array, as before
    assert np.allclose(x.grad.data, 5.0) and np.allclose(first.data, 2.0)


def test_a_read_only_gradient_is_copied_into_a_writeable_grad():
    x = Tensor(np.arange(3.0), requires_grad=True)
    out = x * 2.0
    (leaf, grad) = run_backward(out.sum())[0]
    grad.data.flags.writeable = False
    from tinytorch.core.autograd import _own

    kept = _own(grad, set())
    assert kept is not grad and kept.data.flags.writeable and np.allclose(kept.data, 2.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("x_shape", [(5, 4), (2, 5, 4)])
def test_a_transposed_weight_gets_its_gradient_in_its_own_layout_with_the_same_numbers(dtype, x_shape):
    rng = np.random.default_rng(0)
    x = Tensor(rng.normal(size=x_shape).astype(dtype))
    w = Tensor(rng.normal(size=(3, 4)).astype(dtype), requires_grad=True)
    g = rng.normal(size=x_shape[:-1] + (3,)).astype(dtype)
    (x @ w.T).backward(Tensor(g))
    expected = g.reshape(-1, 3).T @ x.data.reshape(-1, 4)  # dL/dW = gᵀ x, summed over every row of the batch
    assert w.grad.dtype == dtype and w.grad.data.flags.c_contiguous
    assert np.allclose(w.grad.data, expected, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_is_transposed_tells_a_column_by_column_view_from_a_matrix():
    m = Tensor(np.ones((3, 4)))
    assert is_transposed(m.T) and not is_transposed(m)
    assert not is_transposed(Tensor(np.ones((4, 1))).T)  # one column is both layouts: no need to reorder


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([((2, 3), (3, 4)), ((3,), (3, 2)), ((2, 2, 3), (3, 5)), ((4, 3), (3, 1))]))
def test_matmul_backward_gives_the_same_gradients_for_b_stored_either_way(shapes):
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=shapes[0]), rng.normal(size=shapes[1])
    g = rng.normal(size=np.matmul(a, b).shape)
    a_, b_ = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    by_rows = MatmulBackward(a_, b_).apply(Tensor(g))
    b_by_columns = Tensor(np.asfortranarray(b), requires_grad=True)  # stored as W.T is
    by_columns = MatmulBackward(a_, b_by_columns).apply(Tensor(g))
    assert check_backward(MatmulBackward, np.matmul, [a, b])
    for expected, got in zip(by_rows, by_columns):
        assert got.shape == expected.shape and np.allclose(got.data, expected.data, rtol=1e-12, atol=1e-12)


def test_unbroadcast_with_nothing_to_sum_returns_the_gradient_itself():
    g = Tensor(np.ones((2, 3)))
    assert unbroadcast(g, (2, 3)) is g
    assert unbroadcast(g, (3,)).shape == (3,) and np.allclose(unbroadcast(g, (3,)).data, 2.0)


class _Rule(Function):
    "A backward rule whose answer a test chooses: `answer(grad_output, a, b)`."

    answer = None

    def apply(self, grad_output):
        return type(self).answer(grad_output, *self.saved_tensors)


@pytest.mark.parametrize(
    "answer, words",
    [
        (lambda g, a, b: [g, g], None),  # a list is accepted, as before
        (lambda g, a, b: (g.data, None), None),  # an array becomes a Tensor
        (lambda g, a, b: (g, g.sum()), "returned a gradient of shape () for input 1 of shape (3,)"),
        (lambda g, a, b: (g,), "one gradient per saved tensor (2)"),
        (lambda g, a, b: g, "one gradient per saved tensor (2)"),
    ],
)
def test_a_rules_answer_is_checked_and_named_as_before_the_one_pass_check(answer, words):
    a, b = Tensor(np.ones(3), requires_grad=True), Tensor(np.ones(3), requires_grad=True)
    rule = type("Wrong", (_Rule,), {"answer": staticmethod(answer)})
    out = attach(Tensor(a.data * b.data), rule, a, b)
    if words is None:
        leaves = dict((id(leaf), g) for leaf, g in run_backward(out.sum()))
        assert isinstance(leaves[id(a)], Tensor) and np.allclose(leaves[id(a)].data, 1.0)
    else:
        with pytest.raises(RuntimeError, match="Wrong") as error:
            out.sum().backward()
        assert words in str(error.value), str(error.value)


class _Forgetful(Function):
    "A rule that drops its saved tensors as soon as it has read them, to free memory early."

    def apply(self, grad_output):
        (x, y) = self.saved_tensors
        self.saved_tensors = None
        return grad_output * y, grad_output * x


@pytest.mark.parametrize("dtype", [np.float64, np.float32])  # float32: a float64 gradient, cast on the slow path
def test_the_loop_reads_a_rules_inputs_before_the_rule_runs(dtype):
    "The reference loop and _call_rule take a rule's inputs as handed to it, as zip did: the rule may free them."
    a, b = Tensor(np.arange(3.0, dtype=dtype), requires_grad=True), Tensor(np.ones(3), requires_grad=True)
    attach(Tensor(a.data * b.data), _Forgetful, a, b).sum().backward()
    assert a.grad.dtype == dtype and np.array_equal(a.grad.data, b.data) and np.array_equal(b.grad.data, a.data)


def test_tensor_keeps_a_plain_array_itself_and_converts_anything_else():
    array = np.arange(3.0)
    assert Tensor(array).data is array
    assert Tensor(array, dtype=np.float32).dtype == np.float32
    masked = np.ma.masked_array([1.0, 2.0])  # an ndarray subclass: stored as a plain array, as np.asarray does
    assert type(Tensor(masked).data) is np.ndarray
    assert Tensor(np.arange(3), requires_grad=True).dtype == np.float64


@pytest.mark.parametrize(
    "labels, words",
    [([0, -1], "got values from -1 to 0"), ([0, 3], "got values from 0 to 3"), ([0.0, 2.5], "whole class indices")],
)
def test_cross_entropy_names_labels_out_of_range_negative_ones_included(labels, words):
    with pytest.raises(ValueError, match="cross_entropy targets") as error:
        losses.cross_entropy(Tensor(np.zeros((2, 3))), np.array(labels))
    assert words in str(error.value)


def test_cross_entropy_is_the_mean_and_keeps_its_own_copy_of_the_labels():
    rng = np.random.default_rng(2)
    logits, labels = rng.normal(size=(5, 4)), np.array([0, 3, 1.0, 2, 3])
    z = Tensor(logits, requires_grad=True)
    loss = losses.cross_entropy(z, labels)
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    assert loss.item() == -np.mean(log_probs[np.arange(5), labels.astype(int)])
    labels[:] = 0  # the caller reuses its array before backward(): the gradient is still the one of the forward
    loss.backward()
    expected = (np.exp(log_probs) - np.eye(4)[[0, 3, 1, 2, 3]]) / 5
    assert np.allclose(z.grad.data, expected)


def test_transpose_without_axes_reverses_and_two_axes_out_of_range_are_named():
    x = Tensor(np.zeros((2, 3, 4)))
    assert x.T.shape == (4, 3, 2) and x.transpose().shape == (4, 3, 2)
    assert x.transpose(0, -1).shape == (4, 3, 2) and x.transpose(np.int64(1), 2).shape == (2, 4, 3)
    with pytest.raises(ValueError, match=r"a tensor with 3 axes has axes -3 to 2"):
        x.transpose(0, 3)
