"""The commands that face an LMS: `collect` (grading.intake), `export-grades`, `export-feedback` and `gradescope`
(grading.lms)."""

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ..common.defaults import GRADESCOPE_MEMORY_MB, GRADESCOPE_NOTEBOOK_TIMEOUT, GRADESCOPE_TIMEOUT, MEMORY_MB
from ..common.errors import GradingError


def cmd_collect(args: argparse.Namespace) -> int:
    from ..intake.collect import collect

    options = {"force": args.force, "notebooks_dir": args.notebooks, "worksheet": args.worksheet}
    result = collect(args.download, args.lms, args.out, **options)
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


def cmd_export_grades(args: argparse.Namespace) -> int:
    from ..lms.csv_export import side_path
    from ..lms.export_grades import export_grades

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
    where = args.out if args.format != "gradescope" else f"{len(report.written)} results.json files in {args.out}"
    errors = []
    if report.left_out:  # written, but an upload now would leave these students' grades out of the LMS
        errors.append(
            f"{plural(len(report.left_out), 'student')} left out of {args.out} (see the warnings above; their rows "
            f"are in {side_path(args.out)}): correct the roster and export again"
        )
    elif report.grader_faults:
        errors.append(
            f"the grader could not grade {', '.join(report.grader_faults)} (see the warnings above): they have no "
            "grade in the file; run autograde again into the same folder, then export again"
        )
    done = [f"{args.format} grades written to {where}"]
    return print_report(report.warnings, howto=report.howto, done=done, errors=errors)


def cmd_export_feedback(args: argparse.Namespace) -> int:
    from ..lms.export_feedback import export_feedback

    report = export_feedback(
        args.grading_dir,
        args.layout,
        args.out,
        roster=args.roster,
        notebooks_dir=args.notebooks,
        only=args.assignment,
    )
    unreadable = (
        f"{plural(len(report.unreadable), 'submission')} could not be read: their pages say so and how to hand in"
    )
    done = [f"{unreadable} again: {', '.join(report.unreadable)}"] if report.unreadable else []
    done.append(f"{plural(report.pages, 'feedback page')} written to {args.out} for {args.layout}")
    return print_report(report.warnings, done=done, errors=report.left_out)


def print_report(warnings: list[str], *, howto: Sequence[str] = (), done: list[str], errors: list[str]) -> int:
    """Print what an export did: its warnings and how to import its files (stderr), what it wrote (stdout), then its
    errors (stderr); return the exit code, 1 when there is an error."""
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    for line in howto:
        print(f"to import: {line}", file=sys.stderr)
    for line in done:
        print(line)
    for line in errors:
        print(f"error: {line}", file=sys.stderr)
    return 1 if errors else 0


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def cmd_gradescope(args: argparse.Namespace) -> int:
    import tempfile

    from ..lms.gradescope import build
    from ..lms.gradescope_try import try_zip

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


def add_collect(sub: argparse._SubParsersAction) -> None:
    "The collect command's arguments."
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
    p.add_argument(
        "--worksheet",
        default=None,
        help="Moodle: the same assignment's grading worksheet (Grading action > Download grading worksheet), whose "
        "emails go into roster.csv and keep two students of one name apart across assignments",
    )
    p.set_defaults(run=cmd_collect)


def add_export_grades(sub: argparse._SubParsersAction) -> None:
    "The export-grades command's arguments."
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


def add_export_feedback(sub: argparse._SubParsersAction) -> None:
    "The export-feedback command's arguments."
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


def add_gradescope(sub: argparse._SubParsersAction) -> None:
    "The gradescope command's arguments."
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
