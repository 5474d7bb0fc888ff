"""check_backward's diagnosis of a wrong rule: each known mistake, made on purpose, is named in the message, and
the shape-dependent ones come with the smallest input shapes that fail. Correct rules get no diagnosis."""

import numpy as np
import pytest

from tinytorch.core.elementwise import MulBackward
from tinytorch.core.function import Function
from tinytorch.core.gradcheck import GradcheckError, check_backward, diagnose, gradcheck, shape_diagnosis
from tinytorch.core.reductions import MatmulBackward, MeanBackward
from tinytorch.core.tensor import Tensor

rng = np.random.default_rng(12)


def failure(rule, forward, inputs, **options):
    "The message check_backward raises for a wrong rule."
    with pytest.raises(GradcheckError) as caught:
        check_backward(rule, forward, inputs, **options)
    return str(caught.value)


class TransposedMatmul(Function):
    "grad_a = bᵀ-ish in the wrong order: (b @ gᵀ) has the shape of aᵀ"

    def apply(self, g):
        a, b = self.saved_tensors
        return (b @ g.T), a.T @ g


class TransposedSquareMatmul(Function):
    def apply(self, g):
        a, b = self.saved_tensors
        return (g @ b.T).T, a.T @ g


class AddNoUnbroadcast(Function):
    def apply(self, g):
        return g, g


class WrongSignSub(Function):
    def apply(self, g):
        a, b = self.saved_tensors
        return g, g  # d(a - b)/db is -1


class MeanTimesBatch(Function):
    "mean over axis 0 that forgot to divide by the batch size"

    def __init__(self, x, axis=None):
        super().__init__(x)

    def apply(self, g):
        (x,) = self.saved_tensors
        return (np.ones(x.shape) * g.data,)


class MulSwapped(Function):
    def apply(self, g):
        a, b = self.saved_tensors
        return g * a, g * b


class MeanOfRowsByShape0(Function):
    "mean over axis 1 divided by x.shape[0]: right only when the matrix is square"

    def __init__(self, x, axis=None):
        super().__init__(x)

    def apply(self, g):
        (x,) = self.saved_tensors
        return (np.ones(x.shape) * g.data[..., None] / x.shape[0],)


class MeanOfLastAxisByShape1(Function):
    "mean over the last axis divided by x.shape[1]: right for 2-D inputs only"

    def __init__(self, x, axis=None):
        super().__init__(x)

    def apply(self, g):
        (x,) = self.saved_tensors
        return (np.ones(x.shape) * g.data[..., None] / x.shape[1],)


def test_a_transposed_matmul_gradient_is_named_by_its_shape():
    message = failure(TransposedMatmul, np.matmul, [rng.normal(size=(2, 3)), rng.normal(size=(3, 4))])
    assert "input 0 (shape (2, 3)): the gradient has shape (3, 2)" in message, message
    assert "Likely cause: transposed: the gradient has shape (3, 2), the input's shape reversed" in message, message
    assert "its transpose is the right gradient" in message, message


def test_a_transposed_gradient_of_a_square_input_is_named_by_its_values():
    message = failure(TransposedSquareMatmul, np.matmul, [rng.normal(size=(3, 3)), rng.normal(size=(3, 3))])
    assert "wrong gradient at index" in message, message
    assert "Likely cause: transposed: it is the right gradient with its last two axes swapped" in message, message


def test_a_missing_unbroadcast_over_a_leading_axis_names_axis_0():
    message = failure(AddNoUnbroadcast, np.add, [rng.normal(size=(2, 3)), rng.normal(size=(3,))])
    assert "input 1 (shape (3,)): the gradient has shape (2, 3)" in message, message
    assert "not reduced over the broadcast axes" in message, "the existing shape message stays"
    assert (
        "Likely cause: missing unbroadcast: the gradient has the broadcast shape (2, 3) (grad_output's shape), "
        "and summing it over axis 0 gives the right gradient of shape (3,)"
    ) in message, message
    assert "Smallest failing input shapes: (1, 1) and (1,)" in message, message


