"""Grade export for learning management systems: `python -m grading export-grades`.

Reads the gradebook that `autograde` wrote (grading.lms.lms_input) and the roster (grading.intake.roster), and writes
them in a layout the LMS imports as it is:

- canvas: Canvas's gradebook import (grading.lms.canvas, written by grading.lms.csv_export): the ids Canvas matches a student by, never the email, and
  each assignment as `Name (Canvas id)` when the id is given or read from Canvas's own export.
- moodle: Moodle's "Import grades: CSV file" (grading.lms.moodle): one identifier column without a blank, first,
  then per assignment a grade column and a "Feedback for <assignment>" column.
- moodle-worksheet: one assignment's offline grading worksheet (grading.lms.moodle), found by the participant ids
  that collect keeps: no email needed.
- gradescope (grading.lms.gradescope_results): one Gradescope autograder results.json per student and assignment, OUT/<assignment>/<student>/
  results.json, with each test's name, score, max_score, status, visibility and output.

What an import must never do, whatever the roster holds: put a grade on the wrong student, or erase one. So a row the
LMS could match to the wrong student, or to nobody, is never written: it goes to the side file next to OUT
(canvas.csv: canvas.notes.csv) with the reason, is named on stderr, and the command exits 1. A student with nothing
graded gets no cell unless --missing asks for one (grading.lms.entries), and a file that would need an empty cell
for someone (graded in one assignment, not in another) is refused. A file with no grade in it is not written.
Every cell goes through grading.common.csvsafe (names and notes come from students; ids are written as the platform
matches them), and the CSV files start with a UTF-8 byte-order mark so that Excel reads "Zoë Ñúñez" as it is.

The grades are the final scores (grading.reports.late.penalised), written answers marked by hand included: the marks
come from OUT/marking (read with nbgrader, grading.reports.marking.read_marks) when it is there, else from
gradebook.json as autograde last wrote it. A submission with an answer not marked yet is exported with the marks
made so far, noted and counted in a warning.

Standard library only (csv, json), nbgrader aside: the export runs wherever the grades were copied to.
"""

import json
from collections.abc import Collection
from pathlib import Path

from ..common.errors import GradingError, did_you_mean
from ..common.layout import GRADEBOOK, unfinished_marker
from ..intake.roster import IDENTITY, Person, read_roster
from . import canvas
from .csv_export import Options, side_path, write_csv_export
from .entries import MISSING, MISSING_WORDS, Grades, graded, grader_fault
from .exported import Export
from .gradescope_results import VISIBILITIES, write_gradescope_export
from .lms_input import Gradebook, check_export_path, hidden_tests, read_gradebook
from .marked import add_marks, changed_since_grading, unmarked_warning

FORMATS = ("canvas", "moodle", "moodle-worksheet", "gradescope")
CSV_FORMATS = ("canvas", "moodle", "moodle-worksheet")
REPO = Path(__file__).resolve().parents[2]


# -- Who is written --------------------------------------------------------------------------------------------------


def assignments_of(book: Gradebook, known: Collection[str]) -> list[str]:
    "The assignment columns: every gradebook key that was graded (has tests) or is a course notebook, in order."
    keys = {a for entries in book.values() for a, e in entries.items() if "tests" in e or a in known}
    return sorted(keys)


def people_of(book: Gradebook, roster: list[Person] | None) -> tuple[list[Person], list[str], list[str]]:
    "Everyone to write: the roster in its order, then graded students it lacks; and the two lists of disagreements."
    if roster is None:
        return [Person(s) for s in sorted(book)], [], []
    listed = {p.student for p in roster}
    extra = [Person(s) for s in sorted(book) if s not in listed]
    not_graded = [p.student for p in roster if p.student not in book]
    return roster + extra, [p.student for p in extra], not_graded


# -- The command -----------------------------------------------------------------------------------------------------


def check_options(
    fmt_name: str, missing: str, hidden_visibility: str, roster: str | Path | None, scale_to: float | None
) -> None:
    "Refuse an export that cannot be done, before anything is read or written."
    if fmt_name not in FORMATS:
        raise GradingError(f"unknown format {fmt_name!r}; choose one of {', '.join(FORMATS)}.")
    if hidden_visibility not in VISIBILITIES:
        raise GradingError(f"unknown visibility {hidden_visibility!r}; choose one of {', '.join(VISIBILITIES)}.")
    if missing not in MISSING:
        raise GradingError(f"--missing must be one of {', '.join(MISSING)}, not {missing!r}.")
    if fmt_name.startswith("moodle") and missing == "excused":
        raise GradingError(
            "--missing excused: Moodle's grade import has no excused grade (a cell is a number, or empty for none); "
            "use --missing keep (the default) or zero, and exclude those grades in Moodle's gradebook."
        )
    if scale_to is not None and not scale_to > 0:
        raise GradingError(f"--scale-to {scale_to:g}: expected the positive maximum of the LMS's grade item (100).")
    if fmt_name in CSV_FORMATS and roster is None:
        raise GradingError(
            f"--format {fmt_name} needs --roster ROSTER.csv (header student,name,email): the LMS finds each student "
            "by an id the gradebook does not have. For a table by submission folder, use grades.csv."
        )


