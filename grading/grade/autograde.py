"""Grade a folder of submissions (SUBMISSIONS/<student>/<assignment>/<assignment>.ipynb).

Each submission is one job (grading.grade.job) in a process of its own; `workers` of them run at once. Every finished job
leaves OUT/results/<student>/<assignment>.json, written atomically, and the gradebook (OUT/gradebook.json) and the
grade table (OUT/grades.csv) are rewritten atomically after each job. A run that is killed and started again skips
every submission whose result is still valid: same submission, same instructor notebook. When only some test cells
of a notebook changed (a hidden test was fixed), only those tests' scores are replaced.
"""

import compileall
import contextlib
import functools
import io
import json
import os
import py_compile
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..authoring.convention import manual_answers
from ..authoring.course import made_course
from ..authoring.release import check_sources, kit_settings
from ..common import csvsafe
from ..common.answers import solved
from ..common.defaults import CELL_TIMEOUT, MEMORY_MB, NOTEBOOK_TIMEOUT
from ..common.errors import GradingError
from ..common.layout import UNFINISHED, late_policy_file, state_folder
from ..common.notebooks import (
    REPO,
    course_notebooks,
    file_fingerprint,
    identifying_ids,
    nbgrader_meta,
    read_notebook,
    write_atomic,
    write_notebook,
)
from ..reports import marking
from ..reports.feedback import POLICIES
from ..reports.feedback import publish as publish_feedback
from ..reports.late import (
    Late,
    Policy,
    assess,
    check_names,
    describe_policy,
    penalised,
    policy_of_record,
    policy_record,
)
from ..reports.page import plain_notebook
from ..sandbox import sandbox
from ..student.export import copy_package_skeleton, export_package
from . import heldout
from .cluster import ClusterRunner, check_address
from .runner import Runner, load_result
from .settings import Settings
from .spec import Spec, digest, manual_note, test_cells
from .submissions import check_folder
from .submissions import find_submissions as read_folder
from .timespent import write_time_spent
from .variant import read_secret, variant_id

COLUMNS = ["student", "assignment", "notebook", "score", "max_score", "note", "manual_points", "manual_score"]
LATE_COLUMNS = ["submitted_at", "late_by_hours", "penalty", "final_score"]  # score stays the autograded score
SECRET_FILE = ".grading-secret"  # in OUT, outside OUT/.grading (which is remade when the notebooks change)
GRADER_VERSION = "6"  # part of every result's fingerprint: bump it when grading itself changes


@dataclass
class Row:
    student: str
    assignment: str
    notebook: str
    score: float = 0.0
    max_score: float = 0.0
    note: str = ""
    problem: bool = False  # not graded (a bad file, a grader failure): an error on the console, exit code 1
    manual_points: float = 0.0  # written answers' points, marked by hand (OUT/marking): not in score or max_score
    marks: marking.Marks = None  # the marks given to them so far (grading.reports.marking.read_marks)
    submitted_at: str = ""  # the late policy's columns (grading.reports.late)
    late_by_hours: float | None = None
    penalty_fraction: float = 0.0  # the fraction of the total taken for lateness (grading.reports.late)
    graded: bool = True  # False: the grader failed for a reason of its own; no score is written, the next run retries

    @property
    def total(self):
        "The autograded score and the marks given so far: what a late penalty takes its fraction of."
        return self.score + (self.marks.score if self.marks else 0.0)

    @property
    def penalty(self):
        "Points taken for lateness."
        return penalised(self.total, self.penalty_fraction)[0]

    @property
    def final_score(self):
        return penalised(self.total, self.penalty_fraction)[1]

    def late_values(self):
        late = "" if self.late_by_hours is None else f"{self.late_by_hours:g}"
        final = f"{round(self.final_score, 4):g}" if self.graded else ""
        return [self.submitted_at, late, f"{round(self.penalty, 4):g}", final]

    def values(self):
        return [
            self.student,
            self.assignment,
            self.notebook,
            f"{self.score:g}" if self.graded else "",
            f"{self.max_score:g}",
            self.note,
            f"{self.manual_points:g}",
            self.manual_score_cell(),
        ]

    def manual_score_cell(self):
        "The marks of the written answers; blank while one is unmarked (or nothing was graded)."
        if not self.graded or (self.marks and self.marks.unmarked):
            return ""
        return f"{self.marks.score if self.marks else 0.0:g}"


