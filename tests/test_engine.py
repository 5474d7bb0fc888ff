"""The reference package: every backward class checked in float64 by central differences, on random shapes
(broadcasting included), plus the seed examples, the engine's guarantees and its error messages."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from tinytorch.core.tensor import Tensor
from tinytorch.core.autograd import enable_autograd, grad
from tinytorch.core.function import no_grad
from tinytorch.core.gradcheck import GradcheckError, check_backward, gradcheck, numerical_grad
from tinytorch.core import elementwise as E, reductions as R, activations as A, losses as L, conv as C, embedding as M
from tinytorch.core.nn import Linear, ReLU, Sequential, Tanh
from tinytorch.core.losses import CrossEntropy
from tinytorch.core.higher_order import hessian_vector_product

BINARY = [(E.AddBackward, np.add), (E.SubBackward, np.subtract), (E.MulBackward, np.multiply),
          (E.DivBackward, np.divide)]


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
    check_backward(E.PowBackward, lambda a, exponent: a ** exponent, [positive], exponent=2.5)
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


@pytest.mark.parametrize("shape_a, shape_b", [((2, 3), (3, 4)), ((3,), (3, 2)), ((2, 3), (3,)), ((4,), (4,)),
                                              ((2, 2, 3), (3, 5)), ((1, 3, 2), (4, 2, 3))])
def test_matmul_backward(shape_a, shape_b):
    rng = np.random.default_rng(1)
    assert check_backward(R.MatmulBackward, np.matmul, [rng.normal(size=shape_a), rng.normal(size=shape_b)])


def test_losses_conv_pool_embedding_rules():
    rng = np.random.default_rng(2)
    ce = lambda z, y: -np.mean(A._stable_log_softmax(z, 1)[np.arange(len(y)), y])
    check_backward(L.CrossEntropyBackward, ce, [rng.normal(size=(6, 4)) * 50, rng.integers(0, 4, size=6)])
    check_backward(L.MSEBackward, lambda p, t: np.mean((p - t) ** 2), [rng.normal(size=(3, 2)), rng.normal(size=(3, 2))])
    check_backward(L.BCEBackward, lambda p, t: -np.mean(t * np.log(p) + (1 - t) * np.log(1 - p)),
                   [rng.uniform(0.05, 0.95, size=5), rng.uniform(size=5)])
    check_backward(C.Conv2dBackward, C.conv2d_forward, [rng.normal(size=(2, 2, 5, 4)), rng.normal(size=(3, 2, 3, 2)),
                                                        rng.normal(size=3)], padding=1)
    check_backward(C.MaxPool2dBackward, lambda x: C.window(x, 2).max(axis=-1), [rng.normal(size=(2, 3, 4, 6))])
    check_backward(M.EmbeddingBackward, lambda w, ids: w[ids], [rng.normal(size=(5, 3))], ids=np.array([[1, 1], [4, 1]]))


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
    with pytest.raises(GradcheckError, match=r"input 1 \(shape \(2, 2\)\): wrong gradient at index \(\d, \d\): analytic"):
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
    linear = Linear(W, b); relu = ReLU()
    x = Tensor(np.random.randn(3), requires_grad=True)
    loss = relu(linear(x)).sum()
    loss.backward()
    assert (W.grad.shape, b.grad.shape, x.grad.shape) == ((2, 3), (2,), (3,))


def test_seed_example_three_cross_entropy():
    logits = Tensor(np.random.randn(4, 10), requires_grad=True)
    targets = np.array([3, 0, 9, 1])
    loss = CrossEntropy()(logits, targets)
    loss.backward()
    assert loss.shape == () and logits.grad.shape == (4, 10)


def test_enable_autograd_is_idempotent_and_covers_older_tensors():
    before = Tensor([1.0, 2.0])
    add = Tensor.__add__
    enable_autograd(); enable_autograd()
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


@pytest.mark.parametrize("action, words", [
    (lambda: (Tensor([1.0, 2.0], requires_grad=True) * 2).backward(), "needs a single number, but this tensor has shape (2,)"),
    (lambda: Tensor([1.0]).sum().backward(), "does not require a gradient"),
    (lambda: Tensor(np.ones((2, 3))) @ Tensor(np.ones((2, 3))), "a has 3 columns but b has 2 rows"),
    (lambda: Tensor(np.ones((2, 3))) + Tensor(np.ones(4)), "Cannot compute a + b: shapes (2, 3) and (4,) do not broadcast"),
    (lambda: L.cross_entropy(Tensor(np.ones((2, 3))), [0, 5]), "must lie in 0..2"),
])
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
    (first,) = grad(x ** 3, [x], create_graph=True)
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
    check_backward(lambda values, index: R.ScatterAddBackward(values, index),
                   lambda v, index: R.scatter_add(Tensor(v), index, (4, 2)).data, [rng.normal(size=(3, 2))], index=index)
    x = Tensor(rng.normal(size=(4, 2)), requires_grad=True)
    (g,) = grad((x[index] ** 2).sum(), [x], create_graph=True)
    (second,) = grad(g.sum(), [x])
    assert np.allclose(second.data, 2 * np.bincount(index, minlength=4)[:, None] * np.ones((4, 2)))
