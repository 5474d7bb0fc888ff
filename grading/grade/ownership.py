"""What a student's function may change of the grader's objects: the tests' data belong to the grader.

A test hands its arrays and objects to the student's function and then computes the expected answer from those same
objects. Whatever the function changes in them comes back over the wire (grading.sandbox.wire) and, if it were applied, the
test would check the student's answer against data the student chose: a `matmul` that returns zeros and zeroes its
inputs passes `matmul(a, b) == a.data @ b.data`. So every call's changes to the grader's objects are checked here:

* what an exercise may change is declared with it, in MAY_CHANGE: an optimizer's `update` its own state and the
  parameter it is given, `attach` the `result` it records on, `run_backward` the gradients of `root`'s graph (never a
  tensor's data: KEEPS), `train_epoch` the model, the optimizer and the random generator; every other exercise nothing;
* an array of anything else changed in place fails the call, with a message that names the argument (`b.data`,
  `X`, `params[0].data`);
* any other change to anything else (an attribute set, a list appended to) is not read back: the grader's object
  stays as the test made it, as if the student had been handed a copy; but a tensor's data set to another array and
  then handed back to a function of the test's (a callback: 14's loss_fn at moved parameters, finite differences)
  fails the call, since that function computes with the tensor unmoved (issue 44).
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Callable, Sequence

import numpy as np

from ..common.errors import Refusal
from ..sandbox import wire

MAY_CHANGE = {  # every other exercise may change nothing it is given (a backward rule, matmul)
    "Function.__init__": ("self",),
    "attach": ("result",),
    "accumulate": ("grads",),
    "run_backward": ("root",),
    "train_epoch": ("model", "optimizer", "rng"),
    "SGD.update": ("self", "p"),
    "Adam.update": ("self", "p"),
}
# What these exercises may not change even of the tensors they may: a tensor's numbers and whether it wants a
# gradient. run_backward releases the graph and stores retained gradients, accumulate stores gradients in its dict;
# a test then computes the expected gradient from the graph's tensors (06's run_backward_hidden from x.data).
KEEPS = {"run_backward": ("data", "requires_grad"), "accumulate": ("data", "requires_grad")}


def signature_of(function: Callable) -> inspect.Signature | None:
    try:
        return inspect.signature(function)
    except (TypeError, ValueError):
        return None


def named_arguments(
    signature: inspect.Signature | None, args: Sequence[object], kwargs: dict[str, object]
) -> dict[str, object]:
    "{parameter name: value} of one call (positional names arg0, arg1, ... where the signature does not bind)."
    if signature is not None:
        try:
            bound = signature.bind_partial(*args, **kwargs)
            return dict(bound.arguments)
        except TypeError:
            pass
    return {**{f"arg{i}": value for i, value in enumerate(args)}, **kwargs}


def changeable(qualname: str, named: dict[str, object]) -> dict[str, object]:
    "The arguments the call may change: those MAY_CHANGE declares for its exercise."
    names = MAY_CHANGE.get(qualname, ())
    return {name: named[name] for name in names if name in named}


def object_paths(named: dict[str, object], number_of: dict[int, int]) -> PathTo:
    """{wire number: how the test's arguments reach that object ('b.data', 'params[0].grad')}, nearest first. Each
    object keeps only a link to where it was reached from, so a graph 20,000 operations deep costs 20,000 links, not
    20,000 ever longer strings; the path is spelled out when asked for (`PathTo`)."""
    links, seen = {}, set()
    queue = deque((value, None, name) for name, value in named.items())
    while queue:  # the grader's own objects only: as many as its tests made
        value, parent, step = queue.popleft()
        if wire.is_simple(value) or id(value) in seen:
            continue
        seen.add(id(value))
        here = (parent, step)
        number = number_of.get(id(value))
        if number is not None:
            links.setdefault(number, here)
        if isinstance(value, (list, tuple)):
            queue.extend((item, here, f"[{i}]") for i, item in enumerate(value))
        elif isinstance(value, dict):
            queue.extend((item, here, f"[{key!r}]") for key, item in value.items())
        elif is_course_object(value):
            queue.extend((item, here, f".{name}") for name, item in vars(value).items())
    return PathTo(links)


class PathTo(dict):
    "{wire number: link}; path(number) spells the way to it ('params[0].data')."

    def get(self, number: int, default: str | None = None) -> str | None:
        link = super().get(number)
        if link is None:
            return default
        steps = []
        while link is not None:
            link, step = link
            steps.append(step)
        path = "".join(reversed(steps))
        return path if len(path) <= 120 else f"{steps[-1]}...{path[-100:]}"  # deep in a graph: its ends

    def __getitem__(self, number: int) -> str:
        path = self.get(number)
        if path is None:
            raise KeyError(number)
        return path


def keeping(
    names: tuple[str, ...], allowed: set[int], table: list[list], objects: dict[int, object], number_of: dict[int, int]
) -> tuple[set[int], list[list]]:
    """`allowed` less the arrays that are attribute `names` of a tensor in it, and `table` with those attributes of
    each such tensor as the grader has them: the change of a tensor's data, in place or by a new array, is not taken."""
    tensors = {n: objects[n] for n in allowed if n in objects and is_tensor(objects[n])}
    held = {number_of.get(id(vars(t).get(name))) for t in tensors.values() for name in names}
    kept = []
    for number, kind, payload in table:
        if kind == "o" and number in tensors and isinstance(payload, dict) and isinstance(payload.get("s"), dict):
            state, current = dict(payload["s"]), vars(tensors[number])
            for name in names:
                if name not in current:
                    state.pop(name, None)
                elif wire.is_simple(current[name]):
                    state[name] = current[name]
                elif id(current[name]) in number_of:
                    state[name] = {"r": number_of[id(current[name])]}
            payload = dict(payload, s=state)
        kept.append([number, kind, payload])
    return allowed - held, kept


def is_tensor(value: object) -> bool:
    return type(value).__name__ == "Tensor" and is_course_object(value)


def is_course_object(value: object) -> bool:
    module = getattr(type(value), "__module__", "") or ""
    return (
        hasattr(value, "__dict__")
        and not isinstance(value, (type, np.ndarray))
        and (module.startswith("tinytorch") or module == "__main__")
    )


# Where an exercise changes arrays it was not given by name: the gradients that rules return, in 06's backward walk
IN_PLACE_HINTS = dict.fromkeys(
    ("run_backward", "accumulate"),
    " (a gradient a rule returned can be another path's too, as x + x hands one grad_output to both inputs: "
    "accumulate stores the sum as a new array, not grads[key].data += grad.data)",
)


def may_change(qualname: str, named: dict[str, object], number_of: dict[int, int]) -> set[int]:
    """The wire numbers of the objects a call may change: those its changeable arguments reach when the call begins.
    Taken once per call, before any of its messages is applied: run_backward releases the graph it walks, and a set
    taken from the released graph would refuse the later changes to it (a retained gradient, the last release)."""
    return set(object_paths(changeable(qualname, named), number_of))


def check_changes(
    qualname: str,
    named: dict[str, object],
    table: list[list],
    number_of: dict[int, int],
    first_worker_number: int,
    *,
    allowed: set[int] | None = None,
    objects: dict[int, object] | None = None,
    calling: str | None = None,
) -> list[list]:
    """The object table of a reply, less the changes this call may not make; raises Refusal, naming the argument,
    when the call changed an array it was not allowed to change. `allowed`: may_change() taken when the call began
    (taken now if not given). `objects`: {wire number: the grader's object}, for KEEPS. `calling`: the wire number of
    the test's function a callback asks for (None for a reply): then a tensor's data set to another array is refused
    (moved_tensor)."""
    changes = [entry for entry in table if entry[0] < first_worker_number]
    if not changes:
        return table
    if allowed is None:
        allowed = may_change(qualname, named, number_of)
    if qualname in KEEPS and objects is not None:
        allowed, table = keeping(KEEPS[qualname], allowed, table, objects, number_of)
    refused = [entry for entry in changes if entry[0] not in allowed]
    arrays = [entry[0] for entry in refused if entry[1] == "a"]
    if arrays:
        where = object_paths(named, number_of).get(arrays[0], "an array it was given")
        raise Refusal(
            f"your {qualname} changed {where} in place; the tests compute the expected answer from the data they "
            "give you, so a function may change only what its exercise says: compute a new array instead"
            + IN_PLACE_HINTS.get(qualname.rsplit(".", 1)[-1], "")
        )
    moved = [entry[0] for entry in refused if calling is not None and data_set(entry, objects or {}, number_of)]
    if moved:
        raise Refusal(moved_tensor(qualname, object_paths(named, number_of), moved[0], calling))
    kept = {entry[0] for entry in refused}
    return [entry for entry in table if entry[0] not in kept]


def data_set(entry: list, objects: dict[int, object], number_of: dict[int, int]) -> bool:
    "Whether an entry of a reply's object table sets a grader's tensor's data to another array than it has."
    number, kind, payload = entry
    tensor = objects.get(number)
    state = payload.get("s") if kind == "o" and isinstance(payload, dict) else None
    if not is_tensor(tensor) or not isinstance(state, dict) or "data" not in state:
        return False
    current = vars(tensor).get("data")
    if wire.is_simple(current):
        return state["data"] != current
    return state["data"] != {"r": number_of.get(id(current))}  # a number (0-d data + a step) or another array


def moved_tensor(qualname: str, paths: dict[int, str], number: int, calling: int | None) -> str:
    """Why a call that set a tensor's data and then called a function of the test's fails: 14's notebook checks its
    visible tests' loss_fn with the same words (tests/test_second_derivatives.py holds them to these)."""
    tensor, function = paths.get(number, "a tensor it was given"), paths.get(calling, "a function of the test's")
    return (
        f"your {qualname} set {tensor}.data and then called {function}, a function the test gave it. A function graded "
        "here may change only what its exercise says; its writes to anything else stay in its own copy, so "
        f"{function} computes with {tensor} as the test made it, and evaluating it at moved values, as finite "
        "differences do, computes nothing. Compute the result from the arguments as they are, with the engine's "
        "derivatives (grad, backward)."
    )