# -- What to grade ---------------------------------------------------------------------------------------------------


def find_submissions(submissions, known):
    "[(student, assignment, path)] to grade, and [Row] for every entry that cannot be graded (grading.grade.submissions)."
    found, problems = read_folder(submissions, known)
    rows = [Row(p.student, p.assignment, p.notebook, note=p.note, problem=True) for p in problems]
    return found, rows


def graded_assignments(notebooks_dir=None):
    "The notebooks that are assignments (with tests or written answers); 02b_diagnosis and 15_viz, given code only, are not."
    notebooks = course_notebooks(notebooks_dir)
    return [
        stem
        for stem, path in notebooks.items()
        if any(nbgrader_meta(c).get("grade") for c in read_notebook(path).cells)
    ]


def module_of(notebook):
    "The module a notebook exports to (from its `#| default_exp` line), e.g. 'tinytorch.core.elementwise'."
    for cell in notebook.cells:
        for line in cell.source.splitlines():
            if line.startswith("#| default_exp"):
                return "tinytorch." + line.split()[-1]
    return None


# -- Fingerprints: what a result depends on --------------------------------------------------------------------------


def setup_fingerprint(notebook):
    "Everything in the instructor's notebook but its test cells: when it changes, every test is graded again."
    return digest(GRADER_VERSION + "".join(c.source for c in notebook.cells if not nbgrader_meta(c).get("grade")))


def plan(previous, fingerprint, tests):
    "'skip', 'tests' (only some tests changed) or 'all', given the previous result (or None)."
    if previous is None or previous.get("fingerprint") != fingerprint or previous.get("problem"):
        return "all"  # new, changed, or not graded last time (a fault of the grader's)
    old = {t: r["fingerprint"] for t, r in previous["tests"].items()}
    return "skip" if old == {t: f for t, (_, f) in tests.items()} else "tests"


def merge(previous, new, tests):
    "Keep the previous score of every test whose cell did not change; take the new one for the others."
    regraded = []
    for test_id, (_, fingerprint) in tests.items():
        old = previous["tests"].get(test_id)
        if old is not None and old["fingerprint"] == fingerprint:
            new["tests"][test_id] = old
        else:
            regraded.append(test_id)
    new["score"] = sum(r["score"] for r in new["tests"].values())
    new["regraded"] = regraded
    return new


# -- Preparing the grading folder ------------------------------------------------------------------------------------


def prepare(notebooks, state):
    """The master nbgrader course (gradebook made by generate_assignment, and the release: the student version), the
    reference package and the released one, made once and reused while the instructor's notebooks are unchanged."""
    stamp = digest(GRADER_VERSION + "".join(file_fingerprint(p) for p in notebooks.values()))
    if (state / "prepared").exists() and (state / "prepared").read_text() == stamp:
        return
    if state.exists():
        shutil.rmtree(state)
    made_course(notebooks, state / "master")
    export_notebooks(notebooks, state / "reference")
    # What a student's code may see of the other notebooks: the released modules (every answer a stub); a job puts
    # the reference modules of the notebooks before its own on top (grading.grade.job.build_package).
    released = {stem: state / "master" / "release" / stem / f"{stem}.ipynb" for stem in notebooks}
    export_notebooks(released, state / "released")
    for folder in ("reference", "released"):
        # Byte-compiled once here, not in every sandbox: a job copies these beside the sources, and a checked-hash
        # .pyc is used only while its source is unchanged (the student's own module is always compiled afresh).
        compileall.compile_dir(
            state / folder / "tinytorch", quiet=1, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH
        )
    write_atomic(state / "prepared", stamp)


def export_notebooks(notebooks, folder):
    "A package exported from `notebooks` ({stem: path}) into folder/tinytorch."
    (folder / "nbs").mkdir(parents=True)
    for stem, path in notebooks.items():
        shutil.copyfile(path, folder / "nbs" / f"{stem}.ipynb")
    (folder / "settings.ini").write_text(kit_settings(REPO / "settings.ini", nbs_path="nbs"))
    copy_package_skeleton(folder)
    export_package(folder)


