"""The late policy: a due date per assignment, a penalty function, and when each submission was handed in.

The time of a submission is the notebook file's modification time as the grader received it, read with os.stat
without following a symlink (a link's target, and its time, can be anything the student chose). It is not the
`timestamp.txt` in the submission's folder: that file comes with the submission, so a student who writes
`2026-11-30 12:00:00 UTC` into it would choose their own submission time and dodge the penalty. Only an instructor
who collected the submissions with nbgrader (whose submit and collect write that file) and trusts it says
`--trust-timestamps` (Policy.trust_timestamps); its first line is then the time (`2026-12-01 23:12:03.123456 UTC`;
ISO 8601 such as `2026-12-01T23:12:03+01:00` is read too), else the file time. A time without a zone is the grading
machine's local time.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ..common.errors import GradingError, did_you_mean
from ..common.layout import COLLECT_REPORT, COLLECT_TIME, DOWNLOAD_TIME

TIME_FORMAT = "YYYY-MM-DDTHH:MM, optionally with seconds and a zone (2026-12-01T23:59, 2026-12-01T23:59+01:00)"
PENALTY_FORMAT = "'none', 'zero', or '<P>%/day' or '<P>%/hour' with an optional cap: '10%/day,max=50%'"
CLOCK_SLACK = timedelta(minutes=5)  # a timestamp this far ahead of the grader's clock is still "now"


@dataclass(frozen=True)
class Penalty:
    "A fraction of the score taken per started day (or hour) late, at most `cap`; `zero` takes everything."

    text: str = "none"
    fraction: float = 0.0
    hours: int = 24
    cap: float = 1.0

    def of(self, late_by: timedelta) -> float:
        "The fraction of the score lost when `late_by` (a timedelta, > 0) late."
        if late_by <= timedelta(0):
            return 0.0
        periods = math.ceil(late_by / timedelta(hours=self.hours))
        return min(self.cap, self.fraction * periods, 1.0)


@dataclass
class Policy:
    due: dict[str, datetime] = field(default_factory=dict)  # {assignment or "*": datetime}
    released: dict[str, datetime] = field(default_factory=dict)  # {assignment or "*": datetime}
    penalty: Penalty = field(default_factory=Penalty)
    trust_timestamps: bool = False  # read the submission's timestamp.txt (nbgrader's collect), not only the file time

    def due_of(self, assignment: str) -> datetime | None:
        return self.due.get(assignment, self.due.get("*"))

    def released_of(self, assignment: str) -> datetime | None:
        return self.released.get(assignment, self.released.get("*"))


@dataclass
class Late:
    "What the late policy says about one submission (the grade table's late columns)."

    submitted_at: str = ""
    late_by_hours: float | None = None
    penalty: float = 0.0  # the fraction of the score taken
    note: str = ""
    problem: bool = False


def penalised(total: float, fraction: float) -> tuple[float, float]:
    """(points taken, final score) of `total` (the autograded score and the marks) when `fraction` of it is taken.
    The one definition of the final score: grades.csv, gradebook.json and every export (grading.lms) call it."""
    penalty = total * fraction
    return round(penalty, 4), round(max(0.0, total - penalty), 4)


def parse_time(text: str, where: str) -> datetime:
    "An aware datetime from an nbgrader timestamp or ISO 8601 text; a GradingError naming `where` otherwise."
    raw = text.strip()
    value = re.sub(r"\s+(UTC|GMT|Z)$", "+00:00", raw)
    value = re.sub(r"\s+([+-]\d\d):?(\d\d)$", r"\1:\2", value)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise GradingError(f"{where}: {raw!r} is not a date and time; expected {TIME_FORMAT}.") from None
    if not re.search(r"\d[T ]\d", value):  # an instructor's finding: '2026-12-01' was that day's first minute
        raise GradingError(
            f"{where}: {raw!r} has no time of day; expected {TIME_FORMAT}. A date alone would be 00:00, the start of "
            "the day, which makes every submission of that day late: for its end, write the time (T23:59)."
        )
    return moment if moment.tzinfo else moment.astimezone()  # no zone: the grading machine's local time


def parse_penalty(text: str) -> Penalty:
    spec = text.strip().lower().replace(" ", "")
    if spec in ("", "none"):
        return Penalty()
    if spec == "zero":
        return Penalty(text, fraction=1.0, hours=1)
    match = re.fullmatch(r"(\d+(?:\.\d+)?)%/(day|hour)(?:,max=(\d+(?:\.\d+)?)%)?", spec)
    if not match or float(match[1]) > 100 or float(match[3] or 100) > 100:
        raise GradingError(f"--late-penalty {text!r}: expected {PENALTY_FORMAT}.")
    hours = 24 if match[2] == "day" else 1
    return Penalty(text, fraction=float(match[1]) / 100, hours=hours, cap=float(match[3] or 100) / 100)


def read_due_file(path: str | Path) -> tuple[dict[str, str], dict[str, str]]:
    """({assignment: due}, {assignment: released}) from a JSON file: {"09_nn": "2026-12-01T23:59"} or
    {"09_nn": {"due": "2026-12-01T23:59", "released": "2026-11-20T09:00"}}; "*" stands for every assignment."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as error:
        raise GradingError(f"{path}: cannot read the due-date file ({error.strerror}).") from None
    except ValueError as error:
        raise GradingError(f'{path}: not valid JSON ({error}); expected {{"<assignment>": "<due>"}}.') from None
    if not isinstance(data, dict):
        raise GradingError(f'{path}: expected an object {{"<assignment>": "<due>"}}.')
    due, released = {}, {}
    for assignment, entry in data.items():
        where = f"{path}: {assignment}"
        if isinstance(entry, str):
            entry = {"due": entry}
        if not isinstance(entry, dict) or not isinstance(entry.get("due"), str):
            raise GradingError(f'{where}: expected a due date, or {{"due": ..., "released": ...}}.')
        due[assignment] = parse_time(entry["due"], f"{where}: due")
        if isinstance(entry.get("released"), str):
            released[assignment] = parse_time(entry["released"], f"{where}: released")
    return due, released


