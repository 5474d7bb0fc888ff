"""Notebook 17's text against its code: the worked examples of batch and layer normalisation, the numbers each common
mistake is said to give, the running statistics and dropout examples, and the rules themselves against central
differences on random shapes, dtypes and the edge cases the text names (a batch of one, a constant feature)."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grading.common.notebooks import read_notebook
from tinytorch.core import norm as M
from tinytorch.core.autograd import enable_autograd
from tinytorch.core.gradcheck import check_backward
from tinytorch.core.nn import Linear, ReLU, Sequential
from tinytorch.core.tensor import Tensor

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "17_norm.ipynb"
X = np.array([1.0, 2.0, 3.0, 6.0])
G = np.array([1.0, 0.0, 0.0, 0.0])


def text():
    return "\n".join(c.source for c in read_notebook(NOTEBOOK).cells if c.cell_type == "markdown")


def rule_gradients(rule, x, gamma, beta, g):
    grads = rule(Tensor(x), Tensor(gamma), Tensor(beta), eps=0.0).apply(Tensor(g))
    return [np.asarray(grad.data) for grad in grads]


def test_the_batch_norm_example_is_what_the_reference_rule_gives():
    grad_x, grad_gamma, grad_beta = rule_gradients(M.BatchNormBackward, X[:, None], np.ones(1), np.zeros(1), G[:, None])
    assert np.allclose(grad_x.ravel(), [0.2482, -0.2100, -0.1336, 0.0955], atol=5e-5)
    assert np.isclose(grad_x.sum(), 0) and np.isclose(grad_x.ravel() @ M.normalise(X, 0, 0.0), 0)
    assert np.allclose(grad_gamma, [-1.069], atol=5e-4) and np.allclose(grad_beta, [1.0])
    assert "(0.2482,\\ -0.2100,\\ -0.1336,\\ 0.0955)" in text()


def test_each_common_mistake_gives_the_numbers_the_text_states():
    s, s_unbiased = 1 / X.std(), 1 / X.std(ddof=1)
    x_hat, x_unbiased = (X - X.mean()) * s, (X - X.mean()) * s_unbiased
    stated = {
        "(0.5345, 0, 0, 0)": G * s,  # the mean and the variance treated as constants
        "(0.3818, -0.0764, 0, 0.2291)": s * (G - x_hat * (G * x_hat).mean()),  # no path through the mean
        "(0.4009, -0.1336, -0.1336, -0.1336)": s * (G - G.mean()),  # no path through the variance
        "(0.2480, -0.1653, -0.1157, 0.0331)": s_unbiased * (G - G.mean() - x_unbiased * (G * x_unbiased).mean()),
    }
    for numbers, mistake in stated.items():
        assert np.allclose(mistake, [float(v) for v in numbers.strip("()").split(", ")], atol=5e-5), numbers
        assert f"${numbers}$" in text(), numbers


def test_layer_norm_on_the_row_gives_the_batch_norm_example():
    grad_x, grad_gamma, _ = rule_gradients(M.LayerNormBackward, X[None, :], np.ones(4), np.zeros(4), G[None, :])
    assert np.allclose(grad_x.ravel(), [0.2482, -0.2100, -0.1336, 0.0955], atol=5e-5)
    assert np.allclose(grad_gamma, [-1.069, 0, 0, 0], atol=5e-4)


def test_the_running_statistics_example_and_its_biased_twin():
    batch = np.array([[1.0, 10.0], [3.0, 10.0], [5.0, 13.0]])
    mean, var = M.running_statistics(np.zeros(2), np.ones(2), batch, 0.1)
    assert np.allclose(mean, [0.3, 1.1]) and np.allclose(var, [1.3, 1.2])
    assert np.allclose(0.9 + 0.1 * batch.var(axis=0), [1.1667, 1.1], atol=5e-5)
    assert "$(1.3, 1.2)$" in text() and "$(1.1667, 1.1)$" in text()


def test_the_dropout_example():
    mask = np.array([True, False, True, True])
    out = Tensor(np.arange(1.0, 5.0)) * mask / 0.5
    (grad,) = M.DropoutBackward(Tensor(np.arange(1.0, 5.0)), mask=mask, p=0.5).apply(Tensor(np.ones(4)))
    assert out.data.tolist() == [2, 0, 6, 8] and grad.data.tolist() == [2, 0, 2, 2]
    assert "$(2, 0, 6, 8)$" in text() and "$(2, 0, 2, 2)$" in text()


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 5),
    d=st.integers(1, 4),
    constant=st.booleans(),
    dtype=st.sampled_from([np.float64, np.float32]),
    seed=st.integers(0, 2**16),
)
def test_both_normalisations_match_central_differences(n, d, constant, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    if constant:
        x[:, 0] = x[0, 0]  # a feature constant over the batch: its variance is 0, eps alone keeps the gradient finite
    params = [rng.normal(size=d).astype(dtype) for _ in range(2)]
    atol = 1e-5 if dtype == np.float64 else 1e-3
    x = x.astype(dtype)
    assert check_backward(M.BatchNormBackward, M.batch_norm_values, [x, *params], eps=1e-5, atol=atol, rtol=1e-2)
    layer_inputs = [x.T.copy(), *(p[:1].repeat(n) for p in params)]  # the batch's feature 0 as one row of n
    assert check_backward(M.LayerNormBackward, M.layer_norm_values, layer_inputs, eps=1e-5, atol=atol, rtol=1e-2)


def test_a_training_batch_of_one_is_refused_and_evaluation_takes_it():
    layer = M.BatchNorm1d(3)
    with pytest.raises(ValueError, match="at least 2 samples"):
        layer(Tensor(np.ones((1, 3))))
    M.set_training(layer, False)
    assert layer(Tensor(np.ones((1, 3)))).shape == (1, 3)


def test_set_training_reaches_every_layer_inside_a_model():
    enable_autograd()
    model = Sequential(Linear(4, 4, seed=0), M.BatchNorm1d(4), ReLU(), M.Dropout(0.5, seed=0))
    M.set_training(model, False)
    assert [getattr(layer, "training", None) for layer in model.layers] == [None, False, None, False]
    x = Tensor(np.random.default_rng(0).normal(size=(3, 4)))
    assert np.array_equal(model(x).data, model(x).data)  # evaluation: no dropping, the running statistics
    M.set_training(model, True)
    assert model.layers[1].training and model.layers[3].training


def test_dropout_refuses_a_probability_outside_zero_to_one():
    with pytest.raises(ValueError, match="0 <= p < 1"):
        M.dropout(Tensor(np.ones(3)), 1.0)
