"""Gradescope: `python -m grading gradescope --out autograder.zip` makes the autograder that Gradescope runs.

Gradescope builds a container from the zip once (running `setup.sh` as root), then, for each submission, puts the
student's files flat in /autograder/submission and runs `/autograder/run_autograder`, which must write
/autograder/results/results.json (https://gradescope-autograders.readthedocs.io/en/latest/specs/). The zip holds:

- setup.sh: installs bubblewrap and a venv at /autograder/venv with the course installed editable from the copy in
  the zip, creates the unprivileged user `student`, and makes /autograder/source readable by root only;
- run_autograder: `python -m grading.lms.gradescope run ROOT` from that copy (ROOT is /autograder, or $GRADESCOPE_ROOT;
  the Python is /autograder/venv/bin/python, or $TINYTORCH_GRADER_PYTHON);
- course/: the repository's course (notebooks, the grader, the reference package), gradescope.json (the
  assignments and policies), course-secret (the hidden tests' variants, as `autograde --secret-file`), and with
  `--held-out-digits FILE` held-out-digits.npz (the instructor's own digits the capstone is measured on, as
  `autograde --held-out-digits`: the zip is private to the instructor's Gradescope account, and the file stays in
  /autograder/source, root's alone, never in the student's sandbox).

`run` grades the submission with `autograde` itself, in a folder under /autograder/source: the same sandbox, the
same reference check and verdict as on the instructor's machine. Where bubblewrap cannot run in Gradescope's
container, the students' code runs as the user `student` (grading.sandbox.sandbox), never as root; where neither can be had,
nothing is graded and results.json says why. Every failure of a submission or of the grader ends in a results.json
with score 0 and the reason in `output`: run never crashes without writing one.
"""

import contextlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from ..common.errors import GradingError, did_you_mean
from ..common.notebooks import REPO, package_lock

COURSE_FILES = ["grading", "notebooks", "tinytorch", "settings.ini", "pyproject.toml", "README.md"]
CONFIG = "gradescope.json"
SECRET = "course-secret"
STUDENT_USER = "student"