def choose_assignments(
    book: Gradebook, known: Collection[str], only: list[str] | None, warnings: list[str], fmt_name: str
) -> list[str]:
    """The assignment columns: all, or those of --assignment; a gradebook key that is no assignment (none of `known`,
    the course's notebooks, and never graded) is reported."""
    assignments = assignments_of(book, known)
    if only:
        unknown = [a for a in only if a not in assignments]
        if unknown:
            raise GradingError(
                f"assignment {unknown[0]!r}{did_you_mean(unknown[0], assignments)} is not in the gradebook; it has "
                f"{', '.join(assignments)}."
            )
        assignments = [a for a in assignments if a in only]
    else:
        for student, entries in sorted(book.items()):
            for key, entry in sorted(entries.items()):
                if key not in assignments:
                    warnings.append(f"{student}/{key}: not an assignment, left out of the export: {entry['note']}")
    if fmt_name == "moodle-worksheet" and len(assignments) != 1:
        raise GradingError(
            f"--format moodle-worksheet is one assignment's worksheet; the gradebook has {', '.join(assignments)}: "
            "pass --assignment NAME (one file per assignment)."
        )
    return assignments


def disagreements(
    book: Gradebook, report: Export, assignments: list[str], fmt_name: str, out: str | Path, missing: str
) -> list[str]:
    "The warnings about who is left out, who has no grade and what the import file cannot carry."
    side = side_path(out)
    gradescope = fmt_name == "gradescope"
    blank = "score 0" if gradescope else MISSING_WORDS[missing]
    lines = []
    if report.not_in_roster:
        where = "written without LMS ids" if gradescope else f"so not in {out}; their grades are in {side}"
        lines.append(f"graded but not in the roster ({where}): {', '.join(report.not_in_roster)}")
    unmatchable = [s for s in report.left_out if s not in report.not_in_roster]
    if unmatchable:
        lines.append(
            f"left out of {out}, since the LMS could not find them or could find the wrong student (the reasons and "
            f"the grades are in {side}): {', '.join(unmatchable)}"
        )
    if report.not_graded:
        lines.append(f"in the roster but no graded submission (exported as {blank}): {', '.join(report.not_graded)}")
    for student, entries in sorted(book.items()):
        for assignment, entry in sorted(entries.items()):
            if assignment not in assignments or student in report.left_out:
                continue
            if grader_fault(entry):
                report.grader_faults.append(f"{student}/{assignment}")
                lines.append(
                    f"{student}/{assignment}: not graded, a fault of the grader's, so no grade: {entry['note']}"
                )
            elif not graded(entry):
                lines.append(f"{student}/{assignment}: not graded, exported as {blank}: {entry['note']}")
    if report.notes:
        lines.append(f"Canvas's grade import has no comment column: the notes on {report.notes} grades are in {side}")
    if gradescope and missing != "keep":
        lines.append("--missing is for canvas and moodle; a missing submission's results.json has score 0")
    return lines


def check_one_line_each(people: list[Person], roster: str | Path | None) -> None:
    "Refuse a roster in which two students share an id or an email: the import would mix up their grades."
    seen = {}
    columns = (*IDENTITY, "login_id")
    for person in people:
        for column, label in zip(columns, ("LMS id", "SIS id", "email", "login"), strict=True):
            value = getattr(person, column).lower()
            if value and (column, value) in seen:
                raise GradingError(
                    f"{roster}: students {seen[column, value]} and {person.student} have the same {label} "
                    f"{getattr(person, column)}: the LMS would give one's grade to the other. Keep the line of the "
                    "student it is, and correct or delete the other."
                )
            seen[column, value] = person.student


