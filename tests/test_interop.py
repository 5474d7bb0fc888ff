"""Issue 25: four wrong gradients (negative transpose axes, BCE's second derivative and float32 edge, d(x**0)/dx at 0,
leaves sharing one `.grad` array), each checked against central differences in float64, and the Tensor's NumPy
interoperability: conversions, `.grad` set from an array, and elementwise comparisons that keep identity hashing.
The PyTorch comparisons run only where torch is installed."""

import numpy as np
import pytest

from tinytorch.core import activations as A
from tinytorch.core import elementwise as E
from tinytorch.core import reductions as R
from tinytorch.core.autograd import grad, topological_order
from tinytorch.core.gradcheck import check_backward, gradcheck, numerical_grad
from tinytorch.core.higher_order import hessian_vector_product
from tinytorch.core.losses import bce_loss
from tinytorch.core.nn import Linear, Sequential
from tinytorch.core.optimizers import SGD
from tinytorch.core.tensor import Tensor


def hessian_by_differences(loss_fn, x, v, step=1e-5):
    "H·v by central differences of the gradient of loss_fn at x (a float64 leaf), along v."
    saved = x.data.copy()
    flat = []
    for sign in (1, -1):
        x.data = saved + sign * step * v
        flat.append(grad(loss_fn(), [x])[0].data)
    x.data = saved
    return (flat[0] - flat[1]) / (2 * step)


# 1. Four wrong gradients


@pytest.mark.parametrize(
    "shape, axes", [((2, 2, 2), (1, -1, 0)), ((2, 3, 4), (0, -1, 1)), ((2, 3, 4), (-1, -3, -2)), ((3, 4), (-1, 0))]
)
def test_transpose_with_negative_axes_sends_the_gradient_back_to_the_right_axes(shape, axes):
    rng = np.random.default_rng(0)
    x = Tensor(rng.normal(size=shape), requires_grad=True)
    weights = Tensor(rng.normal(size=np.transpose(x.data, axes).shape))
    (x.transpose(*axes) * weights).sum().backward()
    (expected,) = numerical_grad(lambda v: np.sum(np.transpose(v, axes) * weights.data), [x.data])
    assert np.allclose(x.grad.data, expected, atol=1e-7)
    assert check_backward(R.TransposeBackward, np.transpose, [x.data], axes=axes)
    assert gradcheck(lambda x: x.swapaxes(-1, 0) * 2.0, [x])


BCE_P, BCE_T = np.array([0.3, 0.6]), np.array([1.0, 0.0])


def test_bce_has_a_second_derivative():
    p = Tensor(BCE_P, requires_grad=True)
    loss_fn = lambda: bce_loss(p, Tensor(BCE_T))  # noqa: E731
    (hv,) = hessian_vector_product(loss_fn, [p], [np.ones(2)])
    expected = (BCE_T / BCE_P**2 + (1 - BCE_T) / (1 - BCE_P) ** 2) / 2  # t/p² + (1-t)/(1-p)², over N = 2
    assert np.allclose(hv.data, expected) and np.allclose(hv.data, [50 / 9, 3.125])
    assert np.allclose(hv.data, hessian_by_differences(loss_fn, p, np.ones(2)), atol=1e-6)


def test_bce_of_a_sigmoid_has_the_second_derivative_of_logistic_regression():
    rng = np.random.default_rng(1)
    z = Tensor(rng.normal(size=(3, 2)), requires_grad=True)
    t = Tensor(rng.integers(0, 2, size=(3, 2)).astype(float))
    loss_fn = lambda: bce_loss(A.sigmoid(z), t)  # noqa: E731
    v = rng.normal(size=(3, 2))
    (hv,) = hessian_vector_product(loss_fn, [z], [v])
    s = 1 / (1 + np.exp(-z.data))
    assert np.allclose(hv.data, s * (1 - s) * v / z.size)  # d²/dz² of the loss is σ'(z) / N
    assert np.allclose(hv.data, hessian_by_differences(loss_fn, z, v), atol=1e-6)


def test_bce_in_float32_stays_finite_at_probabilities_0_and_1():
    p = Tensor(np.array([0.0, 1.0, 1.0, 0.0, 0.5], dtype=np.float32), requires_grad=True)
    t = Tensor(np.array([1.0, 0.0, 1.0, 0.0, 1.0], dtype=np.float32))
    loss = bce_loss(p, t)
    loss.backward()
    assert np.isfinite(loss.item()) and np.all(np.isfinite(p.grad.data))
    assert loss.dtype == np.float32 and p.grad.dtype == np.float32
    with np.errstate(all="raise"):
        assert np.isclose(bce_loss(Tensor(np.float32([1.0])), Tensor(np.float32([1.0]))).item(), 0, atol=1e-6)


