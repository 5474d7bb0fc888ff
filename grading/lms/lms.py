"""Grade export for learning management systems: `python -m grading export-grades`.

Reads the gradebook that `autograde` wrote (grading.lms.lms_input) and writes it in a layout the LMS imports as it is:

- canvas: the Canvas gradebook import CSV. Columns Student, ID, SIS User ID, SIS Login ID, Section, then one column
  per assignment (notebook); the second row is Canvas's "Points Possible" row, as in a file exported from Canvas.
  A submission that was not graded is empty, 0 or Canvas's excused mark `EX`, as --missing says.
- moodle: a CSV for Moodle's "Import grades: CSV file". Identifier columns (ID number, Email address, Full name) that
  the import maps to a user field, then per assignment a grade column and a "Feedback for <assignment>" column (the
  note on the grade) that the import maps to a grade item and to that item's feedback. Moodle has no excused grade.
- gradescope: one Gradescope autograder results.json per student and assignment, OUT/<assignment>/<student>/
  results.json, with each test's name, score, max_score, status, visibility and output.

Why a CSV export never holds a row the LMS cannot match: Moodle's import stops, and imports nothing, at the first
row whose user it cannot find (grade/import/csv/classes/load_data.php), and Canvas cannot place such a row either.
So canvas and moodle need a roster (student,name,email, optionally lms_id,sis_id,login_id,section; `student` is the
submission folder name), and a graded student missing from it (or, for Moodle, a roster line without a usable email
address) goes to the side file next to OUT (canvas.csv: canvas.notes.csv) with the reason instead, and is named on
stderr. The side file also holds, for Canvas, whose import has no comment
column, the notes on the grades. Nothing is dropped silently; every cell is written through grading.common.csvsafe, since
names and notes come from students and the files are opened in spreadsheets.

The grades are the final scores, written answers marked by hand included: the marks come from OUT/marking (read
with nbgrader, grading.reports.marking.read_marks) when it is there, else from gradebook.json as autograde last wrote it. A
submission with an answer not marked yet is exported with the marks made so far, noted and counted in a warning.

Standard library only (csv, json), nbgrader aside: the export runs wherever the grades were copied to.
"""

import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..common import csvsafe
from ..common.errors import GradingError
from ..common.layout import unfinished_marker
from ..reports.feedback import NOT_SHOWN, WHY_NOT_SHOWN
from ..reports.late import penalised
from .folders import IDENTITY, identity
from .lms_input import Person, hidden_tests, number, read_gradebook, read_roster

FORMATS = ("canvas", "moodle", "gradescope")
CSV_FORMATS = ("canvas", "moodle")
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
MISSING = ("blank", "zero", "excused")  # --missing: the grade of a submission that was not graded
MISSING_CELL = {"blank": "", "zero": "0", "excused": "EX"}  # EX: Canvas's excused (Moodle's import has none)
MISSING_WORDS = {"blank": "an empty grade", "zero": "0", "excused": "excused (EX)"}
CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_COLUMNS = ["ID number", "Email address", "Full name"]
FEEDBACK_FOR = "Feedback for "  # Moodle's own name for a feedback column: "Feedback for <grade item>"
SIDE_COLUMNS = ["student", "name", "email", "assignment", "grade", "in_import", "note"]
NOT_MARKED = "written answers not marked yet"
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Export:
    "What an export wrote, who the roster and the gradebook disagree about, and what to tell the instructor."

    written: list = field(default_factory=list)  # paths
    not_in_roster: list = field(default_factory=list)  # graded, but the roster does not know them
    not_graded: list = field(default_factory=list)  # in the roster, no graded submission
    left_out: list = field(default_factory=list)  # students not in the import file (canvas, moodle): see the side file
    notes: int = 0  # notes on grades written to the side file (canvas)
    warnings: list = field(default_factory=list)


# -- What to write ---------------------------------------------------------------------------------------------------


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
NO_EMAIL = "no email address in the roster, which Moodle's import finds the student by"
FORMULA_EMAIL = "the email address starts like a formula, so it is written with a ' in front that Moodle would not find"
NO_CANVAS_ID = (
    "no Canvas user id, SIS id, login or email in the roster, which Canvas's import finds the student by (a name "
    "alone could be another student's)"
)


def importable(everyone, fmt_name):
    """(the people an import file holds, [(person, reason)] left out of it): a row the LMS cannot match to one of
    its students is never written, Moodle stops the whole import at the first such row."""
    kept, left_out = [], []
    for p in everyone:
        reason = None
        if not p.in_roster:
            reason = NOT_IN_ROSTER
        elif fmt_name == "moodle":
            reason = NO_EMAIL if not p.email else FORMULA_EMAIL if csvsafe.safe_cell(p.email) != p.email else None
        elif fmt_name == "canvas" and not (p.lms_id or p.sis_id or p.login_id or p.email):
            reason = NO_CANVAS_ID
        if reason:
            left_out.append((p, reason))
        else:
            kept.append(p)
    return kept, left_out


