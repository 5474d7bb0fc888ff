"""What Gradescope's submission_metadata.json says, for `run`: the student, the Gradescope assignment, the time and
the due date (https://gradescope-autograders.readthedocs.io/en/latest/submission_metadata/).

Gradescope writes the file for every submission, so anything missing or unreadable in it is a fault of the platform,
not of the student: a GradingError, which `run` turns into "not graded". Nothing is made up in its place: a student
called "student" would be graded with another student's hidden inputs, and a time that cannot be read would drop
the late penalty.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..common.errors import GradingError

if TYPE_CHECKING:  # imported by the functions that need them, as run_autograder starts
    from ..intake.roster import Person
    from ..reports.late import Policy


def assignment_titled(metadata: dict, assignments: list[str]) -> str | None:
    "The one assignment of the zip that the Gradescope assignment's title names (04_elementwise: …), else None."
    title = str((metadata.get("assignment") or {}).get("title") or "").lower()
    named = [a for a in assignments if a.lower() in title]
    return named[0] if len(named) == 1 else None


def read_metadata(root: Path) -> dict:
    """Gradescope's submission_metadata.json. Gradescope writes one for every submission: without it the grader knows
    neither the student (whose hidden inputs these are) nor the time (the late penalty), so it grades nothing."""
    path = root / "submission_metadata.json"
    try:
        data = json.loads(path.read_text())
    except OSError:
        raise GradingError(f"there is no {path}, which Gradescope writes for every submission") from None
    except ValueError as error:
        raise GradingError(f"{path} is not JSON ({error})") from None
    if not isinstance(data, dict):
        raise GradingError(f"{path} holds no JSON object")
    return data


def submitter(metadata: dict) -> Person:
    "The student as collect names a Gradescope submitter (student id, else email): the variant then matches."
    from ..intake.downloads import slug
    from ..intake.roster import Person

    users = metadata.get("users") or [{}]
    who = users[0] if isinstance(users[0], dict) else {}
    name, sid, email = (str(who.get(key) or "").strip() for key in ("name", "sid", "email"))
    student = slug(sid, lower=False) or slug(email) or slug(str(who.get("id") or ""))
    if not student:  # never a made-up name: the variant, and so the hidden tests' inputs, would be another student's
        raise GradingError("submission_metadata.json names no student (users[0] has no sid, email or id)")
    return Person(student=student, name=name, email=email, sis_id=sid, lms_id=str(who.get("id") or ""))


def due_date(metadata: dict) -> str:
    """The submission's due date: a submitter's own, which holds an extension Gradescope gave them (the latest of a
    group's), else the assignment's. GradingError for a date that is not one: a penalty is never silently dropped,
    nor an extension silently ignored."""
    own = {}
    for user in metadata.get("users") or []:
        date = ((user.get("assignment") or {}) if isinstance(user, dict) else {}).get("due_date")
        if date is not None:
            own[metadata_time(date, "users[].assignment.due_date").timestamp()] = date
    if own:
        return own[max(own)]
    due = (metadata.get("assignment") or {}).get("due_date")
    metadata_time(due, "assignment.due_date")
    return due


def metadata_time(value: object, field: str) -> datetime:
    "The aware datetime of a time in submission_metadata.json; GradingError naming the field where it is none."
    from ..reports.late import parse_time

    if not isinstance(value, str):
        raise GradingError(f"submission_metadata.json has no {field} (got {value!r}), which the late penalty needs")
    return parse_time(value, f"submission_metadata.json's {field}")


def late_policy(config: dict, metadata: dict, assignment: str, copy: Path) -> Policy:
    """The late policy (grading.reports.late) of gradescope.json's penalty, Gradescope's due date and the submission's
    time (metadata written by Gradescope, not by the student: given to autograde as a trusted timestamp.txt)."""
    from ..reports.late import Policy, make_policy

    if config.get("late_penalty", "none") == "none":
        return Policy()
    due = due_date(metadata)
    created = metadata.get("created_at")
    metadata_time(created, "created_at")
    (copy.parent / "timestamp.txt").write_text(f"{created}\n")
    return make_policy([f"{assignment}={due}"], None, config["late_penalty"], None, trust_timestamps=True)
