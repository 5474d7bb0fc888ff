"""SUBMISSIONS/collect-report.csv: what became of every file of a download (a Row each), kept across the collects of
several downloads into one folder; a collect of the same download again replaces its own rows."""

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from ..common import csvsafe
from ..common.errors import GradingError
from ..common.layout import COLLECT_REPORT
from ..common.notebooks import write_atomic
from .downloads import printable

REPORT = COLLECT_REPORT
REPORT_COLUMNS = ["download", "file", "status", "student", "assignment", "time", "time_from", "note"]


@dataclass
class Row:
    "What became of one file of the download: a line of collect-report.csv."

    file: str
    status: str
    note: str = ""
    student: str = ""
    assignment: str = ""
    time: str = ""
    time_from: str = ""


def earlier_report(path: Path, source: str) -> list[list[str]]:
    "The rows of OUT/collect-report.csv that other downloads wrote (a collect of this one again replaces its own)."
    if not path.exists():
        return []
    try:
        rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    except (OSError, UnicodeDecodeError) as error:
        raise GradingError(f"{path}: cannot be read ({error}); move it away.") from None
    if not rows or rows[0] != REPORT_COLUMNS:
        raise GradingError(f"{path}: not a report of collect (header {','.join(REPORT_COLUMNS)}); move it away.")
    return [row for row in rows[1:] if row and row[0] != source]


def write_report(path: Path, source: str, earlier: list[list[str]], rows: list[Row]) -> None:
    text = io.StringIO()
    writer = csvsafe.writer(text)
    writer.writerow(REPORT_COLUMNS)
    writer.writerows(earlier)
    for r in rows:
        row = [source, r.file, r.status, r.student, r.assignment, r.time, r.time_from, r.note]
        writer.writerow([printable(str(cell)) for cell in row])
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text.getvalue().encode("utf-8"))