def make_scratch(state, student_user=None):
    """Where this run's jobs make their folders (each job's own is mode 0700): a new one per run, inside the grading
    folder, so that what a killed run left is removed by the next run (runs into one folder take turns). With a
    student user (grading.sandbox.sandbox), under /tmp instead, mode 0711: the user may pass through to its own job's folder
    (grading.grade.job.open_to_student_user), whose random name it cannot list, and never into the grading folder."""
    for stale in [*state.glob("scratch-*"), *state.glob("jobs-*")]:
        shutil.rmtree(stale, ignore_errors=True)
    if student_user:
        scratch = Path(tempfile.mkdtemp(prefix="tinytorch-scratch-"))
        scratch.chmod(0o711)
        return scratch
    return Path(tempfile.mkdtemp(prefix="scratch-", dir=state))


# -- Running the jobs ------------------------------------------------------------------------------------------------


def failed_result(spec, tests, note):
    "The result of a submission the grader could not grade (grading.grade.runner.not_graded): no score, retried next run."
    return {
        "student": spec.student,
        "assignment": spec.assignment,
        "score": 0.0,
        "problem": True,
        "graded": False,
        "max_score": sum(p for p, _ in tests.values()),
        "note": note,
        "fingerprint": spec.fingerprint,
        "tests": {t: {"score": 0.0, "max_score": p, "fingerprint": f, "message": note} for t, (p, f) in tests.items()},
    }


# -- The gradebook and the table -------------------------------------------------------------------------------------


def result_path(out, student, assignment):
    return Path(out) / "results" / student / f"{assignment}.json"


def page_path(out, student, assignment):
    "The notebook the page shows (JSON), kept so that the feedback page can be written again under another policy."
    return Path(out) / "results" / student / f"{assignment}.notebook.ipynb"


def kept_notebook(path):
    "The notebook a job kept at `path` (page_path), as grading.reports.page.plain_notebook reads it; None if there is none."
    try:
        return plain_notebook(json.loads(Path(path).read_text()))
    except (OSError, ValueError, GradingError):
        return None


def feedback_path(out, student, assignment):
    return Path(out) / "feedback" / student / f"{assignment}.html"


def refeedback(out, result, policy):
    "A kept result whose feedback page was written under another policy: write the page again, from the kept run."
    if result.get("feedback", "full") == policy or result.get("problem"):
        return result
    student, assignment = result["student"], result["assignment"]
    notebook = kept_notebook(page_path(out, student, assignment))
    extra = manual_note(result.get("manual_points", 0))
    publish_feedback(feedback_path(out, student, assignment), notebook, assignment, result, policy, extra=extra)
    result = dict(result, feedback=policy)
    write_atomic(result_path(out, student, assignment), json.dumps(result, indent=1))
    return result


def log_policies(policies, out, found, log):
    "Say which feedback policy this run uses, and when it is not the one the previous run used."
    previous = {
        r.get("feedback", "full")
        for s, a, _ in found
        if (r := load_result(result_path(out, s, a))) is not None and not r.get("problem")
    }
    earlier = f" (the previous run: {', '.join(sorted(previous))})" if previous - {policies.feedback} else ""
    log(f"feedback for students: {policies.feedback}: {POLICIES[policies.feedback]}{earlier}")


def log_held_out(run, found, log):
    "Say which held-out digits of the instructor's this run measures with, and where they are of little use."
    held_out = run.policies.held_out
    if held_out is None:
        return
    users = sorted({a for _, a, _ in found if run.held_out_digest(a)})
    if not users:
        readers = [stem for stem, nb in run.instructor.items() if heldout.uses(nb)]
        log(f"{heldout.OPTION}: no notebook graded in this run measures with it (only {', '.join(readers)} does)")
        return
    log(
        f"held-out digits: {held_out.source} ({held_out.images} images, sha256 {held_out.digest}): "
        f"{', '.join(users)} measured on them"
    )
    shipped = heldout.shipped_among(held_out)
    if shipped:
        log(
            f"warning: {shipped} of the {held_out.images} held-out digits are among the digits the kit ships; a "
            "student may have pasted those into a notebook and trained on them"
        )


def rows_of(results, problems, answers=None, marked=None):
    """The table's rows; `answers`: {assignment: {name: points}} of its written answers, marked by hand; `marked`:
    their marks, {(student, assignment): grading.reports.marking.Marks} (grading.reports.marking.read_marks)."""
    rows = list(problems)
    for r in results:
        written = (answers or {}).get(r["assignment"]) or {}
        rows.append(
            Row(
                r["student"],
                r["assignment"],
                f"{r['assignment']}.ipynb",
                r["score"],
                r["max_score"],
                r["note"],
                problem=r.get("problem", False),
                manual_points=float(sum(written.values())),
                marks=marks_for(r, written, marked) if written else None,
                graded=r.get("graded", True),
            )
        )
    return sorted(rows, key=lambda r: (r.student, r.assignment))


