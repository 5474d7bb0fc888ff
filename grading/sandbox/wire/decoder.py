"""A message's object table and values made back into objects: what one side receives, and all it refuses.

On the grader's side this is the trust boundary's gate: whatever a malformed message breaks is a WireError with no
detail (its text would quote the other side's data); a class is only ever one the grader trusts (`resolve_class`) or,
in the worker, one the grader's test defined; an array keeps its shape; nothing is copied twice.
"""

from collections.abc import Callable

import numpy as np

from .protocol import ARRAY_KINDS, WireError, is_simple
from .table import ObjectTable


class Incoming:
    "One message being read: its arrays, and the numbers of those that arrive read-only (None: as `readonly` says)."

    def __init__(self, arrays: list, frozen: set | None) -> None:
        self.arrays, self.frozen = arrays, frozen


class Decoder:
    """Decodes for one side: `on_worker` is the worker's (the grader's messages are well formed there; what fails in
    reading one is the student's module), else the grader's. `resolve_class(module, qualname)` gives a class this
    side trusts; `make_callable(number)` a stand-in for the other side's function (the worker only); `readonly` makes
    every array that arrives unwritable (a backward rule must not change its inputs)."""

    def __init__(
        self,
        table: ObjectTable,
        resolve_class: Callable,
        make_callable: Callable | None,
        *,
        readonly: bool,
        accept_new_classes: bool,
    ) -> None:
        self.table, self.resolve_class, self.make_callable = table, resolve_class, make_callable
        self.on_worker, self.readonly, self.accept_new_classes = make_callable is not None, readonly, accept_new_classes

    def receive(self, header: dict, arrays: list) -> dict:
        """Apply a message's object table (new objects made, known ones updated); return its decoded values. Whatever
        a malformed message breaks here is a WireError, with no detail (the text would quote the other side's data);
        in the worker, an error of the student's module (a class it lacks) is raised as it is."""
        try:
            return self._receive(header, arrays)
        except WireError:
            raise
        except Exception as error:  # noqa: BLE001  (RecursionError, TypeError, MemoryError …: the sender's doing)
            if self.on_worker:  # the worker: the grader's message is well formed, and what fails
                raise  # reading it is the student's module (a class it lacks): said in its own words, not as ours
            raise WireError(f"a message the receiver cannot read ({type(error).__name__})") from None

    def _receive(self, header: dict, arrays: list) -> dict:
        table = header.get("objects", [])
        if not isinstance(table, list) or not all(
            isinstance(e, list) and len(e) == 3 and type(e[0]) is int and isinstance(e[1], str) for e in table
        ):
            raise WireError("a malformed object table")
        _each_array_once(table)
        message = Incoming(arrays, None)
        if any(e[1] == "ar" for e in table):
            if not self.on_worker:
                raise WireError("the worker marked an array read-only")  # only the grader's arrays can be
            # A readonly call freezes every array, unless the grader froze only some: then exactly those, so that
            # a gradient check that freezes one array at a time learns which one the rule writes into.
            message.frozen = {e[0] for e in table if e[1] == "ar"}
            table = [[e[0], "a", e[2]] if e[1] == "ar" else e for e in table]
        new = [e for e in table if e[0] not in self.table.objects]
        made_arrays = {e[0] for e in new if e[1] == "a"}
        self._make_classes([e for e in new if e[1] == "c"])
        for number, kind, payload in new:
            if kind != "c":
                self.table.add(number, self._blank(number, kind, payload, message))
        for number, kind, payload in table:
            if kind in ("l", "d", "g", "o") or (kind == "a" and number not in made_arrays):
                self._fill(self.table.objects[number], kind, payload, arrays)
        self.table.crossed(number for number, _, _ in table)
        values = header.get("values", {})
        if not isinstance(values, dict):
            raise WireError("malformed values")
        return {name: self.decode(node) for name, node in values.items()}

    def _make_classes(self, entries: list) -> None:
        "Classes first, each after its bases (which may come later in the table)."
        while entries:
            waiting = []
            for number, _, reference in entries:
                try:
                    self.table.add(number, self._class(reference))
                except _NotYet:
                    waiting.append([number, "c", reference])
            if len(waiting) == len(entries):
                raise WireError("class references that form a loop")
            entries = waiting

    def _class(self, reference: object) -> type:
        if not isinstance(reference, dict):
            raise WireError("a malformed class reference")
        if "m" in reference:
            cls = self.resolve_class(reference.get("m"), reference.get("q"))
            if not isinstance(cls, type):
                raise WireError(f"{reference.get('q')!r} is not a class of {reference.get('m')!r}")
            return cls
        if not self.accept_new_classes:
            raise WireError("the worker named a class it was never sent")
        nodes = reference.get("b", [])
        if any(isinstance(b, dict) and b.get("r") not in self.table.objects for b in _list(nodes)):
            raise _NotYet()
        bases = tuple(self.decode(b) for b in nodes) or (object,)
        if not all(isinstance(b, type) for b in bases) or not isinstance(reference.get("L"), str):
            raise WireError("a malformed class reference")
        try:
            return type(reference["L"].rsplit(".", 1)[-1], bases, {"__module__": "__main__"})
        except TypeError as error:
            raise WireError(f"cannot make the class {reference['L']!r}: {error}") from None

    def _blank(self, number: int, kind: str, payload: object, message: Incoming) -> object:
        if kind == "a":
            if type(payload) is not int or not 0 <= payload < len(message.arrays):
                raise WireError("a reference to a missing array")
            array = np.array(message.arrays[payload])
            frozen = message.frozen
            if (self.readonly and frozen is None) or (frozen is not None and number in frozen):
                array.flags.writeable = False  # as the grader had it: 10's step() hands update a read-only grad
            return array
        if kind == "l":
            return []
        if kind == "d":
            return {}
        if kind == "g":
            return np.random.Generator(np.random.PCG64())
        if kind == "f":
            if not self.on_worker:
                raise WireError("the worker sent a function")
            return self.make_callable(number)
        if kind == "o":
            cls = self.decode(payload.get("c")) if isinstance(payload, dict) else None
            if not isinstance(cls, type):
                raise WireError("an object whose class is not a class")
            try:
                return cls.__new__(cls)
            except TypeError as error:
                raise WireError(f"cannot make a {cls.__name__}: {error}") from None
        raise WireError(f"an object of unknown kind {kind!r}")

    def _fill(self, target: object, kind: str, payload: object, arrays: list) -> None:
        if kind == "a":
            if type(payload) is not int or not 0 <= payload < len(arrays):
                raise WireError("a reference to a missing array")
            array = arrays[payload]
            if not isinstance(target, np.ndarray) or target.shape != array.shape:
                raise WireError("an array changed its shape in place")
            if target.flags.writeable:
                target[...] = array
        elif kind == "l":
            target[:] = [self.decode(v) for v in _list(payload)]
        elif kind == "d":
            items = [(self._key(k), self.decode(v)) for k, v in _list(payload)]
            target.clear()
            target.update(items)
        elif kind == "g":
            if not isinstance(payload, dict) or payload.get("bit_generator") != "PCG64":
                raise WireError("a random generator that is not PCG64")
            try:
                target.bit_generator.state = payload
            except (TypeError, ValueError, KeyError) as error:
                raise WireError(f"a malformed random generator state: {error}") from None
        elif kind == "o":
            self._fill_object(target, payload)

    def _fill_object(self, target: object, payload: object) -> None:
        if not isinstance(payload, dict) or not isinstance(payload.get("s"), dict):
            raise WireError("a malformed object")
        state = {}
        for name, node in payload["s"].items():
            if not name.isidentifier() or name.startswith("__"):
                raise WireError(f"an attribute named {name!r}")
            state[name] = self.decode(node)
        if not self.on_worker:  # the grader's side: its objects' arrays keep their shapes
            _same_shapes(target, state)
        try:
            target.__dict__.clear()
            target.__dict__.update(state)
        except (AttributeError, TypeError) as error:
            raise WireError(f"cannot set the state of a {type(target).__name__}: {error}") from None

    def _key(self, node: object) -> object:
        key = self.decode(node)
        if not (is_simple(key) or isinstance(key, tuple)):
            raise WireError("a dict key that is not a number, string or tuple")
        return key

    def decode(self, node: object) -> object:
        if is_simple(node):
            return node
        if not isinstance(node, dict) or len(node) != 1:
            raise WireError(f"a malformed value {str(node)[:80]}")
        ((tag, body),) = node.items()
        if tag == "r":
            if type(body) is not int or body not in self.table.objects:
                raise WireError("a reference to an unknown object")
            return self.table.objects[body]
        if tag == "t":
            return tuple(self.decode(v) for v in _list(body))
        if tag == "n":
            value = self.decode(body)
            if not isinstance(value, np.ndarray) or value.shape != ():
                raise WireError("a malformed NumPy scalar")
            return value[()]
        if tag == "sl":
            parts = [self.decode(v) for v in _list(body)]
            if len(parts) != 3:
                raise WireError("a malformed slice")
            return slice(*parts)
        if tag == "el":
            return Ellipsis
        if tag == "cx":
            re, im = _list(body)
            return complex(float(re), float(im))
        if tag in ("dt", "nt"):
            return _dtype(tag, body)
        if tag == "bt" and body in ("float", "int", "bool", "complex"):
            return {"float": float, "int": int, "bool": bool, "complex": complex}[body]
        raise WireError(f"a value of unknown kind {tag!r}")


