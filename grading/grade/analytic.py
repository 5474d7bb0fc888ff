"""Telling a backward rule that applies a formula from one that differentiates its forward numerically.

The verdict runs the reference rule on the same saved tensors and grad_output as the student's (both in the grader's
process: the student's result is plain data by then) and compares the two in float64. A formula, whichever way it is
written, agrees with the reference to rounding error, about 1e-16 relative. Finite differences of the forward agree
only to the difference error: at least ~1e-11 relative for any step in float64 (the step's truncation error against its
rounding error), so the band between the two means "numerical". A result that is further off is left to the test,
whose message diagnoses it. What this cannot see (docs/design.md): a linear rule differentiated away from its
inputs (at 0, say), which is exact, and extrapolated or complex-step differentiation.

The band reaches up to the tests' own tolerance (rtol 1e-3 in check_backward): a numerical rule scaled by (1 + 1e-4)
or with a larger step lands above 1e-5 and below what the tests accept, so nothing between FORMULA and NEAR passes.

A linear rule (add, mul, matmul, ...) differentiated with a large step agrees with the reference to rounding error
on the tests' inputs. So the first time a linear rule looks exact, the verdict calls it on two probes (`probes`).
On the first, its saved tensors have every other element scaled by MAGNITUDE: a formula is exact there too;
differences of the forward lose their precision in the sums of large and small numbers, for any step short of one
larger than the inputs themselves (of the order of MAGNITUDE times the tests' values). On the second, some saved
elements are infinite: a linear rule's formula stays finite wherever the reference's gradient is, but the forward
at (or near) an infinite input is infinite or NaN, so its differences are NaN there, whatever the step. This one
catches a step relative to each element (exact for an elementwise rule, whose elements are never added together).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Callable

FORMULA = 1e-12  # relative agreement that rounding alone explains, with room for another order of operations
ROUNDING_ROOM = 1e3  # where the reference's own rounding is larger (rounding_scale), a formula may be this much further
NEAR = 1e-2  # up to this far from the reference but not within FORMULA: numerical (the tests accept up to ~1e-3)
NEGLIGIBLE = 1e-8  # gradients this small next to grad_output are cancellation noise, compared by no one
SMALL = 1e-3  # an element this much smaller than the largest has its gap measured against SMALL × the largest


def array_of(value: object) -> np.ndarray | None:
    "The array of a gradient (a Tensor or an array), else None."
    array = value if isinstance(value, np.ndarray) else getattr(value, "data", None)
    return array if isinstance(array, np.ndarray) else None


def as_float64(value: object) -> np.ndarray | None:
    """A gradient as float64, read as the tests read it: a Tensor's or an array's data, a list of numbers (of any
    float type), a complex array's real part. None for a float32 array (its own test checks the dtype; float32 is as
    far from float64 as finite differences) and for what holds no numbers. A rule cannot escape the verdict by its
    gradient's type."""
    data = value if isinstance(value, np.ndarray) else getattr(value, "data", value)  # an array's .data is a buffer
    try:
        array = np.asarray(data)
        if not isinstance(data, np.ndarray) and array.dtype.kind in "fiub":  # numbers, of whatever type: as the test
            return np.asarray(array, dtype=np.float64)
    except (TypeError, ValueError):  # a ragged list
        return None
    if array.dtype.kind == "c":
        array = array.real
    if array.dtype == np.float64 or array.dtype.kind in "iub":
        return np.asarray(array, dtype=np.float64)
    return None


def relative_gap(student: np.ndarray, reference: np.ndarray, grad_output: np.ndarray | None) -> float | None:
    "The gap between two gradients relative to their size; None when it says nothing (zero or negligible gradients)."
    if student.shape != reference.shape or student.size == 0:
        return None
    scale = max(np.abs(reference).max(), np.abs(student).max())
    incoming = np.abs(grad_output).max() if grad_output is not None and grad_output.size else 0.0
    if not np.isfinite(scale) or scale == 0 or scale < NEGLIGIBLE * incoming:
        return None
    gap = np.abs(student - reference).max()
    return gap / scale if np.isfinite(gap) else None


def emptied(student_values: object, reference_values: object) -> list[tuple[int, tuple[int, ...]]]:
    """[(input index, the reference's shape)] of each gradient the student's rule returned empty where the reference's
    is not: np.allclose finds an empty array close to anything it broadcasts with. (Any other wrong shape is left to
    the test, whose message says more: a missing unbroadcast, say.)"""
    student_values, reference_values = _as_tuple(student_values), _as_tuple(reference_values)
    if len(student_values) != len(reference_values):
        return []
    found = []
    for index, (mine, theirs) in enumerate(zip(map(array_of, student_values), map(array_of, reference_values))):
        if mine is not None and theirs is not None and mine.size == 0 < theirs.size:
            found.append((index, theirs.shape))
    return found


