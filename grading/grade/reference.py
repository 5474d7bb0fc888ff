"""The reference check: the instructor's own solution must earn full marks here, or nobody is graded.

It runs before any student's job, in the same sandbox and with the same limits; a pass is remembered for this
environment (OUT/.grading/reference-check.json, and the grading cache's reference-checks.json for every other output
folder) until the course's notebooks, the Python, its packages or the limits change.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import TYPE_CHECKING

from ..authoring.course import cache_root, private_folder
from ..common.answers import solved
from ..common.errors import GradingError
from ..common.notebooks import file_fingerprint, read_notebook, write_atomic, write_notebook
from ..sandbox import sandbox
from . import heldout
from .regrade import GRADER_VERSION, held_out_part
from .runner import load_result
from .spec import digest

if TYPE_CHECKING:
    from .run import Log, Run
    from .runner import Runner

REFERENCE = "reference-solution"  # the reference check's student name (a job of its own, under OUT/.grading)


def check_reference(run: Run, runner: Runner, assignments: list[str], log: Log) -> None:
    """Grade the instructor's solution of every assignment about to be graded, in the same sandbox and with the same
    limits as the students'. Anything short of full marks and a clean note is a fault of the grading environment
    (a Python without the course's packages, a sandbox that cannot see them, limits too small): raise GradingError,
    grading nobody. A pass is remembered for this environment (OUT/.grading/reference-check.json)."""
    record_path, key = run.state / "reference-check.json", environment_key(run, runner)
    record, passed = load_result(record_path) or {}, CheckedElsewhere(run, key)
    unchecked = [a for a in assignments if record.get(a) != key + run.held_out_digest(a) and not passed.has(a)]
    if not unchecked:
        return
    log(f"checking the grading environment: grading the reference solution of {len(unchecked)} notebook(s) first")

    folder = run.state / "reference-check"
    failures, lock = [], threading.Lock()

    def check(assignment: str) -> None:
        path = folder / "submission" / assignment / f"{assignment}.ipynb"
        released = read_notebook(run.state / "master" / "release" / assignment / f"{assignment}.ipynb")
        write_notebook(solved(released, run.instructor[assignment]), path)
        fingerprint = {
            "submission": file_fingerprint(path),
            "setup": "",
            "variant": "",
            **held_out_part(run, assignment),
        }
        spec = run.spec(
            REFERENCE,
            assignment,
            path,
            fingerprint,
            result=run.jobs / f"{REFERENCE}__{assignment}.json",
            feedback=folder / "feedback" / f"{assignment}.html",
            page=folder / "page" / f"{assignment}.html",
        )
        result, failure = runner.run(spec, run.jobs / f"{REFERENCE}__{assignment}.spec.json")
        with lock:
            if failure is not None:
                failures.append(f"{assignment}: {failure.removeprefix('not graded: ').split('. This is a fault')[0]}")
            elif result["score"] != result["max_score"] or result["note"]:
                failed = [
                    f"{t}: {r['message'][:200]}" for t, r in result["tests"].items() if r["score"] < r["max_score"]
                ]
                why = "; ".join(([result["note"]] if result["note"] else []) + failed[:2])
                failures.append(f"{assignment}: {result['score']:g}/{result['max_score']:g} ({why})")
            else:
                record[assignment] = key + run.held_out_digest(assignment)
                write_atomic(record_path, json.dumps(record, indent=1))
                passed.add(assignment)

    runner.map(check, unchecked)
    if failures:
        raise GradingError(
            "the grading environment is broken: the instructor's own solution does not earn full marks here, so "
            f"nothing was graded. {'; '.join(failures[:3])[:1500]}. Check that the Python running the grader "
            f'({sandbox.interpreter()}) has the course installed (pip install -e ".[dev]"), that the limits '
            "(--cell-timeout, --memory-mb) are not too small, and that no test cell was changed so that the solution "
            "itself fails it; docs/design.md, 'Where it runs', lists what grading needs"
            + held_out_hint(run, [f.split(":")[0] for f in failures])
        )


class CheckedElsewhere:
    """The reference checks passed by earlier runs into other output folders, kept in the grading cache (the folder
    of made courses, grading.authoring.course.cache_root; none when it is turned off): a check counts for the same
    course (every notebook's bytes), environment and held-out digits."""

    KEEP = 2000  # entries: the file stays small, the oldest go first

    def __init__(self, run: Run, key: str) -> None:
        folder = cache_root()
        folder = private_folder(folder) if folder is not None else None
        self.path = folder / "reference-checks.json" if folder is not None else None
        self.course = (run.state / "prepared").read_text() if (run.state / "prepared").exists() else ""
        self.entry = lambda a: digest("\0".join([self.course, key, a, run.held_out_digest(a)]))
        self.passed = self.read() if self.course else set()

    def read(self) -> set[str]:
        found = load_result(self.path) if self.path is not None else None
        return {str(e) for e in found} if isinstance(found, list) else set()

    def has(self, assignment: str) -> bool:
        return self.entry(assignment) in self.passed

    def add(self, assignment: str) -> None:
        "Remember a pass (with what other runs added meanwhile; one lost to a run writing at once is checked again)."
        if self.path is None or not self.course:
            return
        kept = [e for e in (load_result(self.path) or []) if isinstance(e, str) and e != self.entry(assignment)]
        try:
            write_atomic(self.path, json.dumps([*kept[-self.KEEP + 1 :], self.entry(assignment)]))
        except OSError:
            pass  # a full disk or a removed cache: the next run checks again


def held_out_hint(run: Run, failed: list[str]) -> str:
    "What to check when a notebook measured on the instructor's held-out digits fails the reference check."
    if not any(run.held_out_digest(a) for a in failed):
        return ""
    return (
        f". The reference solution was measured on your held-out digits ({heldout.OPTION} "
        f"{run.policies.held_out.source}): if it fails only with them, check their labels and that each image is "
        "drawn as load_digits' (8x8, row by row, ink high, background 0)"
    )


def environment_key(run: Run, runner: Runner) -> str:
    "What the reference check's verdict depends on besides the notebooks: the Python, its packages, the limits."
    import site

    packages = [os.stat(p).st_mtime_ns for p in site.getsitepackages() if os.path.isdir(p)]
    limits = [run.sandboxed, run.student_user, run.cell_timeout, run.memory_mb]
    parts = [GRADER_VERSION, sys.executable, sys.prefix, *limits, packages, runner.environment]
    return digest(json.dumps(parts, default=str))
