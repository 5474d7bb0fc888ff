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

from __future__ import annotations

import builtins
import importlib
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, ModuleType
from typing import TYPE_CHECKING, Never

import numpy as np

from ..common.errors import GraderFault, GradingError, Refusal
from ..common.notebooks import given_cell_name, is_demo
from ..sandbox import sandbox, wire
from . import heldout, outputs, variant
from .clock import Budget, Stopwatch
from .remote import GRACE, CellTimeout, Remote, WorkerSetup
from .spec import Spec
from .stand_ins import install
from .student_errors import StudentError, describe, describe_hidden, error_name
from .targets import cell_targets, exercise_targets, exported_sources, is_export, notebook_exercises

if TYPE_CHECKING:
    from nbformat import NotebookNode


def plan_cells(instructor_nb: NotebookNode) -> list[dict]:
    "The cells run here, in order: [{'id', 'kind', 'source'}]: the instructor's setup and test cells."
    cells = []
    for cell in instructor_nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type != "code" or is_export(cell.source) or "#| default_exp" in cell.source:
            continue
        kind = "solution" if meta.get("solution") else "test" if meta.get("grade") else "setup"
        kind = "demo" if kind == "setup" and is_demo(cell) else kind
        cells.append(
            {
                "id": meta.get("grade_id", cell.get("id")),
                "kind": kind,
                "source": cell.source,
                "targets": cell_targets(cell) if kind == "solution" else [],
            }
        )
    return cells


def public_source(instructor_nb: NotebookNode) -> str:
    """The source of the instructor's code cells that every student's release holds as they are (given code, visible
    tests): a quote from them in a hidden test's message (padding='same' from 12's given conv_cases) tells nothing."""
    return "\n".join(
        c.source
        for c in instructor_nb.cells
        if c.cell_type == "code"
        and not c.get("metadata", {}).get("nbgrader", {}).get("solution")
        and "### BEGIN HIDDEN TESTS" not in c.source
    )


def _alarm(signum: int, frame: FrameType | None) -> Never:
    raise CellTimeout()


def run_cell(
    cell: dict,
    namespace: dict[str, object],
    timeout: float,
    hidden: bool = False,
    shown: outputs.Shown | None = None,
    public: str = "",
) -> tuple[bool, str]:
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


def failed(shown: outputs.Shown | None, name: str, message: str) -> tuple[bool, str]:
    "(False, message), and the error on the cell's page (its message without the type's name in front)."
    if shown is not None:
        shown.error = (name, message.removeprefix(f"{name}: "))
    return False, message


def trusted_modules(reference: Path | str, earlier: list[str], graded: str) -> ModuleType:
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


@dataclass(frozen=True)
class Grading:
    """What grade_cells grades: the instructor's notebook and the student's (restored: grading.common.answers), the
    job, the student's package and the instructor's (`reference`), the grader's folder for the worker's files
    (`runner`), whether each worker has a sandbox of its own, the notebook's time, and where the seconds go."""

    instructor_nb: NotebookNode
    restored_nb: NotebookNode
    spec: Spec
    package: Path
    reference: Path
    runner: Path
    sandboxed: bool
    budget: Budget
    stopwatch: Stopwatch | None = None


