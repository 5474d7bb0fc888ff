"""python -m grading <command>: the course's instructor and student commands."""

import argparse
import sys
from pathlib import Path

from .common.defaults import (
    CELL_TIMEOUT,
    FEEDBACK_CHOICES,
    GRADESCOPE_MEMORY_MB,
    GRADESCOPE_NOTEBOOK_TIMEOUT,
    GRADESCOPE_TIMEOUT,
    MEMORY_MB,
    NOTEBOOK_TIMEOUT,
)
from .common.environment import shared_with_the_kit
from .common.errors import GradingError

KIT_DOC = "python -m grading <command>: your TinyTorch kit's commands (run them in the kit's folder)."
# The student kit ships grading/ without its instructor packages (STUDENT_KIT in grading/authoring/release.py).
IN_KIT = not (Path(__file__).parent / "grade").is_dir()


def cmd_metadata(args):
    from .authoring.convention import apply_convention, mismatches
    from .common.notebooks import course_notebooks

    paths = [Path(p) for p in args.notebooks] or list(course_notebooks().values())
    if args.check:
        stale = {p.name: mismatches(p) for p in paths}
        stale = {name: cells for name, cells in stale.items() if cells}
        for name, cells in stale.items():
            print(f"{name}: nbgrader metadata of cells {cells} is out of date; run: python -m grading metadata")
        if not stale:
            print(f"nbgrader metadata of {len(paths)} notebooks agrees with the authoring convention")
        return 1 if stale else 0
    for path in paths:
        print(f"{path.name}: {apply_convention(path)} cells updated")
    return 0


def cmd_pictures(args):
    from .authoring.pictures import keep_pictures

    counts = keep_pictures()
    print("pictures kept: " + ", ".join(f"{stem} {n}" for stem, n in counts.items()) + " (commit the notebooks)")
    return 0


def cmd_export(args):
    from .student.check import package_root
    from .student.export import export_package

    root = package_root(Path.cwd())
    export_package(root, mine=args.mine)
    print(f"exported the notebooks of {root} into {root / 'tinytorch'}")
    return 0


def cmd_release(args):
    from .authoring.release import release

    references = [stem.strip() for value in args.reference or () for stem in value.split(",") if stem.strip()]
    assignments = release(args.out, update=args.update, force=args.force, references=references, log=print)
    print(f"student kit with {len(assignments)} assignments {'updated in' if args.update else 'written to'} {args.out}")
    return 0


def print_table(rows):
    rows = sorted(rows, key=lambda r: (r.student, r.assignment))
    width = max([len(r.assignment) for r in rows] + [10])
    print(f"{'student':<10} {'assignment':<{width}} {'score':>6} {'max':>5}  note")
    for r in rows:
        print(f"{r.student:<10} {r.assignment:<{width}} {r.score:>6g} {r.max_score:>5g}  {r.note}")


def _progress():
    from tqdm.auto import tqdm

    return lambda items, **kw: tqdm(items, disable=None, **kw)


def cmd_autograde(args):
    from .grade.autograde import autograde
    from .grade.settings import Settings

    warn_if_unsafe(args)
    settings = Settings(
        notebooks_dir=args.notebooks,
        cell_timeout=args.cell_timeout,
        notebook_timeout=args.notebook_timeout,
        memory_mb=args.memory_mb,
        workers=args.workers,
        unsafe_no_sandbox=args.unsafe_no_sandbox,
        student_user=args.student_user,
        cluster=args.cluster,
        secret_file=args.secret_file,
        feedback=args.feedback,
        late=late_policy(args),
        held_out_digits=args.held_out_digits,
    )
    rows = autograde(args.submissions, args.out, settings=settings, progress=_progress(), log=console)
    print_table(rows)
    failed = [r for r in rows if r.problem]
    for r in failed:
        print(f"error: {r.student}/{r.assignment}: {r.note}", file=sys.stderr)
    print_outputs(Path(args.out))
    return 1 if failed else 0


def console(line):
    "A line of a run's log: a warning goes to stderr, with the errors; the rest to stdout."
    print(line, file=sys.stderr if line.startswith("warning: ") else sys.stdout)


