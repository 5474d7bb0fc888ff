"""Notebooks 04, 05, 07 and 08 ask the student to derive their rules (issue 23, point 2): one rule of each family is derived
in the text, the docstrings say what a rule computes, not its gradient, and the text gives numbers to check against
instead of the formula. Those numbers are checked here
against the reference rules, and the mistakes the text names against the numbers it says they give."""

import numpy as np
import pytest

from conftest import REPO
from grading.notebooks import read_notebook
from tinytorch.core import activations, elementwise, losses, reductions
from tinytorch.core.tensor import Tensor

EXERCISES = ["AddBackward", "SubBackward", "MulBackward", "DivBackward", "NegBackward", "PowBackward", "ExpBackward"]
EXERCISES += ["LogBackward"]


REDUCTIONS = ["MatmulBackward", "SumBackward", "MeanBackward", "ReshapeBackward", "TransposeBackward", "IndexBackward"]
LOSSES = ["MSEBackward", "BCEBackward", "CrossEntropyBackward"]
ACTIVATIONS = ["ReLUBackward", "SigmoidBackward", "TanhBackward", "SoftmaxBackward", "LogSoftmaxBackward"]


def text_of(cell_id, notebook="04_elementwise"):
    return next(c.source for c in read_notebook(REPO / "notebooks" / f"{notebook}.ipynb").cells if c.id == cell_id)


@pytest.mark.parametrize(
    "module, name",
    [(elementwise, n) for n in EXERCISES]
    + [(reductions, n) for n in REDUCTIONS]
    + [(activations, n) for n in ACTIVATIONS]
    + [(losses, n) for n in LOSSES],
)
def test_the_docstring_says_what_the_rule_computes_not_its_gradient(module, name):
    doc = getattr(module, name).__doc__
    assert doc.startswith("The gradient") and "grad_" not in doc and "g *" not in doc, doc


def gradients(rule, *inputs, g=None, **extras):
    tensors = [Tensor(np.asarray(x, dtype=float)) for x in inputs]
    out_shape = np.broadcast_shapes(*(t.shape for t in tensors))
    g = Tensor(np.ones(out_shape) if g is None else np.asarray(g, dtype=float))
    return [grad.data for grad in rule(*tensors, **extras).apply(g)]


def test_the_worked_examples_hold_for_the_reference_rules():
    g = [[1, 2, 3], [4, 5, 6]]
    a, b = np.ones((2, 3)), np.ones(3)
    assert np.allclose(gradients(elementwise.SubBackward, a, b, g=g)[1], [-5, -7, -9])
    assert "(-5, -7, -9)" in text_of("c04-033")
    a, b = [[1, 2, 3], [4, 5, 6]], [[10], [20]]
    grad_a, grad_b = gradients(elementwise.MulBackward, a, b)
    assert np.allclose(grad_a, [[10, 10, 10], [20, 20, 20]]) and np.allclose(grad_b, [[6], [15]])
    assert np.allclose(np.sum(np.multiply(np.ones((2, 3)), b), axis=1, keepdims=True), [[30], [60]])  # the mistake
    assert "(30, 60)" in text_of("c04-034")
    assert np.allclose(gradients(elementwise.DivBackward, 6.0, 2.0), [0.5, -1.5])
    assert np.isclose(gradients(elementwise.DivBackward, 6.0, 3.0)[1], -6 / 9)
    for base, p, slope in [(3.0, 2, 6), (4.0, 0.5, 0.25), (2.0, -1, -0.25)]:
        (found,) = gradients(elementwise.PowBackward, base, exponent=p)
        assert np.isclose(found, slope), (base, p, found)
    a = np.array([0.0, np.log(2)])
    (found,) = elementwise.ExpBackward(Tensor(a), output=Tensor(np.exp(a))).apply(Tensor([3.0, 3.0]))
    assert np.allclose(found.data, [3, 6])
    assert np.allclose(gradients(elementwise.LogBackward, [1, 2, 4]), [1, 0.5, 0.25])
    assert "(1, 0.25, 0.0625)" in text_of("c04-039") and np.allclose(1 / np.array([1, 2, 4]) ** 2, [1, 0.25, 0.0625])


def test_the_activations_worked_examples_hold_for_the_reference_rules():
    (found,) = activations.ReLUBackward(Tensor([-2.0, 0.0, 3.0])).apply(Tensor([0.5, 2.0, -1.0]))
    assert np.allclose(found.data, [0, 0, -1])
    x = np.array([0.0, np.log(2)])
    t = np.tanh(x)
    (found,) = activations.TanhBackward(Tensor(x), output=Tensor(t)).apply(Tensor([1.0, 1.0]))
    assert np.allclose(t, [0, 0.6]) and np.allclose(found.data, [1, 0.64])
    assert np.allclose([(1 - 0.6) ** 2, 1 - 0.6], [0.16, 0.4])  # the mistakes the text names
    x = np.array([0.0, np.log(3)])
    out = x - np.log(np.exp(x).sum())
    rule = activations.LogSoftmaxBackward(Tensor(x), output=Tensor(out), axis=-1)
    assert np.allclose(rule.apply(Tensor([1.0, 0.0]))[0].data, [0.75, -0.75])
    assert np.allclose(rule.apply(Tensor([1.0, 1.0]))[0].data, [0.5, -0.5])
    diagonal_only = np.ones(2) - np.exp(out) * np.ones(2)
    assert np.allclose(diagonal_only, [0.75, 0.25])
    text = text_of("c07-027", "07_activations")
    assert "[1/2, -1/2]" in text and "[3/4, 1/4]" in text and "g_j - s_j" not in text