def grade_cells(
    instructor_nb: NotebookNode,
    restored_nb: NotebookNode,
    spec: Spec,
    *,
    package: Path,
    reference: Path,
    runner: Path,
    sandboxed: bool,
    budget: Budget,
    stopwatch: Stopwatch | None = None,
) -> tuple[dict[str, tuple[bool, str]], str, dict[str, list[NotebookNode]]]:
    """Run the instructor's cells here against the student's exercises in the worker; return
    ({test id: (passed, message)}, note, {cell id: its outputs for the feedback page}). `package` is the student's
    package, `reference` the instructor's, `runner` an empty folder of the grader's for the worker's files; a
    `stopwatch` (grading.grade.clock.Stopwatch) gets the seconds of the workers' starts and of the student's calls.

    The notebook runs twice, each time in a worker (a sandbox) of its own: first without its hidden cells, for the
    page and the visible tests; then, once that worker and every process of it have ended, up to its last hidden
    cell, for the hidden tests only, showing nothing (the visible cells run again, as the hidden ones may need what
    they set up). So no process that has had a hidden input runs before or alongside any code whose output the page
    shows (a lock on a shared read-only file once carried them across, issue 44), and nothing a hidden call sets
    (a rule found numerical, a call that timed out, a restart) reaches a visible cell: each run has its own."""
    grading = Grading(instructor_nb, restored_nb, spec, package, reference, runner, sandboxed, budget, stopwatch)
    visible, note, ran = grade_pass(grading, hidden_cells=False)
    if not any(HIDDEN in cell["source"] for cell in plan_cells(instructor_nb)):
        return visible, note, ran
    hidden, hidden_note, _ = grade_pass(grading, shown_cells=False)
    results = {**visible, **{test: hidden[test] for test in hidden if test not in visible}}
    notes = [note] + [part for part in hidden_note.split("; ") if part and part not in note]
    return results, "; ".join(n for n in notes if n), ran


HIDDEN = "### BEGIN HIDDEN TESTS"


ALLCLOSE = np.allclose


def strict_allclose(a: object, b: object, *args: object, **kwargs: object) -> bool:
    """np.allclose as the tests call it while a notebook is graded, less its vacuous truth: an empty array broadcast
    against a non-empty one compares no element, so np.allclose finds it close to anything (a rule or an optimizer
    that returned np.zeros((0, 1, 1, 1, 1)) passed the tests that compare with it)."""
    if (np.size(a) == 0) != (np.size(b) == 0):
        return False
    return ALLCLOSE(a, b, *args, **kwargs)


@dataclass
class Pass:
    """One run of the notebook's cells (grade_pass): where they run, and what they found so far. `shown_cells`: the
    page's cells are shown (else, as for the hidden ones, not: then only the hidden tests' results are kept)."""

    remote: Remote
    namespace: dict[str, object]
    public: str  # public_source: the quotes a hidden test's message keeps
    cell_timeout: float  # CPU seconds of this process for one cell (run_cell)
    shown_cells: bool
    results: dict[str, tuple[bool, str]] = field(default_factory=dict)  # {test id: (passed, message)}
    notes: list[str] = field(default_factory=list)  # for the table's note
    ran: dict[str, list[NotebookNode]] = field(default_factory=dict)  # {cell id: its outputs for the page}
    setup_failed: bool = False  # only the first failing setup cell says something: later ones follow

    def run(self, cell: dict, hidden: bool) -> None:
        "Run one of the instructor's cells, and keep what it found."
        remote = self.remote
        # a solution cell runs the instructor's version here (what it shows is not the student's), a hidden test
        # the hidden inputs: neither shows anything
        shown = None if hidden or cell["kind"] == "solution" or not self.shown_cells else outputs.Shown()
        remote.printed = shown.printed if shown is not None else None
        passed, message = run_cell(cell, self.namespace, self.cell_timeout, hidden, shown, self.public)
        remote.printed = None
        if shown is not None:
            shown.passed = passed and cell["kind"] == "test"
            self.ran[cell["id"]] = shown.outputs()
        if cell["kind"] == "solution":  # the instructor's version ran here: its exercises go to the worker
            install(self.namespace, cell["targets"], remote)
        if cell["kind"] == "test":
            if hidden or self.shown_cells:
                self.results[cell["id"]] = (passed, message)
        elif not passed and not self.setup_failed and self.shown_cells:  # (not where code that saw hidden inputs ran)
            if "NotImplementedError" not in message:  # (an exercise not done yet is no news: its tests say so)
                message = " ".join(message.split())  # one line: the table's note is one cell of a CSV
                self.notes.append(
                    f"the {given_cell_name(cell['source'])} failed, most likely through your code it uses: "
                    f"{message[:300]}"
                )
            self.setup_failed = True  # only the first failure says something: later ones follow