@pytest.mark.parametrize("probabilities", [[1.5, 0.5], [-0.25, 0.5], [3.0, -2.0]])
def test_bce_refuses_probabilities_outside_0_and_1(probabilities):
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\].*sigmoid"):
        bce_loss(Tensor(probabilities), Tensor([1.0, 0.0]))


def test_x_to_the_power_0_has_gradient_0_even_at_0():
    x = Tensor([0.0, -1.5, 2.0], requires_grad=True)
    with np.errstate(all="raise"):  # no 0 * inf on the way
        (x**0).sum().backward()
    assert np.array_equal(x.grad.data, [0.0, 0.0, 0.0])
    assert check_backward(E.PowBackward, lambda a, exponent: a**exponent, [np.array([0.0, -1.5, 2.0])], exponent=0)
    (first,) = grad((x**0 + x**2).sum(), [x], create_graph=True)
    (second,) = grad(first.sum(), [x])
    assert np.allclose(first.data, 2 * x.data) and np.allclose(second.data, 2.0)


def test_two_leaves_never_share_a_gradient_array():
    x, y = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0, 4.0], requires_grad=True)
    (x + y).sum().backward()
    assert x.grad is not y.grad and not np.shares_memory(x.grad.data, y.grad.data)
    np.clip(x.grad.data, 0, 0.5, out=x.grad.data)  # gradient clipping, in place
    assert np.array_equal(x.grad.data, [0.5, 0.5]) and np.array_equal(y.grad.data, [1.0, 1.0])

    column, row = Tensor([[1.0], [2.0]], requires_grad=True), Tensor([5.0, 6.0], requires_grad=True)
    (column.reshape(2) + row).sum().backward()  # the reshape's gradient is a view of the one the sum hands on
    assert not np.shares_memory(column.grad.data, row.grad.data)
    column.grad.data *= 0
    assert np.array_equal(row.grad.data, [1.0, 1.0])


def test_gradients_stay_distinct_and_differentiable_with_create_graph():
    x, y = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0, 4.0], requires_grad=True)
    s = x + y
    (s * s).sum().backward(create_graph=True)  # x and y get the one gradient of s, 2 (x + y)
    assert np.allclose(x.grad.data, [8.0, 12.0]) and not np.shares_memory(x.grad.data, y.grad.data)
    (second,) = grad(x.grad.sum(), [y])
    assert np.allclose(second.data, 2.0)


def test_the_four_fixes_agree_with_pytorch():
    torch = pytest.importorskip("torch")
    data = np.arange(24.0).reshape(2, 3, 4)
    x, xt = Tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    (x.transpose(0, -1, 1) * Tensor(np.arange(24.0).reshape(2, 4, 3))).sum().backward()
    (xt.permute(0, -1, 1) * torch.arange(24.0, dtype=torch.float64).reshape(2, 4, 3)).sum().backward()
    assert np.allclose(x.grad.data, xt.grad.numpy())

    p, pt = Tensor(BCE_P, requires_grad=True), torch.tensor(BCE_P, requires_grad=True)
    (hv,) = hessian_vector_product(lambda: bce_loss(p, Tensor(BCE_T)), [p], [np.ones(2)])
    (g,) = torch.autograd.grad(
        torch.nn.functional.binary_cross_entropy(pt, torch.tensor(BCE_T)), [pt], create_graph=True
    )
    (hvt,) = torch.autograd.grad(g.sum(), [pt])
    assert np.allclose(hv.data, hvt.numpy(), atol=1e-4)

    z, zt = Tensor([0.0, 3.0], requires_grad=True), torch.tensor([0.0, 3.0], dtype=torch.float64, requires_grad=True)
    (z**0).sum().backward()
    (zt**0).sum().backward()
    assert np.array_equal(z.grad.data, zt.grad.numpy())


# 2. NumPy interoperability


def test_numpy_reads_a_tensor_as_its_array():
    t = Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    assert np.asarray(t) is t.data and np.shares_memory(np.asarray(t, copy=False), t.data)
    assert not np.shares_memory(np.array(t), t.data), "np.array copies by default"
    assert np.asarray(t, dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError):
        np.asarray(t, dtype=np.float32, copy=False)  # NumPy 2: a copy is needed, and copy=False forbids it
    assert np.allclose(t, [[1, 2], [3, 4]]) and np.stack([t, t]).shape == (2, 2, 2) and np.exp(t).shape == (2, 2)
    for result in [np.ones(2) + Tensor([1.0, 2.0]), np.float64(2.0) * Tensor([1.0, 2.0])]:
        assert isinstance(result, Tensor), "NumPy still leaves arithmetic with a Tensor to the Tensor"


