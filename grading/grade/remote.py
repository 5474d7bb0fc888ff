"""The worker proxy: the grader's end of the sandboxed worker that holds the student's package.

`Worker` is one sandboxed process fed one call at a time over two pipes. `Remote` starts it (again after a crash),
sends each call's arguments as data (grading.sandbox.wire), runs the grader's functions that the student's code calls
back, and keeps only the changes a call may make to the grader's objects (grading.grade.ownership). No wait outlasts
the call's limit or the notebook's time (grading.grade.clock.Budget)."""

from __future__ import annotations

import contextlib
import os
import select
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

from ..common.errors import GraderFault, Refusal
from ..common.notebooks import valid_text
from ..sandbox import sandbox, wire
from .clock import SLICE, Budget, Stopwatch, load_factor
from .ownership import check_changes, may_change, object_paths
from .student_errors import StudentError, exception_of, students

GRACE = 5  # seconds, beyond the cell timeout, that the grader waits for one call
BACKSTOP = 1  # the grader's wall-clock wait for a call, in calls' CPU limits (clock.Budget stretches it under load)
CALLBACK_MB = 64  # the most one of the student's calls of a grader's function may make the grader compute on
STARTUP = 60  # seconds (of a quiet machine) for the sandbox's Python to start and say hello
RESTARTS = 5  # times a crashed or hung worker is started again
EXTENSIONS = 3  # more backstops a late call that is computing may wait (Remote.receive_reply)
OVERRUN = 2.0  # CPU seconds past its limit after which a call is taken to ignore its alarm (the alarm is CPU time)
ALARM_REPLY = 5  # seconds a call past its CPU limit gets for the reply its alarm makes (a quiet machine's, stretched)
COMPUTING = 0.1  # CPU seconds per second of a backstop that tell a computing call from one that waits


class CellTimeout(BaseException):
    "A cell of the grader's ran past its time."


class Overran(TimeoutError):
    "A call of the student's code computed past its CPU limit: it ignored the alarm that ends a call."


class NotebookTimeUp(TimeoutError):
    "The notebook's time ran out while a call of the student's code ran."


@dataclass(frozen=True)
class Call:
    "One call of the student's function: what the grader checks of the changes its messages make."

    qualname: str
    named: dict[str, object]  # the call's arguments by parameter name (grading.grade.ownership.named_arguments)
    readonly: bool  # a backward rule's call: it may change nothing of the grader's
    allowed: set[int] | None = None  # the wire numbers it may change (ownership.may_change), taken before it ran


@dataclass(frozen=True)
class WorkerSetup:
    "How a worker is started: the same for every worker of one pass of the notebook (grading.grade.verdict)."

    plan: dict  # the worker's first message: the student's package, the module, its exported cells, the cell timeout
    binds: list[tuple[Path, str]]  # (a folder of the grader's, where the sandbox sees it)
    limits: dict[str, int]  # the sandbox's limits (grading.sandbox.sandbox.start: memory_mb, cpu_seconds)
    sandboxed: bool  # each worker in a bubblewrap sandbox of its own
    script: str  # the worker's script, as the worker's process sees it


