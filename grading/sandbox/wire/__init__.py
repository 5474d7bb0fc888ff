"""Plain data across the trust boundary: the only thing the grader and the student's worker say to each other.

A message is a JSON header and a list of NumPy arrays, each as `.npy` bytes read back with `allow_pickle=False`
(numbers and booleans only). Nothing is ever pickled, and no code crosses: a class is named (a `tinytorch` class by
module and name, or a class the grader's test defined by its name and bases), a function of the grader is a handle
the other side can only ask the grader to call.

Objects keep their identity for the length of one call (a `Session`): each gets a number the first time it is sent,
and later references to it are that number. So the tensor a test passed in is the same tensor the grader gets back
(`topological_order(d)[0] is d`), and a parameter shared by two layers is one parameter. After every message each
side sends the new state of every object of the session that changed, so an optimizer's step changes the grader's
tensors, and a rule that changed its inputs in place is seen doing so.

The pieces: `protocol` (limits, WireError, plain values), `framing` (bytes), `printed` (what the code printed),
`table` (the numbered objects), `encoder` and `decoder` (what one side sends, and what it accepts). Inside the
sandbox this package is `wire`, beside worker.py; it imports nothing but the standard library and NumPy.
"""

from collections.abc import Callable

from .decoder import Decoder
from .encoder import Encoder
from .framing import array_bytes, array_from, pack, unpack
from .printed import OUTPUT_LIMIT, TRUNCATED, Printed
from .protocol import (
    ARRAY_KINDS,
    CALL_TIMEOUT,
    EXCEPTIONS,
    LATER_MODULES,
    MAX_MESSAGE,
    WORKER_NUMBERS,
    WireError,
    flags,
    is_constant,
    is_simple,
    not_defined,
)
from .table import ObjectTable

__all__ = [
    "ARRAY_KINDS",
    "CALL_TIMEOUT",
    "EXCEPTIONS",
    "LATER_MODULES",
    "MAX_MESSAGE",
    "OUTPUT_LIMIT",
    "TRUNCATED",
    "WORKER_NUMBERS",
    "Printed",
    "Session",
    "WireError",
    "array_bytes",
    "array_from",
    "flags",
    "is_constant",
    "is_simple",
    "not_defined",
    "pack",
    "unpack",
]


class Session:
    """The objects both sides know during one call: its object table, with the encoder that sends from it and the
    decoder that receives into it. `resolve_class(module, qualname)` resolves a class reference to a class this side
    trusts; `make_callable(number)` gives a stand-in for the other side's function (the worker only: a session given
    one is the worker's); `readonly` makes every array that arrives unwritable (a backward rule must not change its
    inputs); `accept_new_classes` lets the grader's test-defined classes in (the worker only)."""

    def __init__(
        self,
        resolve_class: Callable,
        *,
        make_callable: Callable | None = None,
        first_number: int = 1,
        readonly: bool = False,
        accept_new_classes: bool = False,
    ) -> None:
        self.table = ObjectTable(first_number)
        self.encoder = Encoder(self.table, on_worker=make_callable is not None)
        self.decoder = Decoder(
            self.table, resolve_class, make_callable, readonly=readonly, accept_new_classes=accept_new_classes
        )

    @property
    def objects(self) -> dict:
        "number -> object, every object of the session."
        return self.table.objects

    @property
    def number_of(self) -> dict:
        "id(object) -> its number."
        return self.table.number_of

    def message(self, header: dict, values: dict, include_changes: bool = True) -> bytes:
        "Pack `header` with every value in `values` (name -> value) encoded, and the objects that changed."
        encoded, table, arrays = self.encoder.message(values, include_changes)
        return pack(dict(header, values=encoded, objects=table), arrays)  # this module's `pack`, looked up now

    def receive(self, header: dict, arrays: list) -> dict:
        "Apply a message's object table; return its decoded values (decoder.Decoder.receive)."
        return self.decoder.receive(header, arrays)