SETUP_SH = r"""#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu; apt-get update has run).
set -euo pipefail
source=/autograder/source
apt-get install -y --no-install-recommends bubblewrap python3-venv python3-pip
python=$(command -v python3.12 || command -v python3.11 || true)
if [ -z "$python" ]; then  # the course needs Python 3.11 or newer (Ubuntu 22.04's python3 is 3.10)
    apt-get install -y --no-install-recommends python3.11 python3.11-venv
    python=python3.11
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
    out,
    assignments=None,
    secret_file=None,
    late_penalty="none",
    visibility="after_published",
    log=print,
    *,
    held_out_digits=None,
):
    """Write the autograder zip to `out` for `assignments` (default: every graded notebook); return its path.
    `secret_file`: the course secret (default: a new one); `late_penalty`: as autograde's, with Gradescope's due
    date; `visibility`: Gradescope's visibility of the hidden tests; `held_out_digits`: the instructor's own digits
    for the capstone (grading.grade.heldout), checked here and put into the zip. Raises GradingError, writing nothing,
    on a bad option or file."""
    from ..grade import heldout
    from ..grade.autograde import graded_assignments
    from ..reports.late import parse_penalty
    from .lms import VISIBILITIES

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
    config = {"assignments": chosen, "late_penalty": late_penalty, "hidden_visibility": visibility}
    out = Path(out)
    if out.is_dir():
        raise GradingError(f"--out {out}: is a folder; name the zip to write, such as {out / 'autograder.zip'}.")
    secret = course_secret(secret_file, log)  # a missing --secret-file is refused before anything is written
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")  # an existing zip is replaced only by a whole one
    try:
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            add_text(archive, "setup.sh", SETUP_SH, executable=True)
            add_text(archive, "run_autograder", RUN_AUTOGRADER, executable=True)
            add_text(archive, CONFIG, json.dumps(config, indent=1) + "\n")
            add_text(archive, SECRET, secret)
            if held_out is not None:
                add_bytes(archive, heldout.FILE_NAME, held_out.data)
            with package_lock(REPO, shared=True):  # not while an export rewrites tinytorch/
                for path in course_files():
                    archive.write(REPO / path, f"course/{path}")
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)
    if held_out is not None:
        log(f"the zip holds your held-out digits ({held_out.source}): keep it private, as the file itself")
    return out


def add_text(archive, name, text, executable=False):
    add_bytes(archive, name, text.encode(), 0o755 if executable else 0o644)


def add_bytes(archive, name, data, mode=0o600):
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
    info.external_attr = mode << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def course_secret(secret_file, log):
    "The course secret's text: --secret-file's (the variants then match the instructor's own runs), else a new one."
    from ..grade.variant import read_secret

    if secret_file:
        return read_secret(secret_file).decode() + "\n"
    log("no --secret-file: the zip holds a new course secret, so hidden tests' inputs differ from your local runs")
    return os.urandom(32).hex() + "\n"


def course_files():
    "The course's files, relative to REPO: in a git checkout, those git tracks or would (not what it ignores)."
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", *COURSE_FILES],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    if listed.returncode == 0 and listed.stdout.strip():
        return [p for p in listed.stdout.splitlines() if (REPO / p).is_file()]
    files = []
    for top in COURSE_FILES:
        path = REPO / top
        found = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        files += [str(p.relative_to(REPO)) for p in found if "__pycache__" not in p.parts]
    return files


# -- Grading one submission, inside Gradescope's container ------------------------------------------------------------


def run(root):
    """run_autograder's work: grade ROOT/submission, write ROOT/results/results.json; 0. A submission that cannot be
    graded as it is (no notebook, another assignment's) scores 0 with the reason. Where the grader cannot grade it for
    a reason of its own (no sandbox, no student user, its own error), no score is written: Gradescope then shows the
    submission as failed to the instructor, who can regrade it once that is fixed, and the student is not told 0;
    the reason goes to the autograder's output and the exit status is 1. Never raises."""
    root = Path(root)
    try:
        results = grade(root)
    except Rejected as why:
        results = {"score": 0.0, "output": str(why), "tests": []}
    except GradingError as error:  # the grading environment cannot grade safely, or the grader could not grade
        return not_graded(root, f"{error}")
    except Exception as error:  # the grader's own failure
        return not_graded(root, f"the autograder failed ({type(error).__name__}: {error})")
    write_results(root, results)
    print(json.dumps({k: v for k, v in results.items() if k != "tests"}, indent=1))
    return 0


def not_graded(root, why):
    "The grader's own fault: no results.json (Gradescope marks the run failed, nobody's score is 0); say why; 1."
    (root / "results" / "results.json").unlink(missing_ok=True)
    message = f"Not graded: {why}. This is not a fault of the submission: fix the autograder, then regrade."
    print(message)
    print(message, file=sys.stderr)
    return 1


def write_results(root, results):
    folder = root / "results"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "results.json"
    path.unlink(missing_ok=True)  # a file put there earlier is replaced, never written through
    path.write_text(json.dumps(results, indent=1) + "\n")


def grade(root):
    "The results.json of ROOT/submission, graded by autograde in a folder readable by root only."
    from ..grade.autograde import autograde
    from ..grade.heldout import FILE_NAME

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
        rows = autograde(
            submissions,
            work / "out",
            workers=1,
            log=print,
            secret_file=source / SECRET,
            feedback="none",
            late=policy,
            student_user=user,
            held_out_digits=source / FILE_NAME if (source / FILE_NAME).exists() else None,
        )
    except GradingError as error:
        raise GradingError(f"nothing was graded: {error}") from None
    row = next(r for r in rows if r.student == person.student)
    if row.problem and not row.graded:
        raise GradingError(row.note)
    return results_of(work / "out", person, assignment, row, config)


def lock_down(source):
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


def find_notebook(folder, assignments):
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
    from .collect import normal  # a browser's second download, "04_elementwise (1).ipynb", is the same notebook

    named = {a.lower(): a for a in assignments}.get(normal(notebook.name))
    if named is None or notebook.is_symlink():
        raise Rejected(f"Not graded: {notebook.name} is not a notebook of this assignment; upload one of: {names}.")
    return named, notebook


def assignment_titled(metadata, assignments):
    "The one assignment of the zip that the Gradescope assignment's title names (04_elementwise: …), else None."
    title = str((metadata.get("assignment") or {}).get("title") or "").lower()
    named = [a for a in assignments if a.lower() in title]
    return named[0] if len(named) == 1 else None


def read_metadata(root):
    "Gradescope's submission_metadata.json ({} where there is none, as in a local test)."
    try:
        data = json.loads((root / "submission_metadata.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def submitter(metadata):
    "The student as collect names a Gradescope submitter (student id, else email): the variant then matches."
    from .downloads import slug
    from .lms_input import Person

    users = metadata.get("users") or [{}]
    who = users[0] if isinstance(users[0], dict) else {}
    name, sid, email = (str(who.get(key) or "").strip() for key in ("name", "sid", "email"))
    student = slug(sid, lower=False) or slug(email) or slug(str(who.get("id") or "")) or "student"
    return Person(student=student, name=name, email=email, sis_id=sid, lms_id=str(who.get("id") or ""))


def due_date(metadata):
    """The submission's due date: a submitter's own, which holds an extension Gradescope gave them (the latest of a
    group's), else the assignment's."""
    from datetime import datetime

    own = {}
    for user in metadata.get("users") or []:
        date = ((user.get("assignment") or {}) if isinstance(user, dict) else {}).get("due_date")
        with contextlib.suppress(TypeError, ValueError):
            own[datetime.fromisoformat(date).timestamp()] = date
    return own[max(own)] if own else (metadata.get("assignment") or {}).get("due_date")


def late_policy(config, metadata, assignment, copy):
    """The late policy (grading.reports.late) of gradescope.json's penalty, Gradescope's due date and the submission's time
    (metadata written by Gradescope, not by the student: given to autograde as a trusted timestamp.txt)."""
    from ..reports.late import Policy, make_policy

    due = due_date(metadata)
    created = metadata.get("created_at")
    if config.get("late_penalty", "none") == "none" or not due or not created:
        return Policy()
    (copy.parent / "timestamp.txt").write_text(f"{created}\n")
    return make_policy([f"{assignment}={due}"], None, config["late_penalty"], None, trust_timestamps=True)


def results_of(out, person, assignment, row, config):
    "Gradescope's results.json for the row: lms.gradescope_results, plus the late policy and the variant."
    from .lms import gradescope_results
    from .lms_input import hidden_tests

    book = json.loads((out / "gradebook.json").read_text())
    entry = book.get(person.student, {}).get(assignment)
    hidden = hidden_tests(REPO / "notebooks").get(assignment)
    results = gradescope_results(person, assignment, entry, hidden, config.get("hidden_visibility", "after_published"))
    lines = [results["output"]] if results["output"] else []
    if row.manual_points:
        lines.append(
            f"Your written answers ({row.manual_points:g} points) are marked by hand: they are not in this score."
        )
    if row.late_by_hours:
        lines.append(
            f"Submitted {row.late_by_hours:g} hours late: {row.penalty:g} points taken "
            f"({row.score:g} autograded, {row.final_score:g} counted)."
        )
    results["output"] = "\n".join(lines)
    if entry and entry.get("variant"):
        results["extra_data"]["variant"] = entry["variant"]
    return results


def main(argv=None):
    argv = argv or sys.argv[1:]
    if len(argv) != 2 or argv[0] != "run":
        print("usage: python -m grading.lms.gradescope run ROOT (what run_autograder calls)", file=sys.stderr)
        return 2
    return run(argv[1])


if __name__ == "__main__":
    sys.exit(main())
