"""Issue 45, point 1: float32 as a PyTorch user asks for it. `dtype=` on creation and in the layers, `Tensor.float()`,
`.double()` and `.to()`, `Module.float()` and `.double()`, a default dtype (`set_default_dtype`), optimizer states in
the parameter's dtype, and a leaf's gradient in the leaf's dtype whatever dtype the computation after it used. The
last test compares random programs of mixed dtypes with PyTorch, where torch is installed."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tinytorch as tt
from tinytorch.core.autograd import grad
from tinytorch.core.conv import Conv2d
from tinytorch.core.embedding import Embedding
from tinytorch.core.function import Function
from tinytorch.core.losses import cross_entropy
from tinytorch.core.nn import Linear, ReLU, Sequential
from tinytorch.core.norm import BatchNorm1d, LayerNorm
from tinytorch.core.optimizers import SGD, Adam
from tinytorch.core.tensor import Tensor, get_default_dtype, set_default_dtype


@pytest.fixture
def float32_default():
    set_default_dtype(np.float32)
    try:
        yield
    finally:
        set_default_dtype(np.float64)


def test_a_float32_leaf_times_a_float64_constant_gets_a_float32_gradient_as_in_pytorch():
    x = Tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    y = x * Tensor(np.full(3, 2.0))  # NumPy promotes the product to float64
    assert y.dtype == np.float64
    y.sum().backward()
    assert x.grad.dtype == np.float32 and np.array_equal(x.grad.data, [2, 2, 2])


def test_a_hessian_vector_product_keeps_each_parameters_dtype_an_unused_ones_too():
    "14's given last line made float64 zeros for a float32 parameter the loss does not use (a student's finding)."
    from tinytorch.core.higher_order import hessian_vector_product

    w, unused = (Tensor(np.ones(n, np.float32), requires_grad=True) for n in (3, 2))
    cubic = hessian_vector_product(lambda: (w * w * w).sum(), [w, unused], [np.ones(3), np.ones(2)])
    linear = hessian_vector_product(lambda: (w * 3).sum(), [w], [np.ones(3)])  # no second derivative at all
    assert [h.dtype for h in cubic + linear] == [np.float32] * 3
    assert np.allclose(cubic[0].data, 6) and not cubic[1].data.any() and not linear[0].data.any()


def test_float_double_and_to_convert_and_send_the_gradient_back_in_the_inputs_dtype():
    x = Tensor([1.5, -2.0], requires_grad=True)
    assert Tensor([1, 2], dtype=np.float32).dtype == np.float32
    assert x.double() is x and x.to(np.float64) is x  # the same dtype: the tensor itself, as in PyTorch
    y = x.float()
    assert y.dtype == np.float32 and type(y._grad_fn).__name__ == "CastBackward"
    (y * y).sum().backward()
    assert x.grad.dtype == np.float64 and np.allclose(x.grad.data, [3.0, -4.0])
    (g,) = grad((x.float().double() ** 3).sum(), [x], create_graph=True)
    assert g.dtype == np.float64 and g.requires_grad  # the cast records itself: it can be differentiated again


def test_the_default_dtype_makes_python_floats_and_new_layers_float32(float32_default):
    assert get_default_dtype() == np.float32 and tt.get_default_dtype() == np.float32
    assert Tensor([0.5, 1.0]).dtype == np.float32 and Tensor(2.0).dtype == np.float32
    assert Tensor([1, 2]).dtype == np.int64  # integers stay integers, as in PyTorch
    assert Tensor([1, 2], requires_grad=True).dtype == np.float32
    assert Tensor(np.zeros(2)).dtype == np.float64  # an array keeps its dtype, as torch.from_numpy
    for layer in (Linear(3, 2), Conv2d(1, 2, 3), Embedding(4, 2), BatchNorm1d(3), LayerNorm(3)):
        assert {p.dtype for p in layer.parameters()} == {np.dtype(np.float32)}, layer


def test_set_default_dtype_refuses_a_dtype_that_is_not_floating_point():
    with pytest.raises(TypeError, match="floating point dtype such as np.float32; got int64"):
        set_default_dtype(np.int64)
    assert get_default_dtype() == np.float64


def test_layers_take_a_dtype_and_a_float32_step_stays_float32_states_included():
    rng = np.random.default_rng(0)
    model = Sequential(Linear(4, 8, seed=0, dtype=np.float32), ReLU(), Linear(8, 3, seed=1, dtype=tt.float32))
    x, labels = Tensor(rng.normal(size=(5, 4)).astype(np.float32)), rng.integers(0, 3, 5)
    for optimizer in (SGD(model.parameters(), lr=0.1, momentum=0.9), Adam(model.parameters())):
        optimizer.zero_grad()
        loss = cross_entropy(model(x), labels)
        loss.backward()
        optimizer.step()
        assert loss.dtype == np.float32
        assert (
            {p.dtype for p in model.parameters()}
            == {p.grad.dtype for p in model.parameters()}
            == {np.dtype(np.float32)}
        )
    assert {v.dtype for v in SGD(model.parameters(), momentum=0.9).velocity} == {np.dtype(np.float32)}
    assert (
        Conv2d(1, 2, 3, dtype=np.float32).weight.dtype == Embedding(3, 2, dtype=np.float32).weight.dtype == np.float32
    )


def test_an_optimizer_keeps_its_states_in_the_parameters_dtype_when_a_gradient_is_set_by_hand():
    p = Tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    optimizer = Adam([p], lr=0.1)
    p.grad = np.full(3, 0.5)  # float64
    optimizer.step()
    assert p.dtype == optimizer.m[0].dtype == optimizer.u[0].dtype == np.float32


def test_module_float_and_double_convert_parameters_and_buffers_in_place():
    model = Sequential(Linear(3, 4, seed=0), BatchNorm1d(4), Sequential(Linear(4, 2, seed=1)))
    weights = model.parameters()
    before = [w.data.copy() for w in weights]
    assert model.float() is model
    assert model.parameters() == weights  # the same objects: an optimizer made before still holds them
    assert {w.dtype for w in weights} == {np.dtype(np.float32)}
    assert model.layers[1].running_mean.dtype == model.layers[1].running_var.dtype == np.float32
    assert all(np.allclose(w.data, b, atol=1e-7) for w, b in zip(weights, before))
    out = model(Tensor(np.ones((2, 3), dtype=np.float32)))
    assert out.dtype == np.float32
    out.sum().backward()
    model.double()
    assert {w.dtype for w in weights} == {w.grad.dtype for w in weights} == {np.dtype(np.float64)}


def test_grad_of_an_intermediate_result_uses_a_field_every_function_declares():
    assert Function.asked_grads is None  # declared on the class, as retained_output, not added later
    x = Tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    (gy,) = grad((y * 3.0).sum(), [y])
    assert np.array_equal(gy.data, [3.0, 3.0]) and y._grad_fn.asked_grads is None


# Random programs against PyTorch ---------------------------------------------------------------------------------

DTYPES = (np.float32, np.float64)
UNARY = ("exp", "tanh", "sigmoid", "relu", "neg", "float", "double", "T2", "sum0", "square")
BINARY = ("add", "sub", "mul", "div")


def run_program(lib, program, leaves, constant):
    "Run `program` with tinytorch (lib is tt) or torch on leaves a, b and a constant c; return the scalar result."
    y = leaves[0]
    for op, arg in program:
        if op in BINARY:
            other = {"b": leaves[1], "c": constant, "k": 0.75}[arg]
            if op == "div":
                other = other * other + 1.0 if arg != "k" else other  # a denominator away from 0
            y = {"add": y + other, "sub": y - other, "mul": y * other, "div": y / other}[op]
        elif op in ("exp", "tanh", "sigmoid", "relu"):
            y = getattr(y if op != "exp" else y * 0.1, op)()
        elif op == "neg":
            y = -y
        elif op in ("float", "double"):
            y = getattr(y, op)()
        elif op == "T2":
            y = y.T.T
        elif op == "sum0":
            y = y.sum(0, keepdims=True) if lib is tt else y.sum(0, keepdim=True)
        else:
            y = y * y
    return y.sum()


@settings(max_examples=60, deadline=None)
@given(
    dtypes=st.tuples(*[st.sampled_from(DTYPES)] * 3),
    program=st.lists(
        st.one_of(
            st.tuples(st.sampled_from(UNARY), st.none()),
            st.tuples(st.sampled_from(BINARY), st.sampled_from("bck")),
        ),
        min_size=1,
        max_size=8,
    ),
    seed=st.integers(0, 2**16),
)
def test_random_programs_of_mixed_dtypes_agree_with_pytorch_in_values_and_gradient_dtypes(dtypes, program, seed):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    arrays = [rng.normal(size=(3, 4)).astype(d) for d in dtypes]
    ours = [Tensor(a, requires_grad=i < 2) for i, a in enumerate(arrays)]
    theirs = [torch.tensor(a, requires_grad=i < 2) for i, a in enumerate(arrays)]
    out = run_program(tt, program, ours[:2], ours[2])
    expected = run_program(torch, program, theirs[:2], theirs[2])
    assert str(out.dtype) == str(expected.dtype).removeprefix("torch.")
    rounded = out.dtype == np.float32 or np.float32 in dtypes or ("float", None) in program  # float32 on the way
    tolerance = 1e-4 if rounded else 1e-10
    assert np.allclose(out.data, expected.detach().numpy(), rtol=tolerance, atol=tolerance)
    if not out.requires_grad:
        return
    out.backward()
    expected.backward()
    for leaf, reference in zip(ours[:2], theirs[:2]):
        if reference.grad is None:
            assert leaf.grad is None
            continue
        assert leaf.grad.dtype == reference.grad.numpy().dtype == leaf.dtype
        assert np.allclose(leaf.grad.data, reference.grad.numpy(), rtol=tolerance, atol=tolerance)
