"""The grader's side of the trust boundary: the verdict, computed where the student's code never runs.

The instructor's setup and test cells (hidden tests included) run here, in the grader's own process, against the
instructor's reference package, with one change: every function or method whose body holds an exercise (a
`### BEGIN SOLUTION` region) is a stand-in that calls the student's version in the worker (grading.sandbox.worker), in the
sandbox, and returns what it returned. So `check_backward(AddBackward, np.add, [a, b])` runs the reference
`check_backward` here, builds the inputs here, calls the student's `AddBackward.apply` over there, gets the gradients
back as arrays, and compares them here with central differences of `np.add`, computed here.

What crosses (grading.sandbox.wire): arrays as `.npy` bytes read with `allow_pickle=False`, JSON numbers and strings, and
objects as their state in those terms; a student's object comes back as an object of the *instructor's* class with
the student's numbers in it. No code and no pickle crosses, so nothing the student's code does in its process (patch
NumPy, replace the checker, walk frames, forge a result line) can change how it is judged: only the data it returns,
which is what is judged.
"""

import ast
import builtins
import importlib
import os
import re
import select
import signal
import sys
import time
from pathlib import Path

import numpy as np

from ..common.errors import GraderFault, GradingError, Refusal
from ..common.notebooks import given_cell_name
from ..reports.feedback import NOT_SHOWN
from ..sandbox import sandbox, wire
from . import analytic, heldout, outputs, variant
from .clock import Budget, Stopwatch
from .ownership import check_changes, may_change, named_arguments, object_paths, signature_of

GRACE = 5  # seconds, beyond the cell timeout, that the grader waits for one call
BACKSTOP = 1  # the grader's wall-clock wait for a call, in calls' CPU limits (clock.Budget stretches it under load)
CALLBACK_MB = 64  # the most one of the student's calls of a grader's function may make the grader compute on
STARTUP = 60  # seconds (of a quiet machine) for the sandbox's Python to start and say hello
RESTARTS = 5  # times a crashed or hung worker is started again


class StudentError(RuntimeError):
    """Something the student's code did (a crash, an error type the grader does not pass on) failed the call. Its
    text is in the student's words; `kind` is the name the page gives it (the student's exception's, or "Error"),
    never this class's, which is the grader's."""

    def __init__(self, message, kind="Error"):
        super().__init__(message)
        self.kind = kind


# Python's own exceptions that the worker sends by name only (not in wire.EXCEPTIONS): a hidden test may name them,
# as it names those (their names are Python's, not chosen by the student's code).
NAMED_ERRORS = ("NameError", "UnboundLocalError", "ImportError", "ModuleNotFoundError", "EOFError", "OSError")


class CellTimeout(BaseException):
    "A cell of the grader's ran past its time."


# -- What the worker must run: the exercises ------------------------------------------------------------------------


def is_export(source):
    return any(line.strip().replace(" ", "").startswith("#|export") for line in source.splitlines()[:3])


def exported_sources(nb):
    "The code of every exported cell, in order: what nbdev puts in the module."
    return [cell.source for cell in nb.cells if cell.cell_type == "code" and is_export(cell.source)]


def solution_lines(source):
    "The line numbers (1-based) inside `### BEGIN SOLUTION` ... `### END SOLUTION`."
    lines, inside = set(), False
    for number, line in enumerate(source.splitlines(), 1):
        if "### BEGIN SOLUTION" in line:
            inside = True
        elif "### END SOLUTION" in line:
            inside = False
        elif inside:
            lines.add(number)
    return lines


def exercise_targets(instructor_nb, exported=True):
    """[(qualname, kind)] of the functions and methods the student writes: those whose body holds a solution region.
    kind is 'function', 'method' or 'property'. `exported`: those of the module (else: of the notebook only)."""
    return [
        t
        for cell in instructor_nb.cells
        if cell.cell_type == "code"
        and cell.get("metadata", {}).get("nbgrader", {}).get("solution")
        and is_export(cell.source) == exported
        for t in cell_targets(cell)
    ]


