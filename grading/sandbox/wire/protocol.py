"""What both sides of the wire agree on: its limits, its one error, the worker's own words, and what a plain value is.

It imports nothing but the standard library: the worker loads it inside the sandbox (as `wire.protocol`).
"""

ARRAY_KINDS = "biufc"  # bool, signed, unsigned, float, complex: numbers only
MAX_MESSAGE = 1 << 30  # bytes; a bigger message is refused, not read
WORKER_NUMBERS = 1 << 40  # objects the worker makes are numbered from this on, the grader's from 1: both sides read it
EXCEPTIONS = {
    e.__name__: e
    for e in (
        ValueError,
        TypeError,
        IndexError,
        KeyError,
        ZeroDivisionError,
        NotImplementedError,
        RuntimeError,
        AttributeError,
        AssertionError,
        ArithmeticError,
        FloatingPointError,
        OverflowError,
        MemoryError,
        RecursionError,
        LookupError,
        StopIteration,
    )
}


class WireError(Exception):
    "A message that is not plain data of the expected form, or a value that cannot be sent."


# Two of the worker's own messages, which the grader knows word for word (a hidden test shows them, and no other text
# of the student's process): a call stopped at its CPU limit, and an exercise its module lacks.
CALL_TIMEOUT = "used up the CPU time allowed for one call"


LATER_MODULES = "the course's later modules could not import your module"


def not_defined(name: str) -> str:
    return (
        f"{name} is not defined: the cell that defines it did not run, or named it otherwise (the grade's note names "
        "an error)"
    )


SIMPLE_TYPES = (bool, int, float, str)


def is_simple(value: object) -> bool:
    "None, or a bool, int, float or str exactly (not a subclass, which could carry code)."
    return value is None or type(value) in SIMPLE_TYPES


def is_constant(name: str) -> bool:
    "A name in capitals (BCE_EPS, FAST_SIZE): a constant of the course's, by Python's convention."
    return name.upper() == name


def flags(module: object) -> dict:
    """The module's own state in simple globals (no_grad's `_grad_enabled`, grad()'s `_keep_retained`): they travel
    with every call, both ways. Its constants do not: the grader's copy of the module runs the reference rules, which
    read them (a BCE_EPS of 0.5 set by the student's code once clipped the reference gradient far enough from the
    truth that a rule by finite differences passed as a formula, red team round 4)."""
    return {k: v for k, v in vars(module).items() if not k.startswith("__") and not is_constant(k) and is_simple(v)}
