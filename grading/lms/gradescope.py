"""Gradescope: `python -m grading gradescope --out autograder.zip` makes the autograder that Gradescope runs.

Gradescope builds a container from the zip once (running `setup.sh` as root), then, for each submission, puts the
student's files flat in /autograder/submission and runs `/autograder/run_autograder`, which must write
/autograder/results/results.json (https://gradescope-autograders.readthedocs.io/en/latest/specs/). The zip holds:

- setup.sh: installs bubblewrap and a venv at /autograder/venv with the course installed editable from the copy in
  the zip, creates the unprivileged user `student`, and makes /autograder/source readable by root only;
- run_autograder: `python -m grading.lms.gradescope run ROOT` from that copy (ROOT is /autograder, or $GRADESCOPE_ROOT;
  the Python is /autograder/venv/bin/python, or $TINYTORCH_GRADER_PYTHON);
- course/: the repository's course (notebooks, the grader, the reference package), gradescope.json (the
  assignments, policies and limits, made to fit Gradescope's default container: grading.common.defaults), course-secret
  (the hidden tests' variants, as `autograde --secret-file`), and with `--held-out-digits FILE` held-out-digits.npz
  (the instructor's own digits the capstone is measured on, as `autograde --held-out-digits`: the zip is private to
  the instructor's Gradescope account, and the file stays in /autograder/source, root's alone, never in the student's
  sandbox).

`run` grades the submission with `autograde` itself, in a folder under /autograder/source: the same sandbox, the
same reference check and verdict as on the instructor's machine. Where bubblewrap cannot run in Gradescope's
container, the students' code runs as the user `student` (grading.sandbox.sandbox), never as root. A submission that
cannot be graded as it is (no notebook, another assignment's) gets score 0 and the reason; where the grader cannot
grade for a reason of its own (no sandbox and no student user, no or unreadable submission_metadata.json, its own
error) it writes no results.json, says why and exits 1, so Gradescope shows the run as failed, never as a 0.
`gradescope --try` (gradescope_try.py) runs the zip the same way on the instructor's machine.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..common.defaults import (
    GRADESCOPE_MAX_TIMEOUT,
    GRADESCOPE_NOTEBOOK_TIMEOUT,
    GRADESCOPE_SETUP,
    GRADESCOPE_TIMEOUT,
    MEMORY_MB,
    NOTEBOOK_TIMEOUT,
)
from ..common.errors import GradingError, did_you_mean
from ..common.layout import GRADEBOOK
from ..common.notebooks import REPO, package_lock
from .gradescope_metadata import assignment_titled, late_policy, read_metadata, submitter
from .gradescope_results import GRADESCOPE_TEXT

if TYPE_CHECKING:  # only the functions that need them import grade/ and intake/
    from ..grade.heldout import HeldOut
    from ..intake.roster import Person

COURSE_FILES = ["grading", "notebooks", "tinytorch", "settings.ini", "pyproject.toml", "README.md"]
CONFIG = "gradescope.json"
SECRET = "course-secret"
STUDENT_USER = "student"

SETUP_SH = r"""#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image from its base image (Ubuntu 22.04 by
# default, whose python3 is 3.10: the course needs 3.11 or newer, as nbgrader 0.9.6 does).
set -euo pipefail
source=/autograder/source
apt-get update
apt-get install -y --no-install-recommends bubblewrap python3-venv python3-pip
new_enough() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }
python=""
for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null && new_enough "$candidate"; then python=$(command -v "$candidate"); break; fi
done
if [ -z "$python" ]; then  # Ubuntu 22.04 has Python 3.11 in its universe component; 18.04 and 20.04 have none
    apt-get install -y --no-install-recommends python3.11 python3.11-venv || true
    if command -v python3.11 >/dev/null && new_enough python3.11; then python=$(command -v python3.11); fi
fi
if [ -z "$python" ]; then
    echo "setup.sh: the course needs Python 3.11 or newer, and this base image has none to install with apt." >&2
    echo "In the assignment's Configure Autograder, choose the base image Ubuntu 22.04 (Gradescope's default) or newer, and upload the zip again." >&2
    exit 1