def late_policy(args):
    "The late policy of --due, --due-file, --released, --late-penalty and --trust-timestamps (grading.reports.late)."
    from .reports.late import make_policy

    options = (args.due, args.due_file, args.late_penalty, args.released, args.trust_timestamps or None)
    if all(option is None for option in options):
        return None  # none given: the late policy of the earlier runs into OUT, if any (regrade.remembered_policy)
    return make_policy(args.due or (), args.due_file, args.late_penalty or "none", args.released, args.trust_timestamps)


def warn_if_unsafe(args):
    from .sandbox.sandbox import problem

    if args.unsafe_no_sandbox and problem() is not None:
        print(
            f"warning: --unsafe-no-sandbox: {problem()}, so submissions run with your permissions and could read "
            "or change your files. The verdict is still computed outside the students' processes. Grade code you "
            "do not trust only in a sandbox (see docs/design.md).",
            file=sys.stderr,
        )


def cmd_gradescope(args):
    import tempfile

    from .lms.gradescope import build
    from .lms.gradescope_try import try_zip

    if args.out is None and args.try_submission is None:
        raise GradingError("gradescope needs --out autograder.zip (the zip to write), or --try SUBMISSION, or both.")
    if args.metadata is not None and args.try_submission is None:
        raise GradingError("--metadata is for --try: give --try SUBMISSION too, or leave --metadata out.")
    with tempfile.TemporaryDirectory(prefix="gradescope-zip-") as scratch:
        path = build(
            args.out or Path(scratch) / "autograder.zip",
            args.assignment,
            args.secret_file,
            args.late_penalty,
            args.hidden_visibility,
            held_out_digits=args.held_out_digits,
            notebook_timeout=args.notebook_timeout,
            memory_mb=args.memory_mb,
        )
        if args.out is not None:
            print(f"Gradescope autograder written to {path}: upload it as the programming assignment's autograder")
        if args.try_submission is None:
            return 0
        return try_zip(path, args.try_submission, metadata=args.metadata)


def print_outputs(out):
    print(
        f"grade table: {out / 'grades.csv'}; gradebook: {out / 'gradebook.json'}; "
        f"distribution: {out / 'distribution.png'}; feedback: {out / 'feedback'}"
    )


def cmd_check(args):
    from .student.check import HIDDEN, run_tests, unfinished_earlier

    results, broken = run_tests(args.notebook)
    for name, error, given in broken:
        if given:
            print(f"{'ERROR':<6}  the {name} raised {error}: it runs your code above it, so fix that first")
            continue
        print(
            f"{'ERROR':<6}  the cell of {name} raised {error}: fix it first, the tests below that use it fail with it"
        )
    for name, points, status, message in results:
        mark = "HIDDEN" if status == HIDDEN else "PASS" if status else "FAIL"
        unit = "point" if points == 1 else "points"
        print(f"{mark:<6}  {name} ({points:g} {unit})" + (f": {message}" if message and status != HIDDEN else ""))
    for advice in unfinished_earlier(results, Path(args.notebook).stem):
        print(f"{'NOTE':<6}  {advice}")
    manual = written_answers(args.notebook)
    unanswered = [name for name, _, answered in manual if not answered]
    for name, points, answered in manual:
        unit = "point" if points == 1 else "points"
        todo = "" if answered else "not answered yet (the cell still says YOUR ANSWER HERE), "
        print(f"{'MANUAL':<6}  {name}: {todo}marked by hand ({points:g} {unit})")
    visible = [status for _, _, status, _ in results if status != HIDDEN]
    failed = visible.count(False)
    hidden = len(results) - len(visible)
    print(
        f"{len(visible) - failed} passed, {failed} failed"
        + (f" ({hidden} hidden test{'s' * (hidden != 1)} run when graded)" if hidden else "")
        + (f"; {len(manual)} written answer{'s' * (len(manual) != 1)} marked by hand" if manual else "")
        + (f", {len(unanswered)} not answered yet" if unanswered else "")
    )
    return 1 if failed else 0


UNANSWERED = ("", "YOUR ANSWER HERE")  # what the release leaves in a written answer's cell


def written_answers(notebook):
    "[(name, points, answered)] of the notebook's written answers, which the instructor marks by hand."
    from .common.notebooks import is_manual_answer, nbgrader_meta, read_notebook

    cells = read_notebook(notebook).cells
    return [
        (nbgrader_meta(c)["grade_id"], float(nbgrader_meta(c).get("points", 0)), c.source.strip() not in UNANSWERED)
        for c in cells
        if is_manual_answer(c)
    ]