def points_possible(book, assignment):
    "The tests' points and the written answers'."
    return max(
        [e[assignment]["max_score"] + manual_points(e[assignment]) for e in book.values() if assignment in e] + [0]
    )


def manual_points(entry):
    return entry["manual_points"] if number(entry.get("manual_points")) else 0


def not_marked(entry):
    "Whether an entry has written answers that are not all marked (manual_score is set once every one is)."
    return manual_points(entry) > 0 and entry.get("manual_score") is None


def fmt(value):
    "A score as LMS imports read it: 24 not 24.0, 21.5 as is."
    value = round(float(value), 4)
    return str(int(value)) if value.is_integer() else repr(value)


def graded(entry):
    """Whether autograde graded the submission: not a row it could not read (a note, no tests, no points), nor one
    the grader failed on for a reason of its own ("graded": false: never exported as a 0; autograde retries it)."""
    if entry.get("graded") is False:
        return False
    return "tests" in entry or not entry.get("note") or bool(entry.get("max_score"))


def grade_cell(book, person, assignment, missing):
    "One grade: the final score (after a late penalty), or as --missing says when nothing was graded."
    entry = book.get(person.student, {}).get(assignment)
    if entry is None or not graded(entry):
        return MISSING_CELL[missing]
    return fmt(entry.get("final_score", entry["score"]))


def note_cell(book, person, assignment):
    "What the student reads next to one grade: autograde's note and the late penalty, or that nothing was graded."
    entry = book.get(person.student, {}).get(assignment)
    if entry is None:
        return f"No submission of {assignment} was graded."
    parts = [entry.get("note") or ""]
    if number(entry.get("penalty")) and entry["penalty"] > 0 and number(entry.get("late_by_hours")):
        total = entry["penalty"] + entry.get("final_score", entry["score"])
        parts.append(
            f"handed in {fmt(entry['late_by_hours'])} hours late: {fmt(entry['penalty'])} of {fmt(total)} points taken"
        )
    if not_marked(entry):
        parts.append(NOT_MARKED)
    return "; ".join(part for part in parts if part)


def add_marks(book, grading_dir, report):
    "Put the marks of GRADING_DIR/marking, as they are now, into the gradebook's entries (grading.reports.marking.read_marks)."
    if not (Path(grading_dir) / "marking" / "gradebook.db").is_file():
        return
    try:
        from ..reports.marking import read_marks
    except ImportError as error:
        report.warnings.append(f"the marks of the written answers are those of the last autograde run ({error})")
        return
    for (student, assignment), marks in read_marks(grading_dir, report.warnings.append).items():
        entry = book.get(student, {}).get(assignment)
        if entry is not None and graded(entry) and "manual_points" in entry:
            mark_entry(entry, marks)


def mark_entry(entry, marks):
    "One entry with its marks (a grading.reports.marking.Marks), and its final score again: the late fraction of the total."
    fraction = entry.get("penalty_fraction") if number(entry.get("penalty_fraction")) else 0.0
    penalty, final = penalised(entry["score"] + marks.score, fraction)
    entry.update(manual_score=marks.manual_score, manual_unmarked=marks.unmarked, final_score=final)
    if "penalty" in entry:
        entry["penalty"] = penalty


def unmarked_warning(book, assignments, grading_dir):
    "The warning that counts the exported submissions whose written answers are not all marked, or ''."
    counts = {}
    for entries in book.values():
        for assignment, entry in entries.items():
            if assignment in assignments and graded(entry) and not_marked(entry):
                counts[assignment] = counts.get(assignment, 0) + 1
    if not counts:
        return ""
    total = sum(counts.values())
    listed = ", ".join(f"{a}: {n}" for a, n in sorted(counts.items()))
    return (
        f"{total} submission{'' if total == 1 else 's'} with written answers not all marked yet ({listed}), exported "
        f"with the marks made so far and the note '{NOT_MARKED}'; mark them in formgrader "
        f"({Path(grading_dir) / 'marking'}, see grading/README.md) and export again"
    )


def write_atomic(path, text):
    "Write a file so a reader (or an LMS upload) never sees half of it."
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


def csv_text(rows):
    "CSV text whose cells a spreadsheet cannot run as formulas (grading.common.csvsafe)."
    out = io.StringIO()
    csvsafe.writer(out, lineterminator="\r\n").writerows(rows)
    return out.getvalue()


def side_path(out):
    "The side file of an import file: canvas.csv -> canvas.notes.csv."
    out = Path(out)
    return out.with_name(f"{out.stem}.notes.csv")


# -- The formats -----------------------------------------------------------------------------------------------------


