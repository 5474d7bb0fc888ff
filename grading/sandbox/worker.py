"""The student's side of the trust boundary: `python worker.py IN_FD OUT_FD`, inside the sandbox.

It imports the student's package and then answers calls, one at a time: "call your `AddBackward.apply` with these
tensors", "call your `topological_order` on this graph". Arguments arrive as plain data (grading.sandbox.wire) and become
objects of the student's own classes; what the student's function returns, and every object it changed, goes back
as plain data. The worker decides nothing: it does not know the tests, the expected numbers or the scores, and
whatever the student's code does to this process (patching NumPy, replacing this file's functions, walking frames)
changes only the data it sends back, which the grader then checks as it would check any answer.

Nothing here is a defence; the sandbox around this process and the grader's checks are.
"""

import builtins
import contextlib
import functools
import importlib
import importlib.util
import os
import re
import signal
import sys
import traceback
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# `-I` leaves out PYTHONPATH and the user's site-packages: the folders of the grader's own path come from the sandbox
sys.path += [p for p in os.environ.get("TINYTORCH_SEARCH_PATH", "").split(os.pathsep) if p and p not in sys.path]
import wire  # noqa: E402  (the file beside this one, also in the sandbox)

BUILTINS = dict(builtins.__dict__)  # put back before each reply: code that replaced a builtin still gets its answers
# sent (robustness for the student, not a defence: the verdict is elsewhere)


class CallTimeout(BaseException):
    "The alarm: a call used up its CPU time (BaseException, so `except Exception` in student code misses it)."


def _alarm(signum: int, frame: types.FrameType | None) -> None:
    raise CallTimeout()


def cpu_limit(seconds: float) -> None:
    """From now on, `seconds` of CPU time (this process, all its threads) until CallTimeout; 0 turns it off. CPU
    time, not wall-clock time: on a busy grading machine an honest, slow submission waits, but is not failed."""
    signal.setitimer(signal.ITIMER_PROF, seconds)


def stub_package(root: str) -> None:
    "Make `tinytorch` importable without running its __init__, so modules load one at a time, in course order."
    for name in ("tinytorch", "tinytorch.core"):
        folder = os.path.join(root, *name.split("."))
        spec = importlib.util.spec_from_file_location(
            name, os.path.join(folder, "__init__.py"), submodule_search_locations=[folder]
        )
        sys.modules[name] = importlib.util.module_from_spec(spec)
    sys.modules["tinytorch"].core = sys.modules["tinytorch.core"]


def import_student_module(plan: dict) -> str | None:
    "Import the earlier (reference) modules, then the student's; return an error message or None."
    stub_package(plan["package"])
    for name in plan["earlier_modules"]:
        importlib.import_module(name)
    if "tinytorch.core.autograd" in plan["earlier_modules"]:
        sys.modules["tinytorch.core.autograd"].enable_autograd(quiet=True)
    error = None
    try:
        cpu_limit(plan["cell_timeout"])
        importlib.import_module(plan["module"])
    except BaseException as exc:  # noqa: BLE001  (the student's module may raise anything)
        error = (cell_by_cell(plan) or f"{type(exc).__name__}: {exc}")[:2000]
    finally:
        cpu_limit(0)
    builtins.__dict__.update(BUILTINS)
    for source in plan.get("notebook_exercises", []):  # exercises the notebook keeps to itself (not exported)
        try:
            cpu_limit(plan["cell_timeout"])
            exec(compile(source, "<exercise>", "exec"), sys.modules[plan["module"]].__dict__)
        except BaseException as exc:  # noqa: BLE001
            error = error or f"{type(exc).__name__}: {exc}"[:2000]
        finally:
            cpu_limit(0)
    if "tinytorch.core.autograd" not in plan["earlier_modules"]:
        try:  # what tinytorch/__init__.py does
            importlib.import_module("tinytorch.core.autograd").enable_autograd(quiet=True)
        except BaseException as exc:  # noqa: BLE001
            said = re.sub(r" \(/\S*\.py\)", "", str(exc))  # (the file's path in the sandbox, not the student's)
            error = error or f"{type(exc).__name__}: {wire.LATER_MODULES} ({said})"[:2000]
    return error