def write_table(rows, path):
    "Write the grade table atomically: a reader never sees half a file."
    text = io.StringIO()
    writer = csvsafe.writer(text)  # a student's folder name may start like a formula: =HYPERLINK(...)
    writer.writerow(COLUMNS + LATE_COLUMNS)
    for row in sorted(rows, key=lambda r: (r.student, r.assignment)):
        writer.writerow(row.values() + row.late_values())
    write_atomic(path, text.getvalue())


def marks_for(result, written, marked):
    "The Marks of a result's written answers ({name: points}): from OUT/marking, else none yet."
    found = (marked or {}).get((result["student"], result["assignment"]))
    return found if found is not None else marking.none_yet(written)


def late_record(result, late, marks=None):
    """What the gradebook keeps of a result's variant, feedback policy and late policy (`late`: a grading.reports.late.Late),
    and its final score: the autograded score and the marks (`marks`: grading.reports.marking.Marks) less the late penalty."""
    record = {"variant": result.get("variant", ""), "feedback": result.get("feedback", "full")}
    if result.get("fingerprint", {}).get("held_out"):  # measured on the instructor's own digits (grading.grade.heldout)
        record["held_out_digits"] = result["fingerprint"]["held_out"]
    fraction = late.penalty if late is not None else 0.0
    penalty, final = penalised(result["score"] + (marks.score if marks else 0.0), fraction)
    if late is not None:
        record.update(
            submitted_at=late.submitted_at, late_by_hours=late.late_by_hours, penalty=penalty, penalty_fraction=fraction
        )
        if late.note:  # for a later run that keeps this row without its submission (earlier_late)
            record["late_note"] = late.note
    if result.get("graded", True):
        record["final_score"] = final
    return record


def apply_late(rows, late):
    "Fill the rows' late columns from {(student, assignment): grading.reports.late.Late}; a bad timestamp is a problem."
    for row in rows:
        found = late.get((row.student, row.assignment))
        if found is None:
            continue
        row.submitted_at, row.late_by_hours = found.submitted_at, found.late_by_hours
        row.penalty_fraction = found.penalty
        row.note = "; ".join(n for n in [row.note, found.note] if n)
        row.problem = row.problem or found.problem
    return rows


def write_gradebook(results, problems, path, answers=None, late=None, marked=None):
    "OUT/gradebook.json; `answers` and `marked` as for rows_of, `late`: {(student, assignment): grading.reports.late.Late}."
    book = {}
    for r in results:
        written = (answers or {}).get(r["assignment"]) or {}
        marks = marks_for(r, written, marked) if written else None
        entry = book.setdefault(r["student"], {})[r["assignment"]] = {
            "score": r["score"],
            "max_score": r["max_score"],
            "note": r["note"],
            **({} if r.get("graded", True) else {"graded": False}),
            "tests": {
                t: {"score": v["score"], "max_score": v["max_score"], "message": v["message"]}
                for t, v in r["tests"].items()
            },
        }
        if marks is not None:  # marked by hand in OUT/marking, not in the score
            entry.update(
                manual_points=float(sum(written.values())),
                manual_score=marks.manual_score,
                manual_unmarked=marks.unmarked,
            )
        entry.update(late_record(r, (late or {}).get((r["student"], r["assignment"])), marks))
    for p in problems:
        book.setdefault(p.student, {})[p.assignment or p.notebook] = {"score": 0, "max_score": 0, "note": p.note}
    write_atomic(path, json.dumps(book, indent=1, sort_keys=True))


def student_percentages(rows):
    """{student: final score as a % of the points available}, over the rows that have a score: a missing or
    unreadable submission (a problem row) and one the grader could not grade are left out, not counted as 0 %.
    Written answers count once they are in the marking course (their marks are in the final score)."""
    totals = {}
    for r in rows:
        if r.problem or not r.graded:
            continue
        score, most = totals.get(r.student, (0.0, 0.0))
        available = r.max_score + (r.manual_points if r.marks else 0.0)
        totals[r.student] = (score + r.final_score, most + available)
    return {student: 100 * s / m if m else 0.0 for student, (s, m) in totals.items()}


