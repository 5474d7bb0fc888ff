"""Moodle's two imports, written as Moodle's code reads them (moodle/moodle, read for this module):

- `moodle`: Grades > Import > CSV file (grade/import/csv/classes/load_data.php). The instructor maps one column to a
  user field (username, ID number or email, searched across the whole site, not the course); the import keeps the
  previous row's student when that column is blank (or "0", which PHP's empty() calls blank), so a blank identifier
  gives one student's grade to another. It stops at the first value it cannot find, and an empty grade or feedback
  cell erases what Moodle holds (so a feedback cell is never empty). So one identifier column is written, the one
  most roster lines have, first (the mapping form preselects the first column), with no blank in it; a line without
  it is left out and said.
- `moodle-worksheet`: an assignment's offline grading worksheet (mod/assign/feedback/offline/importgradeslib.php and
  locallib.php). Rows are found by "Identifier" = "Participant <id>", the participant id of the assignment's download
  (collect keeps it in roster.csv), so no email is needed. The importer needs the columns Identifier, Grade and
  "Last modified (grade)"; it skips an empty grade, and a grade above the assignment's maximum, without a word; a
  "Feedback comments" cell replaces the feedback, an empty one too. One assignment per worksheet.

Moodle shows both imports' feedback as HTML (the grade import stores it as FORMAT_MOODLE, the worksheet's comments
plugin as FORMAT_HTML), so a note is written HTML-escaped: "(<exercise>, line 3)" in an error a student's code raised
reads as written, instead of losing "<exercise>" as a tag, and no text of a student's is markup in the gradebook.
"""

import html
from datetime import UTC, datetime

from ..common.csvsafe import identifier_cell
from ..common.errors import GradingError
from ..intake.roster import Person
from ..intake.worksheet import COLUMNS, PARTICIPANT
from .entries import Grades, fmt

FEEDBACK_FOR = "Feedback for "  # Moodle's own name for a feedback column: "Feedback for <grade item>"
IDENTIFIERS = (  # (column header = Moodle's "Map to" label, roster column, Moodle's field), preferred first
    ("Username", "login_id", "username"),  # unique on a Moodle site
    ("ID number", "sis_id", "idnumber"),
    ("Email address", "email", "email"),  # Moodle may let two accounts of the site share one
)
WORKSHEET = [
    *COLUMNS,  # who: the columns collect --worksheet reads of Moodle's own worksheet
    "Status",
    "Grade",
    "Maximum Grade",
    "Grade can be changed",
    "Last modified (submission)",
    "Last modified (grade)",
    "Feedback comments",
]
GRADE_POINT_MAX = (
    100  # the grade import refuses the whole file at a grade above it, unless the site's setting says more
)
OVER_100 = (
    "Moodle's grade import refuses the whole file at a grade above 100 unless the site allows more (Site "
    "administration > Grades > General settings: Unlimited grades, Grade point maximum): ask for it, or export with "
    "--scale-to 100"
)


def usable(value: str) -> str | None:
    "An identifier Moodle's import can look up: not blank, not '0' (PHP's empty()), and safe in a spreadsheet."
    value = value.strip()
    if value in ("", "0"):
        return None
    return identifier_cell(value)


def choose_identifier(people: list[Person]) -> tuple[str, str]:
    "The IDENTIFIERS entry the most roster lines have a usable value of (ties: the first listed)."
    counts = [sum(usable(getattr(p, column)) is not None for p in people) for _, column, _ in IDENTIFIERS]
    best = max(range(len(IDENTIFIERS)), key=lambda i: (counts[i], -i))
    if counts[best] == 0:
        raise GradingError(
            "no roster line has a username (login_id), ID number (sis_id) or email that Moodle's grade import can "
            "find the student by: use --format moodle-worksheet, which matches the participant ids that collect "
            "keeps from Moodle's download, or fill one of those roster columns."
        )
    return IDENTIFIERS[best]


def missing_identifier(person: Person, identifier: tuple[str, str]) -> str:
    "Why a roster line is left out of the Moodle import, or '' when it is not."
    label, column, _ = identifier
    if usable(getattr(person, column)) is not None:
        return ""
    if getattr(person, column).strip() not in ("", "0"):
        return f"its {label} ({column}) starts like a spreadsheet formula and cannot be written safely"
    return (
        f"no {label} ({column}) in the roster, the column Moodle's import maps by in this file (a blank one would "
        "make Moodle give this row's grade to the student of the row above)"
    )


def grade_import_rows(
    grades: Grades, people: list[Person], assignments: list[str], identifier: tuple[str, str]
) -> list[list[str]]:
    "The rows of Moodle's grade import: the identifier, the name, then each assignment's grade and feedback."
    label, column, _ = identifier
    rows = [[label, "Full name"] + [c for a in assignments for c in (a, f"{FEEDBACK_FOR}{a}")]]
    for p in people:
        cells = [(grades.cell(p, a), shown_as_written(grades.feedback(p, a))) for a in assignments]
        if all(grade is None for grade, _ in cells):
            continue  # nothing graded, --missing keep: no row, so Moodle keeps what it has
        rows.append([usable(getattr(p, column)), p.name or p.student] + [c for pair in cells for c in pair])
    return rows


def worksheet_rows(grades: Grades, people: list[Person], assignment: str, graded_at: float) -> list[list[str]]:
    "The rows of one assignment's offline grading worksheet; a student with no grade cell has no row."
    when = datetime.fromtimestamp(graded_at, UTC).isoformat(timespec="seconds")  # read by PHP's strtotime
    rows = [list(WORKSHEET)]
    for p in people:
        grade = grades.cell(p, assignment)
        if grade is None:
            continue
        entry = grades.entry(p, assignment) or {}
        submitted = entry.get("submitted_at") or ""
        identifier = f"{PARTICIPANT}{p.participant(assignment)}"
        maximum = fmt(grades.maximum(assignment))
        rows.append(
            [identifier, p.name or p.student, p.email, "", grade, maximum, "Yes", submitted, when]
            + [shown_as_written(grades.feedback(p, assignment))]
        )
    return rows


def shown_as_written(note: str) -> str:
    "A note as Moodle's HTML feedback shows it as it is written (see the module's docstring)."
    return html.escape(note, quote=False)


def map_by_line(identifier: tuple[str, str]) -> str:
    label, _, _ = identifier
    return (
        f"Moodle's import (Grades > Import > CSV file): map from '{label}' to '{label}'; Moodle looks it up across "
        "the whole site, not only this course"
    )