def test_a_missing_unbroadcast_over_a_kept_axis_says_keepdims():
    message = failure(AddNoUnbroadcast, np.add, [rng.normal(size=(2, 3)), rng.normal(size=(2, 1))])
    assert "summing it over axis 1 with keepdims=True gives the right gradient of shape (2, 1)" in message, message
    both = failure(AddNoUnbroadcast, np.add, [rng.normal(size=(2, 3, 4)), rng.normal(size=(3, 1))])
    assert "summing it over axis 0, and axis 1 with keepdims=True gives the right gradient" in both, both
    assert "Smallest failing input shapes: (1, 1, 1) and (1, 1)" in both, both


def test_a_wrong_sign_is_named():
    message = failure(WrongSignSub, np.subtract, [rng.normal(size=(2, 3)), rng.normal(size=(2, 3))])
    assert "input 1" in message and "Likely cause: wrong sign: it is -1 × the right gradient" in message, message
    assert "input 0" not in message.split(":")[0].split(",")[1], "input 0 is right; input 1 is reported"


def test_a_mean_divided_by_the_batch_size_instead_of_the_element_count_is_named():
    "An MSE rule divided by shape[0] (4) where the mean divides by 12 is 3 x: axis 1's length alone misled (08)."
    from tinytorch.core.diagnosis import _factor_mistake

    message = _factor_mistake(3.0, [(4, 3), (4, 3)])
    assert "a division by 3, the length of axis 1 of input 0 (shape (4, 3))" in message
    assert message.endswith(
        "Or is the length of axis 0 of input 0 (shape (4, 3)) used where the number of elements of input 0 "
        "(shape (4, 3)) belongs?"
    ), message


def test_a_factor_of_the_batch_size_is_named():
    message = failure(MeanTimesBatch, lambda x, axis: x.mean(axis=axis), [rng.normal(size=(4, 3))], axis=0)
    assert "off by a constant factor: it is 4 × the right gradient" in message, message
    assert "a division by 4, the length of axis 0 of input 0 (shape (4, 3)), e.g. the batch size 4, missing" in message


def test_the_other_inputs_gradient_is_named():
    message = failure(MulSwapped, np.multiply, [rng.normal(size=(2, 3)), rng.normal(size=(2, 3))])
    assert message.startswith("MulSwapped, input 0 (shape (2, 3)): wrong gradient"), message
    assert "Likely cause: gradient of input 1 returned for input 0" in message, message


def test_a_rule_right_only_for_square_inputs_is_named_with_its_smallest_failing_shape():
    mean_rows = lambda x, axis: x.mean(axis=axis)  # noqa: E731
    assert check_backward(MeanOfRowsByShape0, mean_rows, [rng.normal(size=(3, 3))], axis=1), "right when square"
    message = failure(MeanOfRowsByShape0, mean_rows, [rng.normal(size=(2, 3))], axis=1)
    assert "Likely cause: correct only for square inputs: it passes on shapes (2, 2) but fails on (2, 3)" in message
    assert "Smallest failing input shapes: (1, 2) " in message, message


def test_a_rule_right_only_for_a_batch_of_one_is_not_called_square_only():
    # 08's cross-entropy without 1/batch passes on logits (1, 2) only: one long axis is not a square input
    message = failure(MeanTimesBatch, lambda x, axis: x.mean(axis=axis), [rng.normal(size=(4, 10))], axis=0)
    assert "a division by 4, the length of axis 0 of input 0 (shape (4, 10))" in message, message
    assert "square" not in message, message


def test_a_rule_right_only_for_2d_inputs_is_named_with_its_smallest_failing_shape():
    mean_last = lambda x, axis: x.mean(axis=axis)  # noqa: E731
    assert check_backward(MeanOfLastAxisByShape1, mean_last, [rng.normal(size=(2, 3))], axis=-1), "right in 2-D"
    message = failure(MeanOfLastAxisByShape1, mean_last, [rng.normal(size=(2, 3, 4))], axis=-1)
    assert "Likely cause: correct only for 2-D inputs: it passes on shapes (3, 4) (the last two axes)" in message
    assert "Smallest failing input shapes: (1, 2, 3) " in message, message
    assert "square" not in message, "it passes on (2, 3, 3): not a square-only rule"


def test_correct_rules_pass_and_get_no_diagnosis():
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(3, 4))
    assert check_backward(MatmulBackward, np.matmul, [a, b])
    assert check_backward(MulBackward, np.multiply, [a, rng.normal(size=(3,))])
    assert check_backward(MeanBackward, np.mean, [a], axis=0)
    right = rng.normal(size=(2, 3))
    assert diagnose(right, right, 0, [right]) == [], "nothing to diagnose"