def make_policy(
    due: Sequence[str] = (),
    due_file: str | Path | None = None,
    penalty: str = "none",
    released: str | None = None,
    trust_timestamps: bool = False,
) -> Policy:
    """The policy of one run. `due`: ["2026-12-01T23:59"] for every assignment, or ["09_nn=2026-12-01T23:59", ...];
    `due_file`: see read_due_file (the command line wins); `released`: when the assignments were released;
    `trust_timestamps`: take the time from the submission's timestamp.txt where there is one (see the docstring)."""
    dates, releases = read_due_file(due_file) if due_file else ({}, {})
    for item in due:
        assignment, _, when = item.rpartition("=") if "=" in item else ("*", "", item)
        dates[assignment] = parse_time(when, f"--due {item}")
    if released:
        releases["*"] = parse_time(released, f"--released {released}")
    result = Policy(dates, releases, parse_penalty(penalty), trust_timestamps)
    if result.penalty.fraction and not dates:
        raise GradingError("--late-penalty needs a due date: pass --due DATE or --due-file FILE.")
    return result


def policy_record(policy: Policy) -> dict:
    "The policy as JSON data (OUT keeps the last run's: see remembered_policy)."
    return {
        "due": {name: when.isoformat() for name, when in policy.due.items()},
        "released": {name: when.isoformat() for name, when in policy.released.items()},
        "penalty": policy.penalty.text,
        "trust_timestamps": policy.trust_timestamps,
    }


def policy_of_record(record: object) -> Policy:
    "The Policy of policy_record's data; GradingError where it is not such data."
    try:
        due = {name: parse_time(when, "the saved due date") for name, when in record["due"].items()}
        released = {name: parse_time(when, "the saved release") for name, when in record["released"].items()}
        return Policy(due, released, parse_penalty(record["penalty"]), bool(record["trust_timestamps"]))
    except (KeyError, TypeError, AttributeError) as error:
        raise GradingError(f"the saved late policy is malformed ({type(error).__name__})") from None


