"""What `python -m grading export-grades` reads: the gradebook autograde wrote, the roster, and which tests are hidden.

Kept apart from the writing (grading.lms.lms) so each side stays readable: here every problem with the input (a missing
or malformed gradebook, a roster line with the wrong number of fields, a student listed twice) becomes a one-line
GradingError that names the file and the line, before anything is written.

Standard library only (csv, json): the export runs wherever the grades were copied to.
"""

import csv
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..common import csvsafe
from ..common.errors import GradingError

ROSTER_COLUMNS = ("student", "name", "email")
ROSTER_OPTIONAL = ("lms_id", "sis_id", "login_id", "section", "moodle_participant")
PARTICIPANT = re.compile(r"([^\s=]+)=(\d+)")  # moodle_participant: `<assignment>=<id>` pairs, separated by spaces
HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"  # as in grading.common.notebooks, which needs nbformat; this module does not


@dataclass
class Person:
    "A student as the LMS knows them (a roster line), or only by the submission folder (in_roster False)."

    student: str  # the submission folder name
    name: str = ""
    email: str = ""
    lms_id: str = ""
    sis_id: str = ""
    login_id: str = ""
    section: str = ""
    moodle_participant: str = ""  # Moodle's participant id in each assignment: "04_elementwise=1234 05_...=1301"
    in_roster: bool = False

    def participant(self, assignment: str) -> str:
        "Moodle's participant id of this student in `assignment` (collect keeps it from the download), or ''."
        return participants(self.moodle_participant).get(assignment, "")


def participants(text: str) -> dict:
    "{assignment: participant id} of a moodle_participant cell."
    return dict(PARTICIPANT.findall(text))


def read_gradebook(grading_dir):
    "{student: {assignment: entry}} from GRADING_DIR/gradebook.json, checked for the shape autograde writes."
    grading_dir = Path(grading_dir)
    if not grading_dir.is_dir():
        raise GradingError(f"{grading_dir}: no such folder; give the --out folder of `python -m grading autograde`.")
    path = grading_dir / "gradebook.json"
    if not path.is_file():
        raise GradingError(
            f"{path}: no gradebook here; run `python -m grading autograde SUBMISSIONS --out {grading_dir}` first."
        )
    try:
        book = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise GradingError(f"{path}: not a readable gradebook ({error}).") from None
    if not isinstance(book, dict):
        raise GradingError(f"{path}: not a gradebook (expected an object of students).")
    for student, assignments in book.items():
        if not isinstance(assignments, dict):
            raise GradingError(f"{path}: student {student!r}: expected an object of assignments.")
        for assignment, entry in assignments.items():
            if not (isinstance(entry, dict) and number(entry.get("score")) and number(entry.get("max_score"))):
                raise GradingError(f"{path}: {student}/{assignment}: expected numbers score and max_score.")
            if "tests" not in entry:
                tests = load_result_tests(grading_dir, student, assignment)
                if tests is not None:
                    entry["tests"] = tests
    return book


def number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def load_result_tests(grading_dir, student, assignment):
    "The per-test scores of GRADING_DIR/results/<student>/<assignment>.json, or None."
    try:
        result = json.loads((Path(grading_dir) / "results" / student / f"{assignment}.json").read_text())
    except (OSError, ValueError):
        return None
    tests = result.get("tests") if isinstance(result, dict) else None
    return tests if isinstance(tests, dict) else None


def read_roster(path):
    "[Person] from a roster CSV; a malformed one is refused with the line that is wrong."
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark (Excel writes one) is fine
    except FileNotFoundError:
        raise GradingError(f"{path}: no such roster file.") from None
    except (OSError, UnicodeDecodeError) as error:
        raise GradingError(f"{path}: cannot read the roster ({error}); save it as UTF-8 CSV.") from None
    rows = list(csv.reader(io.StringIO(text)))
    expected = ",".join(ROSTER_COLUMNS) + " (optional: " + ",".join(ROSTER_OPTIONAL) + ")"
    if not rows:
        raise GradingError(f"{path}: the roster is empty; expected a header line {expected}.")
    header = [h.strip().lower() for h in rows[0]]
    missing = [c for c in ROSTER_COLUMNS if c not in header]
    unknown = [h for h in header if h not in ROSTER_COLUMNS + ROSTER_OPTIONAL]
    if missing or unknown or len(set(header)) != len(header):
        problem = (
            f"missing {', '.join(missing)}"
            if missing
            else f"unknown column {unknown[0]!r}"
            if unknown
            else "a column appears twice"
        )
        raise GradingError(
            f"{path} line 1: the header must be {expected}; {problem}. `collect` writes such a roster (SUBMISSIONS/"
            "roster.csv); an LMS's own gradebook export is not one."
        )
    people, seen = [], {}
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue  # blank lines are allowed
        if len(row) != len(header):
            raise GradingError(f"{path} line {line}: {len(row)} fields, the header has {len(header)}.")
        values = dict.fromkeys(ROSTER_OPTIONAL, "")
        values.update({h: csvsafe.plain_cell(cell.strip()) for h, cell in zip(header, row, strict=True)})
        if not values["student"]:
            raise GradingError(f"{path} line {line}: the student id (the submission folder name) is empty.")
        if "/" in values["student"] or "\\" in values["student"]:
            raise GradingError(f"{path} line {line}: student id {values['student']!r} is not a folder name.")
        if values["email"] and "@" not in values["email"]:
            raise GradingError(f"{path} line {line}: {values['email']!r} is not an email address.")
        if " ".join(f"{a}={n}" for a, n in participants(values["moodle_participant"]).items()) != " ".join(
            values["moodle_participant"].split()
        ):
            raise GradingError(
                f"{path} line {line}: moodle_participant {values['moodle_participant']!r} is not "
                "<assignment>=<participant id> pairs separated by spaces (collect writes them)."
            )
        if values["student"] in seen:
            raise GradingError(
                f"{path} line {line}: student {values['student']!r} is already on line {seen[values['student']]}."
            )
        seen[values["student"]] = line
        people.append(Person(**values, in_roster=True))
    return people


def hidden_tests(notebooks_dir):
    "{assignment: set of test ids whose cell holds hidden tests}, from the instructor's notebooks (plain JSON)."
    found = {}
    for path in sorted(Path(notebooks_dir).glob("*.ipynb")):
        try:
            cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
        except (OSError, UnicodeDecodeError, ValueError, AttributeError):
            continue
        tests = {}
        for cell in cells:
            meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell, dict) else {}
            if meta.get("grade") and meta.get("grade_id") and cell.get("cell_type") == "code":  # not written answers
                source = cell.get("source", "")
                tests[meta["grade_id"]] = HIDDEN_BEGIN in ("".join(source) if isinstance(source, list) else source)
        found[path.stem] = tests
    return found