def cmd_demo(args):
    from .authoring.release import export_package, release
    from .common.notebooks import REPO
    from .examples.demo import make_submissions
    from .grade.autograde import autograde
    from .grade.settings import Settings

    out = Path(args.out)
    print("1/4 exporting the notebooks into tinytorch/")
    export_package(REPO)
    print(f"2/4 releasing the student kit into {out / 'release'}")
    release(out / "release")
    print(f"3/4 making two submissions in {out / 'submissions'}: alice (solved), bob (untouched release)")
    make_submissions(out / "release", out / "submissions")
    print(f"4/4 autograding into {out / 'grades'}")
    from .sandbox.sandbox import problem

    if problem() is not None:
        print(
            f"note: {problem()}: the demo grades its own two generated notebooks without the sandbox; grading "
            "students' code needs it (see docs/design.md)"
        )
    settings = Settings(unsafe_no_sandbox=True)
    rows = autograde(out / "submissions", out / "grades", settings=settings, progress=_progress(), log=print)
    print_table(rows)
    print_outputs(out / "grades")
    wrong = demo_mismatches(rows)
    for line in wrong:
        print(f"error: the demo's table is not what the README promises: {line}", file=sys.stderr)
    return 1 if wrong else 0


def demo_mismatches(rows):
    "How the demo's table differs from the README's promise (alice full marks, bob 0, in every graded notebook)."
    from .grade.autograde import graded_assignments

    expected = graded_assignments()
    wrong = [f"{r.student}/{r.assignment}: not graded ({r.note})" for r in rows if r.problem]
    for student, full in (("alice", True), ("bob", False)):
        mine = {r.assignment: r for r in rows if r.student == student and not r.problem}
        wrong += [f"{student}/{a}: no row" for a in expected if a not in mine]
        for a, r in sorted(mine.items()):
            want = r.max_score if full else 0
            if r.max_score <= 0 or r.score != want:
                wrong.append(
                    f"{student}/{a}: {r.score:g}/{r.max_score:g}, expected {want:g}"
                    + (f" ({r.note})" if r.note else "")
                )
    return wrong


def cmd_class(args):
    from .authoring.release import release
    from .examples.classroom import NEEDS_SANDBOX, compare, make_class
    from .grade.autograde import autograde
    from .grade.settings import Settings

    out = Path(args.out)
    print(f"1/3 releasing the student kit into {out / 'kit'}")
    release(out / "kit")
    print(f"2/3 generating the red-team class (good, partial, broken, cheating, attacking) in {out / 'submissions'}")
    expected = make_class(out / "kit", out / "submissions", grades=out / "grades")
    print(f"3/3 autograding into {out / 'grades'}")
    warn_if_unsafe(args)
    settings = Settings(
        cell_timeout=args.cell_timeout,
        notebook_timeout=args.notebook_timeout,
        workers=args.workers,
        unsafe_no_sandbox=args.unsafe_no_sandbox,
    )
    rows = autograde(out / "submissions", out / "grades", settings=settings, progress=_progress(), log=print)
    print_table(rows)
    from .sandbox.sandbox import problem

    if problem() is not None:
        for student in sorted(NEEDS_SANDBOX):
            print(
                f"{student}: not checked: reading or writing the grader's files is stopped by the sandbox, "
                "which cannot run here (see docs/design.md)"
            )
            expected.pop(student)
    wrong = compare(rows, expected)
    for student, want, got in wrong:
        print(f"error: {student}: expected {want}, got {got}", file=sys.stderr)
    print(f"{len(expected) - len(wrong)} of {len(expected)} submissions got the expected score")
    return 1 if wrong else 0


def cmd_export_grades(args):
    from .lms.lms import export_grades, side_path

    report = export_grades(
        args.grading_dir,
        args.format,
        args.out,
        roster=args.roster,
        notebooks_dir=args.notebooks,
        only=args.assignment,
        missing=args.missing,
        hidden_visibility=args.hidden_visibility,
        scale_to=args.scale_to,
        canvas_assignments=args.canvas_assignment,
        canvas_export=args.canvas_export,
    )
    for line in report.warnings:
        print(f"warning: {line}", file=sys.stderr)
    for line in report.howto:
        print(f"to import: {line}", file=sys.stderr)
    where = args.out if args.format != "gradescope" else f"{len(report.written)} results.json files in {args.out}"
    print(f"{args.format} grades written to {where}")
    if report.left_out:  # written, but an upload now would leave these students' grades out of the LMS
        print(
            f"error: {plural(len(report.left_out), 'student')} left out of {args.out} (see the warnings "
            f"above; their rows are in {side_path(args.out)}): correct the roster and export again",
            file=sys.stderr,
        )
        return 1
    if report.grader_faults:
        print(
            f"error: the grader could not grade {', '.join(report.grader_faults)} (see the warnings above): they have no "
            "grade in the file; run autograde again into the same folder, then export again",
            file=sys.stderr,
        )
        return 1
    return 0


