"""Canvas's gradebook import, written as Canvas's code reads it (instructure/canvas-lms app/models/gradebook_importer.rb,
read for this module).

The header is Student, ID, SIS User ID, SIS Login ID, Section, then the assignments; the row after it is "Points
Possible". Canvas finds a row's student by the ID column (its user id), then SIS User ID, then SIS Login ID (the
login), then the exact name or sortable name, else shows an unknown student; never by email. So only those are
written, never the email as a login. An assignment column is matched by the id in `Name (ID)`, else by a published
assignment of exactly that title, else Canvas makes a new assignment: the id comes from --canvas-assignment or from
Canvas's own gradebook export (--canvas-export). An empty cell against a score Canvas holds erases it ("24 → blank").
"""

import csv
import io
import re
from pathlib import Path

from ..common.csvsafe import identifier_cell, plain_cell
from ..common.errors import GradingError
from ..intake.roster import Person
from .entries import Grades, fmt

COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
IDS = ("lms_id", "sis_id", "login_id")  # the roster's columns for Canvas's ID, SIS User ID, SIS Login ID
TITLE_AND_ID = re.compile(r"(?P<title>.*\S)\s*\((?P<id>\d+)\)")  # as Canvas's Assignment.title_and_id reads it


def assignment_ids(given: list[str] | None, export: str | Path | None) -> dict[str, str]:
    "{assignment: Canvas assignment id} from --canvas-assignment NAME=ID and from Canvas's gradebook export."
    ids = {}
    if export is not None:
        ids.update(ids_of_export(Path(export)))
    for item in given or []:
        name, _, number = item.partition("=")
        if not name or not number.isdigit():
            raise GradingError(
                f"--canvas-assignment {item!r}: expected NAME=ID, the assignment's number in its Canvas address "
                "(…/assignments/1234): --canvas-assignment 04_elementwise=1234."
            )
        ids[name] = number
    return ids


def ids_of_export(path: Path) -> dict[str, str]:
    "{title: id} of the assignment columns (`Title (id)`) of Canvas's own gradebook export."
    try:
        header = next(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"))), [])
    except (OSError, UnicodeDecodeError) as error:
        raise GradingError(
            f"--canvas-export {path}: cannot read it ({error}); pass Canvas's gradebook export."
        ) from None
    if header[:2] != ["Student", "ID"]:
        raise GradingError(
            f"--canvas-export {path}: not Canvas's gradebook export (its header starts Student,ID); export it in "
            "Canvas's Grades > Export > Export Entire Gradebook."
        )
    return {m["title"]: m["id"] for cell in header[2:] if (m := TITLE_AND_ID.fullmatch(plain_cell(cell)))}


def header_of(assignment: str, ids: dict[str, str]) -> str:
    return f"{assignment} ({ids[assignment]})" if assignment in ids else assignment


def unusable_id(person: Person) -> str:
    "Why a roster line cannot be written for Canvas, or '': no id Canvas matches by, or one not safe to write."
    values = [getattr(person, column) for column in IDS]
    if not any(values):
        return (
            "no Canvas user id, SIS user id or login in the roster (lms_id, sis_id, login_id), which Canvas's import "
            "finds the student by (never by email; a name alone could be another student's): copy them from the ID, "
            "SIS User ID and SIS Login ID columns of Canvas's gradebook export"
        )
    if any(value and identifier_cell(value) is None for value in values):
        return "an id of the roster starts like a spreadsheet formula and cannot be written safely"
    return ""


def rows(grades: Grades, people: list[Person], assignments: list[str], ids: dict[str, str]) -> list[list[str]]:
    "The rows of the import; a student with no grade cell (--missing keep) has no row, so Canvas keeps theirs."
    header = COLUMNS + [header_of(a, ids) for a in assignments]
    result = [header, ["Points Possible", "", "", "", ""] + [fmt(grades.maximum(a)) for a in assignments]]
    for p in people:
        cells = [grades.cell(p, a) for a in assignments]
        if all(cell is None for cell in cells):
            continue
        known = [identifier_cell(getattr(p, column)) for column in IDS]
        result.append([p.name or p.student, *known, p.section] + cells)
    return result


def unmatched_titles(assignments: list[str], ids: dict[str, str]) -> list[str]:
    return [a for a in assignments if a not in ids]
