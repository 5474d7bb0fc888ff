"""Issue 45, point 2: the engine's faster paths compute what the slower ones did. A Python number next to a tensor is
recorded with a rule of its own that computes no gradient for the number, as a product with a constant tensor
computes none for it; SGD moves the weights without a new array
per step; and benchmarks/engines.py, which times tinytorch against hand NumPy (and PyTorch), gives every engine the
same problem, so their first losses agree."""

import operator
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import tinytorch  # noqa: F401  (enables autograd)
from conftest import load_script
from tinytorch.core import elementwise
from tinytorch.core import function as functions
from tinytorch.core.function import Function, attach, no_grad
from tinytorch.core.gradcheck import gradcheck
from tinytorch.core.losses import cross_entropy
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


@pytest.mark.parametrize("rule, op", [("MulBackward", operator.mul), ("DivBackward", operator.truediv)])
@pytest.mark.parametrize("constant", [0, 1])
def test_a_product_or_quotient_computes_no_gradient_for_a_constant_factor(rule, op, constant):
    rng = np.random.default_rng(5)
    arrays = [rng.normal(size=(2, 3)), rng.uniform(0.5, 2, size=(3,))]
    both = getattr(elementwise, rule)(*[Tensor(a, requires_grad=True) for a in arrays])
    one = getattr(elementwise, rule)(*[Tensor(a, requires_grad=i != constant) for i, a in enumerate(arrays)])
    g = Tensor(rng.normal(size=(2, 3)))
    expected, found = both.apply(g), one.apply(g)
    assert found[constant] is None
    assert np.array_equal(found[1 - constant].data, expected[1 - constant].data)
    tensors = [Tensor(a, requires_grad=i != constant) for i, a in enumerate(arrays)]
    out = op(*tensors)
    out.sum().backward()
    assert type(out._grad_fn).__name__ == rule
    assert tensors[constant].grad is None and tensors[1 - constant].grad.shape == arrays[1 - constant].shape


class ShapeOfItsOwn(Function):
    "out = a * b, whose rule returns b's gradient in a wrong shape."

    def apply(self, grad_output):
        a, b = self.saved_tensors
        return grad_output * b, Tensor(np.zeros(7))


def test_the_engine_drops_a_constants_gradient_unread_and_checks_the_others():
    a = Tensor(np.ones(3), requires_grad=True)
    b = Tensor(np.full(3, 2.0))  # a constant: its gradient, whatever its shape, is dropped
    attach(Tensor(a.data * b.data), ShapeOfItsOwn, a, b).sum().backward()
    assert np.array_equal(a.grad.data, [2.0, 2.0, 2.0]) and b.grad is None
    b.requires_grad = True  # now it is read, and checked
    with pytest.raises(RuntimeError, match=r"ShapeOfItsOwn returned a gradient of shape \(7,\) for input 1"):
        attach(Tensor(a.data * b.data), ShapeOfItsOwn, a, b).sum().backward()


FAULTS = """
import resource
import numpy as np
import tinytorch
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    arrays = [np.ones(1 << 17) for _ in range(3)]  # three arrays of 1 MiB, freed together, as a step's gradients
    del arrays
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator: Linux only")
def test_import_tinytorch_keeps_freed_memory_for_the_next_step_unless_the_user_chose():
    def faults(**env):
        environment = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")} | env
        result = subprocess.run([sys.executable, "-c", FAULTS], capture_output=True, text=True, env=environment)
        assert result.returncode == 0, result.stderr
        return int(result.stdout)

    kept = faults()
    for chosen in ({"MALLOC_ARENA_MAX": "4"}, {"GLIBC_TUNABLES": "glibc.malloc.arena_max=4"}):  # the user's choice
        assert kept * 4 < faults(**chosen), (kept, chosen)  # measured: about 720 page faults against 10,000


def test_cross_entropys_rule_reads_the_forwards_probabilities_and_cannot_change_them():
    z = Tensor(np.random.default_rng(6).normal(size=(5, 3)), requires_grad=True)
    loss = cross_entropy(z, [0, 2, 1, 1, 0])
    rule = loss._grad_fn
    with no_grad():
        assert rule.probabilities() is rule.forward_probabilities  # no second softmax in a plain backward()
    p = rule.probabilities()  # recording: computed afresh, a Tensor operation on the logits
    assert p is not rule.forward_probabilities and np.allclose(p.data, rule.forward_probabilities.data)
    for probabilities in (p, rule.forward_probabilities):
        with pytest.raises(ValueError, match="read-only"):
            probabilities.data[0, 0] -= 1  # a rule that wrote into them would change a later backward()
    loss.backward(retain_graph=True)
    first = z.grad.data.copy()
    z.grad = None
    loss.backward()
    assert np.array_equal(z.grad.data, first)


def test_a_rule_drops_an_optional_tensor_on_release_whichever_rule_of_its_kind_came_first():
    class Optional(Function):
        def __init__(self, x, kept=None):
            super().__init__(x)
            self.kept = kept

    functions._KEPT_TENSORS.pop(Optional, None)
    x = Tensor(np.ones(2), requires_grad=True)
    Optional(x).release()  # the first of its kind keeps nothing
    later = Optional(x, kept=Tensor(np.ones(1000)))
    later.release()
    assert later.kept is None and later.saved_tensors is None


def test_an_sgd_step_makes_one_array_the_size_of_a_weight_and_keeps_none():
    "Velocity and weight change in place; lr · grad is the one new array (kept room for it would double SGD's state)."
    p = Tensor(np.ones(100_000), requires_grad=True)  # 800 KB
    optimizer = SGD([p], lr=0.1, momentum=0.9)
    p.grad = np.full(100_000, 0.5)
    optimizer.step()  # the first step may make what it keeps
    tracemalloc.start()
    try:
        optimizer.step()
        now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 900_000 and now < 100_000, f"an SGD step allocated {peak} bytes at most and kept {now}"
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