def cell_targets(cell):
    "The exercises of one solution cell."
    meta = cell.get("metadata", {}).get("nbgrader", {})
    inside, targets, covered = solution_lines(cell.source), [], set()
    for node in ast.parse(cell.source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _spans(node) & inside:
            targets.append((node.name, "function"))
            covered |= _spans(node)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and _spans(item) & inside:
                    is_property = any(getattr(d, "id", None) == "property" for d in item.decorator_list)
                    targets.append((f"{node.name}.{item.name}", "property" if is_property else "method"))
                    covered |= _spans(item)
    if inside - covered:
        raise GradingError(
            f"{meta.get('grade_id')}: a solution region outside any function or method body "
            f"(line {min(inside - covered)}); the grader can only call functions the student writes"
        )
    return targets


def _spans(node):
    return set(range(node.lineno, node.end_lineno + 1))


# -- The worker -----------------------------------------------------------------------------------------------------


class Worker:
    "One sandboxed worker process with the student's package, fed one call at a time."

    def __init__(self, plan, binds, limits, sandboxed, script, stopwatch):
        started = time.perf_counter()
        child_in, self.to_child = os.pipe()
        self.from_child, child_out = os.pipe()
        try:
            self.process = sandbox.start(
                [sandbox.interpreter(), "-I", script, str(child_in), str(child_out)],
                binds,
                pass_fds=(child_in, child_out),
                sandboxed=sandboxed,
                **limits,
            )
        except OSError as error:
            raise GraderFault(f"the sandbox could not be started ({error})") from None
        finally:
            os.close(child_in)
            os.close(child_out)
        self.buffer, self.timeout = b"", plan["cell_timeout"] + GRACE
        self.send(wire.pack(plan, []))
        try:
            hello, _ = self.receive(Budget(STARTUP))
        except (EOFError, TimeoutError, wire.WireError, OSError):
            self.close()
            why = sandbox.diagnose(sandboxed) or "it ended or hung before running any code of the student's"
            raise GraderFault(f"the grader's Python did not start in the sandbox: {why}") from None
        said_hello = time.perf_counter()
        header, _ = self.receive(Budget(BACKSTOP * self.timeout + STARTUP))
        stopwatch.add("sandbox", said_hello - started)  # bwrap, Python and NumPy
        stopwatch.add("imports", time.perf_counter() - said_hello)  # the package, the student's module
        if hello.get("op") != "hello" or header.get("op") != "ready":
            raise wire.WireError("the worker did not start as it should")
        self.import_error, self.calls = header.get("error"), 0
        self.import_printed = header.get("printed")  # what the student's module printed when it was imported

    def send(self, data):
        view = memoryview(data)
        while view:
            view = view[os.write(self.to_child, view) :]

    def receive(self, budget):
        "The next message; TimeoutError when `budget` (a clock.Budget: it stretches with the machine's load) is spent."

        def read(n):
            while not self.buffer:
                ready, _, _ = select.select([self.from_child], [], [], budget.next_wait())
                if not ready:
                    if budget.expired():
                        raise TimeoutError()
                    continue
                self.buffer = os.read(self.from_child, 1 << 20)
                if not self.buffer:
                    raise EOFError()
            chunk, self.buffer = self.buffer[:n], self.buffer[n:]
            return chunk

        return wire.unpack(read)

    def close(self):
        try:
            self.send(wire.pack({"op": "end"}, []))
        except OSError:
            pass
        for fd in (self.to_child, self.from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        sandbox.stop(self.process)


class Remote:
    """Calls into the student's code, starting (and after a crash, restarting) the worker as needed.

    Two workers, each in a sandbox of its own: one for the cells the feedback page shows, one for the hidden tests
    (`hidden`: which one calls go to). The first never gets a hidden test's inputs, so nothing it prints or returns
    for the page can hold one. The module-level flags (wire.flags) travel with every call; what the hidden
    tests' worker sets them to lasts until the end of its cell (grade_cells puts them back), so it cannot hand a
    hidden input to the first through them."""

    def __init__(self, plan, binds, limits, sandboxed, script, graded_module):
        self.plan, self.binds, self.limits, self.sandboxed, self.script = plan, binds, limits, sandboxed, script
        self.graded, self.restarts, self.first_import = graded_module, 0, "not started"
        self.workers, self.hidden = {False: None, True: None}, False
        self.stopwatch = Stopwatch()
        self.events, self.fault = [], None
        self.probed, self.numerical = set(), {}  # rules probed (grading.grade.analytic), {rule: why} of numerical ones
        self.timed_out = {}  # {function: why}: one that used up its CPU time once is not called again
        self.budget = None  # the notebook's clock.Budget: no call waits past it (grade_pass sets it)
        self.printed = None  # the wire.Printed of the cell running now, or None: what the student's code prints is lost
        self.import_printed = None  # what the first worker's import printed (the page shows it)

    @property
    def worker(self):
        return self.workers[self.hidden]

    @worker.setter
    def worker(self, value):
        self.workers[self.hidden] = value

    def ensure_worker(self):
        if self.worker is not None:
            return self.worker
        if self.restarts > RESTARTS:
            raise StudentError(f"not run: your code crashed or hung {self.restarts} times")
        try:
            self.worker = Worker(self.plan, self.binds, self.limits, self.sandboxed, self.script, self.stopwatch)
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

    def event(self, message):
        """A crash or a hang: it fails the test it happened in, and the note names it once, unless it happened in a
        hidden test: the note is shown at once (Gradescope's output), and whether the code crashed or hung on a
        hidden input is a bit of it (red team round 6); the hidden test's own result says so where it is shown."""
        if message not in self.events and not self.hidden:
            self.events.append(message)
        return StudentError(message)

    def drop_worker(self):
        if self.worker is not None:
            self.worker.close()
            self.worker, self.restarts = None, self.restarts + 1

    def close(self):
        for hidden, worker in self.workers.items():
            if worker is not None:
                worker.close()
                self.workers[hidden] = None

    def call(self, qualname, args, kwargs, readonly, named=None, quiet=False):
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
        started = time.perf_counter()
        wait = BACKSTOP * worker.timeout  # the CPU limit comes first; a call that sleeps meets this one
        left = self.budget.remaining() if self.budget is not None else wait
        try:
            worker.send(request)
            while True:
                # never past the notebook's time (red team round 6: calls that slept just under the backstop, 12 in
                # a hidden cell, ran the job past its limit, which is reported as the grader's fault: not graded)
                reply, arrays = worker.receive(Budget(max(1.0, min(wait, left))))
                if reply.get("call") != worker.calls or reply.get("op") not in ("return", "raise", "callback"):
                    raise wire.WireError("a reply out of turn")
                if reply.get("op") != "callback":
                    break
                with self.stopwatch("callbacks"):
                    # before the grader's code runs
                    self.accept_changes(qualname, session, reply, named, readonly, allowed)
                    worker.send(self.run_callback(session, reply, arrays))
        except TimeoutError:
            self.drop_worker()
            if left < wait:
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
        if self.printed is not None:  # what the student's code printed in this call, as text (the page shows it)
            self.printed.extend(reply.get("printed"))
        self.accept_changes(qualname, session, reply, named, readonly, allowed)
        try:
            values = session.receive(reply, arrays)
        except wire.WireError as error:
            error = StudentError(f"{qualname} sent back something the grader cannot check: {error}")
            raise students(error, qualname, f"your {qualname} sent back something the grader cannot check") from None
        set_flags(self.graded, reply.get("globals", {}))
        if reply.get("op") == "raise":
            raise exception_of(reply, qualname)
        return values.get("value")

    def accept_changes(self, qualname, session, reply, named, readonly, allowed=None):
        """Check what a message of the student's code changes of the grader's objects, and keep only what it may:
        nothing for a rule (read-only), an exercise's own arguments otherwise (grading.grade.ownership). Every message
        is checked, its reply and the callbacks on the way: a callback's message would change them first."""
        try:
            if readonly:
                changed = changed_inputs(session, reply, named)
                if changed:
                    raise Refusal(f"your rule changed {changed} in place: compute a new array instead")
                reply["objects"] = [e for e in reply.get("objects", []) if e[0] >= wire.WORKER_NUMBERS]
            elif isinstance(reply.get("objects"), list):
                where = (session.number_of, wire.WORKER_NUMBERS, allowed, session.objects)
                calling = reply.get("function") if reply.get("op") == "callback" else None  # a test's function next
                reply["objects"] = check_changes(qualname, named, reply["objects"], *where, calling=calling)
        except (TypeError, IndexError, KeyError, AttributeError, RecursionError):
            error = StudentError(f"{qualname} sent back a malformed object table")
            raise students(error, qualname, f"your {qualname} sent back a malformed object table") from None

    def run_callback(self, session, reply, arrays):
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


def request_too_big(args, kwargs):
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


def changed_inputs(session, reply, named):
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


def students(error, qualname, summary=None):
    """Mark `error` as caused by the student's `qualname` (it raised, or sent back what the grader cannot check): in a
    hidden test its text is not shown, only `summary` or the error's kind (see describe_hidden)."""
    error.raised_by_student, error.raised_in, error.summary = True, qualname, summary
    return error


def exception_of(reply, qualname=None):
    "The exception the student's code raised, as one of the grader's, marked as the student's (see run_cell)."
    kind, message = reply.get("type"), str(reply.get("message", ""))
    if kind == "GradcheckError" and "tinytorch.core.gradcheck" in sys.modules:
        error = sys.modules["tinytorch.core.gradcheck"].GradcheckError(message)
    elif kind in wire.EXCEPTIONS:
        error = wire.EXCEPTIONS[kind](message)
    else:
        raised = str(reply.get("raised", "Error"))
        error = StudentError(f"{raised}: {message}" if message else raised, kind=raised)
    raised, what = reply.get("raised"), f"your {qualname}" if qualname else "your code"
    # the worker's own words (grading.sandbox.wire), checked word for word: a hidden test may show them
    if raised == "CallTimeout" and message == wire.CALL_TIMEOUT:
        return students(StudentError(timed_out_text(qualname), kind="Timeout"), qualname, timed_out_text(qualname))
    if raised in ("SystemExit", "KeyboardInterrupt"):  # what it did, not the exception's name (its message hidden)
        did = "called sys.exit({})" if raised == "SystemExit" else "raised KeyboardInterrupt{}"
        said = message if raised == "SystemExit" else f" ({message})" if message else ""
        error = StudentError(f"{what} {did.format(said)}: a function graded here returns its result", kind=raised)
        return students(error, qualname, f"{what} {did.format('')}")
    if kind == "MemoryError":
        error = MemoryError(f"{what} ran out of memory ({message})")
        return students(error, qualname, f"{what} ran out of memory")
    if raised in NAMED_ERRORS:
        return students(error, qualname, f"{raised} from {what}")
    name = (qualname or "").split(".")[0]
    if name and message == wire.not_defined(name):
        return students(
            error, qualname, f"{name} is not defined in your module: its cell did not run, or named it otherwise"
        )
    return students(error, qualname)


def timed_out_text(qualname):
    return f"your {qualname} {wire.CALL_TIMEOUT} (an endless loop, or much too slow)"


# Text a hidden test's own message may quote that the student's code chose: the repr of a string it returned (perhaps
# cut short, so a quote may run to the end, even where the cut leaves an escape's backslash last). An apostrophe
# inside a word ("the rule's") opens no quote.
QUOTED = re.compile(
    r"""(?<!\w)'(?:[^'\\]|\\(?:.|$))*?(?:'(?!\w)|$)|(?<!\w)"(?:[^"\\]|\\(?:.|$))*?(?:"(?!\w)|$)""", re.DOTALL
)


# What differs while a notebook is graded, said by the course's own code in the student's process: the one message of
# its that a hidden test may name, in the grader's words (the student's code could raise the same words with more).
GRADING_ONLY = {
    "The digits data is not at": (
        "load_digits() found no data: while a notebook is graded there is none, and a function gets the digits only "
        "as the arrays it is passed (the capstone's held-out images are digits too)"
    ),
}


def describe_hidden(error, source=""):
    """A failing hidden test's message for the page, with no text in it that the student's code wrote: that code had
    the hidden inputs, and could spell them out (in digits or in words) in its error, in a string it returned or in a
    class's name. An error of the student's code is named by its kind and the function it came from; the test's own
    message is shown with quoted text blanked, but for a quote the test's `source` holds as it is (a section's name,
    'The step', or padding='same'): the instructor wrote that. The numbers the test's message gives (which input, the shapes, the
    worst element's two values) stay: a rule that fails on purpose can put a few of its numbers there, and
    `--feedback summary` shows none (docs/instructor.md, "What the students see")."""
    if getattr(error, "raised_by_student", False):
        kind = "an error of its own class" if isinstance(error, StudentError) else type(error).__name__
        where = f"your {error.raised_in}" if getattr(error, "raised_in", None) else "your code"
        summary = getattr(error, "summary", None) or f"{kind} from {where}"
        message = f"{summary} in a hidden test ({NOT_SHOWN})"  # why, and what to do: once, on the page (WHY_NOT_SHOWN)
        message += "".join(f"; {text}" for phrase, text in GRADING_ONLY.items() if phrase in str(error))
        message += "".join(f"; it was {note}" for note in notes_of(error))
        if isinstance(error, RecursionError):
            message += (
                "; a function that calls itself once per node fails on a deep graph (Python allows about 1,000 "
                "nested calls): walk the graph with a loop and an explicit stack instead"
            )
        return message
    return QUOTED.sub(lambda quote: quote[0] if _in_source(quote[0], source) else "'…'", describe(error))


def _in_source(quote, source):
    "Whether the test's source holds this quoted text, in either kind of quotes (repr writes 'he' for \"he\")."
    inner = quote[1:-1] if len(quote) >= 2 and quote[0] == quote[-1] else None
    return quote in source or (inner is not None and any(f"{q}{inner}{q}" in source for q in "'\""))


def resolve_trusted_class(module, qualname):
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


def set_flags(module, values):
    """The student's module-level flags (no_grad's switch in notebook 02, say) as the student's code left them. A flag
    keeps its type, and a string is never taken (it could carry anything); nor is a constant (a name in capitals:
    the reference rules and the grader's own messages read them, wire.flags)."""
    if not isinstance(values, dict):
        return
    mine = wire.flags(module)
    for name, value in values.items():
        if name in mine and type(value) is type(mine[name]) and not isinstance(value, str) and wire.is_simple(value):
            setattr(module, name, value)


def restore_flags(module, values):
    "Put the module's flags back as `values` (wire.flags) has them: after a hidden cell, see grade_cells."
    for name, value in values.items():
        setattr(module, name, value)


EXACT_FUNCTIONS = {  # exercises that are not rules but return a gradient, pure functions of arrays: refused as a
    "tied_weight_grad",  # rule is when they agree with the reference only as finite differences do (13's test
}  # computes its expected gradient with numerical_grad, a line a student could copy)


def install(space, targets, remote):
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

        def stub(*args, _qualname=qualname, _reference=reference, _signature=signature, **kwargs):
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


def refuse_numerical_rule(qualname, value, reference, args, kwargs, probe=False):
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
    if gaps:
        rule = qualname.removesuffix(".apply")
        rounded = analytic.float32_rounding(value, gaps, reference, args, kwargs)
        raise Refusal(analytic.message(rule, gaps, is_rule=qualname.endswith(".apply"), rounded=rounded))
    return exact


def probe_linear_rule(qualname, reference, signature, args, kwargs, remote):
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


# -- Running the instructor's cells ---------------------------------------------------------------------------------


def plan_cells(instructor_nb):
    "The cells run here, in order: [{'id', 'kind', 'source'}]: the instructor's setup and test cells."
    cells = []
    for cell in instructor_nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type != "code" or is_export(cell.source) or "#| default_exp" in cell.source:
            continue
        kind = "solution" if meta.get("solution") else "test" if meta.get("grade") else "setup"
        cells.append(
            {
                "id": meta.get("grade_id", cell.get("id")),
                "kind": kind,
                "source": cell.source,
                "targets": cell_targets(cell) if kind == "solution" else [],
            }
        )
    return cells


def public_source(instructor_nb):
    """The source of the instructor's code cells that every student's release holds as they are (given code, visible
    tests): a quote from them in a hidden test's message (padding='same' from 12's given conv_cases) tells nothing."""
    return "\n".join(
        c.source
        for c in instructor_nb.cells
        if c.cell_type == "code"
        and not c.get("metadata", {}).get("nbgrader", {}).get("solution")
        and "### BEGIN HIDDEN TESTS" not in c.source
    )


def notebook_exercises(nb):
    "The student's exercises that are not exported: the worker runs them in the module's namespace after importing it."
    return [
        c.source
        for c in nb.cells
        if c.cell_type == "code"
        and not is_export(c.source)
        and c.get("metadata", {}).get("nbgrader", {}).get("solution")
    ]


def notes_of(error):
    """The notes the course's own code added to an error as it passed (03's check_backward names the call a rule
    raised in). Only the grader's process adds them: an error of the student's code arrives here as a new exception,
    built from its kind and message alone (exception_of)."""
    notes = getattr(error, "__notes__", None)
    return [note for note in notes if isinstance(note, str)] if isinstance(notes, list) else []


def error_name(error):
    "The name the page gives an error: a student's error its own kind, never a class of the grader's."
    return error.kind if isinstance(error, StudentError | Refusal) else type(error).__name__


def describe(error):
    text = str(error) if isinstance(error, StudentError) else f"{error_name(error)}: {error}"
    text += "".join(f" ({note})" for note in notes_of(error) if note.removeprefix("in the case ") not in text)
    return text if len(text) < 2000 else text[:2000] + " ..."


def _alarm(signum, frame):
    raise CellTimeout()


def run_cell(cell, namespace, timeout, hidden=False, shown=None, public=""):
    """Run one of the instructor's cells here; return (passed, message). `timeout` is in CPU seconds of this process:
    the time the student's calls take in the worker is theirs, limited there. `shown` (a grading.grade.outputs.Shown, or
    None) receives what the cell shows, for the feedback page. `public`: the source of the cells every student has
    (public_source), whose quotes a hidden test's message keeps as it keeps its own."""
    previous = signal.signal(signal.SIGPROF, _alarm)
    try:
        signal.setitimer(signal.ITIMER_PROF, timeout)
        with outputs.captured(shown):
            explain = cell.get("kind") == "test" and not hidden  # a hidden test's values came from hidden inputs
            value = outputs.run(cell["source"], f"<{cell['id']}>", namespace, explain)
            outputs.show_value(shown, value)
        return True, ""
    except CellTimeout:
        return failed(shown, "Timeout", f"the test ran out of time: it took longer than {timeout} s")
    except GraderFault:
        raise  # not the student's: the whole submission is not graded
    except (Exception, Refusal) as error:  # noqa: BLE001  (a failing test; an error from the student's code)
        if hidden:
            return failed(shown, error_name(error), describe_hidden(error, cell["source"] + "\n" + public))
        return failed(shown, error_name(error), describe(error))
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
        outputs.take_figures(shown)


def failed(shown, name, message):
    "(False, message), and the error on the cell's page (its message without the type's name in front)."
    if shown is not None:
        shown.error = (name, message.removeprefix(f"{name}: "))
    return False, message


def trusted_modules(reference, earlier, graded):
    "Import the instructor's reference package here: the earlier modules, then the graded one."
    for name in [m for m in list(sys.modules) if m == "tinytorch" or m.startswith("tinytorch.")]:
        del sys.modules[name]
    sys.path.insert(0, str(reference))
    importlib.invalidate_caches()
    import tinytorch  # noqa: F401  (the reference package, not an installed one: checked below)

    for name in earlier:
        importlib.import_module(name)
    module = importlib.import_module(graded)
    if not os.path.realpath(module.__file__).startswith(os.path.realpath(reference)):
        raise GradingError(f"{graded} was imported from {module.__file__}, not from the reference package")
    return module


def grade_cells(instructor_nb, restored_nb, spec, package, reference, runner, sandboxed, budget, stopwatch=None):
    """Run the instructor's cells here against the student's exercises in the worker; return
    ({test id: (passed, message)}, note, {cell id: its outputs for the feedback page}). `package` is the student's
    package, `reference` the instructor's, `runner` an empty folder of the grader's for the worker's files; a
    `stopwatch` (grading.grade.clock.Stopwatch) gets the seconds of the workers' starts and of the student's calls.

    A hidden test's cell has no outputs, and its calls go to a worker of their own (Remote), so no code of the
    student's that saw a hidden test's inputs runs for a cell the page shows. In a sandbox of its own each worker
    has its own /tmp, IPC and network. Without one (the student user: Gradescope's container) both workers would
    share them, so there the notebook runs twice: first without its hidden cells, for the page and the visible
    tests; then, after every process of the student user has ended, whole, for the hidden tests only, showing
    nothing (the visible cells run again, as the hidden ones may need what they set up)."""
    if sandboxed:
        return grade_pass(instructor_nb, restored_nb, spec, package, reference, runner, True, budget, stopwatch)
    visible, note, ran = grade_pass(
        instructor_nb, restored_nb, spec, package, reference, runner, False, budget, stopwatch, hidden_cells=False
    )
    hidden, hidden_note, _ = grade_pass(
        instructor_nb, restored_nb, spec, package, reference, runner, False, budget, stopwatch, shown_cells=False
    )
    results = {**visible, **{test: hidden[test] for test in hidden if test not in visible}}
    notes = [note] + [part for part in hidden_note.split("; ") if part and part not in note]
    return results, "; ".join(n for n in notes if n), ran


ALLCLOSE = np.allclose


def strict_allclose(a, b, *args, **kwargs):
    """np.allclose as the tests call it while a notebook is graded, less its vacuous truth: an empty array broadcast
    against a non-empty one compares no element, so np.allclose finds it close to anything (a rule or an optimizer
    that returned np.zeros((0, 1, 1, 1, 1)) passed the tests that compare with it)."""
    if (np.size(a) == 0) != (np.size(b) == 0):
        return False
    return ALLCLOSE(a, b, *args, **kwargs)


def grade_pass(
    instructor_nb,
    restored_nb,
    spec,
    package,
    reference,
    runner,
    sandboxed,
    budget,
    stopwatch=None,
    hidden_cells=True,
    shown_cells=True,
):
    """One run of the notebook's cells (grade_cells): with its hidden cells or without (`hidden_cells`), and with
    the page's cells shown or, as for the hidden ones, not (`shown_cells`: then only the hidden tests' results are
    returned)."""
    targets = exercise_targets(instructor_nb)
    module = trusted_modules(reference, spec.earlier_modules, spec.module)
    sandbox.copy_worker_files(runner)
    plan = {
        "op": "plan",
        "package": "/student" if sandboxed else str(package),
        "module": spec.module,
        "exported": exported_sources(restored_nb),
        "earlier_modules": spec.earlier_modules,
        "cell_timeout": spec.cell_timeout,
        "notebook_exercises": notebook_exercises(restored_nb),
    }
    script = "/grader/worker.py" if sandboxed else str(Path(runner) / "worker.py")
    limits = {"memory_mb": spec.memory_mb, "cpu_seconds": max(600, 20 * spec.cell_timeout)}
    remote = Remote(plan, [(runner, "/grader"), (package, "/student")], limits, sandboxed, script, module)
    remote.stopwatch = stopwatch if stopwatch is not None else remote.stopwatch
    remote.budget = budget
    install(module, targets, remote)
    importlib.import_module("tinytorch")  # what the notebooks' `import tinytorch` does, after the stand-ins
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    namespace.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
    results, notes, setup_failed, ran = {}, [], False, {}
    variant.use(getattr(spec, "variant", None))  # the hidden tests draw this student's inputs (grading.grade.variant)
    heldout.use(spec.held_out_digits)  # the instructor's own held-out digits, if any (grading.grade.heldout)
    try:
        try:
            remote.hidden = not shown_cells  # a pass that shows nothing runs all its calls in the hidden tests' worker
            remote.ensure_worker()
        except StudentError as error:
            notes.append(str(error))
        if remote.first_import and wire.LATER_MODULES in remote.first_import:  # (a class renamed, say)
            notes.append(f"{remote.first_import}: keep the names the notebook gives your classes and functions")
        elif remote.first_import and remote.first_import != "not started":
            notes.append(
                f"your module could not be imported ({remote.first_import}); each of your exercise cells "
                "was run on its own instead, as in the notebook"
            )
        if shown_cells:
            ran.update(import_outputs(instructor_nb, remote))
        np.allclose = strict_allclose  # while the cells run (put back in the finally below)
        public = public_source(instructor_nb)
        for cell in plan_cells(instructor_nb):
            hidden = "### BEGIN HIDDEN TESTS" in cell["source"]
            if hidden and not hidden_cells:
                continue
            if budget.expired():
                if cell["kind"] == "test" and (hidden or shown_cells):
                    results[cell["id"]] = (False, "not run: the time limit for this notebook was reached")
                continue
            # a solution cell runs the instructor's version here (what it shows is not the student's), a hidden test
            # the hidden inputs: neither shows anything
            shown = None if hidden or cell["kind"] == "solution" or not shown_cells else outputs.Shown()
            remote.printed, remote.hidden = (shown.printed if shown is not None else None), hidden or not shown_cells
            flags = wire.flags(remote.graded) if hidden and shown_cells else None
            passed, message = run_cell(cell, namespace, 2 * spec.cell_timeout + GRACE, hidden, shown, public)
            remote.printed, remote.hidden = None, not shown_cells
            if flags is not None:  # the flags as the page's worker left them: nothing the hidden one set carries over
                restore_flags(remote.graded, flags)
            if shown is not None:
                shown.passed = passed and cell["kind"] == "test"
                ran[cell["id"]] = shown.outputs()
            if cell["kind"] == "solution":  # the instructor's version ran here: its exercises go to the worker
                install(namespace, cell["targets"], remote)
            if cell["kind"] == "test":
                if hidden or shown_cells:
                    results[cell["id"]] = (passed, message)
            elif not passed and not setup_failed and shown_cells:  # (not where code that saw hidden inputs ran)
                if "NotImplementedError" not in message:  # (an exercise not done yet is no news: its tests say so)
                    message = " ".join(message.split())  # one line: the table's note is one cell of a CSV
                    notes.append(
                        f"the {given_cell_name(cell['source'])} failed, most likely through your code it uses: "
                        f"{message[:300]}"
                    )
                setup_failed = True  # only the first failure says something: later ones follow
    finally:
        np.allclose = ALLCLOSE
        variant.use(None)
        heldout.use(None)
        remote.close()
    if remote.fault is not None:
        raise remote.fault
    notes += remote.events[:3]
    if budget.expired():
        notes.append("not every test ran: the time limit for this notebook was reached")
    return results, "; ".join(n for n in notes if n), ran


def import_outputs(instructor_nb, remote):
    """{the first exported exercise cell's id: what importing the student's module printed, and its error}: the
    notebook shows these under the cell whose code printed them; the page under the first exercise."""
    first = next(
        (
            c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            for c in instructor_nb.cells
            if c.cell_type == "code"
            and is_export(c.source)
            and c.get("metadata", {}).get("nbgrader", {}).get("solution")
        ),
        None,
    )
    if first is None:
        return {}
    shown = outputs.Shown()
    shown.printed.extend(remote.import_printed)
    if remote.first_import and remote.first_import != "not started":
        name, _, message = str(remote.first_import).partition(": ")
        shown.error = (name, message)
    return {first: shown.outputs()}
