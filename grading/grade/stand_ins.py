"""The stand-ins: each exercise in the grader's copy of the module replaced by a call of the student's version.

A stand-in calls the student's function through grading.grade.remote.Remote; for a backward rule it also runs the
reference rule here on the same inputs, refuses a rule that agrees only as finite differences do, and probes the
first exact answer of a linear rule once more (grading.grade.analytic).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from ..common.errors import Refusal
from . import analytic
from .ownership import named_arguments, signature_of
from .student_errors import StudentError, students, timed_out_text

if TYPE_CHECKING:
    from .remote import Remote

EXACT_FUNCTIONS = {  # exercises that are not rules but return a gradient, pure functions of arrays: refused as a
    "tied_weight_grad",  # rule is when they agree with the reference only as finite differences do (13's test
}  # computes its expected gradient with numerical_grad, a line a student could copy)


def install(space: ModuleType | dict[str, object], targets: list[tuple[str, str]], remote: Remote) -> None:
    """Replace each exercise in `space` (the grader's copy of the module, or the notebook's namespace for an exercise
    that is not exported) with a stand-in that calls the student's version."""
    for qualname, kind in targets:
        get = space.get if isinstance(space, dict) else lambda name: getattr(space, name)
        owner = get(qualname.split(".")[0])
        original = owner if kind == "function" else owner.__dict__.get(qualname.split(".")[1])
        original = original.fget if isinstance(original, property) else original
        reference = getattr(owner, "apply", None) if qualname.endswith(".apply") else None
        reference = original if qualname in EXACT_FUNCTIONS else reference
        signature = signature_of(original)

        def stub(
            *args: object,
            _qualname: str = qualname,
            _reference: Callable | None = reference,
            _signature: inspect.Signature | None = signature,
            **kwargs: object,
        ) -> object:
            if _qualname in remote.numerical:  # a probe showed a numerical rule: every call of it fails
                raise Refusal(remote.numerical[_qualname])
            if _qualname in remote.timed_out:  # once is enough: every later call would use up its minutes again
                raise students(StudentError(remote.timed_out[_qualname]), _qualname, remote.timed_out[_qualname])
            named = named_arguments(_signature, args, kwargs)
            try:
                value = remote.call(_qualname, args, kwargs, readonly=_qualname.endswith(".apply"), named=named)
            except StudentError as error:
                if str(error) == timed_out_text(_qualname):
                    why = f"{timed_out_text(_qualname)}: its later calls were not made, and their tests fail"
                    remote.timed_out[_qualname] = remote.event(why).args[0]
                raise
            if _reference is not None:
                probe = _qualname.removesuffix(".apply") in analytic.LINEAR_RULES and _qualname not in remote.probed
                if refuse_numerical_rule(_qualname, value, _reference, args, kwargs, probe):
                    probe_linear_rule(_qualname, _reference, _signature, args, kwargs, remote)
            return value

        stub.__name__ = stub.__qualname__ = qualname.rsplit(".", 1)[-1]
        if kind == "function":
            if isinstance(space, dict):
                space[qualname] = stub
            else:
                setattr(space, qualname, stub)
        else:
            setattr(owner, qualname.split(".")[1], property(stub) if kind == "property" else stub)


def refuse_numerical_rule(
    qualname: str, value: object, reference: Callable, args: tuple, kwargs: dict[str, object], probe: bool = False
) -> bool:
    """Fail a backward rule whose gradient agrees with the reference rule's only as finite differences do. With
    `probe` (a linear rule not probed yet), return whether it agrees exactly (to rounding error); else False."""
    try:
        expected = reference(*args, **kwargs)
        grad_output = args[1] if len(args) > 1 else kwargs.get("grad_output")
        gaps = analytic.numerical_gaps(value, expected, grad_output)
        exact = probe and analytic.probe_gaps(value, expected, grad_output) == []
        emptied = analytic.emptied(value, expected)
    except Exception:
        return False  # the reference does not take these arguments: the test's own comparison decides
    if emptied:  # close to anything for np.allclose
        index, shape = emptied[0]
        raise Refusal(
            f"your {qualname.removesuffix('.apply')} returned an empty gradient for input {index}, whose gradient has "
            f"shape {shape}: a gradient has its input's shape"
        )
    if gaps:  # not where the inputs make every formula's rounding that large (batch norm over two samples)
        rounding = analytic.ROUNDING_ROOM * analytic.rounding_scale(expected, reference, args, kwargs)
        gaps = [(index, gap) for index, gap in gaps if gap > rounding]
    if gaps:
        rule = qualname.removesuffix(".apply")
        rounded = analytic.float32_rounding(value, gaps, reference, args, kwargs)
        raise Refusal(analytic.message(rule, gaps, is_rule=qualname.endswith(".apply"), rounded=rounded))
    return exact


def probe_linear_rule(
    qualname: str,
    reference: Callable,
    signature: inspect.Signature | None,
    args: tuple,
    kwargs: dict[str, object],
    remote: Remote,
) -> None:
    """The first time a linear rule is exact, call it on the probes of grading.grade.analytic (saved tensors of mixed
    magnitudes, then with infinite values): a rule exact there too is a formula; one that is not fails this call and
    every later one. The probes' calls run with NumPy's floating-point warnings off: an honest rule's inf - inf is
    the grader's doing, and no news for the page."""
    rule = qualname.removesuffix(".apply")
    if len(args) < 2:
        return
    conclusive = False
    for what, copied in analytic.probes(args[0], type(args[1])):
        probe_args = (copied, *args[1:])
        try:
            with np.errstate(all="ignore"):  # the reference's inf - inf is no news for the page
                expected = reference(*probe_args, **kwargs)
        except Exception:
            continue
        named = named_arguments(signature, probe_args, kwargs)
        value = remote.call(qualname, probe_args, kwargs, readonly=True, named=named, quiet=True)
        gaps = analytic.probe_gaps(value, expected, args[1])
        conclusive = conclusive or gaps is not None
        if gaps:
            remote.probed.add(qualname)
            remote.numerical[qualname] = analytic.probe_message(rule, gaps, what)
            raise Refusal(remote.numerical[qualname])
    if conclusive:  # else nothing to compare (every gradient negligible): the next call is probed
        remote.probed.add(qualname)
