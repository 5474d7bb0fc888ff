"""The objects one side knows during one call, by number, and what their state was when last sent or received.

An object gets a number the first time it crosses; later references to it are that number, so identity survives
the crossing. Its fingerprint says whether its state has changed since, and so whether the next message carries it.
"""

import numpy as np

from .protocol import is_simple


class ObjectTable:
    "number -> object and back, numbering from `first_number` what this side sends first."

    def __init__(self, first_number: int) -> None:
        self.objects = {}  # number -> the object
        self.number_of = {}  # id(object) -> its number
        self.seen = {}  # number -> the object's fingerprint when it last crossed
        self.next_number = first_number

    def add(self, number: int, value: object) -> None:
        "Know `value` by the number the other side gave it."
        self.objects[number], self.number_of[id(value)] = value, number

    def register(self, value: object) -> int:
        "Give `value` the next number of this side's."
        number, self.next_number = self.next_number, self.next_number + 1
        self.add(number, value)
        return number

    def changed(self, besides: dict) -> list:
        "[(number, object)] of every known object not in `besides` whose state differs from when it last crossed."
        return [
            (n, v) for n, v in list(self.objects.items()) if n not in besides and self.seen.get(n) != fingerprint(v)
        ]

    def crossed(self, numbers: object) -> None:
        "Remember the state of the objects `numbers` as it is now: it has just been sent or received."
        for number in numbers:
            self.seen[number] = fingerprint(self.objects[number])


def fingerprint(value: object) -> object:
    "What must differ for an object's state to have changed since it was last sent or received."
    if isinstance(value, np.ndarray):
        return value.shape, value.dtype.str, value.tobytes()
    if isinstance(value, list):
        return tuple(id(v) if not is_simple(v) else ("v", v) for v in value)
    if isinstance(value, dict):
        return tuple((k, id(v) if not is_simple(v) else ("v", v)) for k, v in value.items())
    if isinstance(value, np.random.Generator):
        return repr(value.bit_generator.state)
    if isinstance(value, type):
        return ()
    state = getattr(value, "__dict__", {})
    return tuple((k, id(v) if not is_simple(v) else ("v", v)) for k, v in state.items())
