"""Values as JSON nodes, and the objects they reach as a flat table of their states: what one side sends.

The graph of a tensor can be 100,000 operations deep, so objects are described one after another from a queue,
never by recursion; an object the other side already knows is sent again only when its state changed.
"""

import numpy as np

from .protocol import WireError, is_simple
from .table import ObjectTable


class Outgoing:
    "One message being written: the objects it describes, in the order they were found, and its arrays."

    def __init__(self) -> None:
        self.objects = {}  # number -> object
        self.queue = []  # their numbers in that order: describing one may find more
        self.arrays = []  # the message's arrays, which the table names by position

    def add(self, number: int, value: object) -> None:
        self.objects[number] = value
        self.queue.append(number)


class Encoder:
    """Encodes for one side: `on_worker` is the worker's (what the student's code gives back may only be plain data
    and the course's objects), else the grader's (its test-defined classes and its functions may cross as names)."""

    def __init__(self, table: ObjectTable, on_worker: bool) -> None:
        self.table, self.on_worker = table, on_worker

    def message(self, values: dict, include_changes: bool) -> tuple[dict, list, list]:
        "(the encoded values, the object table, the arrays) of a message carrying `values` (name -> value)."
        out = Outgoing()
        encoded = {name: self.encode(v, out) for name, v in values.items()}
        if include_changes:
            for number, value in self.table.changed(out.objects):
                out.add(number, value)
        entries, position = [], 0
        while position < len(out.queue):
            number = out.queue[position]
            position += 1
            kind, payload = self.describe(out.objects[number], out)
            entries.append([number, kind, payload])
        self.table.crossed(out.objects)
        return encoded, entries, out.arrays

    def encode(self, value: object, out: Outgoing) -> object:
        "A JSON node for `value`; objects not yet known are numbered and added to `out`."
        if is_simple(value):
            return value  # NaN and infinities too: Python's json reads what it writes
        number = self.table.number_of.get(id(value))
        if number is not None:
            return {"r": number}
        if isinstance(value, float):
            return float(value)
        if isinstance(value, tuple):
            return {"t": [self.encode(v, out) for v in value]}
        if isinstance(value, np.generic):
            return {"n": self.encode(np.asarray(value), out)}
        if isinstance(value, slice):
            return {"sl": [self.encode(v, out) for v in (value.start, value.stop, value.step)]}
        if value is Ellipsis:
            return {"el": 1}
        if isinstance(value, complex):
            return {"cx": [value.real, value.imag]}
        if isinstance(value, np.dtype):
            return {"dt": value.str}
        if isinstance(value, type) and issubclass(value, np.generic):
            return {"nt": np.dtype(value).str}
        if any(value is t for t in (float, int, bool, complex)):
            return {"bt": value.__name__}
        number = self.table.register(value)
        out.add(number, value)
        return {"r": number}

    def describe(self, value: object, out: Outgoing) -> list:
        "[kind, payload] for an object's current state."
        if isinstance(value, np.ndarray):
            out.arrays.append(value)
            frozen = not self.on_worker and not value.flags.writeable  # the grader froze it (gradcheck)
            return ["ar" if frozen else "a", len(out.arrays) - 1]
        if isinstance(value, list):
            return ["l", [self.encode(v, out) for v in value]]
        if isinstance(value, dict):
            items = []
            for k, v in value.items():
                if not (is_simple(k) or isinstance(k, tuple)):
                    raise WireError(f"a dict with a {type(k).__name__} key cannot be sent")
                items.append([self.encode(k, out), self.encode(v, out)])
            return ["d", items]
        if isinstance(value, np.random.Generator):
            return ["g", value.bit_generator.state]
        if isinstance(value, type):
            return ["c", self.class_reference(value, out)]
        module = getattr(type(value), "__module__", "") or ""
        is_course_object = hasattr(value, "__dict__") and (module.startswith("tinytorch") or module == "__main__")
        if callable(value) and not is_course_object:
            if self.on_worker:
                raise WireError(
                    f"your code returned a function ({getattr(value, '__name__', value)!r}); "
                    "the grader can check tensors, arrays, numbers and the course's objects only"
                )
            return ["f", None]
        if not is_course_object:
            if self.on_worker:  # what the student's code gave back
                lazy = " (a generator or iterator: return list(...) of it)" if hasattr(value, "__next__") else ""
                raise WireError(
                    f"your code gave back a {type(value).__name__} object{lazy}; the grader can check tensors, "
                    "arrays, numbers, strings, lists, tuples, dicts and the course's objects only"
                )
            raise WireError(f"a {type(value).__name__} object cannot be sent")
        cls = self.encode(type(value), out)
        return ["o", {"c": cls, "s": {name: self.encode(item, out) for name, item in vars(value).items()}}]

    def class_reference(self, cls: type, out: Outgoing) -> dict:
        module = getattr(cls, "__module__", "") or ""
        if module.startswith("tinytorch.") or module == "tinytorch":
            return {"m": module, "q": cls.__qualname__}
        if not self.on_worker and module == "__main__":  # a class the grader's test defined
            return {"L": cls.__qualname__, "b": [self.encode(b, out) for b in cls.__bases__ if b is not object]}
        raise WireError(
            f"a {cls.__qualname__} object cannot be sent: the grader checks tensors, arrays, numbers "
            "and the course's classes only"
        )