def describe_policy(policy: Policy) -> str:
    "One line: the due dates and the penalty, as the options would give them."
    if not policy.due and not policy.released:
        return "no due dates"
    dates = ", ".join(f"{name}={when.isoformat(timespec='minutes')}" for name, when in sorted(policy.due.items()))
    released = f", released {policy.released['*'].isoformat(timespec='minutes')}" if "*" in policy.released else ""
    return f"due {dates or 'never'}{released}, penalty {policy.penalty.text}"


def check_names(policy: Policy, assignments: Collection[str]) -> None:
    """Raise GradingError if the policy names an assignment that is not among `assignments` (the course's): a typo
    would otherwise give that assignment no due date, and every late submission no penalty, without a word."""
    unknown = sorted(name for name in {*policy.due, *policy.released} - {"*"} if name not in assignments)
    if unknown:
        named = ", ".join(f"{name!r}{did_you_mean(name, assignments)}" for name in unknown)
        raise GradingError(
            f"the due dates name {named}, not an assignment of this course; the assignments are "
            f"{', '.join(sorted(assignments))}. Correct the name in --due or --due-file (or use * for every one)."
        )


def submission_time(notebook: str | Path, trust_timestamps: bool = False) -> tuple[datetime, str]:
    """(when the submission was handed in, where that came from): the notebook file's time as received, or, when the
    instructor trusts them, its folder's timestamp.txt first."""
    stamp = Path(notebook).parent / "timestamp.txt"
    if trust_timestamps and stamp.is_file():
        lines = stamp.read_text(errors="replace").strip().splitlines()
        if not lines:
            raise GradingError(f"{stamp}: empty; expected a time such as 2026-12-01 23:12:03.123456 UTC.")
        return parse_time(lines[0], str(stamp)), "timestamp.txt"
    try:
        mtime = os.stat(notebook, follow_symlinks=False).st_mtime
    except OSError as error:
        raise GradingError(f"{notebook}: cannot read the file's time ({error.strerror}).") from None
    return datetime.fromtimestamp(mtime, UTC).astimezone(), "file time"


def assess(policy: Policy, assignment: str, notebook: str | Path, now: datetime | None = None) -> Late:
    "The late columns of one submission; a bad or odd timestamp is reported in the note, never raised."
    now = now or datetime.now(UTC)
    try:
        when, source = submission_time(notebook, policy.trust_timestamps)
    except GradingError as error:
        if policy.due_of(assignment) is None:
            return Late()  # no due date: when it was handed in does not matter
        return Late(note=f"late policy not applied: {error}", problem=True)
    late = Late(submitted_at=when.isoformat(timespec="seconds"))
    due, released = policy.due_of(assignment), policy.released_of(assignment)
    if when > now + CLOCK_SLACK:
        late.note = f"the submission's {source} is in the future ({late.submitted_at}): no late penalty applied"
        return late
    if released is not None and when < released:
        late.note = f"the submission's {source} ({late.submitted_at}) is before the release: no late penalty applied"
        return late
    if due is None:
        return late
    late.late_by_hours = round(max(0.0, (when - due) / timedelta(hours=1)), 2)
    late.penalty = policy.penalty.of(when - due)
    if late.late_by_hours and source == "file time":
        late.note = "late by the notebook's file time as received" + (
            "; its timestamp.txt was not read (--trust-timestamps reads it)"
            if not policy.trust_timestamps and (Path(notebook).parent / "timestamp.txt").exists()
            else ""
        )
    return late


def untimed_notebooks(submissions: Path) -> set[tuple[str, str]]:
    """(student, assignment) of the notebooks of SUBMISSIONS that collect last placed (or found unchanged) from a
    download without submission times, by its collect-report.csv; empty without a readable report."""
    try:
        rows = list(csv.DictReader(io.StringIO((submissions / COLLECT_REPORT).read_text(encoding="utf-8"))))
    except (OSError, UnicodeDecodeError, csv.Error):
        return set()
    timed = {}
    for row in rows:  # in the report's order: a later download's row of the same notebook wins
        if row.get("status") in ("placed", "unchanged"):
            timed[(row.get("student", ""), row.get("assignment", ""))] = row.get("time_from") not in (
                DOWNLOAD_TIME,
                COLLECT_TIME,
            )
    return {key for key, has_time in timed.items() if not has_time}
