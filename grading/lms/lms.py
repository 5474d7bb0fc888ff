"""Grade export for learning management systems: `python -m grading export-grades`.

Reads the gradebook that `autograde` wrote (grading.lms.lms_input) and writes it in a layout the LMS imports as it is:

- canvas: Canvas's gradebook import (grading.lms.canvas): the ids Canvas matches a student by, never the email, and
  each assignment as `Name (Canvas id)` when the id is given or read from Canvas's own export.
- moodle: Moodle's "Import grades: CSV file" (grading.lms.moodle): one identifier column without a blank, first,
  then per assignment a grade column and a "Feedback for <assignment>" column.
- moodle-worksheet: one assignment's offline grading worksheet (grading.lms.moodle), found by the participant ids
  that collect keeps: no email needed.
- gradescope: one Gradescope autograder results.json per student and assignment, OUT/<assignment>/<student>/
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

import io
import json
from dataclasses import dataclass, field
from pathlib import Path

from ..common import csvsafe
from ..common.errors import GradingError, did_you_mean
from ..common.layout import unfinished_marker
from ..common.notebooks import write_atomic
from ..reports.feedback import NOT_SHOWN, WHY_NOT_SHOWN
from . import canvas, moodle
from .entries import MISSING, MISSING_WORDS, Grades, fmt, graded, grader_fault
from .folders import IDENTITY
from .lms_input import Person, hidden_tests, number, read_gradebook, read_roster
from .marked import add_marks, changed_since_grading, mark_entry, unmarked_warning

FORMATS = ("canvas", "moodle", "moodle-worksheet", "gradescope")
CSV_FORMATS = ("canvas", "moodle", "moodle-worksheet")
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
SIDE_COLUMNS = ["student", "name", "email", "assignment", "grade", "in_import", "note"]
BOM = "\ufeff"  # Excel reads a CSV without it in the machine's code page; Canvas's and Moodle's readers skip it
REPO = Path(__file__).resolve().parents[2]
__all__ = ["export_grades", "read_roster", "side_path", "mark_entry", "Grades"]


@dataclass
class Export:
    "What an export wrote, who the roster and the gradebook disagree about, and what to tell the instructor."

    written: list = field(default_factory=list)  # paths
    not_in_roster: list = field(default_factory=list)  # graded, but the roster does not know them
    not_graded: list = field(default_factory=list)  # in the roster, no graded submission
    grader_faults: list = field(default_factory=list)  # "student/assignment" autograde could not grade: no cell, exit 1
    left_out: list = field(default_factory=list)  # students not in the import file (canvas, moodle): see the side file
    notes: int = 0  # notes on grades written to the side file (canvas)
    warnings: list = field(default_factory=list)
    howto: list = field(default_factory=list)  # how to import the file: which column to map by, which maximum to set


@dataclass
class Options:
    "The options of one CSV export."

    fmt_name: str
    missing: str = "keep"
    scale_to: float | None = None
    canvas_ids: dict = field(default_factory=dict)  # {assignment: Canvas assignment id}


# -- Who is written --------------------------------------------------------------------------------------------------


def assignments_of(book, known):
    "The assignment columns: every gradebook key that was graded (has tests) or is a course notebook, in order."
    keys = {a for entries in book.values() for a, e in entries.items() if "tests" in e or a in known}
    return sorted(keys)


def people_of(book, roster):
    "Everyone to write: the roster in its order, then graded students it lacks; and the two lists of disagreements."
    if roster is None:
        return [Person(s) for s in sorted(book)], [], []
    listed = {p.student for p in roster}
    extra = [Person(s) for s in sorted(book) if s not in listed]
    not_graded = [p.student for p in roster if p.student not in book]
    return roster + extra, [p.student for p in extra], not_graded


NOT_IN_ROSTER = "not in the roster: add them (student,name,email) and export again"


def reason_left_out(person, fmt_name, assignments, identifier):
    "Why a person cannot be a row of the import file (the LMS could not find them, or could find the wrong one), or ''."
    if not person.in_roster:
        return NOT_IN_ROSTER
    if fmt_name == "canvas":
        return canvas.unusable_id(person)
    if fmt_name == "moodle":
        return moodle.missing_identifier(person, identifier)
    if not person.participant(assignments[0]):
        return (
            f"no Moodle participant id of {assignments[0]} in the roster's moodle_participant (collect keeps it from "
            "Moodle's download of that assignment)"
        )
    return ""


def importable(grades, everyone, fmt_name, assignments, identifier=None):
    """(the people an import file holds, [(person, reason)] left out of it). Someone without a grade cell (nothing
    graded, --missing keep) needs no row, and is neither."""
    kept, left_out = [], []
    for p in everyone:
        if all(grades.cell(p, a) is None for a in assignments):
            continue
        reason = reason_left_out(p, fmt_name, assignments, identifier)
        if reason:
            left_out.append((p, reason))
        else:
            kept.append(p)
    return kept, left_out


def check_nothing_erased(grades, people, assignments):
    """Refuse a file in which a student has a grade in one column and none in another (--missing keep): the cell the
    file needs there would erase what the LMS holds."""
    for p in people:
        cells = [grades.cell(p, a) for a in assignments]
        if any(c is None for c in cells) and any(c is not None for c in cells):
            (gap,) = [a for a, c in zip(assignments, cells, strict=True) if c is None][:1]
            raise GradingError(
                f"{p.student} has no graded submission of {gap} but a grade in another column, and an empty cell "
                "would erase the grade the LMS holds: export one assignment at a time (--assignment NAME), or say "
                "what they get with --missing zero (or excused for Canvas, or blank to erase)."
            )


def csv_text(rows):
    "CSV text, with a byte-order mark, whose cells a spreadsheet cannot run as formulas (grading.common.csvsafe)."
    out = io.StringIO()
    csvsafe.writer(out, lineterminator="\r\n").writerows(rows)
    return BOM + out.getvalue()


def side_path(out: str | Path) -> Path:
    "The side file of an import file: canvas.csv -> canvas.notes.csv."
    out = Path(out)
    return out.with_name(f"{out.stem}.notes.csv")


# -- The CSV formats -------------------------------------------------------------------------------------------------


def import_rows(grades, people, assignments, options, identifier, graded_at):
    "The rows of the import file of options.fmt_name."
    if options.fmt_name == "canvas":
        return canvas.rows(grades, people, assignments, options.canvas_ids)
    if options.fmt_name == "moodle":
        return moodle.grade_import_rows(grades, people, assignments, identifier or moodle.IDENTIFIERS[0])
    return moodle.worksheet_rows(grades, people, assignments[0], graded_at)


def howto(grades, assignments, options, identifier):
    "The lines that say how to import the file: the column to map by, and the maximum each grade item must have."
    maxima = ", ".join(f"{a}: {fmt(grades.maximum(a))}" for a in assignments)
    if options.fmt_name == "canvas":
        lines = [f"set each Canvas assignment's Points Possible to its maximum ({maxima})"]
        unmatched = canvas.unmatched_titles(assignments, options.canvas_ids)
        if unmatched:
            lines.append(
                f"no Canvas assignment id for {', '.join(unmatched)}: Canvas matches such a column only to a "
                "published assignment of exactly that title, else it makes a new one; give --canvas-assignment "
                "NAME=ID or --canvas-export (Canvas's gradebook export)"
            )
        return lines
    if options.fmt_name == "moodle":
        lines = [moodle.map_by_line(identifier), f"set the Maximum grade of each grade item: {maxima}"]
        if any(grades.maximum(a) > moodle.GRADE_POINT_MAX for a in assignments):
            lines.append(moodle.OVER_100)
        return lines
    return [
        f"Moodle's assignment {assignments[0]}: Grading action > Upload grading worksheet; set the assignment's "
        f"Maximum grade to {fmt(grades.maximum(assignments[0]))} first, as Moodle skips a grade above it without a "
        "word. A grade changed in Moodle after autograde graded these is kept, unless the upload form's option to "
        "update records modified more recently in Moodle is ticked"
    ]


def side_rows(grades, kept, left_out, assignments, fmt_name):
    """The rows of OUT's side file (side_path): every grade left out of the import file with the reason, and, for
    Canvas, whose import has no comment column, every note on a grade that is in it."""
    rows = []
    for p, reason in left_out:
        for a in assignments:
            note = f"{reason}. {grades.note(p, a)}".strip()
            rows.append([p.student, p.name, p.email, a, grades.cell(p, a) or "", "no", note])
    for p in kept if fmt_name == "canvas" else []:
        for a in assignments:
            note = grades.note(p, a)
            if note:
                rows.append([p.student, p.name, p.email, a, grades.cell(p, a) or "", "yes", note])
    return rows


def write_side_file(rows, out):
    "Write the side file of OUT, or remove an earlier one when there is nothing to say."
    path = side_path(out)
    if not rows:
        path.unlink(missing_ok=True)
        return []
    write_atomic(path, csv_text([SIDE_COLUMNS] + rows))
    return [path]


def write_csv_export(grades, everyone, assignments, out, options, report, graded_at):
    "Check, then write, the import file and its side file; fill the report's left_out, notes and howto."
    with_grades = [p for p in everyone if p.in_roster and any(grades.cell(p, a) is not None for a in assignments)]
    identifier = moodle.choose_identifier(with_grades) if options.fmt_name == "moodle" and with_grades else None
    kept, left_out = importable(grades, everyone, options.fmt_name, assignments, identifier)
    check_nothing_erased(grades, kept, assignments)
    rows = import_rows(grades, kept, assignments, options, identifier, graded_at)
    if len(rows) <= (2 if options.fmt_name == "canvas" else 1):
        raise GradingError(
            f"no grade to write to {out}: no student of the roster has a graded submission the LMS could match "
            f"({len(left_out)} left out: {'; '.join(f'{p.student}: {why}' for p, why in left_out[:3]) or 'none'}); "
            "nothing was written."
        )
    report.left_out = [p.student for p, _ in left_out]
    write_atomic(out, csv_text(rows))
    report.written = [Path(out)]
    side = side_rows(grades, kept, left_out, assignments, options.fmt_name)
    report.notes = sum(row[5] == "yes" for row in side)
    report.written += write_side_file(side, out)
    report.howto = howto(grades, assignments, options, identifier)


GRADESCOPE_TEXT = {"output_format": "text", "test_output_format": "text", "test_name_format": "text"}  # never HTML
SHOWN = {  # when students see a test of each Gradescope visibility (its autograder specifications)
    "after_due_date": "after the due date; until then Gradescope shows their results and your total to your instructor",
    "after_published": (
        "when your instructor publishes the grades; until then Gradescope shows their results and your total to your "
        "instructor"
    ),
    "hidden": "to your instructor only, as your total is",
}


def test_output(message: str) -> str:
    """A test's message as Gradescope shows it, in a box of its own: a hidden test that does not quote an error says
    why in its box (the page says it once, above the tests), not in the submission's output, shown before the hidden
    tests are published."""
    return f"{message}. {WHY_NOT_SHOWN}" if NOT_SHOWN in message else message


def gradescope_results(person, assignment, entry, hidden, visibility):
    """One Gradescope results.json, as a dict: the total, each test with its visibility, and an output (plain text,
    as every string in it: Gradescope renders the top-level output as HTML by default) that says what the score
    holds: the late penalty, the written answers, the points of the hidden tests and when they are shown."""
    extra = {"student": person.student, "assignment": assignment}
    extra.update({k: getattr(person, k) for k in ("email", "lms_id", "sis_id") if getattr(person, k)})
    if entry is None or entry.get("graded") is False:
        return {
            "score": 0.0,
            "output": f"No submission of {assignment} was graded." + (f" {entry['note']}" if entry else ""),
            "tests": [],
            "extra_data": extra,
            **GRADESCOPE_TEXT,
        }
    tests = entry.get("tests") or {}
    order = list(hidden) if hidden is not None else []
    names = [t for t in order if t in tests] + sorted(t for t in tests if t not in order)
    listed = []
    for name in names:
        test = tests[name]
        is_hidden = True if hidden is None or name not in hidden else hidden[name]  # unknown: do not reveal it
        listed.append(
            {
                "name": name,
                "score": float(test.get("score", 0)),
                "max_score": float(test.get("max_score", 0)),
                "status": "passed" if test.get("score", 0) >= test.get("max_score", 0) else "failed",
                "visibility": visibility if is_hidden else "visible",
                "output": test_output(str(test.get("message") or "")),
            }
        )
    lines = [entry.get("note") or ""] + score_notes(entry) + [hidden_note(listed, visibility)]
    return {
        "score": float(entry.get("final_score", entry["score"])),
        "output": "\n".join(line for line in lines if line),
        "tests": listed,
        "extra_data": extra,
        **GRADESCOPE_TEXT,
    }


def score_notes(entry):
    "What makes the score differ from the tests' sum: the late penalty, the written answers marked by hand."
    lines = []
    manual, marked = entry.get("manual_points"), entry.get("manual_score")
    if number(manual) and manual and number(marked) and not entry.get("manual_unmarked"):
        lines.append(f"Your written answers earned {marked:g} of {manual:g} points (marked by hand): in this score.")
    elif number(manual) and manual:
        lines.append(f"Your written answers ({manual:g} points) are marked by hand: they are not in this score.")
    if number(entry.get("late_by_hours")) and entry["late_by_hours"] > 0 and number(entry.get("penalty")):
        final = float(entry.get("final_score", entry["score"]))
        lines.append(
            f"Submitted {entry['late_by_hours']:g} hours late: {entry['penalty']:g} points taken "
            f"({final + entry['penalty']:g} before the penalty, {final:g} counted)."
        )
    return lines


def hidden_note(listed, visibility):
    "The sentence that says how many points are in tests students do not see yet, and when they will."
    unseen = [t for t in listed if t["visibility"] != "visible"]
    if not unseen:
        return ""
    points, total = sum(t["max_score"] for t in unseen), sum(t["max_score"] for t in listed)
    tests = "1 hidden test" if len(unseen) == 1 else f"{len(unseen)} hidden tests"
    return (
        f"{tests} ({points:g} of the {total:g} points) {'is' if len(unseen) == 1 else 'are'} shown {SHOWN[visibility]}."
    )


def write_gradescope(book, people, assignments, out, hidden, visibility):
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise GradingError(f"{out}: is a file; for --format gradescope, --out is a folder (one results.json each).")
    written = []
    for assignment in assignments:
        for p in people:
            entry = book.get(p.student, {}).get(assignment)
            if grader_fault(entry):  # not the student's 0: no results.json until autograde grades it
                continue
            results = gradescope_results(p, assignment, entry, hidden.get(assignment), visibility)
            path = out / assignment / p.student / "results.json"
            write_atomic(path, json.dumps(results, indent=1) + "\n")
            written.append(path)
    return written


# -- The command -----------------------------------------------------------------------------------------------------


def check_options(fmt_name, missing, hidden_visibility, roster, scale_to):
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


def choose_assignments(book, hidden, only, report, fmt_name):
    "The assignment columns: all, or those of --assignment; a gradebook key that is no assignment is reported."
    assignments = assignments_of(book, hidden)
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
                    report.warnings.append(
                        f"{student}/{key}: not an assignment, left out of the export: {entry['note']}"
                    )
    if fmt_name == "moodle-worksheet" and len(assignments) != 1:
        raise GradingError(
            f"--format moodle-worksheet is one assignment's worksheet; the gradebook has {', '.join(assignments)}: "
            "pass --assignment NAME (one file per assignment)."
        )
    return assignments


def disagreements(book, report, assignments, fmt_name, out, missing):
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


def check_one_line_each(people, roster):
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


def check_finished(grading_dir):
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


def export_grades(
    grading_dir: str | Path,
    fmt_name: str,
    out: str | Path,
    *,
    roster: str | Path | None = None,
    notebooks_dir: str | Path | None = None,
    only: list | None = None,
    missing: str = "keep",
    hidden_visibility: str = "after_published",
    scale_to: float | None = None,
    canvas_assignments: list | None = None,
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
    book = read_gradebook(grading_dir)
    check_finished(grading_dir)
    people = read_roster(roster) if roster is not None else None
    check_one_line_each(people or [], roster)
    notebooks_dir = Path(notebooks_dir) if notebooks_dir else REPO / "notebooks"
    if not notebooks_dir.is_dir():
        raise GradingError(f"{notebooks_dir}: no such folder of instructor notebooks.")
    hidden = hidden_tests(notebooks_dir)
    report = Export()
    written_before = {(s, a): e.get("final_score") for s, entries in book.items() for a, e in entries.items()}
    add_marks(book, grading_dir, report)
    assignments = choose_assignments(book, hidden, only, report, fmt_name)
    everyone, report.not_in_roster, report.not_graded = people_of(book, people)
    report.warnings += [w for w in [unmarked_warning(book, assignments, grading_dir)] if w]
    report.warnings += [w for w in [changed_since_grading(book, written_before, assignments)] if w]
    if fmt_name == "gradescope":
        write_gradescope_export(book, everyone, assignments, out, hidden, hidden_visibility, report, people is None)
    else:
        options = Options(fmt_name, missing, scale_to, canvas.assignment_ids(canvas_assignments, canvas_export))
        graded_at = (Path(grading_dir) / "gradebook.json").stat().st_mtime
        write_csv_export(Grades(book, missing, scale_to), everyone, assignments, out, options, report, graded_at)
    report.warnings += disagreements(book, report, assignments, fmt_name, out, missing)
    return report


def write_gradescope_export(book, everyone, assignments, out, hidden, hidden_visibility, report, no_roster):
    if no_roster:
        report.warnings.append("no --roster: the results carry only the submission folder name")
    unknown = sorted(a for a in assignments if a not in hidden)
    if unknown:
        report.warnings.append(
            f"{', '.join(unknown)}: no instructor notebook, so every test is given visibility {hidden_visibility}"
        )
    report.written = write_gradescope(book, everyone, assignments, out, hidden, hidden_visibility)
