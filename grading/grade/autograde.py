"""Grade a folder of submissions (SUBMISSIONS/<student>/<assignment>/<assignment>.ipynb).

Each submission is one job (grading.grade.job) in a process of its own; `workers` of them run at once. Every finished job
leaves OUT/results/<student>/<assignment>.json, written atomically, and the gradebook (OUT/gradebook.json) and the
grade table (OUT/grades.csv) are rewritten atomically after each job. A run that is killed and started again skips
every submission whose result is still valid: same submission, same instructor notebook. When only some test cells
of a notebook changed (a hidden test was fixed), only those tests' scores are replaced.
"""

from __future__ import annotations

import compileall
import contextlib
import json
import os
import py_compile
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from ..authoring.convention import manual_answers
from ..authoring.course import course_key, made_course, made_or_kept
from ..authoring.release import check_sources, explain_stubs, kit_settings, later_stub_message
from ..common.defaults import CELL_TIMEOUT
from ..common.errors import GradingError
from ..common.layout import (
    DISTRIBUTION,
    GRADEBOOK,
    GRADES_TABLE,
    LOCK_FILE,
    SECRET_FILE,
    TIME_SPENT,
    UNFINISHED,
    state_folder,
)
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
from ..reports.late import Late, Policy, assess, check_names, untimed_notebooks
from ..sandbox import sandbox
from ..student.export import copy_package_skeleton, export_package
from . import heldout
from .cluster import ClusterRunner, check_address
from .gradebook import (
    Row,
    apply_late,
    feedback_path,
    page_path,
    plot_distribution,
    result_path,
    rows_of,
    write_gradebook,
    write_table,
)
from .reference import check_reference
from .regrade import (
    GRADER_VERSION,
    earlier_late,
    earlier_results,
    mark_unfinished,
    merge,
    plan_run,
    refeedback,
    remember_policy,
    remembered_policy,
)
from .run import Policies, Run
from .runner import Runner, load_result
from .settings import Settings
from .spec import digest, test_cells
from .submissions import check_folder, check_out
from .submissions import find_submissions as read_folder
from .timespent import write_time_spent
from .variant import read_secret

if TYPE_CHECKING:
    from .run import Found, Log, Todo
    from .spec import Spec


# -- What to grade ----------------------------------------------------------------------------------------------------


def find_submissions(submissions: Path | str, known: dict[str, set[str]]) -> tuple[list[Found], list[Row]]:
    "[(student, assignment, path)] to grade, and [Row] for every entry that cannot be graded (grading.grade.submissions)."
    found, problems = read_folder(submissions, known)
    rows = [Row(p.student, p.assignment, p.notebook, note=p.note, problem=True) for p in problems]
    return found, rows


def graded_assignments(notebooks_dir: Path | str | None = None) -> list[str]:
    "The notebooks that are assignments (with tests or written answers); 02b_diagnosis and 15_viz, given code only, are not."
    notebooks = course_notebooks(notebooks_dir)
    return [
        stem
        for stem, path in notebooks.items()
        if any(nbgrader_meta(c).get("grade") for c in read_notebook(path).cells)
    ]


# -- Preparing the grading folder -------------------------------------------------------------------------------------


def prepare(notebooks: dict[str, Path], state: Path) -> None:
    """The master nbgrader course (gradebook made by generate_assignment, and the release: the student version), the
    reference package and the released one, made once and reused while the instructor's notebooks are unchanged."""
    stamp = digest(GRADER_VERSION + "".join(file_fingerprint(p) for p in notebooks.values()))
    if (state / "prepared").exists() and (state / "prepared").read_text() == stamp:
        return
    if state.exists():
        shutil.rmtree(state)
    # kept between grading folders as a made course is (exporting the two packages took a second of every new one)
    made_or_kept(state_key(notebooks, stamp), lambda folder: make_state(notebooks, folder), state)
    write_atomic(state / "prepared", stamp)