def typical_gap(student: np.ndarray, reference: np.ndarray, grad_output: np.ndarray | None) -> float | None:
    """The median of the elements' gaps, relative to the gradient's size, over the elements the reference does not
    find negligible; None when it says nothing, or when some element is further off than NEAR (left to the test).
    Finite differences miss every element by their step's error; a formula that is merely ill-conditioned somewhere
    (log(1/p - 1) at p = 1 - 1e-12 loses digits that log(1 - p) - log(p) keeps) misses only there."""
    largest = relative_gap(student, reference, grad_output)
    if largest is None or largest > NEAR:
        return largest
    scale = max(np.abs(reference).max(), np.abs(student).max())
    counted = np.abs(reference) > NEGLIGIBLE * scale
    if not counted.any():
        return None
    # each element's gap relative to itself, or for a small one to SMALL of the largest: a formula's rounding where
    # it cancels (s * (g - sum(g * s)) near 0) is of the largest terms' size, and stays below FORMULA so measured
    sizes = np.maximum(np.abs(reference), SMALL * scale)[counted]
    return float(np.median(np.abs(student - reference)[counted] / sizes))


def numerical_gaps(student_values: object, reference_values: object, grad_output: object) -> list[tuple[int, float]]:
    """[(input index, typical gap)] of each gradient that agrees with the reference like a numerical one does: in most
    of its elements, not only in a few (see typical_gap)."""
    student_values, reference_values = _as_tuple(student_values), _as_tuple(reference_values)
    if len(student_values) != len(reference_values):
        return []
    found = []
    for index, (mine, theirs) in enumerate(zip(student_values, reference_values)):
        mine, theirs = as_float64(mine), as_float64(theirs)
        if mine is None or theirs is None:
            continue
        gap = typical_gap(mine, theirs, as_float64(grad_output))
        if gap is not None and FORMULA < gap <= NEAR:
            found.append((index, gap))
    return found


def message(rule: str, gaps: list[tuple[int, float]], is_rule: bool = True, rounded: str | None = None) -> str:
    """Why a rule (or, not `is_rule`, a function that returns a gradient) is refused as numerical; `rounded`: what
    float32_rounding found the gradient exact for, if anything."""
    index, gap = max(gaps, key=lambda pair: pair[1])
    what = f"the gradient of {input_words(index)}" if is_rule else "the gradient it returned"
    if rounded is not None:
        return (
            f"{rule}: {what} is the exact one computed from {rounded} rounded to float32 (it agrees with that to "
            f"about 1e-16, and with the exact one only to {gap:.0e}, relative): a value was rounded to float32 inside "
            "the rule (an .astype(np.float32), an array made float32), and float32 keeps about 7 digits. The grader "
            "accepts a float64 gradient only as exact as its formula (1e-12), as it refuses finite differences: keep "
            "the dtype of grad_output and the saved tensors all the way through."
        )
    rounded = f" {ROUNDED}" if gap >= FLOAT32_ROUNDING else ""
    return (
        f"{rule}: {what} agrees with the exact one only to {gap:.0e} (relative, in half of its elements or more), "
        f"as finite differences of the forward do; a formula agrees to about 1e-16.{rounded} {ADVICE if is_rule else FUNCTION_ADVICE}"
    )


FLOAT32_ROUNDING = 1e-9  # a float64 result computed from float32 roundings (float32 keeps 7 digits) is this far off
ROUNDED = (
    "So does a formula computed with a value rounded to float32 on the way (an .astype(np.float32), an array made "
    "float32): keep the dtype of grad_output and the saved tensors."
)


def float32_rounding(
    student_values: object, gaps: list[tuple[int, float]], reference: Callable, args: tuple, kwargs: dict
) -> str | None:
    """What the student's numerical-looking gradients (`gaps`, of numerical_gaps) are exact for, once rounded to
    float32: 'its saved tensors', 'grad_output', 'its inputs' (both), or 'the exact gradient' itself; None when no
    rounding explains them (finite differences, say). Measured by running the `reference` on the rounded values."""
    if max(gap for _, gap in gaps) < FLOAT32_ROUNDING:
        return None
    student_values = _as_tuple(student_values)
    for what, rounded_args in _float32_roundings(args):
        try:
            with np.errstate(all="ignore"):
                expected = _as_tuple(reference(*rounded_args, **kwargs))
        except Exception:  # noqa: BLE001  (the reference refuses the rounded values: that rounding explains nothing)
            continue
        if what == "the exact gradient":
            expected = tuple(_to_float32(value) for value in expected)
        if len(expected) == len(student_values) and all(
            _exact(student_values[index], expected[index]) for index, _ in gaps
        ):
            return what
    return None


