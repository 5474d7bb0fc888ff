"""Issue 45, point 2: the engine's faster paths compute what the slower ones did. A Python number next to a tensor is
recorded with a rule of its own that computes no gradient for the number; SGD moves the weights without a new array
per step; and benchmarks/engines.py, which times tinytorch against hand NumPy (and PyTorch), gives every engine the
same problem, so their first losses agree."""

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import tinytorch  # noqa: F401  (enables autograd)
from conftest import load_script
from tinytorch.core.gradcheck import gradcheck
from tinytorch.core.optimizers import SGD
from tinytorch.core.tensor import Tensor

ENGINES = Path(__file__).resolve().parent.parent / "benchmarks" / "engines.py"


@pytest.mark.parametrize(
    "expression, rule",
    [
        (lambda x: x * 0.5, "MulNumberBackward"),
        (lambda x: 3 * x, "MulNumberBackward"),
        (lambda x: x + 2, "AddNumberBackward"),
        (lambda x: 2.0 + x, "AddNumberBackward"),
        (lambda x: x - 1.5, "AddNumberBackward"),
        (lambda x: x / 4.0, "DivNumberBackward"),
    ],
)
def test_a_python_number_is_recorded_without_a_tensor_for_it_and_gets_the_same_gradient(expression, rule):
    rng = np.random.default_rng(4)
    x = Tensor(rng.normal(size=(3, 2)), requires_grad=True)
    out = expression(x)
    assert type(out._grad_fn).__name__ == rule and out._grad_fn.saved_tensors == (x,)
    number_free = expression(Tensor(x.data))  # the same expression of a constant: the plain values
    assert np.array_equal(out.data, number_free.data)
    assert gradcheck(lambda v: expression(v) * expression(v), [x])  # and differentiable twice over
    x32 = Tensor(x.data.astype(np.float32), requires_grad=True)
    expression(x32).sum().backward()
    assert expression(x32).dtype == x32.grad.dtype == np.float32


def test_a_number_next_to_an_integer_tensor_promotes_as_numpy_does():
    ids = Tensor(np.array([1, 2, 3]))
    assert (ids * 2).dtype == np.int64 and (ids / 2).dtype == np.float64 and (ids + 0.5).dtype == np.float64


def test_an_sgd_step_makes_no_array_the_size_of_a_weight():
    p = Tensor(np.ones(100_000), requires_grad=True)  # 800 KB
    optimizer = SGD([p], lr=0.1, momentum=0.9)
    p.grad = np.full(100_000, 0.5)
    optimizer.step()  # the first step may make what it keeps
    tracemalloc.start()
    try:
        optimizer.step()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100_000, f"an SGD step allocated {peak} bytes"
    assert np.allclose(p.data, 1 - 0.1 * 0.5 - 0.1 * (0.9 * 0.5 + 0.5))


@pytest.fixture(scope="module")
def engines():
    return load_script(ENGINES)


@pytest.mark.parametrize("workload", ["mlp_digits", "ops_float", "ops_tensor", "cnn"])
def test_the_benchmarks_engines_solve_the_same_problem(engines, workload):
    kind = workload.split("_")[0]
    numpy_builders = {"mlp": engines.numpy_mlp, "ops": engines.numpy_ops, "cnn": engines.numpy_cnn}
    tinytorch_builders = engines.tinytorch_engine()  # PyTorch's, when installed, run.py checks as it times them
    for dtype, rtol in ((np.float64, 1e-12), (np.float32, 1e-5)):
        expected = numpy_builders[kind](workload, dtype)()
        assert np.isclose(tinytorch_builders[kind](workload, dtype)(), expected, rtol=rtol), dtype