def state_key(notebooks: dict[str, Path], stamp: str) -> str:
    "The name of a kept `make_state`: the notebooks, nbgrader, nbdev, the package's skeleton and the exporting code."
    from ..student import export

    skeleton = [REPO / "tinytorch" / name for name in export.SKELETON] + [REPO / "settings.ini", Path(export.__file__)]
    data = sorted(f"{p.name}:{p.stat().st_size}" for p in (REPO / "tinytorch" / "data").iterdir())
    parts = [stamp, course_key(notebooks), metadata.version("nbdev"), *(p.read_text() for p in skeleton), *data]
    return "state-" + digest("\0".join(parts))


def make_state(notebooks: dict[str, Path], state: Path) -> None:
    "What `prepare` makes in `state`: the master course, and the reference and released packages, byte-compiled."
    made_course(notebooks, state / "master")
    export_notebooks(notebooks, state / "reference")
    # What a student's code may see of the other notebooks: the released modules (every answer a stub); a job puts
    # the reference modules of the notebooks before its own on top (grading.grade.job.build_package).
    released = {stem: state / "master" / "release" / stem / f"{stem}.ipynb" for stem in notebooks}
    export_notebooks(released, state / "released", stubs=later_stub_message)
    for folder in ("reference", "released"):
        # Byte-compiled once here, not in every sandbox: a job copies these beside the sources, and a checked-hash
        # .pyc is used only while its source is unchanged (the student's own module is always compiled afresh).
        compileall.compile_dir(
            state / folder / "tinytorch", quiet=1, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH
        )


def export_notebooks(notebooks: dict[str, Path], folder: Path, stubs: Callable[[str, str], str] | None = None) -> None:
    "A package exported from `notebooks` ({stem: path}) into folder/tinytorch; with `stubs`, each stub says that."
    (folder / "nbs").mkdir(parents=True)
    for stem, path in notebooks.items():
        if stubs is None:
            shutil.copyfile(path, folder / "nbs" / f"{stem}.ipynb")
            continue
        notebook = read_notebook(path)
        for cell in notebook.cells:
            if cell.cell_type == "code" and nbgrader_meta(cell).get("solution"):
                cell.source = explain_stubs(cell.source, stem, stubs)
        write_notebook(notebook, folder / "nbs" / f"{stem}.ipynb")
    (folder / "settings.ini").write_text(kit_settings(REPO / "settings.ini", nbs_path="nbs"))
    copy_package_skeleton(folder)
    export_package(folder)


def make_scratch(state: Path, student_user: str | None = None) -> Path:
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


# -- The command ------------------------------------------------------------------------------------------------------


def autograde(
    submissions: Path | str,
    out: Path | str,
    *,
    settings: Settings = Settings(),  # noqa: B008  (frozen: one shared default is safe)
    progress: Callable | None = None,
    log: Callable[[str], None] | None = None,
) -> list[Row]:
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
    check_out(Path(submissions), out)
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


def isolation_for(unsafe_no_sandbox: bool, student_user: str | None, cluster: str | None) -> str:
    "How students' code runs (grading.sandbox.sandbox.isolation); on a cluster, bubblewrap is checked on the workers."
    if not cluster:
        return sandbox.isolation(unsafe_no_sandbox, student_user)
    check_address(cluster)  # before OUT is written
    if student_user:
        raise GradingError("--student-user grades one submission at a time on this machine: not with --cluster")
    return "none" if unsafe_no_sandbox else "bwrap"


def variant_secret(out: Path, secret_file: Path | str | None, log: Log) -> bytes:
    "The course secret: --secret-file, or OUT/.grading-secret (made, mode 0600, the first time)."
    path = Path(secret_file) if secret_file else out / SECRET_FILE
    if not path.exists():
        log(f"made a new course secret for the hidden tests' variants: {path} (keep it to regrade alike)")
    return read_secret(path, create=True)


@contextlib.contextmanager
def run_lock(out: Path, log: Log) -> Iterator[None]:
    "One autograde run at a time per output folder: a second run waits for the first, then finds its results."
    import fcntl

    with open(out / LOCK_FILE, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"another autograde run is writing {out}: waiting for it to finish")
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


# -- Running the jobs -------------------------------------------------------------------------------------------------