class Worker:
    "One sandboxed worker process with the student's package, fed one call at a time."

    def __init__(self, setup: WorkerSetup, stopwatch: Stopwatch) -> None:
        plan, sandboxed, script = setup.plan, setup.sandboxed, setup.script
        started = time.perf_counter()
        child_in, self.to_child = os.pipe()
        self.from_child, child_out = os.pipe()
        try:
            self.process = sandbox.start(
                [sandbox.interpreter(), "-I", script, str(child_in), str(child_out)],
                setup.binds,
                pass_fds=(child_in, child_out),
                sandboxed=sandboxed,
                **setup.limits,
            )
        except BaseException as error:
            os.close(self.to_child)
            os.close(self.from_child)
            if isinstance(error, OSError):
                raise GraderFault(f"the sandbox could not be started ({error})") from None
            raise
        finally:
            os.close(child_in)
            os.close(child_out)
        self.buffer, self.timeout, self.closed = b"", plan["cell_timeout"] + GRACE, False
        try:
            self.handshake(plan, stopwatch, started, sandboxed)
        except BaseException:
            self.close()  # a worker that did not start is stopped here: its sandbox, its cgroups, the two pipes
            raise

    def handshake(self, plan: dict, stopwatch: Stopwatch, started: float, sandboxed: bool) -> None:
        """The plan sent; the worker's hello (its Python and NumPy started), then its ready (the student's module
        imported). Before the hello no code of the student's has run: a failure there is the grader's."""
        try:
            self.send(wire.pack(plan, []))
            hello, _ = self.receive(Budget(STARTUP))
        except (EOFError, TimeoutError, wire.WireError, OSError):
            self.close()
            why = sandbox.diagnose(sandboxed) or "it ended or hung before running any code of the student's"
            raise GraderFault(f"the grader's Python did not start in the sandbox: {why}") from None
        said_hello = time.perf_counter()
        header, _ = self.receive(Budget(BACKSTOP * self.timeout + STARTUP))
        stopwatch.add("sandbox", said_hello - started)  # bwrap, Python and NumPy
        stopwatch.add("imports", time.perf_counter() - said_hello)  # the package, the student's module
        error, printed = header.get("error"), header.get("printed")
        if hello.get("op") != "hello" or header.get("op") != "ready" or not isinstance(error, (str, type(None))):
            raise wire.WireError("the worker did not start as it should")  # the student's code may have written it
        self.import_error, self.import_printed, self.calls = error, printed, 0  # printed: Printed.extend checks it

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.to_child, view) :]

    def receive(self, budget: Budget, overran: Callable[[], bool] | None = None) -> tuple[dict, list[np.ndarray]]:
        """The next message, its text valid; TimeoutError when `budget` (a clock.Budget) is spent, Overran once
        `overran()` (asked each second) says so, both also while bytes arrive: a trickled message waits past neither."""
        asked = time.monotonic()

        def read(n: int) -> bytes:
            nonlocal asked
            while not self.buffer:
                ready, _, _ = select.select([self.from_child], [], [], budget.next_wait())
                if budget.expired():
                    raise TimeoutError()
                if overran is not None and time.monotonic() - asked >= SLICE:
                    asked = time.monotonic()
                    if overran():
                        raise Overran()
                if not ready:
                    continue
                self.buffer = os.read(self.from_child, 1 << 20)
                if not self.buffer:
                    raise EOFError()
            chunk, self.buffer = self.buffer[:n], self.buffer[n:]
            return chunk

        return wire.unpack(read, valid_text)

    def close(self) -> None:
        if self.closed:  # once only: a second os.close could close a descriptor opened since
            return
        self.closed = True
        with contextlib.suppress(OSError):
            self.send(wire.pack({"op": "end"}, []))
        for fd in (self.to_child, self.from_child):
            with contextlib.suppress(OSError):
                os.close(fd)
        sandbox.stop(self.process)