def test_a_wrong_rule_that_matches_no_known_mistake_gets_no_diagnosis_line():
    class Scrambled(Function):
        def apply(self, g):
            (x,) = self.saved_tensors
            return (g * np.cos(x.data),)

    message = failure(Scrambled, lambda x: x**3, [rng.normal(size=(2, 3))])
    assert "wrong gradient at index" in message and "Likely cause" not in message, message


def test_a_wrong_output_shape_keeps_the_shape_message():
    class Flattened(Function):
        def apply(self, g):
            (x,) = self.saved_tensors
            return (g.reshape(-1),)

    message = failure(Flattened, np.sin, [rng.normal(size=(2, 3))])
    assert message.startswith(
        "Flattened, input 0 (shape (2, 3)): the gradient has shape (6,) but the input has shape (2, 3)."
    )
    assert "Likely cause" not in message, message


def test_a_broken_diagnosis_never_raises():
    assert diagnose(object(), "not a number", 0, [None]) == []
    assert shape_diagnosis(None, None, [object()]) == ([], None)


def test_a_forward_that_fails_on_a_smaller_shape_skips_it():
    class Wrong(Function):
        def apply(self, g):
            return (g * 2,)

    def only_six(x):
        if x.size != 6:
            raise ValueError("only six elements")
        return np.sin(x)

    message = failure(Wrong, only_six, [rng.normal(size=(2, 3))])
    assert "wrong gradient" in message and "Smallest failing" not in message, message


def test_the_diagnosis_makes_a_bounded_number_of_extra_rule_calls():
    calls = []

    class Counted(Function):
        def apply(self, g):
            calls.append(1)
            return -g, -g, -g

    failure(
        Counted, lambda x, y, z: x + y + z, [rng.normal(size=(4, 3, 2)), rng.normal(size=(3, 1)), rng.normal(size=(2,))]
    )
    assert 1 < len(calls) <= 9, f"{len(calls)} calls: one check and at most 8 diagnosis runs"


def test_gradcheck_names_the_mistake_too():
    from tinytorch.core import elementwise as E

    class Wrong(E.MulBackward):
        def apply(self, g):
            a, b = self.saved_tensors
            return g * a, g * b

    x, y = Tensor(rng.normal(size=(2, 3)), requires_grad=True), Tensor(rng.normal(size=(2, 3)), requires_grad=True)
    original = E.MulBackward.apply
    E.MulBackward.apply = Wrong.apply
    try:
        with pytest.raises(GradcheckError, match="gradient of input 1 returned for input 0"):
            gradcheck(lambda a, b: a * b, [x, y])
    finally:
        E.MulBackward.apply = original


@pytest.mark.parametrize(
    "mistake, expected",
    [
        (lambda g: g, "summing it over axis 0 gives the right gradient of shape (3,)"),
        (lambda g: -g, "summed, it is still wrong: wrong sign: it is -1 × the right gradient"),
        (lambda g: g / 4, "summed, it is still wrong: off by a constant factor: it is 0.25 × the right gradient (1/4)"),
        (lambda g: 0 * g, "summed, it is still wrong: the gradient is zero everywhere"),
        (lambda g: np.cos(g), "summed, it is still wrong."),
    ],
)
def test_a_missing_unbroadcast_is_told_apart_from_a_sum_that_is_still_wrong(mistake, expected):
    "The unbroadcast term (4, 3) of an input of shape (3,): summed back right, or with a fingerprint of §2, or not."
    term = rng.normal(size=(4, 3))
    right = term.sum(axis=0)
    found = diagnose(mistake(term), right, 1, [rng.normal(size=(4, 3)), right], (4, 3), [(4, 3), (3,)])
    assert len(found) == 1 and found[0].startswith("missing unbroadcast: the gradient has the broadcast shape (4, 3)")
    assert expected in found[0], found