def download_times(policy: Policy, found: list[Found], log: Log) -> dict[tuple[str, str], Late]:
    """The late columns of the notebooks with a due date whose time is their download's (collect-report.csv: Canvas
    and Moodle downloads hold no submission times): the policy is not applied to them, and a warning says why."""
    roots = {Path(path).parents[2] for _, _, path in found}  # SUBMISSIONS/<student>/<assignment>/<notebook>
    untimed = set().union(*(untimed_notebooks(root) for root in roots))
    chosen = {(s, a) for s, a, _ in found if (s, a) in untimed and policy.due_of(a) is not None}
    if chosen:
        count = f"{len(chosen)} notebook{'s' * (len(chosen) != 1)}"
        log(
            f"warning: late policy not applied to {count}: their time is the LMS's download's, not when they were "
            "handed in (collect-report.csv); apply the late policy in the LMS, or grade without --due"
        )
    note = "late policy not applied: the notebook's time is its download's (collect-report.csv): apply it in the LMS"
    return dict.fromkeys(chosen, Late(note=note))


def log_policies(policies: Policies, out: Path, found: list[Found], log: Log) -> None:
    "Say which feedback policy this run uses, and when it is not the one the previous run used."
    previous = {
        r.get("feedback", "full")
        for s, a, _ in found
        if (r := load_result(result_path(out, s, a))) is not None and not r.get("problem")
    }
    earlier = f" (the previous run: {', '.join(sorted(previous))})" if previous - {policies.feedback} else ""
    log(f"feedback for students: {policies.feedback}: {POLICIES[policies.feedback]}{earlier}")


def log_held_out(run: Run, found: list[Found], log: Log) -> None:
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


def _autograde(
    run: Run, found: list[Found], problems: list[Row], workers: int | None, progress: Callable | None, log: Log
) -> list[Row] | None:
    "Grade what `found` lists into run.out (the stages: plan, check the reference, grade, publish, marking)."
    out, state, instructor = run.out, run.state, run.instructor
    if found:
        prepare(run.notebooks, state)
    tests = {stem: test_cells(nb) for stem, nb in instructor.items()}
    late = {(s, a): assess(run.policies.late, a, path, run.policies.now) for s, a, path in found}
    late.update(download_times(run.policies.late, found, log))
    log_policies(run.policies, out, found, log)
    log_held_out(run, found, log)
    done, todo, replaced = plan_run(run, found, tests)
    for warning in replaced:
        log(warning)
    if done:
        log(f"{len(done)} submissions already graded (unchanged since): kept")
    earlier = earlier_results(out, found, problems, log)
    late.update(earlier_late(out, earlier))
    done.update({key: refeedback(out, result, run.policies.feedback) for key, result in earlier.items()})
    answers = {stem: manual_answers(nb) for stem, nb in instructor.items()}
    marked = marking.read_marks(out, log)  # the marks made in formgrader since the last run
    book = Publisher(out, problems, answers, marked, late, done)
    if todo:
        grade_all(run, todo, tests, book, workers=workers, progress=progress, log=log)
    (state / UNFINISHED).unlink(missing_ok=True)  # every submission found is graded (or failed, and says so)
    rows = book.publish()
    if rows:
        plot_distribution(rows, out / DISTRIBUTION)
    if done:
        reported = write_time_spent(list(done.values()), out / TIME_SPENT)
        log(f"time spent: {reported} of {len(done)} submissions report their hours ({out / TIME_SPENT})")
    if any(answers.values()) and found:
        marking.update(out, state, run.notebooks, instructor, found, done, log=log)
    return rows