def cmd_export_feedback(args):
    from .lms.export_feedback import export_feedback

    report = export_feedback(
        args.grading_dir,
        args.layout,
        args.out,
        roster=args.roster,
        notebooks_dir=args.notebooks,
        only=args.assignment,
    )
    for line in report.warnings:
        print(f"warning: {line}", file=sys.stderr)
    if report.unreadable:
        print(
            f"{plural(len(report.unreadable), 'submission')} could not be read: their pages say so and how to hand "
            f"in again: {', '.join(report.unreadable)}"
        )
    print(f"{plural(report.pages, 'feedback page')} written to {args.out} for {args.layout}")
    for line in report.left_out:
        print(f"error: {line}", file=sys.stderr)
    return 1 if report.left_out else 0


def plural(count, noun):
    return f"{count} {noun}{'' if count == 1 else 's'}"


def cmd_collect(args):
    from .lms.collect import collect

    result = collect(args.download, args.lms, args.out, force=args.force, notebooks_dir=args.notebooks)
    for line in result.warnings:
        print(f"warning: {line}", file=sys.stderr)
    for row in result.not_placed:
        print(f"not placed: {row.file}: {row.note}", file=sys.stderr)
    students = len({row.student for row in result.placed})
    print(
        f"{plural(len(result.placed), 'notebook')} of {plural(students, 'student')} in {args.out}; who is who: "
        f"{result.roster}; what became of each file: {result.report}"
        + (f"; {plural(len(result.not_placed), 'file')} not placed (above)" if result.not_placed else "")
    )
    return 1 if result.not_placed else 0


def parser():
    top = argparse.ArgumentParser(prog="python -m grading", description=KIT_DOC if IN_KIT else __doc__)
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_kit_commands(sub)
    if not IN_KIT:
        add_instructor_commands(sub)
    return top


def add_kit_commands(sub):
    "The commands of the student kit, which the instructor has too."
    p = sub.add_parser("export", help="nbdev_export the notebooks of this repository (or student kit) into tinytorch/")
    p.add_argument(
        "--mine",
        action="store_true",
        help="in a kit with reference modules (its references/ folder): export your own notebooks for those too",
    )
    p.set_defaults(run=cmd_export)
    p = sub.add_parser("check", help="run the visible tests of one notebook and print each test's result")
    p.add_argument("notebook", help="path to the .ipynb")
    p.set_defaults(run=cmd_check)


def instructor_commands():
    "The names of the commands that are not in the student kit (their modules stay with the instructor)."
    sub = argparse.ArgumentParser().add_subparsers()
    add_instructor_commands(sub)
    return set(sub.choices)


