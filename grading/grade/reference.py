"""The reference check: the instructor's own solution must earn full marks here, or nobody is graded.

It runs before any student's job, in the same sandbox and with the same limits; a pass is remembered for this
environment (OUT/.grading/reference-check.json) until the Python, its packages or the limits change.
"""

import json
import os
import sys
import threading

from ..common.answers import solved
from ..common.errors import GradingError
from ..common.notebooks import (
    file_fingerprint,
    read_notebook,
    write_atomic,
    write_notebook,
)
from ..sandbox import sandbox
from . import heldout
from .regrade import GRADER_VERSION, held_out_part
from .runner import load_result
from .spec import digest

REFERENCE = "reference-solution"  # the reference check's student name (a job of its own, under OUT/.grading)


def check_reference(run, runner, assignments, log):
    """Grade the instructor's solution of every assignment about to be graded, in the same sandbox and with the same
    limits as the students'. Anything short of full marks and a clean note is a fault of the grading environment
    (a Python without the course's packages, a sandbox that cannot see them, limits too small): raise GradingError,
    grading nobody. A pass is remembered for this environment (OUT/.grading/reference-check.json)."""
    record_path = run.state / "reference-check.json"
    record = load_result(record_path) or {}
    key = environment_key(run, runner)
    unchecked = [a for a in assignments if record.get(a) != key + run.held_out_digest(a)]
    if not unchecked:
        return
    log(f"checking the grading environment: grading the reference solution of {len(unchecked)} notebook(s) first")

    folder = run.state / "reference-check"
    failures, lock = [], threading.Lock()

    def check(assignment):
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
            run.jobs / f"{REFERENCE}__{assignment}.json",
            folder / "feedback" / f"{assignment}.html",
            folder / "page" / f"{assignment}.html",
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


def held_out_hint(run, failed):
    "What to check when a notebook measured on the instructor's held-out digits fails the reference check."
    if not any(run.held_out_digest(a) for a in failed):
        return ""
    return (
        f". The reference solution was measured on your held-out digits ({heldout.OPTION} "
        f"{run.policies.held_out.source}): if it fails only with them, check their labels and that each image is "
        "drawn as load_digits' (8x8, row by row, ink high, background 0)"
    )


def environment_key(run, runner):
    "What the reference check's verdict depends on besides the notebooks: the Python, its packages, the limits."
    import site

    packages = [os.stat(p).st_mtime_ns for p in site.getsitepackages() if os.path.isdir(p)]
    limits = [run.sandboxed, run.student_user, run.cell_timeout, run.memory_mb]
    parts = [GRADER_VERSION, sys.executable, sys.prefix, *limits, packages, runner.environment]
    return digest(json.dumps(parts, default=str))