def _float32_roundings(args: tuple) -> list[tuple[str, tuple]]:
    "[(what was rounded, the arguments with it rounded)]; a rule's saved tensors are its first argument's."
    first, rest = (args[0], args[1:]) if args and hasattr(args[0], "saved_tensors") else (None, args)
    saved = (_with_saved_rounded(first),) if first is not None else tuple(_to_float32(a) for a in rest)
    rounded_rest = tuple(_to_float32(a) for a in rest)
    if first is None:
        return [("its inputs", saved), ("the exact gradient", args)]
    return [
        ("its saved tensors", (*saved, *rest)),
        ("grad_output", (first, *rounded_rest)),
        ("its saved tensors and grad_output", (*saved, *rounded_rest)),
        ("the exact gradient", args),
    ]


def _with_saved_rounded(function: object) -> object:
    copied = copy.copy(function)
    copied.saved_tensors = tuple(_to_float32(t) for t in getattr(function, "saved_tensors", ()))
    return copied


def _to_float32(value: object) -> object:
    "A float64 array, or a Tensor of one, with its values rounded to float32 (still float64); anything else as it is."
    return _cast(value, lambda array: array.astype(np.float32).astype(np.float64))


def _cast(value: object, change: Callable) -> object:
    "A float64 array, or a Tensor of one, with `change` applied to its array (a copy); anything else as it is."
    if isinstance(value, np.ndarray):
        return change(value) if value.dtype == np.float64 else value
    data = getattr(value, "data", None)
    if isinstance(data, np.ndarray) and data.dtype == np.float64:
        copied = copy.copy(value)
        copied.data = change(data)
        return copied
    return value


def rounding_scale(expected: object, reference: Callable, args: tuple, kwargs: dict) -> float:
    """How far the reference's own float64 gradient at these inputs is from the same formula in extended precision
    (typical_gap): about 1e-16 where the formula is well conditioned; far more where the exact gradient is a
    cancellation of much larger terms (batch norm over a batch of two, whose normalised output is ±1 whatever x is),
    and there every formula's rounding is that large. 0.0 when the reference does not compute in long double."""
    extended = lambda value: _cast(value, lambda array: array.astype(np.longdouble))  # noqa: E731
    first, rest = (args[0], args[1:]) if args and hasattr(args[0], "saved_tensors") else (None, args)
    if first is not None:
        first = copy.copy(first)
        first.saved_tensors = tuple(extended(t) for t in getattr(args[0], "saved_tensors", ()))
    try:
        with np.errstate(all="ignore"):
            precise = _as_tuple(reference(*((first,) if first is not None else ()), *map(extended, rest), **kwargs))
    except Exception:  # noqa: BLE001  (the reference does not compute in long double: nothing to say)
        return 0.0
    scale = 0.0
    for mine, theirs in zip(_as_tuple(expected), precise):
        mine, theirs = as_float64(mine), array_of(theirs)
        if mine is not None and theirs is not None and theirs.shape == mine.shape:
            scale = max(scale, typical_gap(mine, theirs.astype(np.float64), None) or 0.0)
    return scale


def _exact(mine: object, theirs: object) -> bool:
    "Whether a gradient agrees with another to rounding error (FORMULA), in most of its elements (typical_gap)."
    mine, theirs = as_float64(mine), as_float64(theirs)
    if mine is None or theirs is None or mine.shape != theirs.shape:
        return False
    gap = typical_gap(mine, theirs, None)
    return gap is not None and gap <= FORMULA


ADVICE = (
    "A rule must compute the derivative from its formula (derive it by the chain rule and use the saved tensors), "
    "not by evaluating the forward at nearby points."
)

FUNCTION_ADVICE = "Compute it from its formula, by the chain rule, not by evaluating the function at nearby points."

# -- The probe of a linear rule ----------------------------------------------------------------------------------------

LINEAR_RULES = {  # rules whose only state is their saved inputs, valid for any values of them (no log, no clipping)
    "AddBackward",
    "SubBackward",
    "MulBackward",
    "DivBackward",
    "NegBackward",
    "MatmulBackward",
    "SumBackward",
    "MeanBackward",
    "MSEBackward",
}
MAGNITUDE = 1e150  # ulp(1e150) is about 1e134: a step must be larger still to be exact; squares still fit in float64


def probe(function: object, tensor_type: type) -> object | None:
    "A copy of the rule `function` whose saved float64 tensors have every other element scaled by MAGNITUDE; or None."
    return changed_copy(function, tensor_type, lambda tensor, _: mixed_magnitudes(tensor))


