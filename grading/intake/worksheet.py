"""`collect --lms moodle --worksheet FILE`: the email address of each student of a Moodle download, from the
assignment's grading worksheet (Grading action > Download grading worksheet).

Moodle's download names a student by full name and a participant id of that assignment alone: no email, and ids that
differ from one assignment to the next. So two students of one name could not be told apart across assignments, and
roster.csv had no email for Moodle's gradebook import. The worksheet of the same assignment has, per row, "Identifier"
("Participant <id>", the id of the download's folder), "Full name" and "Email address" (when the site shows emails).

A worksheet is taken only as this download's: every participant of the download must be in it under the name the
download's folder has (Moodle writes that name without `_`, and without the characters its file names may not have;
a group assignment puts "<group>-" before it). Otherwise nothing is written: another assignment's worksheet would give
one student's email, and so later their grades, to another."""

import csv
import dataclasses
import re
from pathlib import Path

from ..common.errors import GradingError
from .downloads import Found
from .roster import plain

COLUMNS = ("Identifier", "Full name", "Email address")  # Moodle's English headers (mod/assign/gradingtable.php)
PARTICIPANT = "Participant "  # mod/assign's 'hiddenuser' string, before the participant id: "Participant 12"
PARTICIPANT_ID = re.compile(re.escape(PARTICIPANT) + r"(\d+)")
NOT_IN_FILE_NAMES = re.compile(r"[\x00-\x1f\x7f&<>\"`|':\\/]")  # what Moodle's clean_filename (PARAM_FILE) removes
DOWNLOAD = "Grading action > Download grading worksheet"


def read_worksheet(path: str | Path) -> dict[str, tuple[str, str]]:
    "{participant id: (full name, email)} of a Moodle grading worksheet; GradingError if it is not one."
    path = Path(path)
    try:
        with open(path, encoding="utf-8-sig", newline="") as file:
            rows = list(csv.reader(file))
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise GradingError(f"--worksheet {path}: cannot read it ({error}); give the CSV of {DOWNLOAD}.") from None
    header = rows[0] if rows else []
    missing = [column for column in COLUMNS if column not in header]
    if missing:
        raise GradingError(
            f"--worksheet {path}: no column {', '.join(missing)}, so this is not Moodle's grading worksheet, or the "
            "site shows no email addresses (an assignment with blind marking hides them). "
            f"Give the CSV of {DOWNLOAD}, from a site in English."
        )
    at = [header.index(column) for column in COLUMNS]
    people = {}
    for row in rows[1:]:
        identifier, name, email = (row[i].strip() if i < len(row) else "" for i in at)
        if match := PARTICIPANT_ID.fullmatch(identifier):
            people[match[1]] = (name, email)
    return people


def as_in_download(name: str) -> str:
    "A full name as Moodle writes it in its download's folder names."
    return plain(NOT_IN_FILE_NAMES.sub("", name.replace("_", " ")))


def with_emails(found: list[Found], path: str | Path) -> list[Found]:
    """`found` (a Moodle download's) with each student's email from the worksheet at `path`; GradingError, before
    anything is written, if a participant of the download is not in it under the download's name."""
    people = read_worksheet(path)
    wrong, result = [], []
    for item in found:
        name, email = people.get(item.participant, ("", ""))
        theirs, ours = as_in_download(name), plain(item.person.name)
        if not name or not (ours == theirs or ours.endswith(f"-{theirs}")):
            seen = f"{name!r} in the worksheet" if name else "not in the worksheet"
            wrong.append(f"participant {item.participant} is {item.person.name!r} in the download and {seen}")
        result.append(dataclasses.replace(item, person=dataclasses.replace(item.person, email=email)))
    if wrong:
        wrong = sorted(set(wrong))
        raise GradingError(
            f"--worksheet {path} is not the worksheet of this download's assignment: {'; '.join(wrong[:3])}"
            f"{' and more' if len(wrong) > 3 else ''}. Moodle's participant ids differ from one assignment to the "
            f"next: download the worksheet of the same assignment ({DOWNLOAD}). Nothing was written."
        )
    return result
