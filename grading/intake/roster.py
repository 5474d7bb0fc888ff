"""SUBMISSIONS/roster.csv, who is who: `collect` writes it from an LMS's download, `export-grades` and
`export-feedback` read it; and what tells two students apart (their ids, their names compared). Every problem with a
roster (a line with the wrong number of fields, a student listed twice) is a one-line GradingError naming the file
and the line. Standard library only (csv)."""

import csv
import io
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from ..common import csvsafe
from ..common.errors import GradingError
from ..common.notebooks import write_atomic

ROSTER_COLUMNS = ("student", "name", "email")


ROSTER_OPTIONAL = ("lms_id", "sis_id", "login_id", "section", "moodle_participant")


PARTICIPANT = re.compile(r"([^\s=]+)=(\d+)")  # moodle_participant: `<assignment>=<id>` pairs, separated by spaces


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


def participants(text: str) -> dict[str, str]:
    "{assignment: participant id} of a moodle_participant cell."
    return dict(PARTICIPANT.findall(text))


def read_roster(path: str | Path) -> list[Person]:
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


def merged_roster(listed: list[Person], people: list[Person]) -> tuple[list[Person], list[tuple[Person, Person]]]:
    """(roster, [(person, line)]): the roster's people `listed` with a line added for each student it lacks, its own
    lines as they are; and each student not added because a line has their LMS id, SIS id or email under another
    folder (a student id changed in the LMS, or set to a classmate's), which export-grades would refuse."""
    roster, unlisted = list(listed), []
    folders = {p.student for p in roster}
    for person in people:
        if person.student in folders:
            continue
        taken = next((line for line in roster if shares_an_id(line, person)), None)
        if taken is None:
            roster.append(person)
            folders.add(person.student)
        elif (person, taken) not in unlisted:
            unlisted.append((person, taken))
    return roster, unlisted


def unlisted_warning(unlisted: list[tuple[Person, Person]]) -> list[str]:
    if not unlisted:
        return []
    pairs = "; ".join(f"{p.student} ({p.name or 'no name'}) and {line.student}" for p, line in unlisted[:5])
    return [
        f"{len(unlisted)} student(s) not added to roster.csv, as a line there has their LMS id, SIS id or email under "
        f"another folder: {pairs}{' and more' if len(unlisted) > 5 else ''}. export-grades lists their grades apart "
        "until roster.csv says who is who: correct the line (and move the folder), or the id in the LMS."
    ]


def write_roster(path: Path, people: list[Person]) -> None:
    columns = list(ROSTER_COLUMNS + ROSTER_OPTIONAL)
    text = io.StringIO()
    writer = csvsafe.writer(text)
    writer.writerow(columns)
    writer.writerows([getattr(p, column) for column in columns] for p in people)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text.getvalue().encode("utf-8", "replace"))


IDENTITY = ("lms_id", "sis_id", "email")  # the roster's columns that name one student in the LMS


def identity(person: Person) -> tuple[str, ...]:
    """What tells two students apart beyond their folder's name: the LMS's ids and the email (IDENTITY), ignoring
    case. Not the name, which each source writes its own way ("lovelaceada", "Ada Lovelace")."""
    return tuple(getattr(person, column).lower() for column in IDENTITY)


def shares_an_id(one: Person, other: Person) -> bool:
    "Whether an LMS id, SIS id or email is the same, and not empty, in both."
    return any(a and a == b for a, b in zip(identity(one), identity(other), strict=True))


def plain(name: str) -> str:
    """A name as compared: NFC, spaces collapsed ('José' typed on a Mac and on Windows is one name). Not case folded:
    an LMS writes one student's name the same way every time, and 'ADA LOVELACE' is somebody else's choice."""
    return " ".join(unicodedata.normalize("NFC", name).split())