class Remote:
    """Calls into the student's code, starting (and after a crash, restarting) the worker as needed.

    One per run of the notebook (grading.grade.verdict.grade_cells): the page's run, whose worker never gets a hidden
    test's inputs, or the hidden tests' (`hidden`), which starts after the page's has ended. The module-level flags
    (wire.flags) travel with every call, within its run."""

    def __init__(self, setup: WorkerSetup, graded_module: ModuleType) -> None:
        self.setup, self.plan = setup, setup.plan
        self.graded, self.restarts, self.first_import = graded_module, 0, "not started"
        self.workers, self.hidden = {False: None, True: None}, False
        self.stopwatch = Stopwatch()
        self.events, self.fault = [], None
        self.probed = set()  # rules probed (grading.grade.analytic)
        self.numerical = {}  # {rule: why} of the numerical ones
        self.timed_out = {}  # {function: why}: one that used up its CPU time once is not called again
        self.budget = None  # the notebook's clock.Budget: no call waits past it (grade_pass sets it)
        self.printed = None  # the wire.Printed of the cell running now, or None: what the student's code prints is lost
        self.import_printed = None  # what the first worker's import printed (the page shows it)

    @property
    def worker(self) -> Worker | None:
        return self.workers[self.hidden]

    @worker.setter
    def worker(self, value: Worker | None) -> None:
        self.workers[self.hidden] = value

    def ensure_worker(self) -> Worker:
        if self.worker is not None:
            return self.worker
        if self.restarts > RESTARTS:
            raise StudentError(f"not run: your code crashed or hung {self.restarts} times")
        try:
            self.worker = Worker(self.setup, self.stopwatch)
        except GraderFault as fault:
            self.fault = fault  # kept: a test cell that catches every exception must not hide it
            raise
        except (EOFError, TimeoutError, wire.WireError, OSError):  # it said hello: the student's import failed it
            self.restarts += 1
            raise StudentError(
                "your module did not finish importing (an endless loop, os._exit or a crash at import time)"
            ) from None
        if self.first_import == "not started":
            self.first_import, self.import_printed = self.worker.import_error, self.worker.import_printed
        return self.worker

    def event(self, message: str) -> StudentError:
        """A crash or a hang: it fails the test it happened in, and the note names it once, unless it happened in a
        hidden test: the note is shown at once (Gradescope's output), and whether the code crashed or hung on a
        hidden input is a bit of it (red team round 6); the hidden test's own result says so where it is shown."""
        if message not in self.events and not self.hidden:
            self.events.append(message)
        return StudentError(message)

    def drop_worker(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker, self.restarts = None, self.restarts + 1

    def close(self) -> None:
        for hidden, worker in self.workers.items():
            if worker is not None:
                worker.close()
                self.workers[hidden] = None

    def call(
        self,
        qualname: str,
        args: Sequence[object],
        kwargs: dict[str, object],
        *,
        readonly: bool,
        named: dict[str, object] | None = None,
        quiet: bool = False,
    ) -> object:
        """Call the student's `qualname` on the grader's `args`; `named`: the same arguments by parameter name, for
        saying which one a call changed (grading.grade.ownership)."""
        worker = self.ensure_worker()
        session = wire.Session(resolve_trusted_class)
        named = named if named is not None else {f"arg{i}": a for i, a in enumerate(args)}
        worker.calls += 1
        header = {
            "op": "call",
            "module": self.plan["module"],
            "qualname": qualname,
            "readonly": readonly,
            "quiet": quiet,  # NumPy's floating-point warnings off (the probes' infinities are the grader's doing)
            "globals": wire.flags(self.graded),
            "call": worker.calls,
        }
        try:
            request = session.message(header, {"args": tuple(args), "kwargs": dict(kwargs)})
        except wire.WireError as error:
            raise RuntimeError(f"the grader cannot send the arguments of {qualname} to your code: {error}") from None
        allowed = None if readonly else may_change(qualname, named, session.number_of)  # before any change applies
        call = Call(qualname, named, readonly, allowed)
        reply, arrays = self.exchange(worker, session, request, call)
        if self.printed is not None:  # what the student's code printed in this call, as text (the page shows it)
            self.printed.extend(reply.get("printed"))
        self.accept_changes(session, reply, call)
        try:
            values = session.receive(reply, arrays)
        except wire.WireError as error:
            error = StudentError(f"{qualname} sent back something the grader cannot check: {error}")
            raise students(error, qualname, f"your {qualname} sent back something the grader cannot check") from None
        set_flags(self.graded, reply.get("globals", {}))
        if reply.get("op") == "raise":
            raise exception_of(reply, qualname)
        return values.get("value")

    def exchange(self, worker: Worker, session: wire.Session, request: bytes, call: Call) -> tuple[dict, list]:
        """Send one call's request and answer its callbacks; return its reply (a return or a raise) and the reply's
        arrays. A crash, a hang or a reply that is not plain data drops the worker and fails the call."""
        qualname = call.qualname
        started = time.perf_counter()
        wait = BACKSTOP * worker.timeout  # the CPU limit comes first; a call that sleeps meets this one
        left = self.budget.remaining() if self.budget is not None else wait
        start = before = sandbox.cpu_seconds_used(worker.process)  # its CPU limit holds for the call, callbacks too
        try:
            worker.send(request)
            while True:
                # never past the notebook's time (red team round 6: calls that slept just under the backstop, 12 in
                # a hidden cell, ran the job past its limit, which is reported as the grader's fault: not graded)
                reply, arrays = self.receive_reply(worker, wait, left, start, before)
                before = None  # after a callback: read afresh
                if reply.get("call") != worker.calls or reply.get("op") not in ("return", "raise", "callback"):
                    raise wire.WireError("a reply out of turn")
                if reply.get("op") != "callback":
                    return reply, arrays
                with self.stopwatch("callbacks"):
                    # before the grader's code runs
                    self.accept_changes(session, reply, call)
                    worker.send(self.run_callback(session, reply, arrays))
        except Overran:  # it used up its CPU time, as a call the alarm ends does: its later calls are not made
            self.drop_worker()
            overran = (
                f"your {qualname} did not finish in time: it computed past its {self.plan['cell_timeout']} s of CPU, "
                "and on after the interrupt that ends a call (an endless loop that catches or blocks signals, or one "
                "very long NumPy operation?)"
            )
            later = f"{overran}: its later calls were not made, and their tests fail"
            self.timed_out[qualname] = self.event(later).args[0]
            raise StudentError(overran) from None
        except TimeoutError as error:
            self.drop_worker()
            if isinstance(error, NotebookTimeUp):
                raise self.event(f"the time limit for this notebook ran out while your {qualname} ran") from None
            raise self.event(
                f"your {qualname} did not finish in time ({BACKSTOP * worker.timeout} s; waiting on something, or an "
                "endless loop that ignores interrupts?)"
            ) from None
        except (EOFError, OSError):
            self.drop_worker()
            raise self.event(
                f"the process ended while your {qualname} ran (os._exit, a crash, or a memory or CPU "
                "limit); it was started again for the next test"
            ) from None
        except wire.WireError as error:
            self.drop_worker()
            error = StudentError(f"{qualname} sent back something that is not plain data: {error}")
            raise students(error, qualname, f"your {qualname} sent back something that is not plain data") from None
        except BaseException as error:
            self.drop_worker()  # stopped halfway (the cell's time ran out): the worker's state is unknown
            if isinstance(error, CellTimeout):
                self.event(f"your {qualname} did not finish in time (the test's {self.plan['cell_timeout']} s)")
            raise
        finally:
            self.stopwatch.add("student", time.perf_counter() - started)  # (callbacks included: see grading.grade.job)

    def receive_reply(
        self, worker: Worker, wait: float, left: float, start: float | None = None, before: float | None = None
    ) -> tuple[dict, list]:
        """The worker's next message within the call's backstop (`wait`) and the notebook's time (`left`, else
        NotebookTimeUp). A wait that runs out while the sandbox computes (its CPU grew by COMPUTING of the wait) goes
        on, at most EXTENSIONS times: the CPU limit ends the call, as on a quiet machine (frank). Past it, a call gets
        ALARM_REPLY for the alarm's reply; without one (gina), or OVERRUN past its limit: Overran. A call that sleeps
        meets the backstop. `start`: the sandbox's CPU seconds when the call began; `before`: now."""
        before = sandbox.cpu_seconds_used(worker.process) if before is None else before
        start = before if start is None else start
        left = min(left, self.budget.remaining()) if self.budget is not None else left  # a callback took some
        limit, extensions, graced, used = self.plan["cell_timeout"], 0, False, None
        window, cut = min(wait, left), left < wait  # cut: the notebook's time, not the backstop, bounds this wait

        def overran() -> bool:  # `used`: the call's CPU seconds so far, for the record of how it ended
            nonlocal used
            used = None if None in (start, now := sandbox.cpu_seconds_used(worker.process)) else now - start
            return used is not None and used >= limit + OVERRUN

        while True:
            try:
                return worker.receive(Budget(max(1.0, window)), overran)
            except Overran:
                self.stopwatch.endings.append(["Overran", used, extensions, round(load_factor(), 2)])
                raise
            except TimeoutError:
                now = sandbox.cpu_seconds_used(worker.process)
                used = None if None in (start, now) else now - start
                past = used is not None and used >= limit  # its alarm has fired: a reply is due
                computing = before is not None and used is not None and now - before >= COMPUTING * wait
                if past:  # a moment for the alarm's reply (frank); a call that ignores the alarm sends none (gina)
                    want = 0 if graced else ALARM_REPLY
                else:
                    want = wait if computing and extensions < EXTENSIONS else 0
                remaining = self.budget.remaining() if self.budget is not None else want
                if want and not cut and remaining > 1.0:
                    window, cut = min(want, remaining), remaining < want
                    before, graced, extensions = now, graced or past, extensions + (not past)
                    continue
                ending = Overran if past else NotebookTimeUp if cut or want else TimeoutError  # want: the notebook's
                self.stopwatch.endings.append([ending.__name__, used, extensions, round(load_factor(), 2)])
                raise ending() from None

    def accept_changes(self, session: wire.Session, reply: dict, call: Call) -> None:
        """Check what a message of the student's code changes of the grader's objects, and keep only what it may:
        nothing for a rule (read-only), an exercise's own arguments otherwise (grading.grade.ownership). Every message
        is checked, its reply and the callbacks on the way: a callback's message would change them first."""
        qualname, named = call.qualname, call.named
        try:
            if call.readonly:
                changed = changed_inputs(session, reply, named)
                if changed:
                    raise Refusal(f"your rule changed {changed} in place: compute a new array instead")
                reply["objects"] = [e for e in reply.get("objects", []) if e[0] >= wire.WORKER_NUMBERS]
            elif isinstance(reply.get("objects"), list):
                calling = reply.get("function") if reply.get("op") == "callback" else None  # a test's function next
                reply["objects"] = check_changes(
                    qualname,
                    named,
                    reply["objects"],
                    session.number_of,
                    wire.WORKER_NUMBERS,
                    allowed=call.allowed,
                    objects=session.objects,
                    calling=calling,
                )
        except (TypeError, IndexError, KeyError, AttributeError, RecursionError):
            error = StudentError(f"{qualname} sent back a malformed object table")
            raise students(error, qualname, f"your {qualname} sent back a malformed object table") from None

    def run_callback(self, session: wire.Session, reply: dict, arrays: list[np.ndarray]) -> bytes:
        "The worker asks to call one of the grader's functions (a test's lambda, say): run it here, on the data."
        try:
            values = session.receive(reply, arrays)
            function = session.objects.get(reply.get("function"))
            if not callable(function) or isinstance(function, type):
                raise wire.WireError("a call of something that is not one of the grader's functions")
            too_big = request_too_big(values["args"], values["kwargs"])
            if too_big:
                raise wire.EXCEPTIONS["ValueError"](
                    f"your code asked the grader to compute on more than it gives any test ({too_big}; at most "
                    f"{CALLBACK_MB} MB): call the function with the inputs you were given"
                )
            result = function(*values["args"], **values["kwargs"])
            return session.message({"op": "return"}, {"value": result})
        except wire.WireError:
            raise
        except Exception as error:  # noqa: BLE001  (the test's function failed on the student's data)
            return session.message(
                {
                    "op": "raise",
                    "type": type(error).__name__ if type(error).__name__ in wire.EXCEPTIONS else "RuntimeError",
                    "message": str(error)[:2000],
                },
                {},
            )


def request_too_big(args: Sequence[object], kwargs: dict[str, object]) -> str | None:
    """Why a callback's arguments are more than the grader will compute on (None when they are not): their size, or
    the size of their broadcast together (a (10000, 1) and a (1, 10000) array are 160 KB, and 800 MB added)."""
    arrays = []
    for value in [*args, *kwargs.values()]:
        for item in value if isinstance(value, (list, tuple)) else [value]:
            data = item if isinstance(item, np.ndarray) else getattr(item, "data", None)  # an array, or a Tensor's
            if isinstance(data, np.ndarray):
                arrays.append(data)
    limit = CALLBACK_MB * 2**20
    held = sum(a.nbytes for a in arrays)
    if held > limit:
        return f"its arguments hold {held / 2**20:.0f} MB"
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
    except ValueError:
        return None  # they do not broadcast: the function raises its own error
    together = 8 * int(np.prod(shape, dtype=np.float64))
    if together > limit:
        return f"broadcast together they make {together / 2**20:.0f} MB"
    return None


def changed_inputs(session: wire.Session, reply: dict, named: dict[str, object]) -> str | None:
    "What a read-only call changed of the grader's tensors and arrays (a rule must not), named: 'grad_output'."
    paths = None
    for entry in reply.get("objects", []):
        number = entry[0] if isinstance(entry, list) and entry else None
        value = session.objects.get(number) if isinstance(number, int) and number < wire.WORKER_NUMBERS else None
        if isinstance(value, np.ndarray) or type(value).__name__ == "Tensor":
            paths = paths if paths is not None else object_paths(named, session.number_of)
            where = paths.get(number, "grad_output or a saved tensor")
            return where.removesuffix(".data").replace("self.saved_tensors", "its saved tensors")
    return None


def resolve_trusted_class(module: object, qualname: object) -> type:
    """The class `qualname` defined in the course's module `module` (a Tensor, a rule, a layer), which the grader makes
    objects of with its `__new__`. Only a class defined there: a path through the module's imports (`np._core…`)
    once reached NumPy's own types, one of which crashes the grader's process when made that way (red team round 4)."""
    if not (
        isinstance(module, str)
        and isinstance(qualname, str)
        and module.split(".")[0] == "tinytorch"
        and module in sys.modules
    ):
        raise wire.WireError(f"the class {module}.{qualname} is not one of the course's")
    value = sys.modules[module]
    for index, part in enumerate(qualname.split(".")):
        if not part.isidentifier() or part.startswith("__") or (index and not isinstance(value, type)):
            raise wire.WireError(f"the class name {qualname!r}")
        value = vars(value).get(part)  # the module's own names, then a class's own (a class nested in it)
    if not isinstance(value, type) or value.__module__ != module or value.__qualname__ != qualname:
        raise wire.WireError(f"{module}.{qualname} is not a class the grader knows")
    return value


def set_flags(module: ModuleType, values: object) -> None:
    """The student's module-level flags (no_grad's switch in notebook 02, say) as the student's code left them. A flag
    keeps its type, and a string is never taken (it could carry anything); nor is a constant (a name in capitals:
    the reference rules and the grader's own messages read them, wire.flags)."""
    if not isinstance(values, dict):
        return
    mine = wire.flags(module)
    for name, value in values.items():
        if name in mine and type(value) is type(mine[name]) and not isinstance(value, str) and wire.is_simple(value):
            setattr(module, name, value)