@dataclass
class Publisher:
    """Writes the table and the gradebook from every result so far (`done`), which the jobs' threads add to."""

    out: Path
    problems: list[Row]  # the entries that cannot be graded (find_submissions)
    answers: dict[str, dict[str, float]]  # {assignment: {written answer: points}}, marked by hand
    marked: dict[tuple[str, str], marking.Marks]  # their marks so far (grading.reports.marking.read_marks)
    late: dict[tuple[str, str], Late]  # {(student, assignment): what the late policy found}
    done: dict[tuple[str, str], dict]  # {(student, assignment): result}
    lock: threading.Lock = field(default_factory=threading.Lock)
    published: float = 0.0  # when the files were last written (time.monotonic)

    def add(self, key: tuple[str, str], result: dict) -> None:
        with self.lock:
            self.done[key] = result

    def publish(self, every: float = 0.0) -> list[Row] | None:
        "Write the table and the gradebook from every result so far; not again within `every` seconds."
        with self.lock:
            if time.monotonic() - self.published < every:
                return None
            self.published = time.monotonic()
            results = [self.done[k] for k in sorted(self.done)]
            rows = apply_late(rows_of(results, self.problems, self.answers, self.marked), self.late)
            write_gradebook(results, self.problems, self.out / GRADEBOOK, self.answers, self.late, self.marked)
            write_table(rows, self.out / GRADES_TABLE)
        return rows


def grade_all(
    run: Run,
    todo: list[Todo],
    tests: dict[str, dict[str, tuple[float, str]]],
    book: Publisher,
    *,
    workers: int | None,
    progress: Callable | None,
    log: Log,
) -> None:
    """Check the reference, then grade what `todo` lists (plan_run), `workers` at a time, publishing as jobs end. A
    run stopped by the user keeps what it graded and says how many are left."""
    state = run.state
    runner = make_runner(run, workers, log)
    run.scratch = make_scratch(state, run.student_user)
    run.jobs = Path(tempfile.mkdtemp(prefix="jobs-", dir=state))  # this run's own: two runs never share one
    if run.policies.held_out:  # read by the jobs here; a cluster's task carries its bytes (grading.grade.cluster)
        run.held_out_file = heldout.write_copy(run.policies.held_out, run.jobs)
    try:
        assignments = sorted({a for _, a, _, _, _ in todo})
        check_reference(run, runner, assignments, log)
        book.publish()  # only now: a run the reference check stops leaves the previous table and gradebook as they were
        mark_unfinished(state, todo, book.done)  # export-grades refuses the table until a run grades the rest
        runner.map(
            lambda item: grade_one(item, run=run, runner=runner, tests=tests, book=book, log=log), todo, progress
        )
    except KeyboardInterrupt:
        book.publish()
        left = mark_unfinished(state, todo, book.done)
        log(
            f"stopped: every job and its sandbox ended; {len(book.done)} graded and kept, {left} left: run again to resume"
        )
        raise
    finally:
        runner.close()
        shutil.rmtree(run.scratch, ignore_errors=True)
        shutil.rmtree(run.jobs, ignore_errors=True)


def grade_one(
    item: Todo, *, run: Run, runner: Runner, tests: dict[str, dict[str, tuple[float, str]]], book: Publisher, log: Log
) -> None:
    "Grade one submission of `todo` in a job of its own; keep its result (merged with the previous one) and publish."
    student, assignment, path, fingerprint, previous = item
    out = run.out
    spec = run.spec(
        student,
        assignment,
        path,
        fingerprint,
        result=run.jobs / f"{student}__{assignment}.json",
        feedback=feedback_path(out, student, assignment),
        page=page_path(out, student, assignment),
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
    book.add((student, assignment), result)
    book.publish(every=PUBLISH_EVERY)  # rewriting the whole gradebook after every job would grow as n²


PUBLISH_EVERY = 2.0  # seconds: how current grades.csv and gradebook.json are kept while a run goes on


def failed_result(spec: Spec, tests: dict[str, tuple[float, str]], note: str) -> dict:
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


def make_runner(run: Run, workers: int | None, log: Log) -> Runner:
    "Where the jobs run: here, `workers` at a time, or on the Dask cluster run.cluster (grading.grade.cluster)."
    if not run.cluster:
        return Runner(workers or os.cpu_count() or 1, run.notebook_timeout)
    runner = ClusterRunner(run.cluster, run.notebook_timeout, run.sandboxed)
    count = runner.worker_count
    log(f"grading on the Dask cluster {run.cluster}: {count} worker{'s' if count != 1 else ''} now")
    return runner