def plot_distribution(rows, path):
    "A histogram of each student's final score, as a percentage of the points available; PNG, written atomically."
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    percent = list(student_percentages(rows).values())
    figure, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist(percent, bins=list(range(0, 101, 10)), color="#4a7bd0", edgecolor="white")
    ax.set_xlabel("total score (% of the points available)")
    ax.set_ylabel("students")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # whole students, never 0.5
    ax.set_title(f"Grade distribution ({len(percent)} students)")
    figure.tight_layout()
    tmp = Path(path).with_name(f".{Path(path).name}.tmp.png")
    figure.savefig(tmp, dpi=100)
    plt.close(figure)
    os.replace(tmp, path)


# -- The command -----------------------------------------------------------------------------------------------------


def autograde(
    submissions: Path | str,
    out: Path | str,
    *,
    settings: Settings = Settings(),  # noqa: B008  (frozen: one shared default is safe)
    progress: Callable | None = None,
    log: Callable[[str], None] | None = None,
) -> list["Row"]:
    """Grade every submission as `settings` says (grading.grade.settings); write OUT/grades.csv, OUT/gradebook.json,
    OUT/distribution.png and OUT/feedback/; return the table's rows. `progress` wraps the jobs' iterable (a tqdm);
    `log` takes the run's lines (a warning starts with "warning: ")."""
    s, workers = settings, settings.workers
    log = log or (lambda message: None)
    if s.feedback not in POLICIES:
        raise GradingError(f"--feedback {s.feedback!r}: expected one of {', '.join(POLICIES)}.")
    # What the user typed is checked first (a typo is answered at once); the sandbox's check takes seconds.
    notebooks = course_notebooks(Path(s.notebooks_dir or REPO / "notebooks"))
    check_folder(Path(submissions), notebooks)
    instructor = {stem: read_notebook(p) for stem, p in notebooks.items()}
    # A notebook without tests or answers (02b_diagnosis, 15_viz: given code only) is a chapter to read, not an assignment.
    given = {stem for stem, nb in instructor.items() if not any(nbgrader_meta(c).get("grade") for c in nb.cells)}
    out = Path(out).resolve()
    late = s.late if s.late is not None else remembered_policy(out, log)
    if late is not None:
        check_names(late, set(instructor) - given)
    held_out = heldout.read(s.held_out_digits) if s.held_out_digits else None  # a bad file: GradingError, nothing done
    isolation = isolation_for(s.unsafe_no_sandbox, s.student_user, s.cluster)
    if isolation == "user":
        log(f"bubblewrap cannot run here ({sandbox.problem()}): students' code runs as user {s.student_user}")
        workers = 1  # kill(-1) as that user ends every sandbox's leftovers: one sandbox at a time
    check_sources(notebooks)
    known = {stem: identifying_ids(nb) for stem, nb in instructor.items()}
    found, problems = find_submissions(submissions, known)
    found = [item for item in found if item[1] not in given]
    out.mkdir(parents=True, exist_ok=True)
    with run_lock(out, log):
        if s.late is not None:
            remember_policy(out, s.late)
        policies = Policies(variant_secret(out, s.secret_file, log), s.feedback, late or Policy(), s.now, held_out)
        run = Run(
            out,
            state_folder(out),
            notebooks,
            instructor,
            isolation == "bwrap",
            policies,
            cell_timeout=s.cell_timeout or CELL_TIMEOUT,
            notebook_timeout=s.notebook_timeout,
            memory_mb=s.memory_mb,
            student_user=s.student_user if isolation == "user" else "",
            cluster=s.cluster or "",
        )
        return _autograde(run, found, problems, workers, progress, log)


def isolation_for(unsafe_no_sandbox, student_user, cluster):
    "How students' code runs (grading.sandbox.sandbox.isolation); on a cluster, bubblewrap is checked on the workers."
    if not cluster:
        return sandbox.isolation(unsafe_no_sandbox, student_user)
    check_address(cluster)  # before OUT is written
    if student_user:
        raise GradingError("--student-user grades one submission at a time on this machine: not with --cluster")
    return "none" if unsafe_no_sandbox else "bwrap"


