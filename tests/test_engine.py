"""The reference package: every backward class checked in float64 by central differences, on random shapes
(broadcasting included), plus the seed examples, the engine's guarantees and its error messages."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tinytorch.core import activations as A
from tinytorch.core import attention as T
from tinytorch.core import conv as C
from tinytorch.core import elementwise as E
from tinytorch.core import embedding as M
from tinytorch.core import losses as L
from tinytorch.core import nn as NN
from tinytorch.core import norm as N
from tinytorch.core import reductions as R
from tinytorch.core.autograd import enable_autograd, grad
from tinytorch.core.function import no_grad
from tinytorch.core.gradcheck import GradcheckError, check_backward, gradcheck, numerical_grad
from tinytorch.core.higher_order import hessian_vector_product
from tinytorch.core.losses import CrossEntropy
from tinytorch.core.nn import Linear, ReLU, Sequential, Tanh
from tinytorch.core.tensor import Tensor

BINARY = [
    (E.AddBackward, np.add),
    (E.SubBackward, np.subtract),
    (E.MulBackward, np.multiply),
    (E.DivBackward, np.divide),
]


@settings(max_examples=25, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3), seed=st.integers(0, 2**16))
@pytest.mark.parametrize("cls, forward", BINARY, ids=[c.__name__ for c, _ in BINARY])
def test_binary_rules_with_broadcasting(cls, forward, shapes, seed):
    rng = np.random.default_rng(seed)
    a, b = (rng.uniform(0.5, 2.0, size=s) * rng.choice([-1, 1], size=s) for s in shapes.input_shapes)
    assert check_backward(cls, forward, [a, b], seed=seed)


@settings(max_examples=20, deadline=None)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=4), seed=st.integers(0, 2**16))
def test_unary_rules(shape, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape)
    positive = rng.uniform(0.2, 3.0, size=shape)
    check_backward(E.NegBackward, np.negative, [x])
    check_backward(E.ExpBackward, np.exp, [x])
    check_backward(E.LogBackward, np.log, [positive])
    check_backward(E.PowBackward, lambda a, exponent: a**exponent, [positive], exponent=2.5)
    check_backward(A.SigmoidBackward, A._stable_sigmoid, [x * 4])
    check_backward(A.TanhBackward, np.tanh, [x * 2])
    away_from_kink = np.where(np.abs(x) < 1e-3, 0.5, x)
    check_backward(A.ReLUBackward, lambda v: np.maximum(v, 0), [away_from_kink])


@settings(max_examples=20, deadline=None)
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), seed=st.integers(0, 2**16), data=st.data())
def test_reductions_and_shapes(shape, seed, data):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    keepdims = data.draw(st.booleans())
    check_backward(R.SumBackward, np.sum, [x], axis=axis, keepdims=keepdims)
    check_backward(R.MeanBackward, np.mean, [x], axis=axis, keepdims=keepdims)
    check_backward(R.ReshapeBackward, lambda v: v.reshape(-1), [x])
    axes = tuple(rng.permutation(len(shape)))
    check_backward(R.TransposeBackward, np.transpose, [x], axes=axes)
    index = rng.integers(0, shape[0], size=5)
    check_backward(R.IndexBackward, lambda v, index: v[index], [x], index=index)
    check_backward(A.SoftmaxBackward, lambda v, axis: np.exp(A._stable_log_softmax(v, axis)), [x], axis=-1)
    check_backward(A.LogSoftmaxBackward, A._stable_log_softmax, [x], axis=-1)


@pytest.mark.parametrize(
    "shape_a, shape_b",
    [((2, 3), (3, 4)), ((3,), (3, 2)), ((2, 3), (3,)), ((4,), (4,)), ((2, 2, 3), (3, 5)), ((1, 3, 2), (4, 2, 3))],
)
def test_matmul_backward(shape_a, shape_b):
    rng = np.random.default_rng(1)
    assert check_backward(R.MatmulBackward, np.matmul, [rng.normal(size=shape_a), rng.normal(size=shape_b)])


def test_losses_conv_pool_embedding_rules():
    rng = np.random.default_rng(2)
    ce = lambda z, y: -np.mean(A._stable_log_softmax(z, 1)[np.arange(len(y)), y])
    check_backward(L.CrossEntropyBackward, ce, [rng.normal(size=(6, 4)) * 50, rng.integers(0, 4, size=6)])
    check_backward(
        L.MSEBackward, lambda p, t: np.mean((p - t) ** 2), [rng.normal(size=(3, 2)), rng.normal(size=(3, 2))]
    )
    check_backward(
        L.BCEBackward,
        lambda p, t: -np.mean(t * np.log(p) + (1 - t) * np.log(1 - p)),
        [rng.uniform(0.05, 0.95, size=5), rng.uniform(size=5)],
    )
    check_backward(
        C.Conv2dBackward,
        C.conv2d_forward,
        [rng.normal(size=(2, 2, 5, 4)), rng.normal(size=(3, 2, 3, 2)), rng.normal(size=3)],
        padding=1,
    )
    check_backward(C.MaxPool2dBackward, lambda x: C.window(x, 2).max(axis=-1), [rng.normal(size=(2, 3, 4, 6))])
    check_backward(
        M.EmbeddingBackward, lambda w, ids: w[ids], [rng.normal(size=(5, 3))], ids=np.array([[1, 1], [4, 1]])
    )


def test_gradcheck_catches_an_unreduced_broadcast_gradient():
    class Unreduced(E.Function):
        def apply(self, g):
            return g, g

    with pytest.raises(GradcheckError, match="not reduced over the broadcast axes"):
        check_backward(Unreduced, np.add, [np.ones((3, 1)), np.ones((1, 4))])


def test_gradcheck_names_input_and_element():
    class Wrong(E.Function):
        def apply(self, g):
            a, b = self.saved_tensors
            return g * b, g * b

    with pytest.raises(
        GradcheckError, match=r"input 1 \(shape \(2, 2\)\): wrong gradient at index \(\d, \d\): analytic"
    ):
        check_backward(Wrong, np.multiply, [np.arange(4.0).reshape(2, 2) + 1, np.arange(4.0).reshape(2, 2) + 7])


def test_gradcheck_fast_mode_on_a_large_input():
    x = Tensor(np.random.default_rng(3).normal(size=(60, 50)), requires_grad=True)
    assert gradcheck(lambda x: A.tanh(x @ x.T).sum(axis=0), [x])


def test_seed_example_one():
    x = Tensor(2.0, requires_grad=True)
    y = Tensor(3.0, requires_grad=True)
    z = x * y + x
    z.backward()
    assert x.grad.item() == 4.0 and y.grad.item() == 2.0


def test_seed_example_two():
    W = Tensor(np.random.randn(2, 3), requires_grad=True)
    b = Tensor(np.random.randn(2), requires_grad=True)
    linear = Linear(W, b)
    relu = ReLU()
    x = Tensor(np.random.randn(3), requires_grad=True)
    loss = relu(linear(x)).sum()
    loss.backward()
    assert (W.grad.shape, b.grad.shape, x.grad.shape) == ((2, 3), (2,), (3,))
    active = (W.data @ x.data + b.data > 0).astype(float)  # d relu(z).sum() / dz, by hand
    assert np.allclose(W.grad.data, np.outer(active, x.data))
    assert np.allclose(b.grad.data, active)
    assert np.allclose(x.grad.data, W.data.T @ active)


def test_seed_example_three_cross_entropy():
    logits = Tensor(np.random.randn(4, 10), requires_grad=True)
    targets = np.array([3, 0, 9, 1])
    loss = CrossEntropy()(logits, targets)
    loss.backward()
    assert loss.shape == () and logits.grad.shape == (4, 10)
    shifted = np.exp(logits.data - logits.data.max(axis=1, keepdims=True))
    probabilities = shifted / shifted.sum(axis=1, keepdims=True)
    assert np.isclose(loss.item(), -np.log(probabilities[np.arange(4), targets]).mean())
    assert np.allclose(logits.grad.data, (probabilities - np.eye(10)[targets]) / 4)


def test_enable_autograd_is_idempotent_and_covers_older_tensors():
    before = Tensor([1.0, 2.0])
    add = Tensor.__add__
    enable_autograd()
    enable_autograd()
    assert Tensor.__add__ is add
    assert before.requires_grad is False and before.grad is None
    w = Tensor([3.0, 4.0], requires_grad=True)
    (before * w).sum().backward()
    assert np.allclose(w.grad.data, [1.0, 2.0])


def test_long_chain_is_walked_iteratively():
    x = Tensor(1.0, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y + 0.0
    y.backward()
    assert x.grad.item() == 1.0


def test_graph_is_freed_unless_retained():
    x = Tensor([1.0, 2.0], requires_grad=True)
    out = (x * x).sum()
    out.backward()
    assert out._grad_fn.saved_tensors is None
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        out.backward()


@pytest.mark.parametrize(
    "action, words",
    [
        (
            lambda: (Tensor([1.0, 2.0], requires_grad=True) * 2).backward(),
            "needs a single number, but this tensor has shape (2,)",
        ),
        (lambda: Tensor([1.0]).sum().backward(), "does not require a gradient"),
        (lambda: Tensor(np.ones((2, 3))) @ Tensor(np.ones((2, 3))), "a has 3 columns but b has 2 rows"),
        (
            lambda: Tensor(np.ones((2, 3))) + Tensor(np.ones(4)),
            "Cannot compute a + b: shapes (2, 3) and (4,) do not broadcast",
        ),
        (lambda: L.cross_entropy(Tensor(np.ones((2, 3))), [0, 5]), "must lie in 0..2"),
    ],
)
def test_errors_that_teach(action, words):
    with pytest.raises((RuntimeError, ValueError)) as error:
        action()
    assert words in str(error.value)


def test_no_grad_and_detach():
    w = Tensor([1.0], requires_grad=True)
    with no_grad():
        assert not (w * 2).requires_grad
    assert (w * 2).requires_grad and not w.detach().requires_grad


def test_edge_cases_zero_size_scalars_large_values():
    empty = Tensor(np.zeros((0, 3)), requires_grad=True)
    (empty * 2.0).sum().backward()
    assert empty.grad.shape == (0, 3)
    big = Tensor([[1000.0, -1000.0, 0.0]], requires_grad=True)
    L.cross_entropy(big, [1]).backward()
    assert np.all(np.isfinite(big.grad.data))


def test_second_derivative_and_hessian_vector_product():
    x = Tensor(2.0, requires_grad=True)
    (first,) = grad(x**3, [x], create_graph=True)
    (second,) = grad(first, [x])
    assert np.isclose(second.item(), 12.0)
    rng = np.random.default_rng(4)
    net = Sequential(Linear(3, 4, seed=0), Tanh(), Linear(4, 2, seed=1))
    params, X = net.parameters(), Tensor(rng.normal(size=(6, 3)))
    loss_fn = lambda: L.cross_entropy(net(X), [0, 1, 1, 0, 1, 0])
    v = [rng.normal(size=p.shape) for p in params]
    hv = np.concatenate([h.data.ravel() for h in hessian_vector_product(loss_fn, params, v)])

    def flat_grad(step):
        saved = [p.data.copy() for p in params]
        for p, d in zip(params, v):
            p.data = p.data + step * d
        g = np.concatenate([t.data.ravel() for t in grad(loss_fn(), params)])
        for p, s in zip(params, saved):
            p.data = s
        return g

    assert np.allclose(hv, (flat_grad(1e-5) - flat_grad(-1e-5)) / 2e-5, atol=1e-6, rtol=1e-4)


def test_create_graph_refuses_numpy_only_rules():
    x = Tensor(np.random.default_rng(5).normal(size=(1, 1, 4, 4)), requires_grad=True)
    with pytest.raises(RuntimeError, match="cannot be differentiated again"):
        grad(C.max_pool2d(x, 2).sum(), [x], create_graph=True)


def test_numerical_grad_matches_known_derivative():
    (g,) = numerical_grad(lambda x: np.sum(np.sin(x)), [np.linspace(-1, 1, 5)])
    assert np.allclose(g, np.cos(np.linspace(-1, 1, 5)), atol=1e-8)


def test_scatter_add_backward_and_its_double_backward():
    rng = np.random.default_rng(6)
    index = np.array([0, 2, 2])
    check_backward(
        lambda values, index: R.ScatterAddBackward(values, index),
        lambda v, index: R.scatter_add(Tensor(v), index, (4, 2)).data,
        [rng.normal(size=(3, 2))],
        index=index,
    )
    x = Tensor(rng.normal(size=(4, 2)), requires_grad=True)
    (g,) = grad((x[index] ** 2).sum(), [x], create_graph=True)
    (second,) = grad(g.sum(), [x])
    assert np.allclose(second.data, 2 * np.bincount(index, minlength=4)[:, None] * np.ones((4, 2)))


# Issue 14: the bugs students really write. Rules get read-only arrays, shared gradient objects are compared at
# every leaf, and edge values (zeros, p = 0 and 1, large logits, empty batches, float32) are checked.


def relu_np(v):
    return np.maximum(v, 0)


class MasksGradOutput(E.Function):
    def apply(self, grad_output):
        (x,) = self.saved_tensors
        g = grad_output.data
        g[x.data <= 0] = 0
        return (grad_output,)


class ClampsItsInput(E.Function):
    def apply(self, grad_output):
        (x,) = self.saved_tensors
        x.data[x.data < 0] = 0
        return (grad_output * (x.data > 0),)


class ReplacesItsInput(E.Function):
    def apply(self, grad_output):
        (x,) = self.saved_tensors
        x.data = np.maximum(x.data, 0)
        return (grad_output * (x.data > 0),)


class ScalesItsOutput(E.ExpBackward):
    def apply(self, grad_output):
        self.output.data *= grad_output.data
        return (self.output,)


@pytest.mark.parametrize(
    "rule, forward, words",
    [
        (MasksGradOutput, relu_np, "your rule changed grad_output (shape (3,)) in place"),
        (ClampsItsInput, relu_np, "your rule changed its saved input 0 (shape (3,)) in place"),
        (ReplacesItsInput, relu_np, "your rule changed its saved input 0 (shape (3,)) in place"),
        (ScalesItsOutput, np.exp, "your rule changed its saved output (shape (3,)) in place"),
    ],
)
def test_check_backward_hands_rules_read_only_arrays(rule, forward, words):
    "The message names the rule, its input shapes, and which array it changed (grad_output, saved input k, output)."
    x = np.array([-1.0, 0.5, 2.0])
    with pytest.raises(GradcheckError) as raised:
        check_backward(rule, forward, [x])
    assert f"{rule.__name__} on inputs of shapes (3,): {words}" in str(raised.value), str(raised.value)
    assert "compute a new array instead" in str(raised.value)
    assert np.array_equal(x, [-1.0, 0.5, 2.0]) and x.flags.writeable, "the caller's array is neither changed nor frozen"


def test_gradcheck_catches_in_place_writes_inside_the_engine(monkeypatch):
    import tinytorch.core.autograd as engine

    x = Tensor([-1.0, 0.5, 2.0], requires_grad=True)
    monkeypatch.setattr(A.ReLUBackward, "apply", MasksGradOutput.apply)
    with pytest.raises(
        GradcheckError,
        match=r"ReLUBackward \(saved tensors of shapes \(3,\), grad_output of shape "
        r"\(3,\)\): your rule changed grad_output \(shape \(3,\)\) in place",
    ):
        gradcheck(lambda x: A.relu(x) + x, [x])
    monkeypatch.setattr(A.ReLUBackward, "apply", ClampsItsInput.apply)
    with pytest.raises(GradcheckError, match=r"ReLUBackward .*: your rule changed its saved input 0 \(shape \(3,\)\)"):
        gradcheck(lambda x: A.relu(x) + x, [x])
    monkeypatch.undo()

    def accumulate_in_place(grads, tensor, grad):
        key = id(tensor)
        if key in grads:
            grads[key].data += grad.data
        else:
            grads[key] = grad

    monkeypatch.setattr(engine, "accumulate", accumulate_in_place)
    a, b = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0, -1.0], requires_grad=True)
    for fn, inputs in [(lambda a: a + a, [a]), (lambda a, b: (a + b) * a + a * b, [a, b])]:
        with pytest.raises(GradcheckError, match="changed a gradient in place outside the backward rules"):
            gradcheck(fn, inputs)
    assert a.data.flags.writeable and b.data.flags.writeable and x.data.flags.writeable
    assert "apply" not in vars(a._grad_fn or E.Function()), "the rules' own apply is given back"


def test_in_place_accumulation_gives_wrong_gradients_even_without_read_only_arrays(monkeypatch):
    "The numerical comparison alone also catches it, in one of the two orders of a shared-gradient graph."
    import tinytorch.core.autograd as engine

    def accumulate_in_place(grads, tensor, grad):
        key = id(tensor)
        if key in grads:
            grads[key].data += grad.data
        else:
            grads[key] = grad

    monkeypatch.setattr(engine, "accumulate", accumulate_in_place)
    wrong = 0
    for fn in [
        lambda a, b: (a + b).sum() + (a * b).sum(),
        lambda a, b: (a * b).sum() + (a + b).sum(),
        lambda a, b: (a + b) + (a + b) * a,
    ]:
        a, b = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0, -1.0], requires_grad=True)
        out = fn(a, b).sum()
        out.backward()
        expected = numerical_grad(lambda a, b, fn=fn: np.sum(fn(Tensor(a), Tensor(b)).data), [a.data, b.data])
        wrong += not all(np.allclose(t.grad.data, e, atol=1e-5) for t, e in zip((a, b), expected))
    assert wrong >= 2


@pytest.mark.parametrize(
    "fn, n",
    [
        (lambda a: a + a, 1),
        (lambda a, b: (a + b) * a + a * b, 2),
        (lambda a, b: a * b + (a + b) * b, 2),
        (lambda a, b: (a + b) + (a + b) * a, 2),
        (lambda a: a * 2.0 + a.exp() + a * a, 1),
        (lambda a: A.relu(a) + a, 1),
        (lambda a: A.sigmoid(a) * A.sigmoid(a) + a, 1),
        (lambda a: A.softmax(a, axis=-1) + a, 1),
        (lambda a, b: L.mse_loss(a, a * 0.5) + (a - b).sum(), 2),
    ],
)
def test_one_gradient_object_reaching_two_places(fn, n):
    rng = np.random.default_rng(7)
    inputs = [Tensor(rng.normal(size=(2, 3)), requires_grad=True) for _ in range(n)]
    assert gradcheck(fn, inputs)


def test_edge_values_of_the_rules():
    for p in [1, 2, 3, 2.0]:
        check_backward(E.PowBackward, lambda a, exponent: a**exponent, [np.array([0.0, -1.5, 0.0])], exponent=p)

    class PowOverA(E.PowBackward):  # p * a**p / a: the same away from 0, NaN at 0
        def apply(self, grad_output):
            (a,) = self.saved_tensors
            return (grad_output * self.exponent * a**self.exponent / a,)

    with np.errstate(all="ignore"), pytest.raises(GradcheckError, match="index"):
        check_backward(PowOverA, lambda a, exponent: a**exponent, [np.array([0.0, 1.5])], exponent=2)

    (grad,) = A.ReLUBackward(Tensor([-1.0, 0.0, 2.0])).apply(Tensor(np.ones(3)))
    assert np.array_equal(grad.data, [0.0, 0.0, 1.0]), "ReLU's documented convention: gradient 0 at exactly 0"
    check_backward(E.DivBackward, np.divide, [np.array([0.0, -0.0, 1.0]), np.array([2.0, -0.5, 3.0])])

    p, t = Tensor([0.0, 1.0, 0.0, 1.0]), Tensor([1.0, 0.0, 0.0, 1.0])
    grads = L.BCEBackward(p, t).apply(Tensor(1.0))
    assert all(np.all(np.isfinite(g.data)) for g in grads), "BCE at p = 0 and 1: the clipped p keeps it finite"

    class Unclipped(L.BCEBackward):
        def apply(self, grad_output):
            probabilities, target = self.saved_tensors
            n = probabilities.size
            return (
                grad_output * (probabilities - target) / (probabilities * (1 - probabilities)) / n,
                grad_output * ((1 - probabilities).log() - probabilities.log()) / n,
            )

    with np.errstate(all="ignore"):
        assert not all(np.all(np.isfinite(g.data)) for g in Unclipped(p, t).apply(Tensor(1.0)))

    big = Tensor(np.array([[900.0, 0.0, -900.0], [0.0, 1000.0, 1000.0]]), requires_grad=True)
    assert gradcheck(lambda z: L.cross_entropy(z, [0, 2]), [big])
    assert gradcheck(lambda z: A.softmax(z, axis=1) * z, [big])
    assert gradcheck(lambda z: A.log_softmax(z, axis=1), [big])


def test_empty_batches():
    rng = np.random.default_rng(8)
    check_backward(E.AddBackward, np.add, [np.zeros((0, 3)), rng.normal(size=(3,))])
    check_backward(E.MulBackward, np.multiply, [np.zeros((0, 3)), rng.normal(size=(1, 3))])
    check_backward(R.MatmulBackward, np.matmul, [np.zeros((0, 3)), rng.normal(size=(3, 2))])
    check_backward(R.SumBackward, np.sum, [np.zeros((0, 3))], axis=0)
    check_backward(R.MeanBackward, np.mean, [np.zeros((0, 3))], axis=1)
    no_index = np.zeros(0, dtype=int)
    check_backward(R.IndexBackward, lambda v, index: v[index], [rng.normal(size=(4, 3))], index=no_index)
    softmax_np = lambda v, axis: np.exp(A._stable_log_softmax(v, axis))  # noqa: E731
    check_backward(A.SoftmaxBackward, softmax_np, [np.zeros((0, 4))], axis=-1)
    check_backward(A.LogSoftmaxBackward, A._stable_log_softmax, [np.zeros((0, 4))], axis=-1)
    check_backward(M.EmbeddingBackward, lambda w, ids: w[ids], [rng.normal(size=(5, 3))], ids=no_index)
    x = Tensor(np.zeros((0, 3)), requires_grad=True)
    assert gradcheck(lambda x: (x @ Tensor(np.ones((3, 2)))).sum(axis=0) + A.relu(x).mean(axis=1).sum(), [x])


# Every rule keeps a float32 input's gradient float32 (Python numbers next to a float32 Tensor take its dtype:
# Tensor._lift, NumPy 2's rule); check_backward fails on a promoted gradient. The table holds every rule of the package.
F32_RULES = [
    (E.AddBackward, np.add, [(2, 3), (3,)], {}),
    (E.SubBackward, np.subtract, [(2, 3), (3,)], {}),
    (E.MulBackward, np.multiply, [(2, 3), (3,)], {}),
    (E.NegBackward, np.negative, [(3,)], {}),
    (E.ExpBackward, np.exp, [(3,)], {}),
    (R.MatmulBackward, np.matmul, [(2, 3), (3, 4)], {}),
    (R.SumBackward, np.sum, [(2, 3)], {"axis": 0}),
    (R.ReshapeBackward, lambda v: v.reshape(-1), [(2, 3)], {}),
    (R.TransposeBackward, np.transpose, [(2, 3)], {"axes": (1, 0)}),
    (R.IndexBackward, lambda v, index: v[index], [(4, 3)], {"index": np.array([0, 2, 2])}),
    (A.ReLUBackward, relu_np, [(3, 4)], {}),
    (A.SoftmaxBackward, lambda v, axis: np.exp(A._stable_log_softmax(v, axis)), [(3, 4)], {"axis": -1}),
    (A.LogSoftmaxBackward, A._stable_log_softmax, [(3, 4)], {"axis": -1}),
    (C.Conv2dBackward, C.conv2d_forward, [(2, 2, 5, 4), (3, 2, 3, 2), (3,)], {"padding": 1}),
    (NN.LinearBackward, lambda x, w, b: x @ w.T + b, [(2, 3), (4, 3), (4,)], {}),
    (C.MaxPool2dBackward, lambda x: C.window(x, 2).max(axis=-1), [(2, 3, 4, 6)], {}),
    (M.EmbeddingBackward, lambda w, ids: w[ids], [(5, 3)], {"ids": np.array([[1, 1], [4, 1]])}),
    (E.MaskedFillBackward, lambda a, mask: np.where(mask, 7.0, a), [(2, 2)], {"mask": np.eye(2, dtype=bool)}),
    (E.CastBackward, lambda a: a, [(2, 3)], {}),
    (E.AddNumberBackward, lambda a: a + 1.5, [(2, 3)], {}),
    (E.MulNumberBackward, lambda a, number: a * number, [(2, 3)], {"number": -1.5}),
    (E.DivNumberBackward, lambda a, number: a / number, [(2, 3)], {"number": 0.75}),
    (R.MeanBackward, np.mean, [(2, 3)], {"axis": 0, "keepdims": False}),
    (A.TanhBackward, np.tanh, [(3, 4)], {}),
    (A.GELUBackward, lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))), [(3, 4)], {}),
    (C.AvgPool2dBackward, lambda x, **o: C.window(x, 2, None).mean(axis=-1), [(2, 3, 4, 6)], {"kernel_size": 2}),
    (L.MSEBackward, lambda p, t: np.mean((p - t) ** 2), [(3, 2), (3, 2)], {}),
    (N.BatchNormBackward, N.batch_norm_values, [(4, 3), (3,), (3,)], {}),
    (N.LayerNormBackward, N.layer_norm_values, [(2, 4), (4,), (4,)], {}),
    (N.DropoutBackward, lambda v, mask, p: v * mask / (1 - p), [(3, 4)], {"mask": np.eye(3, 4, dtype=bool), "p": 0.5}),
    (T.AttentionBackward, T.attention_values, [(2, 3, 4), (2, 3, 4), (2, 3, 2)], {"mask": T.causal_mask(3)}),
    (
        lambda values, index: R.ScatterAddBackward(values, index),
        lambda v, index: R.scatter_add(Tensor(v), index, (4, 2)).data,
        [(3, 2)],
        {"index": np.array([0, 2, 2])},
    ),
]
# Rules whose inputs must lie in a range (positive, probabilities, labels): (rule, forward, inputs, options).
F32_RANGED = [
    (E.DivBackward, np.divide, [np.float32([[1.5, -2.0, 0.5]]), np.float32([0.5, 2.0, -1.25])], {}),
    (E.PowBackward, lambda a, exponent: a**exponent, [np.float32([0.5, 1.5, 2.0])], {"exponent": 2.5}),
    (E.LogBackward, np.log, [np.float32([0.5, 1.5, 2.0])], {}),
    (A.SigmoidBackward, A._stable_sigmoid, [np.float32([[-3.0, 0.0, 2.5]])], {}),
    (
        L.BCEBackward,
        lambda p, t: -np.mean(t * np.log(p) + (1 - t) * np.log(1 - p)),
        [np.float32([0.2, 0.7, 0.9]), np.float32([0.0, 1.0, 0.5])],
        {},
    ),
    (
        L.CrossEntropyBackward,
        lambda z, y: -np.mean(A._stable_log_softmax(z, 1)[np.arange(len(y)), y]),
        [np.float32([[0.5, -1.0, 2.0], [1.0, 0.0, -0.5]]), np.array([2, 0])],
        {},
    ),
]


@pytest.mark.parametrize("rule, forward, shapes, options", F32_RULES, ids=[r[0].__name__ for r in F32_RULES])
def test_float32_gradients_stay_float32(rule, forward, shapes, options):
    rng = np.random.default_rng(9)
    inputs = [rng.normal(size=s).astype(np.float32) for s in shapes]
    assert check_backward(rule, forward, inputs, **options)


@pytest.mark.parametrize("rule, forward, inputs, options", F32_RANGED, ids=[r[0].__name__ for r in F32_RANGED])
def test_float32_gradients_stay_float32_for_rules_with_ranged_inputs(rule, forward, inputs, options):
    assert check_backward(rule, forward, inputs, **options)


def test_every_backward_rule_is_in_the_float32_tables():
    import importlib
    import inspect
    import pkgutil

    import tinytorch.core

    rules = {
        name
        for info in pkgutil.iter_modules(tinytorch.core.__path__)
        for name, value in vars(importlib.import_module(f"tinytorch.core.{info.name}")).items()
        if inspect.isclass(value) and issubclass(value, E.Function) and value is not E.Function
    }
    tabled = {getattr(r[0], "__name__", "") for r in F32_RULES + F32_RANGED} | {"ScatterAddBackward"}
    assert rules - tabled == set(), "every backward rule must keep float32 float32: add it to F32_RULES"


def test_float32_through_the_engine():
    rng = np.random.default_rng(10)
    x = Tensor(rng.normal(size=(3, 4)).astype(np.float32), requires_grad=True)
    w = Tensor(rng.normal(size=(4, 2)).astype(np.float32), requires_grad=True)
    assert gradcheck(lambda x, w: A.softmax(x @ w, axis=1) + (x * x).sum(axis=0).sum() + x.T[0].exp().sum(), [x, w])
    assert gradcheck(lambda x: A.log_softmax(A.relu(x), axis=1)[np.array([0, 1, 2]), np.array([0, 1, 3])], [x])
    (x @ w).sum().backward()
    assert x.grad.dtype == np.float32 and w.grad.dtype == np.float32


def test_check_backward_names_a_promoted_dtype():
    class Promotes(E.Function):
        def apply(self, grad_output):
            return (grad_output * np.ones(grad_output.shape),)

    with pytest.raises(GradcheckError, match="the input is float32 but its gradient is float64"):
        check_backward(Promotes, lambda v: v * 1.0, [np.ones(3, dtype=np.float32)])


def test_check_backward_names_a_lowered_dtype_as_lowered_not_promoted():
    "A rule that rounds to float32 is told so, not told about float64 constants (a student solver's finding)."

    class Lowers(E.Function):
        def apply(self, grad_output):
            return (Tensor(grad_output.data.astype(np.float32)),)

    with pytest.raises(GradcheckError, match="the input is float64 but its gradient is float32") as raised:
        check_backward(Lowers, lambda v: v * 1.0, [np.ones(3)])
    assert "lowered it to float32" in str(raised.value) and "promotes" not in str(raised.value)


def test_check_backward_refuses_a_complex_gradient_of_a_real_input():
    "A red-team finding: a complex gradient passed the dtype check (not a float dtype) and the tests read its real part."

    class Complex(E.Function):
        def apply(self, grad_output):
            return (grad_output.data.astype(np.complex128),)

    class ComplexAndWrong(E.Function):
        def apply(self, grad_output):
            return (2j + 3 * grad_output.data,)

    for rule in (Complex, ComplexAndWrong):  # refused before its real part is compared, without NumPy's ComplexWarning
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(
                GradcheckError, match="the gradient is complex128: the gradient of a real input is real"
            ):
                check_backward(rule, lambda v: v * 1.0, [np.ones(3)])


def test_check_backward_reads_the_dtype_of_a_list_of_numbers_as_numpy_does():
    "Red team, round 2: a list of np.float32 numbers has no dtype of its own, and passed as a float32 array would not."

    class Float32Numbers(E.Function):
        def apply(self, grad_output):
            return ([np.float32(v) for v in grad_output.data],)

    with pytest.raises(GradcheckError, match="the input is float64 but its gradient is float32"):
        check_backward(Float32Numbers, lambda v: v * 1.0, [np.ones(3)])


def test_each_tensor_method_is_the_operation_function_that_names_its_rule():
    import inspect

    import tinytorch.core.autograd as autograd

    for method, function, rule in [("__mul__", "mul", "MulBackward"), ("sum", "reduce_sum", "SumBackward")]:
        assert getattr(Tensor, method) is getattr(autograd, function)
        assert rule in inspect.getsource(getattr(autograd, function))


def test_mean_records_one_node_and_nothing_of_the_sum_it_is_made_from():
    x = Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    m = x.mean(axis=0)
    assert type(m._grad_fn).__name__ == "MeanBackward" and m._grad_fn.saved_tensors[0] is x
    assert np.allclose(m.data, [1.5, 2.5, 3.5])
    assert Tensor(np.ones(4, dtype=np.float32), requires_grad=True).mean().data.dtype == np.float32


def test_python_numbers_keep_a_float32_tensor_float32_as_in_numpy():
    x = Tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    for result in [x * 2, 2 * x, 1 - x, x / 3, x + 0.5, x**0.5]:
        assert result.dtype == np.float32, result
    assert (Tensor(np.arange(3)) * 0.5).dtype == np.float64  # an integer tensor becomes float, as in NumPy
    s = A.sigmoid(x)
    s.sum().backward()
    assert x.grad.dtype == np.float32


def test_transpose_takes_the_inverse_permutation_as_an_array():
    x = Tensor(np.ones((2, 3, 4)))
    assert x.transpose(np.argsort((1, 2, 0))).shape == (4, 2, 3)


class TransposesWithoutInverting(R.TransposeBackward):
    def apply(self, grad_output):
        return (grad_output.transpose(self.axes),)


def test_a_wrong_gradient_names_the_rules_options_and_an_array_option_by_its_shape():
    x = np.random.default_rng(0).normal(size=(2, 3, 4))
    with pytest.raises(
        GradcheckError, match=r"TransposesWithoutInverting, input 0 \(shape \(2, 3, 4\), axes=\(1, 2, 0\)\)"
    ):
        check_backward(TransposesWithoutInverting, np.transpose, [x], axes=(1, 2, 0))

    class ScaledIndex(R.IndexBackward):
        def apply(self, grad_output):
            return (2 * super().apply(grad_output)[0],)

    with pytest.raises(
        GradcheckError, match=r"ScaledIndex, input 0 \(shape \(3, 3\), index=an array of shape \(2,\)\)"
    ):
        check_backward(ScaledIndex, lambda a, index: a[index], [x[0, :, :3].T.copy()], index=np.array([0, 2]))


def test_transpose_of_none_reverses_the_axes_as_numpy_does():
    "A rule that writes grad_output.transpose(None) gets NumPy's meaning, not a TypeError from int(None)."
    x = Tensor(np.zeros((2, 3, 4)), requires_grad=True)
    assert x.transpose(None).shape == (4, 3, 2) == x.transpose().shape


def test_gradcheck_names_the_expression_and_each_input_by_its_argument_name_and_shape(monkeypatch):
    a, b = Tensor([1.0, -2.0], requires_grad=True), Tensor([0.5, 3.0], requires_grad=True)
    monkeypatch.setattr(E.MulBackward, "apply", lambda self, g: (g, g))  # wrong for both inputs
    with pytest.raises(GradcheckError, match=r"^a \* b: input 0 \(a, shape \(2,\)\): wrong gradient"):
        gradcheck(lambda a, b: a * b, [a, b], name="a * b")
    with pytest.raises(GradcheckError, match=r"^input 0 \(a, shape \(2,\)\)"):
        gradcheck(lambda a, b: a * b, [a, b])


def test_a_rule_that_returns_one_gradient_bare_is_told_to_return_a_tuple_of_one():
    "A solver's ReLU returned the Tensor itself: the message showed 'Tensor Tensor([[ 0.12...' cut across two lines."

    class Bare(E.Function):
        def apply(self, grad_output):
            return grad_output * 2

    with pytest.raises(GradcheckError) as raised:
        check_backward(Bare, lambda v: 2 * v, [np.ones((3, 4))])
    assert str(raised.value).endswith(
        "returned one Tensor of shape (3, 4): for one input return a tuple of one, (grad,) (mind the comma)"
    )


def _run_backward_per_arrival(root):
    "The named mistake of notebook 06: each gradient passed on as soon as it arrives, each arrival calling the rule."
    from tinytorch.core import autograd

    leaves = []

    def visit(tensor, grad):
        function = tensor._grad_fn
        if function is None:
            leaves.append((tensor, grad))
            return
        inputs = function.saved_tensors
        for inp, g in zip(inputs, autograd._call_rule(function, grad, False)):
            if g is not None and getattr(inp, "requires_grad", False):
                visit(inp, g)
        function.release()

    with autograd.set_grad_enabled(False), autograd._one_pass():
        visit(root, autograd._seed_gradient(root, None))
    return leaves


def test_a_rule_called_twice_in_one_backward_is_named_not_blamed_on_a_freed_graph():
    w = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    x = w * 2  # a result used twice: its rule must wait for both gradients
    with pytest.raises(
        RuntimeError,
        match=r"MulNumberBackward's rule was called a second time in one backward\(\), after the loop had released it",
    ):
        _run_backward_per_arrival((x * x + x).sum())


def test_a_graph_freed_by_an_earlier_backward_still_says_retain_graph():
    w = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = w * 2
    y.sum().backward()  # frees y's rule
    with pytest.raises(
        RuntimeError, match=r"MulNumberBackward a second time, but its graph was freed .*retain_graph=True"
    ):
        (y * 3).sum().backward()  # this pass runs its own rules, then reaches the freed one
    v = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    kept = (v * v).sum()
    kept.backward(retain_graph=True)
    kept.backward()  # a new pass: every rule once again
    assert np.allclose(v.grad.data, 2 * (2 * v.data))