@pytest.mark.parametrize("seed", range(40))
def test_the_sum_is_judged_without_being_made(seed):
    """_summed_mistake never makes the sum (notebook 04's exercise), so it can only be a hint: on random broadcast
    shapes, a sum within the check's tolerance is never called wrong, and a sum off by 10% of its scale at one element
    is never called right. (One element off by just over the tolerance may pass: the slack adds up every element's.)"""
    from tinytorch.core.diagnosis import _summed_mistake

    r = np.random.default_rng(seed)
    shape = tuple(int(n) for n in r.choice([1, 2, 3], size=r.integers(0, 3)))
    grad_shape = tuple(int(n) for n in r.integers(1, 4, size=r.integers(0, 2))) + tuple(
        int(r.integers(2, 4)) if n == 1 and r.random() < 0.7 else n for n in shape
    )
    grad = r.normal(size=grad_shape)
    total = grad.sum(axis=tuple(range(len(grad_shape) - len(shape))))
    total = total.sum(axis=tuple(k for k, n in enumerate(shape) if n == 1), keepdims=True).reshape(shape)
    off = {0: 0.0, 1: 1e-7, 2: 0.1}[seed % 3] * (1 + abs(total).max())
    right = np.array(total)  # an array, also for shape () (a NumPy scalar's .flat writes to a copy)
    right.flat[r.integers(right.size)] += off
    judged_right = _summed_mistake(grad, right, [grad_shape, shape], 1e-5, 1e-3) is None
    assert judged_right == (seed % 3 != 2), (shape, grad_shape, off)


def test_a_rule_that_leaves_out_grad_output_is_told_so_not_told_of_a_constant_factor():
    """A solver's CrossEntropyBackward without `* grad_output` was told 'off by a constant factor: 7.954' (1/g). With
    the grad_output check_backward used, the diagnosis names the chain rule, for a scalar and an elementwise g."""
    from tinytorch.core.function import Function
    from tinytorch.core.gradcheck import GradcheckError, check_backward

    class MeanSquareWithoutG(Function):
        def apply(self, grad_output):
            (a,) = self.saved_tensors
            return (Tensor(2 * a.data / a.data.size),)

    class ExpWithoutG(Function):
        def apply(self, grad_output):
            (a,) = self.saved_tensors
            return (Tensor(np.exp(a.data)),)

    x = np.random.default_rng(3).normal(size=(3, 4))
    for rule, forward in [(MeanSquareWithoutG, lambda a: np.mean(a * a)), (ExpWithoutG, np.exp)]:
        with pytest.raises(GradcheckError, match="grad_output is missing") as raised:
            check_backward(rule, forward, [x])
        assert "constant factor" not in str(raised.value)
    g = np.full((3, 4), 2.0)
    right = 2 * np.exp(x)
    assert diagnose(np.exp(x), right, 0, [right], (3, 4), [(3, 4)], grad_output=g)[0].startswith(
        "grad_output is missing"
    )
    assert not any("grad_output" in c for c in diagnose(right, right * 3, 0, [right * 3], grad_output=np.ones((3, 4))))


def test_a_gradient_that_overflows_is_told_so():
    "A solver's cross-entropy without the max subtracted gave 'analytic nan, numerical 0.0419' and nothing more."
    right = np.array([[0.1, -0.2], [0.3, 0.05]])
    wrong = right.copy()
    wrong[0, 0] = np.nan
    assert diagnose(wrong, right, 0, [right])[0].startswith("the gradient is NaN or infinite")
    assert diagnose(np.full((2, 2), np.inf), right, 0, [right])[0].startswith("the gradient is NaN or infinite")


def test_a_missing_unbroadcast_in_a_batched_product_is_not_also_blamed_on_2_d_axes():
    """Matmul of a (2, 3, 4) batch with a (4, 5) matrix without unbroadcast passes on 2-D inputs; the message said
    also 'count axes from the end' to a rule that did, which was wrong."""
    from tinytorch.core.function import Function
    from tinytorch.core.gradcheck import GradcheckError, check_backward

    class NoUnbroadcast(Function):
        def apply(self, grad_output):
            a, b = self.saved_tensors
            swap = lambda t: np.swapaxes(t, -1, -2)  # noqa: E731
            return Tensor(grad_output.data @ swap(b.data)), Tensor(swap(a.data) @ grad_output.data)

    rng = np.random.default_rng(0)
    with pytest.raises(GradcheckError) as raised:
        check_backward(NoUnbroadcast, np.matmul, [rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 5))])
    assert "missing unbroadcast" in str(raised.value) and "2-D" not in str(raised.value)
