"""What Canvas's and Moodle's importers do with a file, row by row, written after their code so that a test checks an
export the way the platform reads it:

- moodle_grade_import: moodle/moodle grade/import/csv/classes/load_data.php, prepare_import_grade_data and
  map_user_data_with_value (the user is looked up across the site; a blank or "0" identifier keeps the previous
  row's student; an unknown one stops the whole import; an empty or "-" grade is "no grade", which erases).
- moodle_worksheet_import: moodle/moodle mod/assign/feedback/offline/importgradeslib.php (next) and locallib.php
  (process_import_grades): "Participant <id>" rows, skips of an empty grade, an unchanged one, one above the maximum
  and one modified in Moodle after the worksheet's "Last modified (grade)"; feedback replaced when it differs.
- canvas_import: instructure/canvas-lms app/models/gradebook_importer.rb (process_student, parse_assignments,
  no_change_to_value?): the student by ID, then SIS User ID, then SIS Login ID, then exact name or sortable name.
"""

import csv
import html
import io
import re
from dataclasses import dataclass, field
from datetime import datetime


def read_rows(path):
    "The rows as the platforms read them: a leading byte-order mark dropped (Moodle's csv_import_reader trims it)."
    text = path.read_bytes().decode("utf-8")
    return list(csv.reader(io.StringIO(text.removeprefix("\ufeff"))))


def moodle_shows(feedback):
    "The text a reader sees of feedback Moodle stores as HTML: its tags are markup, its entities characters."
    return html.unescape(re.sub(r"<[^>]*>", "", feedback))


class ImportStopped(Exception):
    "The importer refuses the whole file (Moodle's cleanup_import)."


def php_empty(value):
    return value in ("", "0")


def moodle_grade_import(rows, map_from, map_to, users, items, feedback_of=None):
    """{user id: {item: grade or None}} and {user id: {item: feedback}} that Moodle's CSV grade import stores.

    map_from: the header of the column mapped to a user field; map_to: 'username', 'idnumber' or 'email';
    users: [{'id':…, 'username':…, 'idnumber':…, 'email':…}] of the whole site; items: {column header: grade item};
    feedback_of: {column header: grade item} of the feedback columns."""
    header = [h.strip() for h in rows[0]]
    key = header.index(map_from)
    grades, feedback, student = {}, {}, None
    for line in rows[1:]:
        if len(line) <= 1:
            continue
        new_grades, new_feedback = {}, {}
        for index, value in enumerate(line):
            value = value.strip()
            if index == key:
                if not php_empty(value):  # "Skip invalid row with blank user field": the student stays the last one
                    found = [u for u in users if u[map_to] == value]
                    if not found:
                        raise ImportStopped(f"user mapping error: {map_to} {value!r}")
                    student = found[0]["id"]
            elif header[index] in items:
                new_grades[items[header[index]]] = None if value in ("", "-") else float(value)
            elif feedback_of and header[index] in feedback_of:
                new_feedback[feedback_of[header[index]]] = value
        if student is None:
            raise ImportStopped("user not found")
        grades.setdefault(student, {}).update(new_grades)
        feedback.setdefault(student, {}).update(new_feedback)
    return grades, feedback


@dataclass
class Assign:
    "One Moodle assignment: its maximum grade, participant ids, and the grades and feedback it holds."

    maximum: float
    participants: dict  # {participant id: user id}
    grades: dict = field(default_factory=dict)  # {user id: (grade, time modified)}
    feedback: dict = field(default_factory=dict)  # {user id: text}


def moodle_worksheet_import(rows, assign, ignore_modified=False):
    "Apply an offline grading worksheet to `assign` as Moodle does; return {user id: what changed}."
    header = rows[0]
    for needed in ("Identifier", "Grade", "Last modified (grade)"):
        if needed not in header:
            raise ImportStopped(f"invalid grade import: no {needed} column")
    ident, grade_at, modified_at = (header.index(h) for h in ("Identifier", "Grade", "Last modified (grade)"))
    feedback_at = header.index("Feedback comments") if "Feedback comments" in header else 0  # 0: empty() in PHP
    changed = {}
    for record in rows[1:]:
        user = assign.participants.get(record[ident][len("Participant ") :])
        if user is None:
            continue
        modified = datetime.fromisoformat(record[modified_at]).timestamp() if record[modified_at] else 0
        old = assign.grades.get(user)
        stale = old is not None and old[1] > modified + 60
        value = float(record[grade_at]) if record[grade_at].strip() else None
        skip = (
            (old is not None and old[0] == value)
            or value is None
            or value < 0
            or (not ignore_modified and stale)
            or value > assign.maximum
        )
        if not skip:
            assign.grades[user] = (value, modified)
            changed.setdefault(user, []).append("grade")
        if (ignore_modified or not stale) and feedback_at:
            if record[feedback_at] != assign.feedback.get(user, ""):
                assign.feedback[user] = record[feedback_at]
                changed.setdefault(user, []).append("feedback")
    return changed


TITLE_AND_ID = re.compile(r"(.*)\s\((\d+)\)$")


def canvas_import(rows, students, assignments, scores):
    """[(student id or 'new', assignment id or 'new', current, new)] for every grade the import would change.

    students: [{'id', 'name', 'sortable_name', 'sis_user_id', 'login_id'}] of the course; assignments: {id: title} of
    its published assignments; scores: {(student id, assignment id): current score as text}."""
    header = rows[0]
    if not (header[0].startswith("Student") and header[1] == "ID" and "Section" in header[4]):
        raise ImportStopped("Invalid header row")
    if header[2:4] != ["SIS User ID", "SIS Login ID"]:
        raise ImportStopped("expected SIS User ID, SIS Login ID")
    columns = []
    for name in header[5:]:
        match = TITLE_AND_ID.match(name)
        found = int(match[2]) if match and int(match[2]) in assignments else None
        found = found or next((i for i, title in assignments.items() if title == name), "new")
        columns.append(found)
    changes = []
    for row in rows[1:]:
        if row[0].startswith("Points Possible"):
            continue
        student = match_canvas_student(row, students)
        for assignment, new in zip(columns, row[5:], strict=True):
            current = scores.get((student, assignment), "")
            if new.strip() != current and not (new.strip() in ("", "-") and current in ("", "-")):
                changes.append((student, assignment, current, new.strip()))
    return changes


def match_canvas_student(row, students):
    "The student Canvas's process_student finds for a row: by ID, SIS User ID, SIS Login ID, then name; else 'new'."
    for column, key in ((1, "id"), (2, "sis_user_id"), (3, "login_id")):
        if row[column]:
            value = int(row[column]) if key == "id" and row[column].isdigit() else row[column]
            found = [s for s in students if s[key] == value]
            if found:
                return found[0]["id"]
    found = [s for s in students if row[0] in (s["name"], s["sortable_name"])]
    return found[0]["id"] if found else "new"