def cell_by_cell(plan: dict) -> str | None:
    """When the module does not import (a syntax error in one exercise, say), run its cells one by one, as the
    notebook does, so that one broken cell costs only the tests that need it. Return the first cell's error, named
    as the student sees it: the cell and the line in it (the module's line numbers are not the notebook's)."""
    module = types.ModuleType(plan["module"])
    module.__file__ = os.path.join(plan["package"], *plan["module"].split(".")) + ".py"
    sys.modules[plan["module"]] = module
    first_error = None
    for source in plan["exported"]:
        try:
            cpu_limit(plan["cell_timeout"])
            exec(compile(source, CELL, "exec"), module.__dict__)
        except BaseException as exc:  # noqa: BLE001
            first_error = first_error or cell_error(exc, source)
        finally:
            cpu_limit(0)
    return first_error


CELL = "<cell>"  # the file name of a cell run on its own


def cell_error(exc: BaseException, source: str) -> str:
    "`exc`, raised by the cell `source`, as Jupyter places it: 'SyntaxError: ... (line 9 of the cell 'class ...')'."
    if isinstance(exc, SyntaxError):
        line, message = exc.lineno, exc.msg
    else:
        lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == CELL]
        line, message = (lines[-1] if lines else None), str(exc)
    code = [text.strip() for text in source.splitlines() if text.strip() and not text.startswith("#|")]
    first = code[0] if code else ""
    first = first if len(first) <= 60 else first[:57] + "..."
    where = f"line {line} of the cell '{first}'" if line else f"the cell '{first}'"
    return f"{type(exc).__name__}: {message} ({where})" if message else f"{type(exc).__name__} ({where})"


def resolve_class(module: object, qualname: object) -> object:
    if not (isinstance(module, str) and isinstance(qualname, str) and module.split(".")[0] == "tinytorch"):
        raise wire.WireError(f"the class {module}.{qualname} is not one of the course's")
    value = sys.modules.get(module) or importlib.import_module(module)
    name = qualname.split(".")[0]
    if name not in value.__dict__:  # its cell failed, or the student renamed the class
        raise AttributeError(wire.not_defined(name))
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def quiet_numpy() -> contextlib.AbstractContextManager:
    "NumPy's floating-point warnings off, for a call the grader asks to be quiet (a probe with infinite values)."
    import numpy

    return numpy.errstate(all="ignore")


def target_of(module: str, qualname: str) -> object:
    value = sys.modules[module]
    name = qualname.split(".")[0]
    if name not in value.__dict__:  # its cell failed while the module was run cell by cell (a syntax error, say)
        raise AttributeError(wire.not_defined(name))
    for part in qualname.split("."):
        value = value.__dict__[part] if isinstance(value, type) and part in value.__dict__ else getattr(value, part)
    if isinstance(value, property):
        value = value.fget
    return value


class Channel:
    def __init__(self, in_fd: int, out_fd: int) -> None:
        self.inbox, self.out_fd = os.fdopen(in_fd, "rb", buffering=0), out_fd

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.out_fd, view) :]

    def receive(self) -> tuple[dict, list]:
        return wire.unpack(self.inbox.read)


def error_header(exc: BaseException, readonly: bool) -> dict:
    kind = type(exc).__name__
    message = wire.CALL_TIMEOUT if isinstance(exc, CallTimeout) else str(exc)
    if readonly and isinstance(exc, ValueError) and "read-only" in message:
        message = f"your rule changed grad_output or a saved tensor in place: compute a new array instead ({message})"
    frames = [
        f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith("<") or "tinytorch" in f.filename
    ]
    where = f"line {frames[-1].lineno}: {frames[-1].line}" if frames and frames[-1].line else ""
    return {
        "op": "raise",
        "type": kind if kind in wire.EXCEPTIONS or kind == "GradcheckError" else "Error",
        "raised": kind,
        "message": message[:4000],
        "where": where[:300],
    }