@dataclass
class Policies:
    "The instructor's choices of one run besides its limits."

    secret: bytes  # the course secret (grading.grade.variant): it stays in this process
    feedback: str = "full"  # what the students' pages show (grading.reports.feedback)
    late: Policy = None  # due dates and the penalty (grading.reports.late)
    now: object = None  # the late policy's clock: a datetime, or None for the real one
    held_out: heldout.HeldOut = None  # the instructor's own held-out digits (grading.grade.heldout), or None


def variant_secret(out, secret_file, log):
    "The course secret: --secret-file, or OUT/.grading-secret (made, mode 0600, the first time)."
    path = Path(secret_file) if secret_file else out / SECRET_FILE
    if not path.exists():
        log(f"made a new course secret for the hidden tests' variants: {path} (keep it to regrade alike)")
    return read_secret(path, create=True)


@contextlib.contextmanager
def run_lock(out, log):
    "One autograde run at a time per output folder: a second run waits for the first, then finds its results."
    import fcntl

    with open(out / ".grading.lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"another autograde run is writing {out}: waiting for it to finish")
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@dataclass
class Run:
    "One autograde run: where it writes, what it grades with, and its limits."

    out: Path
    state: Path  # OUT/.grading: the master course, the reference and released packages, the reference check
    notebooks: dict  # {stem: the instructor's notebook path}
    instructor: dict  # {stem: the instructor's notebook}
    sandboxed: bool
    policies: Policies
    cell_timeout: int = CELL_TIMEOUT
    notebook_timeout: int = NOTEBOOK_TIMEOUT
    memory_mb: int = MEMORY_MB
    student_user: str = ""  # where bwrap cannot run, the user students' code runs as (grading.sandbox.sandbox)
    cluster: str = ""  # a Dask scheduler's address, or local:N: grade there (grading.grade.cluster); "" grades here
    scratch: Path = None  # where this run's jobs make their folders
    jobs: Path = None  # this run's job specs, logs and results
    held_out_file: str = ""  # the copy of policies.held_out the jobs read (in `jobs`), or ""

    @functools.cached_property
    def modules(self):
        "{stem: the module its notebook exports}, read once per run."
        return {stem: module_of(nb) for stem, nb in self.instructor.items()}

    def held_out_digest(self, assignment):
        "The hash of the instructor's held-out digits where `assignment`'s hidden tests measure with them, else ''."
        held_out = self.policies.held_out
        return held_out.digest if held_out and heldout.uses(self.instructor[assignment]) else ""

    def spec(self, student, assignment, path, fingerprint, result, feedback, page):
        "The job of grading one notebook (grading.grade.job.Spec)."
        modules, order = self.modules, list(self.notebooks)
        return Spec(
            student=student,
            assignment=assignment,
            submitted=str(Path(path).resolve()),
            instructor=str(self.notebooks[assignment].resolve()),
            released=str(self.state / "master" / "release" / assignment / f"{assignment}.ipynb"),
            master=str(self.state / "master"),
            reference=str(self.state / "reference"),
            module_file=modules[assignment].replace(".", "/") + ".py",
            module=modules[assignment],
            earlier_modules=[modules[s] for s in order[: order.index(assignment)] if modules[s]],
            scratch=str(self.scratch),
            result=str(result),
            feedback=str(feedback),
            cell_timeout=self.cell_timeout,
            notebook_timeout=self.notebook_timeout,
            sandboxed=self.sandboxed,
            student_user=self.student_user,
            memory_mb=self.memory_mb,
            fingerprint=fingerprint,
            variant=variant_id(self.policies.secret, student, assignment),
            held_out_digits=self.held_out_file if self.held_out_digest(assignment) else "",
            feedback_policy=self.policies.feedback,
            page=str(page),
            page_cache=str(self.state / "page-cache"),
        )


def _autograde(run, found, problems, workers, progress, log):
    "Grade what `found` lists into run.out (the stages: plan, check the reference, grade, publish, marking)."
    out, state, instructor = run.out, run.state, run.instructor
    if found:
        prepare(run.notebooks, state)
    tests = {stem: test_cells(nb) for stem, nb in instructor.items()}
    late = {(s, a): assess(run.policies.late, a, path, run.policies.now) for s, a, path in found}
    log_policies(run.policies, out, found, log)
    log_held_out(run, found, log)
    done, todo = plan_run(run, found, tests)
    if done:
        log(f"{len(done)} submissions already graded (unchanged since): kept")
    earlier = earlier_results(out, found, problems, log)
    late.update(earlier_late(out, earlier))
    done.update({key: refeedback(out, result, run.policies.feedback) for key, result in earlier.items()})
    results_lock = threading.Lock()
    answers = {stem: manual_answers(nb) for stem, nb in instructor.items()}
    marked = marking.read_marks(out, log)  # the marks made in formgrader since the last run

    published = [0.0]

    def publish(every=0.0):
        "Write the table and the gradebook from every result so far; not again within `every` seconds."
        with results_lock:
            if time.monotonic() - published[0] < every:
                return None
            published[0] = time.monotonic()
            results = [done[k] for k in sorted(done)]
            rows = apply_late(rows_of(results, problems, answers, marked), late)
            write_gradebook(results, problems, out / "gradebook.json", answers, late, marked)
            write_table(rows, out / "grades.csv")
        return rows

    if todo:
        runner = make_runner(run, workers, log)
        run.scratch = make_scratch(state, run.student_user)
        run.jobs = Path(tempfile.mkdtemp(prefix="jobs-", dir=state))  # this run's own: two runs never share one
        if run.policies.held_out:  # read by the jobs here; a cluster's task carries its bytes (grading.grade.cluster)
            run.held_out_file = heldout.write_copy(run.policies.held_out, run.jobs)
        try:
            assignments = sorted({a for _, a, _, _, _ in todo})
            check_reference(run, runner, assignments, log)
            publish()  # only now: a run the reference check stops leaves the previous table and gradebook as they were
            mark_unfinished(state, todo, done)  # export-grades refuses the table until a run grades the rest

            def grade(item):
                student, assignment, path, fingerprint, previous = item
                spec = run.spec(
                    student,
                    assignment,
                    path,
                    fingerprint,
                    run.jobs / f"{student}__{assignment}.json",
                    feedback_path(out, student, assignment),
                    page_path(out, student, assignment),
                )
                result, failure = runner.run(spec, run.jobs / f"{student}__{assignment}.spec.json")
                if failure is not None:
                    result = failed_result(spec, tests[assignment], failure)
                elif previous is not None:
                    result = merge(previous, result, tests[assignment])
                    log(
                        f"{student}/{assignment}: re-graded {', '.join(result['regraded']) or 'nothing'}; "
                        "other tests kept their scores"
                    )
                write_atomic(result_path(out, student, assignment), json.dumps(result, indent=1))
                with results_lock:
                    done[(student, assignment)] = result
                publish(every=PUBLISH_EVERY)  # rewriting the whole gradebook after every job would grow as n²

            runner.map(grade, todo, progress)
        except KeyboardInterrupt:
            publish()
            left = mark_unfinished(state, todo, done)
            log(
                f"stopped: every job and its sandbox ended; {len(done)} graded and kept, {left} left: run again to resume"
            )
            raise
        finally:
            runner.close()
            shutil.rmtree(run.scratch, ignore_errors=True)
            shutil.rmtree(run.jobs, ignore_errors=True)
    (state / UNFINISHED).unlink(missing_ok=True)  # every submission found is graded (or failed, and says so)
    rows = publish()
    if rows:
        plot_distribution(rows, out / "distribution.png")
    if done:
        reported = write_time_spent(list(done.values()), out / "time_spent.csv")
        log(f"time spent: {reported} of {len(done)} submissions report their hours ({out / 'time_spent.csv'})")
    if any(answers.values()) and found:
        marking.update(out, state, run.notebooks, instructor, found, done, log=log)
    return rows


PUBLISH_EVERY = 2.0  # seconds: how current grades.csv and gradebook.json are kept while a run goes on


def earlier_results(out, found, problems, log):
    """{(student, assignment): result} of OUT/results that this run does not grade: another class graded into OUT, or
    an assignment collected into another SUBMISSIONS folder. They stay in the table and the gradebook (a run used to
    drop them from both without a word); the warning names their students."""
    graded = {(s, a) for s, a, _ in found} | {(p.student, p.assignment) for p in problems}
    kept = {}
    for path in sorted((out / "results").glob("*/*.json")):
        result = load_result(path)
        key = (path.parent.name, path.stem)
        if key not in graded and result is not None and (result.get("student"), result.get("assignment")) == key:
            kept[key] = result
    if kept:
        here = {s for s, _ in graded}
        absent = sorted({s for s, _ in kept if s not in here})
        named = (
            f"; of {len(absent)} students not in it: {', '.join(absent[:10])}{' and more' if len(absent) > 10 else ''}"
        )
        log(
            f"warning: {out} holds {len(kept)} earlier results of submissions not in this SUBMISSIONS folder"
            + (named if absent else "")
            + f". They are kept in grades.csv and gradebook.json (export-grades exports them too); to drop a "
            f"student's, delete {out / 'results' / '<student>'} and run again."
        )
    return kept


def earlier_late(out, kept):
    "{(student, assignment): grading.reports.late.Late} of the kept results, as the gradebook of their run says."
    try:
        book = json.loads((out / "gradebook.json").read_text())
    except (OSError, ValueError):
        return {}
    late = {}
    for student, assignment in kept:
        entry = (book.get(student) or {}).get(assignment) if isinstance(book, dict) else None
        if isinstance(entry, dict) and "penalty_fraction" in entry:
            late[(student, assignment)] = Late(
                entry.get("submitted_at", ""),
                entry.get("late_by_hours"),
                entry.get("penalty_fraction", 0.0),
                entry.get("late_note", ""),
            )
    return late


def remembered_policy(out, log):
    """The late policy of the last run into OUT that was given one (None if none was): a run without late options keeps
    it, so that grading again after a fix does not drop every penalty without a word (an instructor's finding)."""
    path = late_policy_file(out)
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        raise GradingError(
            f"{path}: not the late policy an earlier run saved; delete it, and pass the options"
        ) from None
    policy = policy_of_record(record)
    if policy.due or policy.released:
        log(f"late policy of the earlier runs into {out}: {describe_policy(policy)} (--late-penalty none to drop it)")
    return policy


def remember_policy(out, policy):
    "Keep the late policy the options gave for the next runs into OUT (remembered_policy)."
    late_policy_file(out).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(late_policy_file(out), json.dumps(policy_record(policy), indent=1))


def mark_unfinished(state, todo, done):
    "Write which submissions of `todo` are not graded yet (state/UNFINISHED); return how many."
    left = [[student, assignment] for student, assignment, *_ in todo if (student, assignment) not in done]
    write_atomic(state / UNFINISHED, json.dumps({"left": left}))
    return len(left)


def make_runner(run, workers, log):
    "Where the jobs run: here, `workers` at a time, or on the Dask cluster run.cluster (grading.grade.cluster)."
    if not run.cluster:
        return Runner(workers or os.cpu_count() or 1, run.notebook_timeout)
    runner = ClusterRunner(run.cluster, run.notebook_timeout, run.sandboxed)
    count = runner.worker_count
    log(f"grading on the Dask cluster {run.cluster}: {count} worker{'s' if count != 1 else ''} now")
    return runner


def plan_run(run, found, tests):
    "({(student, assignment): kept result}, [what to grade: (student, assignment, path, fingerprint, previous)])."
    setup = {stem: setup_fingerprint(nb) for stem, nb in run.instructor.items()}
    done, todo = {}, []
    for student, assignment, path in found:
        fingerprint = {
            "submission": file_fingerprint(path),
            "setup": setup[assignment],
            "variant": variant_id(run.policies.secret, student, assignment),
            **held_out_part(run, assignment),
        }
        previous = load_result(result_path(run.out, student, assignment))
        action = plan(previous, fingerprint, tests[assignment])
        if action == "skip":
            done[(student, assignment)] = refeedback(run.out, previous, run.policies.feedback)
        else:
            todo.append((student, assignment, path, fingerprint, previous if action == "tests" else None))
    return done, todo


# -- The reference check: the instructor's own solution must earn full marks here, or nobody is graded ---------------

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


def held_out_part(run, assignment):
    "The fingerprint's part for the instructor's held-out digits: their hash where the notebook uses them."
    found = run.held_out_digest(assignment)
    return {"held_out": found} if found else {}


def environment_key(run, runner):
    "What the reference check's verdict depends on besides the notebooks: the Python, its packages, the limits."
    import site

    packages = [os.stat(p).st_mtime_ns for p in site.getsitepackages() if os.path.isdir(p)]
    limits = [run.sandboxed, run.student_user, run.cell_timeout, run.memory_mb]
    parts = [GRADER_VERSION, sys.executable, sys.prefix, *limits, packages, runner.environment]
    return digest(json.dumps(parts, default=str))
