"""grading/analytic.py: a gradient from a formula agrees with the reference to rounding, a numerical one does not."""

import numpy as np

from grading.analytic import message, numerical_gaps
from tinytorch.core.tensor import Tensor

rng = np.random.default_rng(5)
x = rng.normal(size=(3, 4))
g = rng.normal(size=(3, 4))


def central(f, h):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_central_differences_are_found_for_every_step():
    exact = g * np.exp(x)
    for h in [1e-4, 1e-5, 6e-6, 1e-6, 1e-7]:
        gaps = numerical_gaps((g * central(np.exp, h),), (exact,), g)
        assert [index for index, _ in gaps] == [0], h


def test_formulas_written_differently_agree():
    s = 1 / (1 + np.exp(-x))
    assert numerical_gaps((g * s * (1 - s),), (g * np.exp(-x) / (1 + np.exp(-x)) ** 2,), g) == []
    jacobian = s[..., :, None] * (np.eye(4) - s[..., None, :])
    assert (
        numerical_gaps((np.einsum("...ij,...i->...j", jacobian, g),), (s * (g - (g * s).sum(-1, keepdims=True)),), g)
        == []
    )


def test_tensors_are_compared_by_their_data_and_only_the_numerical_input_is_named():
    exact = g * np.exp(x)
    gaps = numerical_gaps((Tensor(exact), Tensor(g * central(np.exp, 1e-6))), (Tensor(exact), Tensor(exact)), Tensor(g))
    assert [index for index, _ in gaps] == [1]
    assert "input 1" in message("ExpBackward", gaps) and "finite differences" in message("ExpBackward", gaps)


def test_wrong_gradients_are_left_to_the_test():
    assert numerical_gaps((2 * g,), (g,), g) == []  # far off: the test's message diagnoses it


def test_float32_zero_and_negligible_gradients_are_not_judged():
    exact = g * np.exp(x)
    numeric = g * central(np.exp, 1e-6)
    assert numerical_gaps((numeric.astype(np.float32),), (exact.astype(np.float32),), g) == []
    assert numerical_gaps((np.zeros(3),), (np.zeros(3),), np.ones(3)) == []
    assert numerical_gaps((np.full(3, 1e-20),), (np.full(3, 1.0001e-20),), np.ones(3)) == []


def test_mismatched_results_are_not_judged():
    assert numerical_gaps((g, g), (g,), g) == []
    assert numerical_gaps((g,), (g.T,), g) == []
    assert numerical_gaps((None,), (g,), g) == []


def test_gradients_that_record_a_graph_are_judged_by_their_values():
    exact, numeric = g * np.exp(x), g * central(np.exp, 1e-6)
    mine, theirs = Tensor(numeric, requires_grad=True), Tensor(exact, requires_grad=True)
    assert [index for index, _ in numerical_gaps((mine,), (theirs,), g)] == [0]