def write_canvas(book, people, assignments, out, missing):
    rows = [CANVAS_COLUMNS + assignments]
    rows.append(["Points Possible", "", "", "", ""] + [fmt(points_possible(book, a)) for a in assignments])
    for p in people:
        login = p.login_id or p.email
        rows.append(
            [p.name or p.student, p.lms_id, p.sis_id, login, p.section]
            + [grade_cell(book, p, a, missing) for a in assignments]
        )
    write_atomic(out, csv_text(rows))
    return [Path(out)]


def write_moodle(book, people, assignments, out, missing):
    "Each notebook's grade, then its note in a column the import maps to 'Feedback for <grade item>'."
    rows = [MOODLE_COLUMNS + [c for a in assignments for c in (a, f"{FEEDBACK_FOR}{a}")]]
    for p in people:
        cells = [c for a in assignments for c in (grade_cell(book, p, a, missing), note_cell(book, p, a))]
        rows.append([p.sis_id, p.email, p.name or p.student] + cells)
    write_atomic(out, csv_text(rows))
    return [Path(out)]


def side_rows(book, kept, left_out, assignments, fmt_name, missing):
    """The rows of OUT's side file (side_path): every grade left out of the import file with the reason, and, for
    Canvas, whose import has no comment column, every note on a grade that is in it."""
    rows = []
    for p, reason in left_out:
        for a in assignments:
            note = f"{reason}. {note_cell(book, p, a)}".strip()
            rows.append([p.student, p.name, p.email, a, grade_cell(book, p, a, missing), "no", note])
    for p in kept if fmt_name == "canvas" else []:
        for a in assignments:
            note = note_cell(book, p, a)
            if note:
                rows.append([p.student, p.name, p.email, a, grade_cell(book, p, a, missing), "yes", note])
    return rows


def write_side_file(rows, out):
    "Write the side file of OUT, or remove an earlier one when there is nothing to say."
    path = side_path(out)
    if not rows:
        path.unlink(missing_ok=True)
        return []
    write_atomic(path, csv_text([SIDE_COLUMNS] + rows))
    return [path]


def test_output(message: str) -> str:
    """A test's message as Gradescope shows it, in a box of its own: a hidden test that does not quote an error says
    why in its box (the page says it once, above the tests), not in the submission's output, shown before the hidden
    tests are published."""
    return f"{message}. {WHY_NOT_SHOWN}" if NOT_SHOWN in message else message


