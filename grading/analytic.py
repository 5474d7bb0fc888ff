"""Telling a backward rule that applies a formula from one that differentiates its forward numerically.

The verdict runs the reference rule on the same saved tensors and grad_output as the student's (both in the grader's
process: the student's result is plain data by then) and compares the two in float64. A formula, whichever way it is
written, agrees with the reference to rounding error, about 1e-16 relative. Finite differences of the forward agree
only to the difference error: at least ~1e-11 relative for any step in float64 (the step's truncation error against its
rounding error), so the band between the two means "numerical". A result that is further off is left to the test,
whose message diagnoses it. What this cannot see (grading/README.md): a linear rule differentiated with a large
step, which is exact, and extrapolated or complex-step differentiation.
"""

import numpy as np

FORMULA = 1e-12  # relative agreement that rounding alone explains, with room for another order of operations
NEAR = 1e-5  # closer than this to the reference, but not within FORMULA: numerical
NEGLIGIBLE = 1e-8  # gradients this small next to grad_output are cancellation noise, compared by no one


def as_float64(value):
    "The float64 array of a gradient (a Tensor or an array), else None."
    array = value if isinstance(value, np.ndarray) else getattr(value, "data", None)
    if isinstance(array, np.ndarray) and array.dtype == np.float64:
        return array
    return None


def relative_gap(student, reference, grad_output):
    "The gap between two gradients relative to their size; None when it says nothing (zero or negligible gradients)."
    if student.shape != reference.shape or student.size == 0:
        return None
    scale = max(np.abs(reference).max(), np.abs(student).max())
    incoming = np.abs(grad_output).max() if grad_output is not None and grad_output.size else 0.0
    if not np.isfinite(scale) or scale == 0 or scale < NEGLIGIBLE * incoming:
        return None
    gap = np.abs(student - reference).max()
    return gap / scale if np.isfinite(gap) else None


def numerical_gaps(student_values, reference_values, grad_output):
    "[(input index, relative gap)] of each gradient that agrees with the reference like a numerical one does."
    student_values, reference_values = _as_tuple(student_values), _as_tuple(reference_values)
    if len(student_values) != len(reference_values):
        return []
    found = []
    for index, (mine, theirs) in enumerate(zip(student_values, reference_values)):
        mine, theirs = as_float64(mine), as_float64(theirs)
        if mine is None or theirs is None:
            continue
        gap = relative_gap(mine, theirs, as_float64(grad_output))
        if gap is not None and FORMULA < gap <= NEAR:
            found.append((index, gap))
    return found


def message(rule, gaps):
    index, gap = max(gaps, key=lambda pair: pair[1])
    return (
        f"{rule}: the gradient of input {index} agrees with the exact one only to {gap:.0e} (relative), as finite "
        "differences of the forward do; a formula agrees to about 1e-16. A rule must compute the derivative from its "
        "formula (derive it by the chain rule and use the saved tensors), not by evaluating the forward at nearby points."
    )


def _as_tuple(values):
    return tuple(values) if isinstance(values, (tuple, list)) else (values,)
