"""Issue 25, points 3 and 5: the API users reach for when they come from PyTorch or TinyTorch. Shapes (`permute`,
`transpose(dim0, dim1)` with negative axes, `view`, `numel`), `masked_fill`, activations as Tensor methods and GELU,
weight decay in SGD and Adam and AdamW, strided and 'same'-padded convolutions, strided max pooling and average pooling,
advanced indexing with two index arrays, and `grad()` of intermediate results. Every new backward rule is checked
against central differences in float64 on random shapes; the PyTorch comparisons run only where torch is installed.
The first test is the done-criterion of the issue: a user's test, written as they would write it, runs unchanged."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tinytorch.core import activations as A
from tinytorch.core import conv as C
from tinytorch.core import elementwise as E
from tinytorch.core import reductions as R
from tinytorch.core.autograd import grad
from tinytorch.core.conv import AvgPool2d, Conv2d, MaxPool2d
from tinytorch.core.gradcheck import check_backward, gradcheck, numerical_grad
from tinytorch.core.nn import GELU, Sequential
from tinytorch.core.optimizers import SGD, Adam, AdamW
from tinytorch.core.tensor import Tensor, transpose_axes


def test_a_users_tinytorch_style_test_runs_unchanged():
    # Written as a PyTorch or TinyTorch user writes a test; nothing here is specific to this course.
    np.random.seed(0)
    x = Tensor(np.random.randn(3, 4), requires_grad=True)
    (x * x).sum().backward()
    assert np.allclose(x.grad, 2 * x.data)

    Q = Tensor(np.random.randn(2, 5, 8), requires_grad=True)
    K = Tensor(np.random.randn(2, 5, 8), requires_grad=True)
    scores = Q @ K.transpose(-2, -1) / np.sqrt(8)
    assert scores.shape == (2, 5, 5)
    scores.sum().backward()
    assert np.allclose(Q.grad, np.broadcast_to(K.data.sum(axis=1, keepdims=True), (2, 5, 8)) / np.sqrt(8))

    conv = Conv2d(1, 4, 3, stride=2, padding=1)
    assert (conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride) == (1, 4, (3, 3), 2)
    params = conv.parameters()
    optimizer = SGD(params, lr=0.1, weight_decay=1e-4)
    optimizer.zero_grad()
    out = conv(Tensor(np.random.randn(2, 1, 8, 8)))
    assert out.shape == (2, 4, 4, 4)
    out.relu().mean().backward()
    before, gradient = conv.weight.data.copy(), conv.weight.grad.data.copy()
    optimizer.step()
    assert np.allclose(conv.weight.data, before - 0.1 * (gradient + 1e-4 * before))


# 1. Shapes: transpose(dim0, dim1), permute, view, numel


def two_axes(ndim):
    "Two distinct axes of a tensor with `ndim` axes, each drawn as a positive or a negative number."
    pair = st.lists(st.integers(0, ndim - 1), min_size=2, max_size=2, unique=True)
    signs = st.lists(st.booleans(), min_size=2, max_size=2)
    return st.tuples(pair, signs).map(lambda ps: tuple(a - ndim if neg else a for a, neg in zip(*ps)))


@settings(max_examples=30, deadline=None)
@given(shape=hnp.array_shapes(min_dims=2, max_dims=4, max_side=4), seed=st.integers(0, 2**16), data=st.data())
def test_two_axes_given_to_transpose_are_swapped_as_torch_transpose_does(shape, seed, data):
    dim0, dim1 = data.draw(two_axes(len(shape)))
    rng = np.random.default_rng(seed)
    x = Tensor(rng.normal(size=shape), requires_grad=True)
    out = x.transpose(dim0, dim1)
    assert np.array_equal(out.data, np.swapaxes(x.data, dim0, dim1))
    weights = rng.normal(size=out.shape)
    (out * Tensor(weights)).sum().backward()
    (expected,) = numerical_grad(lambda v: np.sum(np.swapaxes(v, dim0, dim1) * weights), [x.data])
    assert np.allclose(x.grad.data, expected, atol=1e-7)
    axes = transpose_axes(len(shape), (dim0, dim1))
    assert check_backward(R.TransposeBackward, np.transpose, [x.data], axes=axes)


def test_numpys_forms_of_transpose_still_permute():
    x = Tensor(np.arange(24.0).reshape(2, 3, 4))
    assert x.transpose().shape == (4, 3, 2) and x.T.shape == (4, 3, 2), "no axes: reversed, as in NumPy"
    assert np.array_equal(x.transpose(2, 0, 1).data, np.transpose(x.data, (2, 0, 1)))
    assert np.array_equal(x.transpose((1, 0, 2)).data, np.transpose(x.data, (1, 0, 2)))
    assert np.array_equal(x.transpose([-1, 0, 1]).data, np.transpose(x.data, (2, 0, 1)))
    matrix = Tensor([[1.0, 2.0], [3.0, 4.0]])
    assert np.array_equal(matrix.transpose(1, 0).data, matrix.data.T)
    assert np.array_equal(matrix.transpose(0, 1).data, matrix.data.T), "two separate ints swap, as in PyTorch"
    assert np.array_equal(matrix.transpose((0, 1)).data, matrix.data), "one tuple is NumPy's permutation"


def test_transpose_of_an_axis_that_does_not_exist_names_the_range():
    with pytest.raises(ValueError, match=r"3 axes has axes -3 to 2"):
        Tensor(np.ones((2, 3, 4))).transpose(0, 3)


@settings(max_examples=20, deadline=None)
@given(shape=hnp.array_shapes(min_dims=1, max_dims=4, max_side=4), seed=st.integers(0, 2**16))
def test_permute_view_and_numel_mean_what_they_mean_in_pytorch(shape, seed):
    rng = np.random.default_rng(seed)
    order = tuple(int(a) for a in rng.permutation(len(shape)))
    x = Tensor(rng.normal(size=shape), requires_grad=True)
    assert x.numel() == int(np.prod(shape)) and isinstance(x.numel(), int)
    assert np.array_equal(x.permute(*order).data, np.transpose(x.data, order))
    assert np.array_equal(x.permute(order).data, np.transpose(x.data, order))
    assert x.view(-1).shape == (x.numel(),) and x.view(x.numel(), 1).shape == (x.numel(), 1)
    assert gradcheck(lambda x: x.permute(*order).view(-1) * Tensor(np.arange(x.numel(), dtype=float)), [x])


# 2. masked_fill


def mask_for(shape, rng):
    "A boolean mask that broadcasts to `shape`: some axes of length 1, maybe fewer leading axes."
    mask_shape = tuple(1 if rng.random() < 0.4 else n for n in shape)[int(rng.integers(0, len(shape) + 1)) :]
    return rng.random(mask_shape) < 0.5


@settings(max_examples=30, deadline=None)
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), seed=st.integers(0, 2**16))
def test_masked_fill_has_gradient_zero_where_it_filled_and_one_elsewhere(shape, seed):
    rng = np.random.default_rng(seed)
    x, mask = rng.normal(size=shape), mask_for(shape, rng)
    assert check_backward(E.MaskedFillBackward, lambda a, mask: np.where(mask, 7.0, a), [x], mask=mask)
    t = Tensor(x, requires_grad=True)
    out = t.masked_fill(Tensor(mask), -np.inf)
    assert np.array_equal(out.data, np.where(mask, -np.inf, x)) and out.shape == x.shape
    g = rng.normal(size=shape)
    out.backward(Tensor(g))
    assert np.array_equal(t.grad.data, np.where(mask, 0.0, g))
    assert gradcheck(lambda t: t.masked_fill(mask, 3.0) * t, [Tensor(x, requires_grad=True)])


def test_masked_fill_is_differentiable_twice_and_keeps_float32():
    x = Tensor([1.0, -2.0, 3.0], requires_grad=True)
    mask = np.array([False, True, False])
    (first,) = grad((x.masked_fill(mask, 0.0) ** 3).sum(), [x], create_graph=True)
    (second,) = grad(first.sum(), [x])
    assert np.allclose(first.data, [3.0, 0.0, 27.0]) and np.allclose(second.data, [6.0, 0.0, 18.0])
    x32 = np.float32([[1.0, 2.0], [3.0, 4.0]])
    assert check_backward(E.MaskedFillBackward, lambda a, mask: np.where(mask, 0, a), [x32], mask=np.eye(2, dtype=bool))
    assert Tensor(x32).masked_fill(np.eye(2, dtype=bool), -1e9).dtype == np.float32


def test_masked_fill_names_a_mask_that_is_not_boolean_or_does_not_fit():
    x = Tensor(np.ones((2, 3)))
    with pytest.raises(TypeError, match="boolean mask.*dtype int64"):
        x.masked_fill(np.array([1, 0, 1]), 0.0)
    with pytest.raises(ValueError, match=r"shape \(2,\) does not broadcast to the shape \(2, 3\)"):
        x.masked_fill(np.array([True, False]), 0.0)


# 3. Activations as Tensor methods, and GELU


def test_activations_are_tensor_methods_that_record_their_rules():
    rng = np.random.default_rng(3)
    data = rng.normal(size=(3, 4))
    for name, function, rule in [
        ("relu", A.relu, A.ReLUBackward),
        ("sigmoid", A.sigmoid, A.SigmoidBackward),
        ("tanh", A.tanh, A.TanhBackward),
        ("softmax", A.softmax, A.SoftmaxBackward),
        ("log_softmax", A.log_softmax, A.LogSoftmaxBackward),
    ]:
        x = Tensor(data, requires_grad=True)
        out = getattr(x, name)()
        assert np.array_equal(out.data, function(x).data) and isinstance(out._grad_fn, rule), name
    x = Tensor(data, requires_grad=True)
    assert np.allclose(x.softmax(0).data.sum(axis=0), 1.0) and np.allclose(x.log_softmax(axis=0).exp().data.sum(0), 1)
    assert gradcheck(lambda x: x.softmax(-1) * x.relu() + x.tanh().sigmoid(), [x])


def gelu_np(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


@settings(max_examples=30, deadline=None)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=5), seed=st.integers(0, 2**16))
def test_gelu_backward_agrees_with_central_differences(shape, seed):
    x = np.random.default_rng(seed).normal(scale=2.0, size=shape)
    assert check_backward(A.GELUBackward, gelu_np, [x])
    assert np.allclose(A.gelu(x).data, gelu_np(x))


def test_gelu_is_differentiable_twice_keeps_float32_and_is_a_module():
    x = Tensor(np.linspace(-3, 3, 7), requires_grad=True)
    (first,) = grad(A.gelu(x).sum(), [x], create_graph=True)
    (second,) = grad(first.sum(), [x])
    (slope,) = numerical_grad(lambda v: np.sum(gelu_np(v)), [x.data])
    step = 1e-4
    curvature = (gelu_np(x.data + step) - 2 * gelu_np(x.data) + gelu_np(x.data - step)) / step**2
    assert np.allclose(first.data, slope, atol=1e-7)
    assert np.allclose(second.data, curvature, atol=1e-5)
    assert check_backward(A.GELUBackward, gelu_np, [np.float32([[-1.5, 0.0, 2.0]])])
    net = Sequential(GELU())
    assert np.allclose(net(Tensor([1.0, -1.0])).data, gelu_np(np.array([1.0, -1.0])))


# 4. Weight decay, and AdamW


def quadratic_steps(optimizer_class, steps=4, **options):
    "The parameters after `steps` steps on the loss sum(p**2 * c); and the gradients the loss gave at each step."
    p = Tensor([1.0, -2.0, 0.5], requires_grad=True)
    c = Tensor([1.0, 3.0, -0.5])
    optimizer = optimizer_class([p], **options)
    grads = []
    for _ in range(steps):
        optimizer.zero_grad()
        (p * p * c).sum().backward()
        grads.append(p.grad.data.copy())
        optimizer.step()
    return p.data, grads


def test_sgd_and_adam_add_weight_decay_times_the_weight_to_the_gradient():
    lr, wd, mu = 0.05, 0.1, 0.9
    got, _ = quadratic_steps(SGD, lr=lr, momentum=mu, weight_decay=wd)
    p, c, v = np.array([1.0, -2.0, 0.5]), np.array([1.0, 3.0, -0.5]), np.zeros(3)
    for _ in range(4):
        v = mu * v + (2 * c * p + wd * p)
        p = p - lr * v
    assert np.allclose(got, p)

    got, _ = quadratic_steps(Adam, lr=lr, weight_decay=wd)
    p, m, u = np.array([1.0, -2.0, 0.5]), np.zeros(3), np.zeros(3)
    for t in range(1, 5):
        g = 2 * c * p + wd * p
        m, u = 0.9 * m + 0.1 * g, 0.999 * u + 0.001 * g * g
        p = p - lr * (m / (1 - 0.9**t)) / (np.sqrt(u / (1 - 0.999**t)) + 1e-8)
    assert np.allclose(got, p)
    without, _ = quadratic_steps(SGD, lr=lr)
    assert np.allclose(without, quadratic_steps(SGD, lr=lr, weight_decay=0.0)[0]), "weight_decay=0 changes nothing"


def test_adamw_shrinks_the_weights_apart_from_the_adam_step():
    lr, wd = 0.05, 0.2
    got, _ = quadratic_steps(AdamW, lr=lr, weight_decay=wd)
    p, c, m, u = np.array([1.0, -2.0, 0.5]), np.array([1.0, 3.0, -0.5]), np.zeros(3), np.zeros(3)
    for t in range(1, 5):
        g = 2 * c * p  # the moments never see the decay
        m, u = 0.9 * m + 0.1 * g, 0.999 * u + 0.001 * g * g
        p = p * (1 - lr * wd) - lr * (m / (1 - 0.9**t)) / (np.sqrt(u / (1 - 0.999**t)) + 1e-8)
    assert np.allclose(got, p)
    assert AdamW([Tensor([1.0], requires_grad=True)]).weight_decay == 0.01, "PyTorch's default"
    unused = Tensor([1.0, 1.0], requires_grad=True)
    AdamW([unused], lr=0.1).step()
    assert np.array_equal(unused.data, [1.0, 1.0]), "a parameter without a gradient is left alone, as in PyTorch"


def adam_reference(state, g, lr, eps=1e-8, b1=0.9, b2=0.999):
    "One Adam step of state = (value, m, u, t), written from the paper."
    value, m, u, t = state
    t += 1
    m, u = b1 * m + (1 - b1) * g, b2 * u + (1 - b2) * g * g
    return value - lr * (m / (1 - b1**t)) / (np.sqrt(u / (1 - b2**t)) + eps), m, u, t


def test_adam_counts_steps_per_parameter_and_adds_eps_after_the_square_root():
    a, b = Tensor([1.0, -2.0], requires_grad=True), Tensor([0.5, 3.0, -1.0], requires_grad=True)
    optimizer = Adam([a, b], lr=0.05)
    a_state, b_state = (a.data.copy(), 0.0, 0.0, 0), (b.data.copy(), 0.0, 0.0, 0)
    for step in range(4):
        uses_b = step != 1  # b gets no gradient at the second step: it is skipped, and its count waits
        optimizer.zero_grad()
        ((a * a).sum() + ((b * b * b * b).sum() if uses_b else 0.0)).backward()
        optimizer.step()
        a_state = adam_reference(a_state, 2 * a_state[0], 0.05)
        if uses_b:
            b_state = adam_reference(b_state, 4 * b_state[0] ** 3, 0.05)
    assert np.allclose(a.data, a_state[0]) and np.allclose(b.data, b_state[0])
    assert optimizer.t == [4, 3], "one step count per parameter, as PyTorch keeps state['step']"
    c = Tensor([0.05, -0.1, 0.2], requires_grad=True)
    optimizer, c_state = Adam([c], lr=0.01, eps=0.1), (c.data.copy(), 0.0, 0.0, 0)
    for _ in range(3):
        optimizer.zero_grad()
        (c * c).sum().backward()
        optimizer.step()
        c_state = adam_reference(c_state, 2 * c_state[0], 0.01, eps=0.1)
    assert np.allclose(c.data, c_state[0]), "sqrt(u_hat) + eps, not sqrt(u_hat + eps)"


def test_the_worked_examples_of_notebook_10_are_what_the_optimizers_compute():
    def two_steps(optimizer_class, **options):
        p = Tensor([2.0], requires_grad=True)
        optimizer, seen = optimizer_class([p], lr=0.1, **options), []
        for _ in range(2):
            optimizer.zero_grad()
            (p * p).sum().backward()
            optimizer.step()
            seen.append(float(p.data[0]))
        return seen, optimizer

    assert np.allclose(two_steps(SGD, momentum=0.5)[0], [1.6, 1.08])
    assert np.allclose(two_steps(SGD)[0], [1.6, 1.28])
    seen, adam = two_steps(Adam)
    assert np.allclose(seen, [1.9, 1.800166], atol=1e-6)
    assert np.allclose([adam.m[0][0], adam.u[0][0]], [0.74, 0.030424])
    assert np.allclose([adam.m[0][0] / (1 - 0.9**2), adam.u[0][0] / (1 - 0.999**2)], [3.895, 15.22], atol=1e-3)


# 5. Convolutions: stride and padding='same'; pooling with a stride; average pooling


@settings(max_examples=20, deadline=None)
@given(
    sizes=st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(1, 3), st.integers(1, 4), st.integers(1, 4)),
    image=st.tuples(st.integers(0, 4), st.integers(0, 4)),
    stride=st.integers(1, 3),
    padding=st.sampled_from([0, 1, 2, "valid"]),
    bias=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_strided_convolution_backward_agrees_with_central_differences(sizes, image, stride, padding, bias, seed):
    n, c, f, kh, kw = sizes
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, c, kh + image[0], kw + image[1]))
    inputs = [x, rng.normal(size=(f, c, kh, kw))] + ([rng.normal(size=f)] if bias else [])
    forward = C.conv2d_forward if bias else (lambda x, w, **options: C.conv2d_forward(x, w, None, **options))
    assert check_backward(C.Conv2dBackward, forward, inputs, stride=stride, padding=padding)
    out = forward(*inputs, stride=stride, padding=padding)
    pad = 0 if padding == "valid" else padding
    assert out.shape[2:] == ((x.shape[2] + 2 * pad - kh) // stride + 1, (x.shape[3] + 2 * pad - kw) // stride + 1)


@pytest.mark.parametrize("kernel", [1, 2, 3, 4, (3, 2), (2, 5)])
def test_same_padding_keeps_the_image_size_for_odd_and_even_kernels(kernel):
    rng = np.random.default_rng(5)
    conv = Conv2d(2, 3, kernel, padding="same", seed=0)
    x = Tensor(rng.normal(size=(2, 2, 6, 5)), requires_grad=True)
    assert conv(x).shape == (2, 3, 6, 5)
    assert gradcheck(lambda x, w, b: C.conv2d(x, w, b, padding="same"), [x, conv.weight, conv.bias])
    inputs = [x.data, conv.weight.data, conv.bias.data]
    assert check_backward(C.Conv2dBackward, C.conv2d_forward, inputs, padding="same")


@pytest.mark.parametrize("padding", [(1, 2), [0, 1], (0, 0)])
def test_a_padding_pair_pads_rows_and_columns_as_pytorch_does(padding):
    rng = np.random.default_rng(6)
    x, w, b = rng.normal(size=(2, 2, 5, 4)), rng.normal(size=(3, 2, 3, 2)), rng.normal(size=3)
    rows, columns = padding
    padded = np.pad(x, ((0, 0), (0, 0), (rows, rows), (columns, columns)))
    assert np.allclose(C.conv2d_forward(x, w, b, padding=padding), C.conv2d_forward(padded, w, b))
    assert check_backward(C.Conv2dBackward, C.conv2d_forward, [x, w, b], padding=padding, stride=2)
    conv = Conv2d(2, 3, (3, 2), padding=padding, seed=0)
    assert conv(Tensor(x)).shape == (2, 3, 5 + 2 * rows - 2, 4 + 2 * columns - 1)
    with pytest.raises(ValueError, match="a pair"):
        C.conv2d_forward(x, w, b, padding=(1, 2, 3))


def test_same_padding_with_a_stride_is_refused_with_a_message_not_a_crash_in_np_pad():
    x, w = Tensor(np.ones((1, 1, 5, 5))), Tensor(np.ones((1, 1, 3, 3)))
    for make in [lambda: C.conv2d(x, w, stride=2, padding="same"), lambda: Conv2d(1, 1, 3, stride=2, padding="same")]:
        with pytest.raises(ValueError, match="padding='same' needs stride=1"):
            make()
    with pytest.raises(ValueError, match="padding='full'"):
        C.conv2d(x, w, padding="full")


def test_conv2d_takes_pytorchs_arguments_in_pytorchs_order_and_keeps_them():
    conv = Conv2d(3, 8, (3, 5), 2, 1, bias=False, seed=0)
    assert (conv.in_channels, conv.out_channels, conv.kernel_size) == (3, 8, (3, 5))
    assert (conv.stride, conv.padding, conv.bias) == (2, 1, None) and conv.weight.shape == (8, 3, 3, 5)
    assert conv.parameters() == [conv.weight] and conv(Tensor(np.ones((1, 3, 9, 9)))).shape == (1, 8, 5, 4)
    assert repr(conv) == "Conv2d(3 → 8, 3×5, stride=2, padding=1)"
    assert np.array_equal(Conv2d(1, 16, 3, padding=1, seed=0).weight.data, Conv2d(1, 16, 3, 1, 1, seed=0).weight.data)


POOLS = [(C.MaxPool2dBackward, lambda x, kernel_size, stride: C.window(x, kernel_size, stride).max(axis=-1))]
POOLS += [(C.AvgPool2dBackward, lambda x, kernel_size, stride: C.window(x, kernel_size, stride).mean(axis=-1))]


@settings(max_examples=25, deadline=None)
@given(
    k=st.integers(1, 3),
    stride=st.one_of(st.none(), st.integers(1, 3)),
    extra=st.tuples(st.integers(0, 4), st.integers(0, 4)),
    seed=st.integers(0, 2**16),
)
@pytest.mark.parametrize("rule, forward", POOLS, ids=["MaxPool2dBackward", "AvgPool2dBackward"])
def test_pooling_with_any_stride_agrees_with_central_differences(rule, forward, k, stride, extra, seed):
    x = np.random.default_rng(seed).normal(size=(2, 2, k + extra[0], k + extra[1]))
    assert check_backward(rule, forward, [x], kernel_size=k, stride=stride)
    s = stride or k
    assert forward(x, k, stride).shape == (2, 2, extra[0] // s + 1, extra[1] // s + 1), "floor, as in PyTorch"


def test_pooling_modules_default_to_a_stride_of_their_kernel_and_keep_float32():
    x = Tensor(np.arange(25.0, dtype=np.float32).reshape(1, 1, 5, 5), requires_grad=True)
    assert MaxPool2d(2).stride == 2 and AvgPool2d(3, 1).stride == 1
    assert np.array_equal(MaxPool2d(2)(x).data, [[[[6, 8], [16, 18]]]]), "the last row and column are not pooled"
    assert np.array_equal(AvgPool2d(2)(x).data, [[[[3, 5], [13, 15]]]])
    AvgPool2d(3, stride=1)(x).sum().backward()
    coverage = np.array([1, 2, 3, 2, 1], dtype=np.float32)
    assert x.grad.dtype == np.float32 and np.allclose(x.grad.data, np.outer(coverage, coverage) / 9)
    assert repr(MaxPool2d(3, 2)) == "MaxPool2d(3, stride=2)" and repr(AvgPool2d(2)) == "AvgPool2d(2)"
    with pytest.raises(ValueError, match="at least 3×3 pixels"):
        MaxPool2d(3)(Tensor(np.ones((1, 1, 2, 5))))


def test_overlapping_max_pools_give_a_shared_maximum_both_gradients():
    x = Tensor(np.zeros((1, 1, 3, 5)), requires_grad=True)
    x.data[0, 0, 1, 2] = 1.0  # the maximum of both 3×3 windows at stride 2
    C.max_pool2d(x, 3, stride=2).sum().backward()
    assert x.grad.data[0, 0, 1, 2] == 2.0 and x.grad.data.sum() == 2.0


# 6. Indexing with two index arrays


@settings(max_examples=25, deadline=None)
@given(shape=hnp.array_shapes(min_dims=2, max_dims=3, max_side=4), count=st.integers(0, 6), seed=st.integers(0, 2**16))
def test_indexing_with_two_index_arrays_scatters_back_with_repeats_added(shape, count, seed):
    rng = np.random.default_rng(seed)
    rows, cols = rng.integers(0, shape[0], size=count), rng.integers(0, shape[1], size=count)
    data = rng.normal(size=shape)
    assert check_backward(R.IndexBackward, lambda v, index: v[index], [data], index=(rows, cols))
    for index in [(rows, cols), (Tensor(rows), Tensor(cols)), (list(rows), list(cols))]:
        x = Tensor(data, requires_grad=True)
        out = x[index]
        assert np.array_equal(out.data, data[rows, cols])
        g = rng.normal(size=out.shape)
        out.backward(Tensor(g))
        expected = np.zeros(shape)
        np.add.at(expected, (rows, cols), g)  # a pair picked twice gets both gradients
        assert np.allclose(x.grad.data, expected)


def test_mixed_and_boolean_advanced_indexes_have_their_gradients():
    rng = np.random.default_rng(6)
    x = Tensor(rng.normal(size=(4, 5)), requires_grad=True)
    rows = np.array([0, 3, 0])
    assert gradcheck(lambda x: x[rows, 1:4] * 2.0, [x])
    assert gradcheck(lambda x: x[Tensor(rows)][:, Tensor(np.array([4, 4]))], [x])
    assert gradcheck(lambda x: x[x.data > 0] ** 2, [x])


# 7. grad() of intermediate results


def test_grad_of_an_intermediate_result_is_its_gradient_and_touches_no_grad():
    rng = np.random.default_rng(7)
    x = Tensor(rng.normal(size=(3, 2)), requires_grad=True)
    w = Tensor(rng.normal(size=(2, 4)), requires_grad=True)
    h = x @ w
    unrelated = x * 2.0
    out = (A.tanh(h) * h).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reading nothing's .grad: no "not a leaf" warning either
        dh, dx, du, dout = grad(out, [h, x, unrelated, out], retain_graph=True)
    t = np.tanh(h.data)
    assert np.allclose(dh.data, t + h.data * (1 - t * t))
    assert np.allclose(dx.data, dh.data @ w.data.T) and du is None and np.allclose(dout.data, 1.0)
    assert x.grad is None and w.grad is None and h._grad is None
    (expected,) = numerical_grad(lambda v: np.sum(np.tanh(v) * v), [h.data])
    assert np.allclose(dh.data, expected, atol=1e-7)


def test_grad_of_an_intermediate_result_can_be_differentiated_again():
    x = Tensor([0.5, -1.0, 2.0], requires_grad=True)
    h = x * x
    (dh,) = grad((h * h * h).sum(), [h], create_graph=True)  # 3 h², with h = x²
    assert np.allclose(dh.data, 3 * x.data**4)
    (dx,) = grad(dh.sum(), [x])
    assert np.allclose(dx.data, 12 * x.data**3)
    retained = x * 3.0
    retained.retain_grad()
    (g,) = grad((retained * retained).sum(), [retained])
    assert np.allclose(g.data, 6 * x.data) and retained.grad is None, "grad() leaves even a retained .grad alone"


# 8. Against PyTorch


def test_the_new_rules_agree_with_pytorch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(8)

    def both(array):
        return Tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)

    def close(ours, theirs, atol=1e-10):
        return np.allclose(
            np.asarray(ours.data if isinstance(ours, Tensor) else ours), theirs.detach().numpy(), atol=atol
        )

    data = rng.normal(size=(2, 3, 4, 5))
    x, xt = both(data)
    weights = rng.normal(size=(2, 3, 5, 4))
    (x.transpose(-2, -1) * Tensor(weights)).sum().backward()
    (xt.transpose(-2, -1) * torch.tensor(weights)).sum().backward()
    assert close(x.grad, xt.grad)
    x, xt = both(data)
    (x.permute(3, 1, 0, 2).view(5, -1) * 2.0).sum().backward()
    (xt.permute(3, 1, 0, 2).reshape(5, -1) * 2.0).sum().backward()
    assert close(x.grad, xt.grad) and x.numel() == xt.numel()

    mask = rng.random((4, 1)) < 0.5
    x, xt = both(data)
    out, out_t = x.masked_fill(mask, -1e9).softmax(-1), xt.masked_fill(torch.tensor(mask), -1e9).softmax(-1)
    (out * Tensor(weights.transpose(0, 1, 3, 2))).sum().backward()
    (out_t * torch.tensor(weights.transpose(0, 1, 3, 2))).sum().backward()
    assert close(out, out_t) and close(x.grad, xt.grad)

    x, xt = both(rng.normal(scale=2.0, size=(4, 6)))
    out, out_t = A.gelu(x), F.gelu(xt, approximate="tanh")
    (out * out).sum().backward()
    (out_t * out_t).sum().backward()
    assert close(out, out_t) and close(x.grad, xt.grad)
    assert np.abs(A.gelu(x).data - F.gelu(xt).detach().numpy()).max() < 1e-3, "within 1e-3 of the exact erf form"

    for stride, padding in [(1, 0), (2, 1), (3, 2), (1, "same"), (2, "valid")]:
        (x, xt), (w, wt), (b, bt) = (
            both(rng.normal(size=(2, 3, 9, 8))),
            both(rng.normal(size=(4, 3, 4, 3))),
            both(rng.normal(size=4)),
        )
        out, out_t = C.conv2d(x, w, b, stride, padding), F.conv2d(xt, wt, bt, stride, padding)
        g = rng.normal(size=out.shape)
        out.backward(Tensor(g))
        out_t.backward(torch.tensor(g))
        assert close(out, out_t) and close(x.grad, xt.grad) and close(w.grad, wt.grad) and close(b.grad, bt.grad)

    for k, stride in [(2, None), (3, 2), (3, 1), (2, 3)]:
        for ours, theirs in [(C.max_pool2d, F.max_pool2d), (C.avg_pool2d, F.avg_pool2d)]:
            x, xt = both(rng.normal(size=(2, 3, 7, 6)))
            out, out_t = ours(x, k, stride), theirs(xt, k, stride)
            g = rng.normal(size=out.shape)
            out.backward(Tensor(g))
            out_t.backward(torch.tensor(g))
            assert close(out, out_t) and close(x.grad, xt.grad), (ours.__name__, k, stride)

    rows, cols = np.array([0, 2, 2, 1, 0]), np.array([1, 3, 3, 0, 1])
    x, xt = both(rng.normal(size=(3, 4)))
    g = rng.normal(size=5)
    x[Tensor(rows), Tensor(cols)].backward(Tensor(g))
    xt[torch.tensor(rows), torch.tensor(cols)].backward(torch.tensor(g))
    assert close(x.grad, xt.grad)

    x, xt = both(rng.normal(size=(3,)))
    h, ht = x * x, xt * xt
    (dh,) = grad((h.tanh() * h).sum(), [h])
    (dht,) = torch.autograd.grad((ht.tanh() * ht).sum(), [ht])
    assert close(dh, dht)


def test_the_optimizers_take_the_steps_pytorch_takes():
    torch = pytest.importorskip("torch")
    start, c = np.array([1.0, -2.0, 0.5]), np.array([1.0, 3.0, -0.5])
    cases = [
        (SGD, torch.optim.SGD, {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.1}),
        (SGD, torch.optim.SGD, {"lr": 0.05, "weight_decay": 0.3}),
        (Adam, torch.optim.Adam, {"lr": 0.05, "weight_decay": 0.1}),
        (AdamW, torch.optim.AdamW, {"lr": 0.05, "weight_decay": 0.2}),
        (AdamW, torch.optim.AdamW, {"lr": 0.05}),
    ]
    for ours, theirs, options in cases:
        got, _ = quadratic_steps(ours, steps=4, **options)
        p = torch.tensor(start, requires_grad=True)
        optimizer = theirs([p], **options)
        for _ in range(4):
            optimizer.zero_grad()
            (p * p * torch.tensor(c)).sum().backward()
            optimizer.step()
        assert np.allclose(got, p.detach().numpy()), (ours.__name__, options)
