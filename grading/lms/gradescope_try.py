"""`python -m grading gradescope --try SUBMISSION`: the autograder zip run here as Gradescope runs it, before uploading.

The zip is unpacked into a new folder laid out as Gradescope lays out /autograder (source/ holds the zip's files,
submission/ the student's files, flat, results/ the results.json), the submission and a submission_metadata.json are
put in, and the zip's own run_autograder runs there (GRADESCOPE_ROOT points it at the folder) with this Python instead
of the venv setup.sh makes: nothing is installed (no apt, no pip), so what setup.sh does is not tried. What it prints
is what Gradescope would show: the score, each test's result and visibility, and what students see before the grades
are published.
"""

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ..common.defaults import GRADESCOPE_CPU, GRADESCOPE_SETUP, GRADESCOPE_TIMEOUT
from ..common.errors import GradingError

TRY_USER = {"name": "Try Student", "email": "try.student@example.invalid", "id": 0}
WHEN = {  # what each Gradescope visibility shows students, and when (Gradescope's autograder specifications)
    "visible": "at once",
    "after_due_date": "after the due date (the late due date where there is one)",
    "after_published": "once you publish the grades (Review Grades, Publish Grades)",
    "hidden": "never (only instructors see them)",
}


def try_zip(
    zip_path: str | Path,
    submission: str | Path,
    *,
    metadata: str | Path | None = None,
    log: Callable[[str], object] = print,
) -> int:
    """Run the autograder of `zip_path` on `submission` (a notebook, or a folder of the files a student uploads) in a
    temporary folder laid out as /autograder; print results.json's summary. `metadata`: a submission_metadata.json
    (default: one written here for a student submitting now, a day before the due date). Returns run_autograder's
    exit status (0: results.json written; 1: not graded, and why). Raises GradingError for a submission or metadata
    file that cannot be read."""
    root = Path(tempfile.mkdtemp(prefix="gradescope-try-"))
    try:
        lay_out(root, zip_path, submission, metadata, log)
        started, cpu = time.monotonic(), cpu_seconds()
        done = run_autograder(root)
        seconds, cpu = time.monotonic() - started, cpu_seconds() - cpu
        log(done.stdout.rstrip())
        results = root / "results" / "results.json"
        if done.returncode != 0 or not results.is_file():
            log(f"run_autograder exited {done.returncode} without results.json: Gradescope shows such a run as failed")
            return done.returncode or 1
        for line in summary(json.loads(results.read_text())):
            log(line)
        log(timing(seconds, cpu))
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


def lay_out(
    root: Path, zip_path: str | Path, submission: str | Path, metadata: str | Path | None, log: Callable[[str], object]
) -> None:
    "ROOT as Gradescope's /autograder: source/ (the zip unpacked), submission/, results/, submission_metadata.json."
    submission = Path(submission)
    if not submission.exists():
        raise GradingError(f"--try {submission}: no such notebook or folder; give the notebook a student would upload.")
    root.chmod(0o755)  # as /autograder: every user may pass through; the grader's own modes keep them out of source/
    for name in ("source", "submission", "results"):
        (root / name).mkdir(mode=0o755)
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(root / "source")
    for script in ("run_autograder", "setup.sh"):
        (root / "source" / script).chmod(0o755)
    if submission.is_dir():
        shutil.copytree(submission, root / "submission", dirs_exist_ok=True)
    else:
        shutil.copyfile(submission, root / "submission" / submission.name)
    (root / "submission_metadata.json").write_text(json.dumps(metadata_for(metadata, log), indent=1))


def metadata_for(path: str | Path | None, log: Callable[[str], object]) -> dict:
    "The submission_metadata.json to try with: the file given, else one for a student submitting now, on time."
    if path is not None:
        try:
            return json.loads(Path(path).read_text())
        except (OSError, ValueError) as error:
            raise GradingError(
                f"--metadata {path}: cannot be read as JSON ({error}); give a submission_metadata.json."
            ) from None
    now = datetime.now(UTC)
    log(
        f"no --metadata: tried as {TRY_USER['name']} ({TRY_USER['email']}) submitting now, a day before the due date; "
        "give --metadata FILE (a submission_metadata.json) to try another student, time or due date"
    )
    return {
        "created_at": now.isoformat(),
        "assignment": {"due_date": (now + timedelta(days=1)).isoformat(), "title": ""},
        "users": [TRY_USER],
    }


def run_autograder(root: Path) -> subprocess.CompletedProcess[str]:
    "The zip's run_autograder, run as Gradescope runs it (cwd ROOT), at ROOT, with this Python."
    env = {**os.environ, "GRADESCOPE_ROOT": str(root), "TINYTORCH_GRADER_PYTHON": sys.executable}
    script = root / "source" / "run_autograder"
    return subprocess.run([str(script)], cwd=root, env=env, capture_output=True, text=True)


def summary(results: dict) -> list[str]:
    "The lines that say what results.json gives: the score, the tests, and what students see before publishing."
    tests = results.get("tests") or []
    most = sum(t.get("max_score", 0) for t in tests)
    earned = sum(t.get("score", 0) for t in tests)
    passed = sum(t.get("status") == "passed" for t in tests)
    lines = [f"score: {results.get('score', earned):g} of {most:g} (the tests sum to {earned:g})"]
    lines.append(f"tests: {passed} of {len(tests)} passed")
    for test in tests:
        if test.get("status") != "passed":
            message = (test.get("output") or "").strip().splitlines()
            lines.append(f"  failed: {test.get('name')}: {message[0][:150] if message else '(no message)'}")
    shown = {}
    for test in tests:
        points = shown.setdefault(test.get("visibility", "visible"), [0, 0.0])
        points[0] += 1
        points[1] += test.get("max_score", 0)
    for visibility, (count, points) in shown.items():
        lines.append(f"  {visibility}: {count} tests, {points:g} points, shown to students {WHEN[visibility]}")
    seen = shown.get("visible", [0, 0.0])[1]
    if seen < most:
        lines.append(
            f"before you publish, students see {seen:g} of the {most:g} points and not their total (Gradescope hides "
            "it while a test is hidden); gradescope --hidden-visibility after_due_date shows the rest after the due date"
        )
    if results.get("output"):
        lines.append("output (shown to students, as plain text):")
        lines += [f"  {line}" for line in results["output"].splitlines()]
    return lines


def cpu_seconds() -> float:
    "The CPU seconds of this process's finished children (run_autograder and every process it waited for)."
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timing(seconds: float, cpu: float) -> str:
    "How long the run took here, and what that CPU time makes at Gradescope's default share of a CPU."
    there = cpu / GRADESCOPE_CPU
    line = (  # (processes the grader did not wait for are not counted: a lower bound)
        f"run_autograder took {seconds:.0f} s here and at least {cpu:.0f} CPU seconds: {there:.0f} s or more at "
        f"Gradescope's default {GRADESCOPE_CPU:g} CPU, of its default {GRADESCOPE_TIMEOUT} s timeout"
    )
    if there > GRADESCOPE_SETUP:  # more than the zip keeps for the set-up and the reference check of a solved notebook
        line += (
            "; a submission that uses its whole notebook limit takes that much more: raise the assignment's "
            "autograder timeout (its Settings), or give `gradescope` a smaller --notebook-timeout"
        )
    return line