def add_instructor_commands(sub):
    "The commands whose modules stay with the instructor: only their functions import them."
    p = sub.add_parser("metadata", help="derive nbgrader metadata from the authoring convention (notebooks/README.md)")
    p.add_argument("notebooks", nargs="*", help="notebooks to update (default: all of notebooks/)")
    p.add_argument("--check", action="store_true", help="only report notebooks whose metadata is out of date")
    p.set_defaults(run=cmd_metadata)
    p = sub.add_parser(
        "pictures", help="run the notebooks with pictures and keep those outputs (for a reader on the web)"
    )
    p.set_defaults(run=cmd_pictures)
    p = sub.add_parser("release", help="build the student kit: no solutions, no hidden tests, its own tinytorch/")
    p.add_argument(
        "--out",
        required=True,
        help="folder for the kit: new, empty, or an earlier kit, replaced only if the student changed nothing in it",
    )
    p.add_argument(
        "--update",
        action="store_true",
        help="write into an earlier kit: add the new notebooks, refresh the files the student did not change, keep "
        "every changed notebook and every file of the student's",
    )
    p.add_argument(
        "--force", action="store_true", help="replace the --out folder whatever it holds (the student's work is lost)"
    )
    p.add_argument(
        "--reference",
        action="append",
        default=None,
        metavar="NOTEBOOK[,NOTEBOOK...]",
        help="hand out this notebook's reference module (after its deadline), so that later notebooks run on a "
        "working engine: it goes into the kit's references/ and tinytorch/, and the kit's export keeps it; the "
        "notebook itself stays the student's (repeatable)",
    )
    p.set_defaults(run=cmd_release)
    p = sub.add_parser("autograde", help="grade SUBMISSIONS/<student>/<assignment>/<assignment>.ipynb")
    p.add_argument("submissions", help="folder with one folder per student")
    p.add_argument("--out", required=True, help="folder for grades.csv and feedback/")
    p.add_argument(
        "--cell-timeout",
        type=int,
        default=None,
        help=f"CPU seconds one call of the student's code (or one test cell) may use (default {CELL_TIMEOUT})",
    )
    p.add_argument(
        "--notebook-timeout",
        type=int,
        default=NOTEBOOK_TIMEOUT,
        help=f"seconds one submission may take in all, both runs, stretched on a busy machine (default {NOTEBOOK_TIMEOUT})",
    )
    p.add_argument("--workers", type=int, default=None, help="submissions graded at once (default: one per core)")
    p.add_argument(
        "--cluster",
        default=None,
        metavar="ADDRESS",
        help="grade on a Dask cluster instead: its scheduler's address (tcp://HOST:8786), or local:N for N workers "
        'on this machine; each worker grades in its own sandbox (needs pip install "dask[distributed]")',
    )
    p.add_argument(
        "--notebooks", default=None, help="the instructor's notebooks (default: notebooks/ of this repository)"
    )
    p.add_argument(
        "--memory-mb",
        type=int,
        default=MEMORY_MB,
        help=f"memory of one sandbox, all its processes and its /tmp together where cgroups exist (default {MEMORY_MB})",
    )
    p.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="grade even where bubblewrap cannot run (students' code then runs with your permissions)",
    )
    p.add_argument(
        "--student-user",
        default=None,
        metavar="USER",
        help="where bubblewrap cannot run, grade as root with students' code run as this unprivileged user, one "
        "submission at a time (for a machine that grades nothing else, such as Gradescope's container)",
    )
    p.add_argument(
        "--secret-file",
        default=None,
        help="the course secret the hidden tests' per-student inputs come from (default OUT/.grading-secret, "
        "made on first use); keep it to regrade with the same inputs",
    )
    p.add_argument(
        "--held-out-digits",
        default=None,
        metavar="FILE.npz",
        help="your own 8x8 digits, kept outside the repository, which the capstone's held-out accuracy is measured "
        "on instead of a part of the shipped digits (np.savez(FILE, X=images, y=labels): X (n, 64) in [0, 1], y "
        "integers 0-9); read only by the grader, never by students' code; see docs/instructor.md",
    )
    p.add_argument(
        "--feedback",
        default=FEEDBACK_CHOICES[0],
        choices=FEEDBACK_CHOICES,
        help="what the students' feedback pages show: full (every test's message), summary (the total, the "
        "visible tests, the hidden tests as a count) or none (no pages); the grade table is the same",
    )
    p.add_argument(
        "--due",
        action="append",
        default=None,
        metavar="[ASSIGNMENT=]DATE",
        help="due date, e.g. 2026-12-01T23:59 (every assignment) or 09_nn=2026-12-01T23:59 (repeatable)",
    )
    p.add_argument("--due-file", default=None, help='JSON {"<assignment>": "<due>" or {"due": ..., "released": ...}}')
    p.add_argument("--released", default=None, metavar="DATE", help="when the assignments were released")
    p.add_argument(
        "--late-penalty",
        default=None,
        help="none (default), zero, or P%%/day or P%%/hour with an optional cap: 10%%/day,max=50%%; a run given none "
        "of these late options keeps those of the last run into OUT that was (none: drop them)",
    )
    p.add_argument(
        "--trust-timestamps",
        action="store_true",
        help="take a submission's time from the timestamp.txt in its folder (what nbgrader's collect writes); by "
        "default it is the notebook file's time as received, since a student can put any timestamp.txt there",
    )
    p.set_defaults(run=cmd_autograde)
    p = sub.add_parser(
        "collect", help="an LMS's bulk download of submissions as SUBMISSIONS/<student>/<assignment>/<assignment>.ipynb"
    )
    p.add_argument("download", help="the zip file the LMS gave (or the folder it was unpacked into)")
    p.add_argument(
        "--lms",
        required=True,
        metavar="{canvas,moodle,gradescope,flat}",
        help="what made the download: Canvas's Download Submissions, Moodle's Download all submissions, "
        "Gradescope's Export Submissions, or flat: a folder per student",
    )
    p.add_argument("--out", required=True, help="the submissions folder to write (autograde's SUBMISSIONS)")
    p.add_argument("--force", action="store_true", help="replace notebooks in --out that differ from the download's")
    p.add_argument(
        "--notebooks", default=None, help="the instructor's notebooks (default: notebooks/ of this repository)"
    )
    p.set_defaults(run=cmd_collect)
    p = sub.add_parser(
        "class",
        help="grade the generated red-team class (good, partial, broken, cheating, attacking) and check each score",
    )
    p.add_argument("--out", default="class-output", help="folder for everything it makes (default class-output)")
    p.add_argument("--workers", type=int, default=None, help="submissions graded at once (default: one per core)")
    p.add_argument("--cell-timeout", type=int, default=10, help="seconds one cell may run (default 10)")
    p.add_argument("--notebook-timeout", type=int, default=120, help="seconds one submission may take (default 120)")
    p.add_argument("--unsafe-no-sandbox", action="store_true", help="as for autograde")
    p.set_defaults(run=cmd_class)
    p = sub.add_parser(
        "export-grades", help="the gradebook of an autograde run as an LMS imports it (Canvas, Moodle or Gradescope)"
    )
    p.add_argument("grading_dir", metavar="GRADING_DIR", help="the --out folder of autograde (has gradebook.json)")
    p.add_argument(
        "--format",
        required=True,
        metavar="{canvas,moodle,moodle-worksheet,gradescope}",
        help="canvas: gradebook import CSV; moodle: grade import CSV; moodle-worksheet: one assignment's offline "
        "grading worksheet (by participant id, no email needed); gradescope: a results.json per student and assignment",
    )
    p.add_argument("--out", required=True, help="the CSV file to write (for gradescope: a folder)")
    p.add_argument(
        "--roster",
        default=None,
        help="CSV with header student,name,email[,lms_id,sis_id,login_id,section]; canvas and moodle need one",
    )
    p.add_argument("--assignment", action="append", default=None, help="export only this assignment (repeatable)")
    p.add_argument(
        "--missing",
        default="keep",
        metavar="{keep,zero,excused,blank}",
        help="canvas and moodle: what a submission that was not graded (none, or unreadable) gets: keep (default: no "
        "cell, the LMS keeps what it has), zero, excused (Canvas's EX), or blank (erases the grade the LMS holds)",
    )
    p.add_argument(
        "--scale-to",
        type=float,
        default=None,
        metavar="MAX",
        help="scale the final scores to the LMS grade item's maximum MAX (default: points, out of the points possible)",
    )
    p.add_argument(
        "--canvas-assignment",
        action="append",
        default=None,
        metavar="NAME=ID",
        help="canvas: the Canvas assignment id of an assignment column (repeatable), written as 'NAME (ID)'",
    )
    p.add_argument(
        "--canvas-export",
        default=None,
        metavar="CSV",
        help="canvas: Canvas's own gradebook export, to read the assignment ids from ('NAME (ID)' columns)",
    )
    p.add_argument(
        "--hidden-visibility",
        default="after_published",
        metavar="VISIBILITY",
        help="Gradescope visibility of hidden tests: hidden, after_due_date, after_published (default), visible",
    )
    p.add_argument(
        "--notebooks",
        default=None,
        help="the instructor's notebooks (default: notebooks/ of this "
        "repository), to tell hidden tests from visible ones",
    )
    p.set_defaults(run=cmd_export_grades)
    p = sub.add_parser(
        "export-feedback",
        help="the students' feedback pages, self-contained, laid out for upload to Canvas, Moodle or Gradescope",
    )
    p.add_argument("grading_dir", metavar="GRADING_DIR", help="the --out folder of autograde (has gradebook.json)")
    p.add_argument(
        "--layout",
        required=True,
        metavar="{canvas,moodle,gradescope,zip-per-student}",
        help="moodle: a zip per assignment for its 'Upload multiple feedback files in a zip'; canvas: a folder per "
        "assignment and student, to attach in SpeedGrader; gradescope: a folder per student's email; "
        "zip-per-student: a zip of each student's pages",
    )
    p.add_argument("--out", required=True, help="the folder to write the pages into")
    p.add_argument(
        "--roster",
        default=None,
        help="SUBMISSIONS/roster.csv that collect wrote; moodle needs it (participant ids), gradescope uses its emails",
    )
    p.add_argument("--assignment", action="append", default=None, help="export only this assignment (repeatable)")
    p.add_argument(
        "--notebooks", default=None, help="the instructor's notebooks (default: notebooks/ of this repository)"
    )
    p.set_defaults(run=cmd_export_feedback)
    p = sub.add_parser("gradescope", help="the Gradescope autograder zip: setup.sh, run_autograder and the course")
    p.add_argument("--out", default=None, help="the zip to write (upload it as the assignment's autograder)")
    p.add_argument(
        "--try",
        dest="try_submission",
        default=None,
        metavar="SUBMISSION",
        help="run the zip here as Gradescope runs it, on SUBMISSION (a notebook, or a folder of what a student "
        "uploads), and print results.json's summary; it uses this Python and installs nothing (setup.sh's apt and "
        "pip are not run), and students' code runs in bubblewrap, or where that cannot run, as root with the user "
        "student (TINYTORCH_STUDENT_USER), as there; without --out the zip is made in a temporary folder",
    )
    p.add_argument(
        "--metadata",
        default=None,
        metavar="FILE.json",
        help="with --try: the submission_metadata.json Gradescope would give (the student, the submission time, the "
        "due date); default: a student submitting now, a day before the due date",
    )
    p.add_argument("--assignment", action="append", default=None, help="grade only this notebook (repeatable)")
    p.add_argument(
        "--secret-file", default=None, help="the course secret of your autograde runs, so hidden inputs agree"
    )
    p.add_argument(
        "--held-out-digits",
        default=None,
        metavar="FILE.npz",
        help="as for autograde: your own digits for the capstone's held-out accuracy. The zip then holds the file; "
        "it is private to your Gradescope account (there it is root's alone, never in a student's sandbox), but "
        "keep the zip as private as the file",
    )
    p.add_argument("--late-penalty", default="none", help="as for autograde; the due date is Gradescope's")
    p.add_argument(
        "--notebook-timeout",
        type=int,
        default=GRADESCOPE_NOTEBOOK_TIMEOUT,
        help=f"as for autograde (default {GRADESCOPE_NOTEBOOK_TIMEOUT}: with the set-up and the reference check it "
        f"fits Gradescope's default autograder timeout of {GRADESCOPE_TIMEOUT // 60} minutes; more says what to set)",
    )
    p.add_argument(
        "--memory-mb",
        type=int,
        default=MEMORY_MB,
        help=f"as for autograde (default {MEMORY_MB}); Gradescope's container has {GRADESCOPE_MEMORY_MB} MB in all "
        "unless its Autograder Settings give more",
    )
    p.add_argument(
        "--hidden-visibility",
        default="after_published",
        metavar="VISIBILITY",
        help="Gradescope visibility of hidden tests: hidden, after_due_date, after_published (default: shown once you "
        "publish the grades; until then students see the visible tests' points and not their total), visible",
    )
    p.set_defaults(run=cmd_gradescope)
    p = sub.add_parser("demo", help="the bundled example: export, release, two students, autograde, grade table")
    p.add_argument("--out", default="demo-output", help="folder for everything it makes (default demo-output)")
    p.set_defaults(run=cmd_demo)


def stop_on_sigterm():
    "SIGTERM (kill, a scheduler ending the job) stops a run as Ctrl-C does: its jobs end, nothing graded is lost."
    import signal

    def interrupt(signum, frame):
        raise KeyboardInterrupt()

    signal.signal(signal.SIGTERM, interrupt)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if IN_KIT and argv and argv[0] in instructor_commands():
        print(
            f"error: '{argv[0]}' is an instructor's command and is not part of the student kit; "
            "use check and export here.",
            file=sys.stderr,
        )
        return 2
    args = parser().parse_args(argv)
    clash = shared_with_the_kit()
    if clash:
        print(f"error: {clash}", file=sys.stderr)
        return 2
    stop_on_sigterm()
    try:
        return args.run(args)
    except GradingError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
