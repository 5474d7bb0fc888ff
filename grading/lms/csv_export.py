"""The CSV import files of export-grades (canvas, moodle, moodle-worksheet) and their side file: who can be a row of
the file, the rows, and how to import it. A row the LMS could match to the wrong student, or to nobody, is never
written: it goes to the side file next to OUT (canvas.csv: canvas.notes.csv) with the reason."""

import io
from dataclasses import dataclass, field
from pathlib import Path

from ..common import csvsafe
from ..common.errors import GradingError
from ..common.notebooks import write_atomic
from ..intake.roster import Person
from . import canvas, moodle
from .entries import Grades, fmt
from .exported import Export

SIDE_COLUMNS = ["student", "name", "email", "assignment", "grade", "in_import", "note"]
BOM = "\ufeff"  # Excel reads a CSV without it in the machine's code page; Canvas's and Moodle's readers skip it


@dataclass
class Options:
    "The options of one CSV export."

    fmt_name: str
    missing: str = "keep"
    scale_to: float | None = None
    canvas_ids: dict[str, str] = field(default_factory=dict)  # {assignment: Canvas assignment id}


NOT_IN_ROSTER = "not in the roster: add them (student,name,email) and export again"


def reason_left_out(person: Person, fmt_name: str, assignments: list[str], identifier: tuple[str, str] | None) -> str:
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


def importable(
    grades: Grades,
    everyone: list[Person],
    fmt_name: str,
    assignments: list[str],
    identifier: tuple[str, str] | None = None,
) -> tuple[list[Person], list[tuple[Person, str]]]:
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


def check_nothing_erased(grades: Grades, people: list[Person], assignments: list[str]) -> None:
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


def csv_text(rows: list[list[str]]) -> str:
    "CSV text, with a byte-order mark, whose cells a spreadsheet cannot run as formulas (grading.common.csvsafe)."
    out = io.StringIO()
    csvsafe.writer(out, lineterminator="\r\n").writerows(rows)
    return BOM + out.getvalue()


def side_path(out: str | Path) -> Path:
    "The side file of an import file: canvas.csv -> canvas.notes.csv."
    out = Path(out)
    return out.with_name(f"{out.stem}.notes.csv")


def import_rows(
    grades: Grades,
    people: list[Person],
    assignments: list[str],
    options: Options,
    identifier: tuple[str, str] | None,
    graded_at: float,
) -> list[list[str]]:
    "The rows of the import file of options.fmt_name."
    if options.fmt_name == "canvas":
        return canvas.rows(grades, people, assignments, options.canvas_ids)
    if options.fmt_name == "moodle":
        return moodle.grade_import_rows(grades, people, assignments, identifier or moodle.IDENTIFIERS[0])
    return moodle.worksheet_rows(grades, people, assignments[0], graded_at)


def howto(grades: Grades, assignments: list[str], options: Options, identifier: tuple[str, str] | None) -> list[str]:
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


def side_rows(
    grades: Grades, kept: list[Person], left_out: list[tuple[Person, str]], assignments: list[str], fmt_name: str
) -> list[list[str]]:
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


def write_side_file(rows: list[list[str]], out: str | Path) -> list[Path]:
    "Write the side file of OUT, or remove an earlier one when there is nothing to say."
    path = side_path(out)
    if not rows:
        path.unlink(missing_ok=True)
        return []
    write_atomic(path, csv_text([SIDE_COLUMNS] + rows))
    return [path]


def write_csv_export(
    grades: Grades,
    everyone: list[Person],
    assignments: list[str],
    out: str | Path,
    *,
    options: Options,
    report: Export,
    graded_at: float,
) -> None:
    "Check, then write, the import file and its side file; fill the report's left_out, notes and howto."
    with_grades = [p for p in everyone if p.in_roster and any(grades.cell(p, a) is not None for a in assignments)]
    identifier = moodle.choose_identifier(with_grades) if options.fmt_name == "moodle" and with_grades else None
    kept, left_out = importable(grades, everyone, options.fmt_name, assignments, identifier)
    check_nothing_erased(grades, kept, assignments)
    rows = import_rows(grades, kept, assignments, options, identifier, graded_at)
    if len(rows) <= (2 if options.fmt_name == "canvas" else 1):
        by_reason = {}  # one reason, said once, with the students it holds for (an instructor read it 7 times)
        for person, why in left_out:
            by_reason.setdefault(why, []).append(person.student)
        reasons = "; ".join(
            f"{', '.join(students[:5])}{f' and {len(students) - 5} more' if len(students) > 5 else ''}: {why}"
            for why, students in list(by_reason.items())[:3]
        )
        raise GradingError(
            f"no grade to write to {out}: no student of the roster has a graded submission the LMS could match "
            f"({len(left_out)} left out: {reasons or 'none'}); nothing was written."
        )
    report.left_out = [p.student for p, _ in left_out]
    write_atomic(out, csv_text(rows))
    report.written = [Path(out)]
    side = side_rows(grades, kept, left_out, assignments, options.fmt_name)
    report.notes = sum(row[5] == "yes" for row in side)
    report.written += write_side_file(side, out)
    report.howto = howto(grades, assignments, options, identifier)