def infinite_probe(function: object, tensor_type: type) -> object | None:
    """A copy of the rule `function` whose k-th saved float64 tensor is infinite at every third element from the k-th
    on (keeping the sign): the inputs are never infinite at the same place, and some places are finite in all."""
    return changed_copy(function, tensor_type, with_infinities)


def probes(function: object, tensor_type: type) -> list[tuple[str, object]]:
    "[(what it shows, the probed copy)] of the rule `function`: mixed magnitudes, then infinite values."
    found = [("mixed", probe(function, tensor_type)), ("infinite", infinite_probe(function, tensor_type))]
    return [(what, copied) for what, copied in found if copied is not None]


def changed_copy(function: object, tensor_type: type, change: Callable[[object, int], object]) -> object | None:
    "A copy of the rule with change(tensor, k) in place of its k-th saved float64 tensor; None when it has none."
    saved = getattr(function, "saved_tensors", None)
    if not isinstance(saved, tuple) or not any(is_float64_tensor(t, tensor_type) for t in saved):
        return None
    changed, k = [], 0
    for tensor in saved:
        if is_float64_tensor(tensor, tensor_type):
            tensor, k = change(tensor, k), k + 1
        changed.append(tensor)
    copied = copy.copy(function)
    copied.saved_tensors = tuple(changed)
    return copied


def is_float64_tensor(value: object, tensor_type: type) -> bool:
    return isinstance(value, tensor_type) and isinstance(value.data, np.ndarray) and value.data.dtype == np.float64


def mixed_magnitudes(tensor: object) -> object:
    copied = copy.copy(tensor)
    scale = np.where(np.arange(tensor.data.size) % 2 == 0, MAGNITUDE, 1.0).reshape(tensor.data.shape)
    copied.data = tensor.data * scale
    return copied


def with_infinities(tensor: object, k: int) -> object:
    copied = copy.copy(tensor)
    where = (np.arange(tensor.data.size) % 3 == k % 3).reshape(tensor.data.shape)
    copied.data = np.where(where, np.copysign(np.inf, tensor.data), tensor.data)
    return copied


def probe_gaps(student_values: object, reference_values: object, grad_output: object) -> list[tuple[int, float]] | None:
    """[(input index, relative gap)] of the probe's gradients that are not exact where the reference's is finite: beyond
    FORMULA, or not finite. None when the probe says nothing (every gradient negligible or of another shape)."""
    student_values, reference_values = _as_tuple(student_values), _as_tuple(reference_values)
    if len(student_values) != len(reference_values):
        return None
    found, conclusive = [], False
    for index, (mine, theirs) in enumerate(zip(student_values, reference_values)):
        mine, theirs = as_float64(mine), as_float64(theirs)
        if mine is None or theirs is None or mine.shape != theirs.shape or not np.isfinite(theirs).any():
            continue
        finite = np.isfinite(theirs)  # an infinite saved value makes some of the exact gradient infinite: not those
        mine, theirs = mine[finite], theirs[finite]
        if not np.isfinite(mine).all():
            found.append((index, np.inf))
            conclusive = True
            continue
        gap = relative_gap(mine, theirs, as_float64(grad_output))
        if gap is not None:
            conclusive = True
            if gap > FORMULA:
                found.append((index, gap))
    return found if conclusive else None


def probe_message(rule: str, gaps: list[tuple[int, float]], what: str = "mixed") -> str:
    "Why a linear rule is refused as numerical, after the probe `what` (see probes)."
    index, gap = max(gaps, key=lambda pair: pair[1])
    off = "is not finite" if not np.isfinite(gap) else f"is off by {gap:.0e} (relative)"
    if what == "infinite":
        return (
            f"{rule}: exact on the tests' inputs, but when some saved values are infinite the gradient of "
            f"{input_words(index)} {off} where the exact one is finite, as finite differences of the forward are (the forward is "
            f"infinite or NaN there); a formula stays exact. {ADVICE} (A formula that multiplies a saved value by 0 "
            "to get a shape, x * 0, is NaN there too: use np.zeros_like(x) or np.ones_like(x).)"
        )
    return (
        f"{rule}: exact on the tests' inputs, but when half of the saved values are about {MAGNITUDE:.0e} times larger "
        f"the gradient of {input_words(index)} {off}, as finite differences of the forward are; a formula stays exact "
        f"(about 1e-16). {ADVICE}"
    )


def input_words(index: int) -> str:
    "'input 1 (the second gradient apply returns)': the course counts inputs from 0, which a reader may not expect."
    order = ("first", "second", "third", "fourth")[index] if index < 4 else f"number {index + 1}"
    return f"input {index} (the {order} gradient apply returns)"


def _as_tuple(values: object) -> tuple:
    return tuple(values) if isinstance(values, (tuple, list)) else (values,)