fi
# the user students' code runs as where bubblewrap cannot make a sandbox in the container (grading/sandbox/sandbox.py)
id -u student >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin student
"$python" -m venv /autograder/venv
/autograder/venv/bin/pip install --upgrade pip
# editable: a plain install would copy the reference package (every solution) into site-packages, readable by all
/autograder/venv/bin/pip install -e "$source/course[dev]"
chmod -R go-rwx "$source"
"""

RUN_AUTOGRADER = r"""#!/bin/bash
# Gradescope runs this once per submission, as root; it writes $root/results/results.json.
root="${GRADESCOPE_ROOT:-/autograder}"
python="${TINYTORCH_GRADER_PYTHON:-$root/venv/bin/python}"
cd "$root/source/course" && exec "$python" -m grading.lms.gradescope run "$root"
"""


class Rejected(Exception):
    "A submission that cannot be graded as it is: score 0, and this message for the student."


# -- Making the zip --------------------------------------------------------------------------------------------------


def build(
    out: str | Path,
    assignments: list[str] | None = None,
    secret_file: str | Path | None = None,
    late_penalty: str = "none",
    visibility: str = "after_published",
    log: Callable[[str], object] = print,
    *,
    held_out_digits: str | Path | None = None,
    notebook_timeout: int = GRADESCOPE_NOTEBOOK_TIMEOUT,
    memory_mb: int = MEMORY_MB,
) -> Path:
    """Write the autograder zip to `out` for `assignments` (default: every graded notebook); return its path.
    `secret_file`: the course secret (default: a new one); `late_penalty`: as autograde's, with Gradescope's due
    date; `visibility`: Gradescope's visibility of the hidden tests; `held_out_digits`: the instructor's own digits
    for the capstone (grading.grade.heldout), checked here and put into the zip; `notebook_timeout`, `memory_mb`:
    autograde's limits in the container. Logs what to set on Gradescope (the autograder timeout, when hidden tests
    show). Raises GradingError, writing nothing, on a bad option or file."""
    from ..grade import heldout
    from ..grade.autograde import graded_assignments
    from ..reports.late import parse_penalty
    from .gradescope_results import VISIBILITIES

    known = graded_assignments()
    chosen = list(assignments or known)
    unknown = [a for a in chosen if a not in known]
    if unknown:
        raise GradingError(
            f"--assignment {', '.join(unknown)}{did_you_mean(unknown[0], known)}: not a graded notebook; choose from "
            f"{', '.join(known)}"
        )
    if visibility not in VISIBILITIES:
        raise GradingError(f"unknown visibility {visibility!r}; choose one of {', '.join(VISIBILITIES)}.")
    parse_penalty(late_penalty)  # refused here, not in every student's results
    held_out = heldout.read(held_out_digits) if held_out_digits else None  # refused here too
    check_timeout(notebook_timeout)
    config = {"assignments": chosen, "late_penalty": late_penalty, "hidden_visibility": visibility}
    config.update(notebook_timeout=notebook_timeout, memory_mb=memory_mb)
    out = Path(out)
    if out.is_dir():
        raise GradingError(f"--out {out}: is a folder; name the zip to write, such as {out / 'autograder.zip'}.")
    secret = course_secret(secret_file, log)  # a missing --secret-file is refused before anything is written
    write_zip(out, config, secret, held_out)
    if held_out is not None:
        log(f"the zip holds your held-out digits ({held_out.source}): keep it private, as the file itself")
    log(timeout_advice(notebook_timeout))
    if visibility != "visible":
        log(
            f"hidden tests are {visibility}: before then students see the visible tests' points and not their total "
            "(--hidden-visibility after_due_date shows them after the due date; `gradescope --try` shows the split)"
        )
    return out


def write_zip(out: Path, config: dict, secret: str, held_out: HeldOut | None) -> None:
    "Write the zip: the scripts, the run's settings, the course secret, the held-out digits if any, and the course."
    from ..grade.heldout import FILE_NAME

    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")  # an existing zip is replaced only by a whole one
    try:
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            add_text(archive, "setup.sh", SETUP_SH, executable=True)
            add_text(archive, "run_autograder", RUN_AUTOGRADER, executable=True)
            add_text(archive, CONFIG, json.dumps(config, indent=1) + "\n")
            add_text(archive, SECRET, secret)
            if held_out is not None:
                add_bytes(archive, FILE_NAME, held_out.data)
            with package_lock(REPO, shared=True):  # not while an export rewrites tinytorch/
                for path in course_files():
                    archive.write(REPO / path, f"course/{path}")
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)


def check_timeout(notebook_timeout: int) -> None:
    "Refuse a notebook limit that no Gradescope setting can hold with the set-up and reference check."
    if not 0 < notebook_timeout <= GRADESCOPE_MAX_TIMEOUT - GRADESCOPE_SETUP:
        raise GradingError(
            f"--notebook-timeout {notebook_timeout}: expected 1 to {GRADESCOPE_MAX_TIMEOUT - GRADESCOPE_SETUP} "
            f"seconds (Gradescope's autograder timeout is {GRADESCOPE_MAX_TIMEOUT // 60} minutes at most, and a run "
            f"also needs about {GRADESCOPE_SETUP} s for its set-up and the reference check)."
        )


def timeout_advice(notebook_timeout: int) -> str:
    "The line that says whether Gradescope's default autograder timeout holds a run of this zip, or what to set."
    needed = notebook_timeout + GRADESCOPE_SETUP
    if needed <= GRADESCOPE_TIMEOUT:
        return (
            f"a submission may take {notebook_timeout} s, plus about {GRADESCOPE_SETUP} s of set-up and reference "
            f"check: Gradescope's default autograder timeout ({GRADESCOPE_TIMEOUT // 60} minutes) holds it"
        )
    minutes = -(-needed // 60)
    return (
        f"a submission may take {notebook_timeout} s, plus about {GRADESCOPE_SETUP} s of set-up and reference check: "
        f"raise the assignment's autograder timeout (its Settings) to {minutes} minutes, or Gradescope stops such a "
        f"run at its default {GRADESCOPE_TIMEOUT // 60} minutes with no score"
    )


def add_text(archive: zipfile.ZipFile, name: str, text: str, executable: bool = False) -> None:
    add_bytes(archive, name, text.encode(), 0o755 if executable else 0o644)


def add_bytes(archive: zipfile.ZipFile, name: str, data: bytes, mode: int = 0o600) -> None:
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
    info.external_attr = mode << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def course_secret(secret_file: str | Path | None, log: Callable[[str], object]) -> str:
    "The course secret's text: --secret-file's (the variants then match the instructor's own runs), else a new one."
    from ..grade.variant import read_secret

    if secret_file:
        return read_secret(secret_file).decode() + "\n"
    log("no --secret-file: the zip holds a new course secret, so hidden tests' inputs differ from your local runs")
    return os.urandom(32).hex() + "\n"


def course_files() -> list[str]:
    "The course's files, relative to REPO: in a git checkout, those git tracks or would (not what it ignores)."
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", *COURSE_FILES],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    if listed.returncode == 0 and listed.stdout.strip():
        return sorted({p for p in listed.stdout.splitlines() if (REPO / p).is_file()})  # a conflicted file: 3 lines
    files = []
    for top in COURSE_FILES:
        path = REPO / top
        found = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        files += [str(p.relative_to(REPO)) for p in found if "__pycache__" not in p.parts]
    return files


# -- Grading one submission, inside Gradescope's container ------------------------------------------------------------


def run(root: str | Path) -> int:
    """run_autograder's work: grade ROOT/submission, write ROOT/results/results.json; 0. A submission that cannot be
    graded as it is (no notebook, another assignment's) scores 0 with the reason. Where the grader cannot grade it for
    a reason of its own (no sandbox, no student user, its own error), no score is written: Gradescope then shows the
    submission as failed to the instructor, who can regrade it once that is fixed, and the student is not told 0;
    the reason goes to the autograder's output and the exit status is 1. Never raises."""
    root = Path(root)
    try:
        results = grade(root)
    except Rejected as why:
        results = {"score": 0.0, "output": str(why), "tests": [], **GRADESCOPE_TEXT}  # it names the uploaded file
    except GradingError as error:  # the grading environment cannot grade safely, or the grader could not grade
        return not_graded(root, f"{error}")
    except Exception as error:  # the grader's own failure
        return not_graded(root, f"the autograder failed ({type(error).__name__}: {error})")
    write_results(root, results)
    print(json.dumps({k: v for k, v in results.items() if k != "tests"}, indent=1))
    return 0


def not_graded(root: Path, why: str) -> int:
    "The grader's own fault: no results.json (Gradescope marks the run failed, nobody's score is 0); say why; 1."
    (root / "results" / "results.json").unlink(missing_ok=True)
    message = f"Not graded: {why}. This is not a fault of the submission: fix the autograder, then regrade."
    print(message)
    print(message, file=sys.stderr)
    return 1


def write_results(root: Path, results: dict) -> None:
    folder = root / "results"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "results.json"
    path.unlink(missing_ok=True)  # a file put there earlier is replaced, never written through
    path.write_text(json.dumps(results, indent=1) + "\n")


def grade(root: Path) -> dict:
    "The results.json of ROOT/submission, graded by autograde in a folder readable by root only."
    from ..grade.autograde import autograde
    from ..grade.heldout import FILE_NAME
    from ..grade.settings import Settings

    source = root / "source"
    config = json.loads((source / CONFIG).read_text())
    work = lock_down(source)
    assignment, notebook = find_notebook(root / "submission", config["assignments"])
    metadata = read_metadata(root)
    titled = assignment_titled(metadata, config["assignments"])
    if titled not in (None, assignment):  # a zip of several assignments: last week's notebook handed in again
        raise Rejected(
            f"Not graded: {notebook.name} is the notebook of {assignment}, and this Gradescope assignment is "
            f"{titled}: upload {titled}.ipynb."
        )
    person = submitter(metadata)
    submissions = work / "submissions"
    shutil.rmtree(submissions, ignore_errors=True)
    copy = submissions / person.student / assignment / f"{assignment}.ipynb"
    copy.parent.mkdir(parents=True)
    shutil.copyfile(notebook, copy)
    policy = late_policy(config, metadata, assignment, copy)
    user = os.environ.get("TINYTORCH_STUDENT_USER", STUDENT_USER)
    try:
        settings = Settings(
            workers=1,
            secret_file=source / SECRET,
            feedback="none",
            late=policy,
            student_user=user,
            notebook_timeout=config.get("notebook_timeout", NOTEBOOK_TIMEOUT),  # (a zip made before they were set)
            memory_mb=config.get("memory_mb", MEMORY_MB),
            held_out_digits=source / FILE_NAME if (source / FILE_NAME).exists() else None,
        )
        rows = autograde(submissions, work / "out", settings=settings, log=print)
    except GradingError as error:
        raise GradingError(f"nothing was graded: {error}") from None
    row = next(r for r in rows if r.student == person.student)
    if row.problem and not row.graded:
        raise GradingError(row.note)
    return results_of(work / "out", person, assignment, config)


def lock_down(source: Path) -> Path:
    """Root's alone, whatever setup.sh did: ROOT/source (the course, whose notebooks and reference package are the
    answer key, the secret and the grading folder under it) is mode 0700, so no other user reaches anything in it;
    and Gradescope's submission_metadata.json, which holds the earlier submissions' results, hidden tests included
    (red team round 6: the student user read it and raised it as a visible test's message), is root's alone too."""
    source.chmod(0o700)
    metadata = source.parent / "submission_metadata.json"
    if metadata.is_file() and not metadata.is_symlink():
        metadata.chmod(0o600)
    work = source / "work"
    work.mkdir(mode=0o700, exist_ok=True)
    return work


def find_notebook(folder: Path, assignments: list[str]) -> tuple[str, Path]:
    "(assignment, path) of the one notebook in the submission, named after an assignment; Rejected otherwise."
    names = ", ".join(f"{a}.ipynb" for a in assignments)
    found = sorted(
        p for p in Path(folder).rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts and not p.is_dir()
    )  # (a folder named like a notebook once ended as the grader's fault: red team round 6)
    if not found:
        raise Rejected(f"Not graded: your submission holds no notebook (.ipynb). Upload one of: {names}.")
    if len(found) > 1:
        shown = ", ".join(str(p.relative_to(folder)) for p in found[:10])
        raise Rejected(
            f"Not graded: your submission holds {len(found)} notebooks ({shown}); upload only one of: {names}."
        )
    notebook = found[0]
    from ..intake.collect import normal  # a browser's second download, "04_elementwise (1).ipynb", is the same notebook

    named = {a.lower(): a for a in assignments}.get(normal(notebook.name))
    if named is None or notebook.is_symlink():
        raise Rejected(f"Not graded: {notebook.name} is not a notebook of this assignment; upload one of: {names}.")
    return named, notebook


def results_of(out: Path, person: Person, assignment: str, config: dict) -> dict:
    "Gradescope's results.json for the row: lms.gradescope_results (the late penalty included), and the variant."
    from .gradescope_results import gradescope_results
    from .lms_input import hidden_tests

    book = json.loads((out / GRADEBOOK).read_text())
    entry = book.get(person.student, {}).get(assignment)
    hidden = hidden_tests(REPO / "notebooks").get(assignment)
    results = gradescope_results(person, assignment, entry, hidden, config.get("hidden_visibility", "after_published"))
    if entry and entry.get("variant"):
        results["extra_data"]["variant"] = entry["variant"]
    return results


def main(argv: list[str] | None = None) -> int:
    argv = argv or sys.argv[1:]
    if len(argv) != 2 or argv[0] != "run":
        print("usage: python -m grading.lms.gradescope run ROOT (what run_autograder calls)", file=sys.stderr)
        return 2
    return run(argv[1])


if __name__ == "__main__":
    sys.exit(main())