def gradescope_results(person, assignment, entry, hidden, visibility):
    "One Gradescope results.json, as a dict: the total, and each test with its visibility."
    extra = {"student": person.student, "assignment": assignment}
    extra.update({k: getattr(person, k) for k in ("email", "lms_id", "sis_id") if getattr(person, k)})
    if entry is None or entry.get("graded") is False:
        return {
            "score": 0.0,
            "output": f"No submission of {assignment} was graded." + (f" {entry['note']}" if entry else ""),
            "tests": [],
            "extra_data": extra,
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
    return {
        "score": float(entry.get("final_score", entry["score"])),
        "output": entry.get("note") or "",
        "tests": listed,
        "extra_data": extra,
    }


def write_gradescope(book, people, assignments, out, hidden, visibility):
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise GradingError(f"{out}: is a file; for --format gradescope, --out is a folder (one results.json each).")
    written = []
    for assignment in assignments:
        for p in people:
            entry = book.get(p.student, {}).get(assignment)
            results = gradescope_results(p, assignment, entry, hidden.get(assignment), visibility)
            path = out / assignment / p.student / "results.json"
            write_atomic(path, json.dumps(results, indent=1) + "\n")
            written.append(path)
    return written


# -- The command -----------------------------------------------------------------------------------------------------


def check_options(fmt_name, missing, hidden_visibility, roster):
    "Refuse an export that cannot be done, before anything is read or written."
    if fmt_name not in FORMATS:
        raise GradingError(f"unknown format {fmt_name!r}; choose one of {', '.join(FORMATS)}.")
    if hidden_visibility not in VISIBILITIES:
        raise GradingError(f"unknown visibility {hidden_visibility!r}; choose one of {', '.join(VISIBILITIES)}.")
    if missing not in MISSING:
        raise GradingError(f"--missing must be one of {', '.join(MISSING)}, not {missing!r}.")
    if fmt_name == "moodle" and missing == "excused":
        raise GradingError(
            "--missing excused: Moodle's grade import has no excused grade (a cell is a number, or empty for none); "
            "use --missing blank or zero, and exclude those grades in Moodle's gradebook."
        )
    if fmt_name in CSV_FORMATS and roster is None:
        raise GradingError(
            f"--format {fmt_name} needs --roster ROSTER.csv (header student,name,email): the LMS finds each student "
            "by an id or an email the gradebook does not have. For a table by submission folder, use grades.csv."
        )


def choose_assignments(book, hidden, only, report):
    "The assignment columns: all, or those of --assignment; a gradebook key that is no assignment is reported."
    assignments = assignments_of(book, hidden)
    if only:
        unknown = [a for a in only if a not in assignments]
        if unknown:
            raise GradingError(f"assignment {unknown[0]!r} is not in the gradebook; it has {', '.join(assignments)}.")
        return [a for a in assignments if a in only]
    for student, entries in sorted(book.items()):
        for key, entry in sorted(entries.items()):
            if key not in assignments:
                report.warnings.append(f"{student}/{key}: not an assignment, left out of the export: {entry['note']}")
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
        why = (
            "Moodle's import stops at the first row it cannot match to a student"
            if fmt_name == "moodle"
            else "Canvas's import cannot tell who they are"
        )
        lines.append(
            f"left out of {out}, since {why} (the reasons and the grades are in {side}): {', '.join(unmatchable)}"
        )
    if report.not_graded:
        lines.append(f"in the roster but no graded submission (exported as {blank}): {', '.join(report.not_graded)}")
    for student, entries in sorted(book.items()):
        for assignment, entry in sorted(entries.items()):
            if assignment in assignments and not graded(entry) and student not in report.left_out:
                lines.append(f"{student}/{assignment}: not graded, exported as {blank}: {entry['note']}")
    if report.notes:
        lines.append(f"Canvas's grade import has no comment column: the notes on {report.notes} grades are in {side}")
    if gradescope and missing != "blank":
        lines.append("--missing is for canvas and moodle; a missing submission's results.json has score 0")
    return lines


def check_one_line_each(people, roster):
    "Refuse a roster in which two students share an LMS id, SIS id or email: the import would mix up their grades."
    seen = {}
    for person in people:
        for column, label, value in zip(IDENTITY, ("LMS id", "SIS id", "email"), identity(person), strict=True):
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
    grading_dir,
    fmt_name,
    out,
    *,
    roster=None,
    notebooks_dir=None,
    only=None,
    missing="blank",
    hidden_visibility="after_published",
):
    """Write the gradebook of GRADING_DIR in the layout of an LMS.

    Args:
        grading_dir: the --out folder of autograde (gradebook.json, results/).
        fmt_name: canvas, moodle or gradescope.
        out: the CSV file to write (its side file goes next to it, see side_path); for gradescope, a folder.
        roster: the roster CSV (see read_roster); canvas and moodle need one.
        notebooks_dir: the instructor's notebooks, which tell hidden tests from visible ones (default notebooks/).
        only: the assignments to export (default all).
        missing: the grade of a submission that was not graded (none, or unreadable): blank, zero or excused.
        hidden_visibility: the Gradescope visibility of hidden tests.

    Returns:
        An Export: the files written, who was left out of the import file, and the warnings to show.

    Raises:
        GradingError: an unknown format, visibility or --missing, excused for Moodle, no roster for a CSV format, a
        missing or malformed gradebook or roster, an unknown --assignment.
    """
    check_options(fmt_name, missing, hidden_visibility, roster)
    book = read_gradebook(grading_dir)
    check_finished(grading_dir)
    people = read_roster(roster) if roster is not None else None
    check_one_line_each(people or [], roster)
    notebooks_dir = Path(notebooks_dir) if notebooks_dir else REPO / "notebooks"
    if not notebooks_dir.is_dir():
        raise GradingError(f"{notebooks_dir}: no such folder of instructor notebooks.")
    hidden = hidden_tests(notebooks_dir)
    report = Export()
    add_marks(book, grading_dir, report)
    assignments = choose_assignments(book, hidden, only, report)
    everyone, report.not_in_roster, report.not_graded = people_of(book, people)
    report.warnings += [w for w in [unmarked_warning(book, assignments, grading_dir)] if w]
    if fmt_name == "gradescope":
        if people is None:
            report.warnings.append("no --roster: the results carry only the submission folder name")
        unknown = sorted(a for a in assignments if a not in hidden)
        if unknown:
            report.warnings.append(
                f"{', '.join(unknown)}: no instructor notebook in {notebooks_dir}, so every test is given "
                f"visibility {hidden_visibility}"
            )
        report.written = write_gradescope(book, everyone, assignments, out, hidden, hidden_visibility)
    else:
        kept, left_out = importable(everyone, fmt_name)
        report.left_out = [p.student for p, _ in left_out]
        write = write_canvas if fmt_name == "canvas" else write_moodle
        report.written = write(book, kept, assignments, out, missing)
        rows = side_rows(book, kept, left_out, assignments, fmt_name, missing)
        report.notes = sum(row[5] == "yes" for row in rows)
        report.written += write_side_file(rows, out)
    report.warnings += disagreements(book, report, assignments, fmt_name, out, missing)
    return report
