"""Loss objects are created, then called. Called the seed's way, with the tensors (`CrossEntropy(logits, targets)`),
each raises a one-line TypeError that shows the right call (issue 12)."""

import re

import numpy as np
import pytest

from tinytorch.core.losses import BCE, MSE, CrossEntropy, bce_loss, cross_entropy, mse_loss
from tinytorch.core.tensor import Tensor

RNG = np.random.default_rng(0)
LOGITS, LABELS = RNG.normal(size=(4, 3)), np.array([0, 2, 1, 2])
PREDICTION, TARGET = RNG.normal(size=(4, 2)), RNG.normal(size=(4, 2))
PROBABILITIES, BINARY = RNG.uniform(0.1, 0.9, size=(5,)), np.array([0.0, 1.0, 1.0, 0.0, 1.0])

CASES = [
    (CrossEntropy, cross_entropy, (LOGITS, LABELS), "CrossEntropy()(logits, targets)"),
    (MSE, mse_loss, (PREDICTION, TARGET), "MSE()(prediction, target)"),
    (BCE, bce_loss, (PROBABILITIES, BINARY), "BCE()(probabilities, target)"),
]
IDS = [case[0].__name__ for case in CASES]


@pytest.mark.parametrize("loss_class, _, tensors, right_call", CASES, ids=IDS)
def test_the_class_called_with_the_tensors_names_the_right_call(loss_class, _, tensors, right_call):
    with pytest.raises(TypeError) as error:
        loss_class(*(Tensor(t) for t in tensors))
    message = str(error.value)
    assert right_call in message and "\n" not in message, message


@pytest.mark.parametrize("loss_class, _, tensors, right_call", CASES, ids=IDS)
def test_keyword_arguments_are_refused_the_same_way(loss_class, _, tensors, right_call):
    with pytest.raises(TypeError, match=re.escape(right_call)):
        loss_class(reduction="mean")


@pytest.mark.parametrize("loss_class, loss_function, tensors, _", CASES, ids=IDS)
def test_the_object_called_with_the_tensors_is_the_loss_function(loss_class, loss_function, tensors, _):
    expected = loss_function(*tensors).item()
    assert np.isclose(loss_class()(*tensors).item(), expected)
    loss_fn = loss_class()
    assert np.isclose(loss_fn(*tensors).item(), expected), "a loss object can be called again"


def test_cross_entropy_object_backpropagates():
    logits = Tensor(LOGITS, requires_grad=True)
    CrossEntropy()(logits, LABELS).backward()
    assert logits.grad.shape == LOGITS.shape
    assert np.allclose(logits.grad.data.sum(axis=1), 0), "each row of (softmax - one_hot) / batch sums to 0"


@pytest.mark.parametrize("probabilities", [[0.5, np.nan], [np.nan, np.nan]], ids=["one NaN", "all NaN"])
def test_a_nan_probability_is_refused_with_the_courses_message(probabilities):
    "PyTorch refuses a probability outside [0, 1], NaN included; min() and max() of an array with a NaN are NaN."
    for call in (lambda: bce_loss(Tensor(probabilities), Tensor([1.0, 0.0])), lambda: BCE()(probabilities, [1.0, 0.0])):
        with pytest.raises(ValueError, match=r"^bce_loss needs probabilities in \[0, 1\]; got NaN\. "):
            call()