def test_a_one_element_tensor_converts_to_python_numbers():
    assert float(Tensor(2.5)) == 2.5 and int(Tensor(3.7)) == 3 and int(Tensor([[7]])) == 7
    assert Tensor([[1.5]]).item() == 1.5 and isinstance(Tensor(2).item(), int)
    for convert in (float, int, Tensor.item):
        with pytest.raises((TypeError, ValueError)):
            convert(Tensor([1.0, 2.0]))


def test_numpy_gives_the_array_and_copy_a_new_tensor_outside_the_graph():
    x = Tensor([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    assert x.numpy() is x.data and isinstance(y.numpy(), np.ndarray)
    c = y.copy()
    assert isinstance(c, Tensor) and np.array_equal(c.data, [3.0, 6.0]) and c.dtype == y.dtype
    assert not c.requires_grad and c._grad_fn is None and not np.shares_memory(c.data, y.data)
    c.data[0] = 100.0
    assert y.data[0] == 3.0


def test_a_numpy_array_assigned_to_grad_is_stored_as_a_tensor_and_sgd_uses_it():
    w = Tensor([1.0, 2.0], requires_grad=True)
    w.grad = np.array([0.5, -1.0])
    assert isinstance(w.grad, Tensor) and np.array_equal(w.grad.data, [0.5, -1.0])
    SGD([w], lr=0.1).step()
    assert np.allclose(w.data, [0.95, 2.1])
    w.grad = None
    assert w.grad is None
    (w * w).sum().backward()
    assert np.allclose(w.grad.data, 2 * w.data), "backward() starts from None again"


COMPARISONS = [
    (lambda a, b: a == b, np.equal),
    (lambda a, b: a != b, np.not_equal),
    (lambda a, b: a < b, np.less),
    (lambda a, b: a <= b, np.less_equal),
    (lambda a, b: a > b, np.greater),
    (lambda a, b: a >= b, np.greater_equal),
]


@pytest.mark.parametrize("compare, numpy_op", COMPARISONS)
def test_comparisons_give_boolean_tensors_without_gradients(compare, numpy_op):
    a = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    b = np.array([2.0, 2.0, 2.0])
    x = Tensor(a, requires_grad=True)
    for other, other_array in [(Tensor(b, requires_grad=True), b), (b, b), (2.0, 2.0), (2, 2)]:
        result = compare(x, other)
        assert isinstance(result, Tensor) and result.dtype == np.bool_
        assert np.array_equal(result.data, numpy_op(a, other_array))
        assert not result.requires_grad and result._grad_fn is None
    flipped = compare(2.0, x)  # Python asks the Tensor: 2.0 < x runs x > 2.0
    assert isinstance(flipped, Tensor) and np.array_equal(flipped.data, numpy_op(2.0, a))
    from_numpy = compare(b, x)
    assert isinstance(from_numpy, Tensor) and np.array_equal(from_numpy.data, numpy_op(b, a))


def test_a_comparison_of_unfitting_shapes_names_both_shapes():
    with pytest.raises(ValueError, match=r"a < b: shapes \(2, 3\) and \(4,\) do not broadcast"):
        _ = Tensor(np.ones((2, 3))) < Tensor(np.ones(4))


def test_a_comparison_decides_an_if_only_for_one_element():
    assert Tensor(1.0) == 1.0 and not (Tensor([2.0]) < 1.0) and Tensor([[0.5]]) <= 0.5
    assert not Tensor(0.0) and Tensor([3.0])
    with pytest.raises(ValueError):
        bool(Tensor([1.0, 2.0]) == 1.0)


def test_tensors_hash_by_identity_so_equal_values_stay_distinct_keys():
    a, b = Tensor([1.0, 2.0]), Tensor([1.0, 2.0])
    assert hash(a) != hash(b) and len({a, b}) == 2 and {a: "a", b: "b"}[b] == "b"
    assert a in {a} and b not in {a}


def test_the_engine_keeps_tensors_of_equal_values_apart():
    w1 = Tensor(np.ones((2, 2)), requires_grad=True)
    w2 = Tensor(np.ones((2, 2)), requires_grad=True)
    net = Sequential(Linear(w1, None), Linear(w2, None))
    params = net.parameters()
    assert len(params) == 2 and params[0] is w1 and params[1] is w2
    x = Tensor(np.ones((3, 2)))
    out = net(x).sum()
    assert sum(t is w1 for t in topological_order(out)) == 1 and sum(t is w2 for t in topological_order(out)) == 1
    out.backward()
    assert np.allclose(w1.grad.data, 6.0) and np.allclose(w2.grad.data, 6.0)
    a, b = Tensor([1.0, 2.0], requires_grad=True), Tensor([1.0, 2.0], requires_grad=True)
    assert gradcheck(lambda a, b: a * b + a, [a, b])
    assert [g is not None for g in grad((a * 2.0).sum(), [b, a], retain_graph=True)] == [False, True]