def _dtype(tag: str, body: object) -> object:
    "A dtype ('dt') or its scalar type ('nt'), of numbers only."
    try:
        dtype = np.dtype(str(body))
    except TypeError:
        raise WireError(f"an unknown dtype {body!r}") from None
    if dtype.kind not in ARRAY_KINDS or dtype.fields:
        raise WireError(f"a dtype that is not a number: {body!r}")
    return dtype if tag == "dt" else dtype.type


def _same_shapes(target: object, state: dict) -> None:
    """Refuse a new state that gives one of the object's arrays another shape, or something else than an array, and a
    Tensor whose data is not an array: an optimizer's `p.data = np.zeros((0, 1))` (or a Tensor or a list holding
    one) would be what np.allclose finds close to anything (it broadcasts to nothing)."""
    kind = type(target).__name__
    if kind == "Tensor" and "data" in state and not isinstance(state["data"], np.ndarray):
        raise WireError(f"a Tensor whose data is a {type(state['data']).__name__}, not an array")
    for name, old in vars(target).items():
        new = state.get(name, old)
        if isinstance(old, np.ndarray) and not isinstance(new, np.ndarray):
            raise WireError(f"{kind}.{name}, an array, was given a {type(new).__name__}")
        if isinstance(old, np.ndarray) and new.shape != old.shape:
            raise WireError(f"{kind}.{name} was given an array of shape {new.shape} for one of {old.shape}")


def _each_array_once(table: list) -> None:
    """Refuse a table in which two entries name the same array of the message: a sender describes each array once,
    and each entry makes a copy, so a thousand entries naming one large array would cost a thousand copies."""
    named = [e[2] for e in table if e[1] in ("a", "ar")]
    if len(set(map(repr, named))) != len(named):
        raise WireError("one array of the message named by several objects (each array crosses for one object only)")


class _NotYet(Exception):
    "A class whose bases are further down the table."


def _list(body: object) -> list:
    if not isinstance(body, list):
        raise WireError("a malformed list")
    return body