def grade_pass(
    grading: Grading, *, hidden_cells: bool = True, shown_cells: bool = True
) -> tuple[dict[str, tuple[bool, str]], str, dict[str, list[NotebookNode]]]:
    """One run of the notebook's cells (grade_cells): with its hidden cells or without (`hidden_cells`), and with
    the page's cells shown or, as for the hidden ones, not (`shown_cells`: then only the hidden tests' results are
    returned)."""
    spec, budget = grading.spec, grading.budget
    targets = exercise_targets(grading.instructor_nb)
    module = trusted_modules(grading.reference, spec.earlier_modules, spec.module)
    remote = start_remote(grading, module)
    install(module, targets, remote)
    importlib.import_module("tinytorch")  # what the notebooks' `import tinytorch` does, after the stand-ins
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    namespace.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
    found = Pass(remote, namespace, "", 2 * spec.cell_timeout + GRACE, shown_cells)
    variant.use(getattr(spec, "variant", None))  # the hidden tests draw this student's inputs (grading.grade.variant)
    heldout.use(spec.held_out_digits)  # the instructor's own held-out digits, if any (grading.grade.heldout)
    try:
        found.notes += import_notes(remote, shown_cells)
        if shown_cells:
            found.ran.update(import_outputs(grading.instructor_nb, remote))
        np.allclose = strict_allclose  # while the cells run (put back in the finally below)
        found.public, cells = public_source(grading.instructor_nb), plan_cells(grading.instructor_nb)
        last = max((i for i, c in enumerate(cells) if HIDDEN in c["source"]), default=-1)
        for cell in cells if shown_cells else cells[: last + 1]:  # the hidden tests' run ends with its last one
            hidden = HIDDEN in cell["source"]
            if hidden and not hidden_cells:
                continue
            if cell["kind"] == "demo":  # never run here (grading.common.notebooks.is_demo)
                if shown_cells:
                    found.ran[cell["id"]] = outputs.not_run_demo()
                continue
            if budget.expired():
                if cell["kind"] == "test" and (hidden or shown_cells):
                    found.results[cell["id"]] = (False, "not run: the time limit for this notebook was reached")
                continue
            found.run(cell, hidden)
    finally:
        np.allclose = ALLCLOSE
        variant.use(None)
        heldout.use(None)
        remote.close()
    if remote.fault is not None:
        raise remote.fault
    notes = found.notes + remote.events[:3]
    if budget.expired():
        notes.append("not every test ran: the time limit for this notebook was reached")
    return found.results, "; ".join(n for n in notes if n), found.ran


def start_remote(grading: Grading, module: ModuleType) -> Remote:
    "The Remote of one pass: the worker's files copied into `runner`, and the plan the worker starts from."
    spec, sandboxed, runner = grading.spec, grading.sandboxed, grading.runner
    sandbox.copy_worker_files(runner)
    plan = {
        "op": "plan",
        "package": "/student" if sandboxed else str(grading.package),
        "module": spec.module,
        "exported": exported_sources(grading.restored_nb),
        "earlier_modules": spec.earlier_modules,
        "cell_timeout": spec.cell_timeout,
        "notebook_exercises": notebook_exercises(grading.restored_nb),
    }
    script = "/grader/worker.py" if sandboxed else str(Path(runner) / "worker.py")
    limits = {"memory_mb": spec.memory_mb, "cpu_seconds": max(600, 20 * spec.cell_timeout)}
    setup = WorkerSetup(plan, [(runner, "/grader"), (grading.package, "/student")], limits, sandboxed, script)
    remote = Remote(setup, module)
    remote.stopwatch = grading.stopwatch if grading.stopwatch is not None else remote.stopwatch
    remote.budget = grading.budget
    return remote


def import_notes(remote: Remote, shown_cells: bool) -> list[str]:
    "Start the pass's first worker; the notes on how the student's module imported (or did not)."
    notes = []
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
    return notes


def import_outputs(instructor_nb: NotebookNode, remote: Remote) -> dict[str, list[NotebookNode]]:
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