def capture() -> wire.Printed:
    "From now on, what is printed here goes into a new wire.Printed (until `release`): the feedback page shows it."
    printed = wire.Printed()
    sys.stdout, sys.stderr = printed.stream("stdout"), printed.stream("stderr")
    return printed


def release(printed: wire.Printed) -> list:
    "Back to the process's own streams (they go nowhere); return what was printed, as wire.Printed.parts()."
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    return printed.parts()


def serve(channel: Channel, plan: dict) -> None:
    graded = sys.modules[plan["module"]]
    while True:
        header, arrays = channel.receive()
        if header.get("op") == "end":
            return
        readonly, call = bool(header.get("readonly")), header.get("call")
        printed = capture()
        session = wire.Session(
            resolve_class,
            first_number=wire.WORKER_NUMBERS,
            readonly=readonly,
            accept_new_classes=True,
            make_callable=lambda number: None,
        )
        session.decoder.make_callable = functools.partial(callback, channel, session, call=call)  # (needs session)
        try:
            for name, value in header.get("globals", {}).items():
                if name in wire.flags(graded):
                    setattr(graded, name, value)
            builtins.__dict__.update(BUILTINS)
            values = session.receive(header, arrays)
            function = target_of(header["module"], header["qualname"])
            cpu_limit(plan["cell_timeout"])
            try:
                with quiet_numpy() if header.get("quiet") else contextlib.nullcontext():
                    result = function(*values["args"], **values["kwargs"])
            finally:
                cpu_limit(0)
            builtins.__dict__.update(BUILTINS)
            shown = release(printed)
            reply = session.message(
                {"op": "return", "globals": wire.flags(graded), "call": call, "printed": shown},
                {"value": result},
            )
        except BaseException as exc:  # noqa: BLE001  (anything the student's code raises is an answer)
            shown = release(printed)
            try:
                reply = session.message(
                    dict(error_header(exc, readonly), globals=wire.flags(graded), call=call, printed=shown), {}
                )
            except BaseException as inner:  # noqa: BLE001
                reply = wire.pack(dict(error_header(inner, readonly), call=call, printed=shown), [])
        channel.send(reply)


def callback(channel: Channel, session: wire.Session, number: int, call: object) -> types.FunctionType:
    "A stand-in for one of the grader's functions: calling it asks the grader to run it and waits for the answer."

    def function_stub(*args: object, **kwargs: object) -> object:
        channel.send(
            session.message({"op": "callback", "function": number, "call": call}, {"args": args, "kwargs": kwargs})
        )
        header, arrays = channel.receive()
        values = session.receive(header, arrays)
        if header.get("op") == "raise":
            raise wire.EXCEPTIONS.get(header.get("type"), RuntimeError)(header.get("message", ""))
        return values["value"]

    function_stub._wire_stub = True
    return function_stub


def main(argv: list | None = None) -> int:
    in_fd, out_fd = map(int, (argv or sys.argv[1:])[:2])
    channel = Channel(in_fd, out_fd)
    channel.send(wire.pack({"op": "hello"}, []))  # Python and NumPy started: from here on, failures are the student's
    plan, _ = channel.receive()
    sys.path.insert(0, plan["package"])
    os.chdir("/tmp")
    signal.signal(signal.SIGPROF, _alarm)  # matplotlib, if the student's code uses it, draws with Agg: MPLBACKEND
    printed = capture()
    error = import_student_module(plan)
    channel.send(wire.pack({"op": "ready", "error": error, "printed": release(printed)}, []))
    serve(channel, plan)
    return 0


if __name__ == "__main__":
    sys.exit(main())
