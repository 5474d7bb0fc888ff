"""Grade one submission (one student, one notebook) in a process of its own: `python -m grading.grade.job SPEC.json`.

The orchestrator (grading.grade.autograde) starts one such process per submission, several at a time, and kills it if it
outlives its time limit. What it does, in a fresh folder of its own (mode 0700; nothing in it is the student's):

1. exports the student's exercise cells, inside the instructor's given code, into a package of their own;
2. computes the verdict (grading.grade.verdict): the instructor's cells run here, the student's exercises in a sandboxed
   worker (grading.sandbox.worker, grading.sandbox.sandbox) that returns plain data only, what it printed included; each cell's
   outputs are kept (grading.grade.outputs), a hidden test's excepted;
3. makes the notebook the feedback page shows from that same run (grading.reports.page.ran_notebook: the student's notebook
   as handed in, with the given cells and visible tests as released and each one's outputs): the student's code is
   executed once, by the verdict;
4. writes the feedback page (grading.reports.page: sanitised) and the result (a JSON file, written to a temporary name and
   renamed).
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import sys
import time
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat

from ..common.answers import restored_notebook
from ..common.errors import GraderFault, GradingError
from ..common.notebooks import nbgrader_meta, read_notebook, write_atomic, write_notebook
from . import heldout
from .clock import Budget, Stopwatch, process_age
from .limits import die_with_parent
from .spec import FAULT, Spec, manual_note, manual_points, test_cells
from .submissions import broken_cells_note, missing_exercises_note
from .targets import exported_sources
from .timespent import reported_hours

if TYPE_CHECKING:
    from nbformat import NotebookNode

# -- 1. The student's package ----------------------------------------------------------------------------------------


def build_package(spec: Spec, nb: NotebookNode, target: Path) -> None:
    """The package the student's code runs with: the reference modules of the notebooks before this one (they are
    what this notebook builds on), the released modules of the later ones (stubs: their answers are not the student's
    to read), and this notebook's module exported from `nb` (the answer removed). It holds no data: the student's
    code gets the digits only as the arrays a test passes it, so the capstone's held-out images, which the grader
    splits off from the same digits, cannot be loaded and trained on while it is graded."""
    from ..student.export import export_here

    reference, released = Path(spec.reference), Path(spec.reference).with_name("released")
    top = released / "tinytorch"
    shutil.copytree(top, target / "tinytorch", ignore=lambda folder, names: ["data"] if Path(folder) == top else [])
    for name in spec.earlier_modules:
        module = Path(*name.split(".")).with_suffix(".py")
        shutil.copyfile(reference / module, target / module)
        compiled = importlib.util.cache_from_source(str(module))  # made once per course (autograde.prepare)
        if (reference / compiled).exists():
            shutil.copyfile(reference / compiled, target / compiled)
    shutil.copyfile(reference / "settings.ini", target / "settings.ini")
    (target / spec.module_file).unlink(missing_ok=True)
    write_notebook(nb, target / "nbs" / f"{spec.assignment}.ipynb")
    try:
        export_here(target)
    except GradingError:
        # nbdev cannot parse a cell with a syntax error; a module of the raw cells fails to import in the same way,
        # and the worker then runs the cells one by one
        (target / spec.module_file).write_text("\n\n".join(exported_sources(nb)) + "\n")
    finally:
        shutil.rmtree(target / "nbs")  # it holds the hidden tests
    if not (target / spec.module_file).exists():
        raise GradingError(f"the notebook exported no {spec.module_file}: is its '#| default_exp' cell intact?")


# -- 2 to 4. Putting it together ------------------------------------------------------------------------------------------


def open_to_student_user(workdir: Path) -> None:
    """The student-user fallback (grading.sandbox.sandbox): the job's folder, under a scratch folder the user cannot list, is
    opened for passing through, and its package and worker files for reading; nothing in it for writing."""
    os.chmod(workdir, 0o711)
    for folder, dirs, files in os.walk(workdir):
        for name in dirs:
            os.chmod(os.path.join(folder, name), 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)


def isolation_of(spec: Spec) -> str:
    if spec.sandboxed:
        return "sandbox"
    return f"user {spec.student_user} (no bubblewrap here)" if spec.student_user else "none (--unsafe-no-sandbox)"


def grade(spec: Spec) -> dict:
    from ..reports.page import ran_notebook
    from ..sandbox import sandbox

    sandbox.use_student_user(spec.student_user if not spec.sandboxed else None)
    instructor = read_notebook(spec.instructor)
    submitted = read_notebook(spec.submitted)
    released = read_notebook(spec.released)
    tests = test_cells(instructor)
    workdir = Path(spec.scratch) / secrets.token_hex(16)
    workdir.mkdir(mode=0o700)
    budget = Budget(spec.notebook_timeout / 2)  # the verdict's run; the rest is the job's margin (the page takes ~1 s)
    stopwatch = Stopwatch()
    stopwatch.add("start", process_age())  # Python and the grader's imports
    try:
        restored = restored_notebook(instructor, submitted, released)
        verdicts, note, ran = run_verdict(spec, instructor, restored, workdir, budget, stopwatch)
        hidden = hidden_tests(instructor)
        read = [broken_cells_note(submitted), missing_exercises_note(submitted, released)]  # read above, never run
        note = "; ".join(n for n in [*read, note] if n)
        hours = reported_hours(submitted)  # read as text, never run (grading.grade.timespent)
        result = score(spec, tests, verdicts, [note], hidden, hours)
        write_atomic(spec.result, json.dumps(result, indent=1))  # the score is known: a kill from here on loses none
        with stopwatch("page"):
            try:
                notebook = ran_notebook(released, submitted, ran)
            except GradingError as error:
                notebook = None
                result = score(spec, tests, verdicts, [note, f"no feedback: {error}"], hidden, hours)
            result["manual_points"] = manual_points(instructor)
            if notebook is not None and spec.page:
                write_atomic(spec.page, nbformat.writes(notebook))
            try:
                write_feedback(notebook, spec, result, released)
            except Exception as error:  # noqa: BLE001  (the renderer's failure: the score stands, the note says so)
                Path(spec.feedback).unlink(missing_ok=True)  # no page of an earlier run in its place
                failed = f"no feedback page: the grader could not make it ({type(error).__name__}: {str(error)[:200]})"
                result = {
                    **score(spec, tests, verdicts, [note, failed], hidden, hours),
                    "manual_points": result["manual_points"],
                }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    write_atomic(spec.result, json.dumps(result, indent=1))
    record_times(spec, stopwatch)
    return result


def run_verdict(
    spec: Spec, instructor: NotebookNode, restored: NotebookNode, workdir: Path, budget: Budget, stopwatch: Stopwatch
) -> tuple[dict[str, tuple[bool, str]], str, dict[str, list[NotebookNode]]]:
    """The student's package built in `workdir`, then the verdict (grading.grade.verdict.grade_cells): ({test id:
    (passed, message)}, note, {cell id: its outputs for the page})."""
    from .verdict import grade_cells

    package = workdir / "env"
    with stopwatch("package"):
        build_package(spec, restored, package)
    (workdir / "runner").mkdir()
    if spec.student_user and not spec.sandboxed:
        os.umask(0o022)  # the worker's files that grade_cells copies in are readable too
        open_to_student_user(workdir)
    with stopwatch("verdict"):
        return grade_cells(
            instructor,
            restored,
            spec,
            package=package,
            reference=Path(spec.reference),
            runner=workdir / "runner",
            sandboxed=spec.sandboxed,
            budget=budget,
            stopwatch=stopwatch,
        )


def hidden_tests(instructor: NotebookNode) -> set[str]:
    "The ids of the instructor's test cells that hold hidden tests."
    return {
        nbgrader_meta(c)["grade_id"]
        for c in instructor.cells
        if nbgrader_meta(c).get("grade") and "### BEGIN HIDDEN TESTS" in c.source
    }


TIMINGS = "TINYTORCH_TIMINGS"  # a file: each job appends where its time went (benchmarks/run.py grading sets it)


def record_times(spec: Spec, stopwatch: Stopwatch) -> None:
    """Where this job's time went, one JSON line appended to the file $TINYTORCH_TIMINGS (if set), in seconds: start
    (Python and imports), package, sandbox (bwrap, Python, NumPy: every worker), imports (the package and the student's
    module), student_code (the calls), verdict (the grader's own part of the run), page, and total."""
    path = os.environ.get(TIMINGS)
    if not path:
        return
    parts = stopwatch.seconds
    student = parts.get("student", 0.0) - parts.get("callbacks", 0.0)  # a callback is the grader's work
    started = parts.get("sandbox", 0.0) + parts.get("imports", 0.0)
    times = {
        "start": parts.get("start", 0.0),
        "package": parts.get("package", 0.0),
        "sandbox": parts.get("sandbox", 0.0),
        "imports": parts.get("imports", 0.0),
        "student_code": student,
        "verdict": parts.get("verdict", 0.0) - started - student,
        "page": parts.get("page", 0.0),
        "total": process_age(),
    }
    if stopwatch.endings:  # how calls past their time were ended (grading.grade.remote.Remote.receive_reply)
        times["endings"] = stopwatch.endings
    line = json.dumps({"submission": f"{spec.student}/{spec.assignment}", **times})
    with open(path, "a") as file:
        file.write(line + "\n")


def score(
    spec: Spec,
    tests: dict[str, tuple[float, str]],
    verdicts: dict[str, tuple[bool, str]],
    notes: list[str],
    hidden: Collection[str] = (),
    hours: float | None = None,
) -> dict:
    "The result: the verdict's score and message per test, and the hours the student reported (or None)."
    rows = {}
    for test_id, (points, fingerprint) in tests.items():
        passed, message = verdicts.get(test_id, (False, "did not run"))
        rows[test_id] = {
            "score": points if passed else 0.0,
            "max_score": points,
            "fingerprint": fingerprint,
            "message": message,
            "hidden": test_id in hidden,
        }
    notes = [n for n in notes if n]
    return {
        "student": spec.student,
        "assignment": spec.assignment,
        "tests": rows,
        "score": sum(r["score"] for r in rows.values()),
        "max_score": sum(r["max_score"] for r in rows.values()),
        "note": "; ".join(notes),
        "fingerprint": spec.fingerprint,
        "isolation": isolation_of(spec),
        "graded_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "variant": spec.variant,
        "feedback": spec.feedback_policy,
        "hours_spent": hours,
        **({"measured": heldout.measured()} if heldout.measured() else {}),  # the capstone's (grading.grade.heldout)
    }


def write_feedback(notebook: NotebookNode | None, spec: Spec, result: dict, released: NotebookNode) -> None:
    "The feedback page (grading.reports.feedback, under the run's policy): the verdict at the top, then the notebook as it ran."
    from ..reports.feedback import publish
    from ..reports.page import PageCache, shared_cells

    cache = PageCache(spec.page_cache, shared_cells(released)) if spec.page_cache else None

    publish(
        spec.feedback,
        notebook,
        spec.assignment,
        result,
        spec.feedback_policy,
        extra=manual_note(result.get("manual_points", 0)),
        cache=cache,
    )


def main(argv: list[str] | None = None) -> int:
    die_with_parent()
    spec = Spec.load((argv or sys.argv[1:])[0])
    try:
        grade(spec)
    except GraderFault as fault:
        print(f"grader fault: {fault}", file=sys.stderr)
        return FAULT
    except GradingError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
