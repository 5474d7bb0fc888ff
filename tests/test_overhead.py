"""The engine's shortcuts against per-operation overhead (issue 25, point 4) change no gradient: a leaf keeps its
gradient without a copy only when nothing else can reach that memory, a transposed weight gets its gradient in its
own layout with the same numbers, and the given fast paths (unbroadcast with nothing to sum, products of matrices
without reshapes) give what the general code gives."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tinytorch  # noqa: F401  (enables autograd)
from tinytorch.core.autograd import run_backward
from tinytorch.core.elementwise import unbroadcast
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