def check_finished(grading_dir: str | Path) -> None:
    """Raise GradingError if the last autograde run into `grading_dir` stopped before grading every submission it
    found (interrupted, or the machine went down): its table lacks them, and an export would show them as not handed
    in (grading.grade.autograde writes the marker while it grades)."""
    marker = unfinished_marker(grading_dir)
    if not marker.exists():
        return
    try:
        left = json.loads(marker.read_text()).get("left", [])
    except (OSError, ValueError, AttributeError):
        left = []
    example = (
        f", {left[0][0]}/{left[0][1]} among them" if left and isinstance(left[0], list) and len(left[0]) == 2 else ""
    )
    raise GradingError(
        f"{grading_dir}: the last autograde run stopped before it graded every submission ({len(left)} left{example}), "
        "and the export would show those as not handed in. Run the same autograde command again: it keeps what is "
        "graded and grades the rest; then export."
    )


def read_inputs(grading_dir: str | Path, roster: str | Path | None) -> tuple[Gradebook, list[Person] | None]:
    "(the gradebook of a finished autograde run, the roster's people or None without one), each checked."
    book = read_gradebook(grading_dir)
    check_finished(grading_dir)
    people = read_roster(roster) if roster is not None else None
    check_one_line_each(people or [], roster)
    return book, people


def instructor_notebooks(notebooks_dir: str | Path | None) -> Path:
    "The folder of the instructor's notebooks (default notebooks/), which must be there."
    folder = Path(notebooks_dir) if notebooks_dir else REPO / "notebooks"
    if not folder.is_dir():
        raise GradingError(f"{folder}: no such folder of instructor notebooks.")
    return folder


def export_grades(
    grading_dir: str | Path,
    fmt_name: str,
    out: str | Path,
    *,
    roster: str | Path | None = None,
    notebooks_dir: str | Path | None = None,
    only: list[str] | None = None,
    missing: str = "keep",
    hidden_visibility: str = "after_published",
    scale_to: float | None = None,
    canvas_assignments: list[str] | None = None,
    canvas_export: str | Path | None = None,
) -> Export:
    """Write the gradebook of GRADING_DIR in the layout of an LMS.

    Args:
        grading_dir: the --out folder of autograde (gradebook.json, results/).
        fmt_name: canvas, moodle, moodle-worksheet or gradescope.
        out: the CSV file to write (its side file goes next to it, see side_path); for gradescope, a folder.
        roster: the roster CSV (see read_roster); the CSV formats need one.
        notebooks_dir: the instructor's notebooks, which tell hidden tests from visible ones (default notebooks/).
        only: the assignments to export (default all; moodle-worksheet: exactly one).
        missing: what a submission that was not graded gets: keep (no cell), zero, excused (Canvas) or blank.
        hidden_visibility: the Gradescope visibility of hidden tests.
        scale_to: the maximum of the LMS's grade item, to scale the final scores to (default: points as they are).
        canvas_assignments: ["NAME=ID"], the Canvas assignment id of each assignment column.
        canvas_export: Canvas's own gradebook export, to read the assignment ids from.

    Returns:
        An Export: the files written, who was left out of the import file, the warnings, and how to import it.

    Raises:
        GradingError: an unknown format, visibility or --missing, excused for Moodle, no roster for a CSV format, a
        missing or malformed gradebook or roster, an unknown --assignment, a file that would erase a grade the LMS
        holds or would hold no grade (nothing is written then).
    """
    check_options(fmt_name, missing, hidden_visibility, roster, scale_to)
    book, people = read_inputs(grading_dir, roster)
    check_export_path(out, grading_dir, folder=fmt_name == "gradescope")
    hidden = hidden_tests(instructor_notebooks(notebooks_dir))
    report = Export()
    written_before = {(s, a): e.get("final_score") for s, entries in book.items() for a, e in entries.items()}
    add_marks(book, grading_dir, report.warnings)
    assignments = choose_assignments(book, hidden, only, report.warnings, fmt_name)
    everyone, report.not_in_roster, report.not_graded = people_of(book, people)
    report.warnings += [w for w in [unmarked_warning(book, assignments, grading_dir)] if w]
    report.warnings += [w for w in [changed_since_grading(book, written_before, assignments)] if w]
    if fmt_name == "gradescope":
        write_gradescope_export(
            book, everyone, assignments, out, hidden, report, visibility=hidden_visibility, no_roster=people is None
        )
    else:
        options = Options(fmt_name, missing, scale_to, canvas.assignment_ids(canvas_assignments, canvas_export))
        graded_at = (Path(grading_dir) / GRADEBOOK).stat().st_mtime
        grades = Grades(book, missing, scale_to)
        write_csv_export(grades, everyone, assignments, out, options=options, report=report, graded_at=graded_at)
    report.warnings += disagreements(book, report, assignments, fmt_name, out, missing)
    return report
