"""How long each notebook takes: what students write in its last cell, `hours_spent = 2.5`, as the class's median.

The cell (`# hours spent (optional, not graded)`, grading.authoring.convention) is optional and not graded. The
grader reads it as text and never runs it: a line `hours_spent = <number>` in a code cell of the submitted notebook
is a report; anything else (None, an expression, a number outside 0 < hours <= 100) is none. The job puts the
number into the submission's result; autograde writes OUT/time_spent.csv, one row per notebook.
"""

from __future__ import annotations

import csv
import io
import re
import statistics
from pathlib import Path
from typing import TYPE_CHECKING

from ..common.notebooks import write_atomic

if TYPE_CHECKING:
    from nbformat import NotebookNode

HOURS_LINE = re.compile(r"^hours_spent\s*=\s*([0-9]{1,3}(?:\.[0-9]*)?|\.[0-9]+)\s*(?:#.*)?$")
MAX_HOURS = 100.0  # per notebook: more is a typo (minutes for hours), not a report
COLUMNS = ["assignment", "submissions", "reported", "median_hours", "lower_quartile", "upper_quartile"]


def reported_hours(nb: NotebookNode) -> float | None:
    "The hours a submitted notebook reports (its last `hours_spent = <number>` line in a code cell), or None."
    found = None
    for cell in nb.cells:
        if cell.get("cell_type") != "code" or not isinstance(cell.get("source"), str):
            continue
        for line in cell.source.splitlines():
            match = HOURS_LINE.match(line.strip()) if len(line) < 200 else None
            if match:
                found = float(match[1])
    return found if found is not None and 0 < found <= MAX_HOURS else None


def time_spent_rows(results: list[dict]) -> list[list]:
    "One row per assignment: how many submissions, how many reported their hours, and the reports' quartiles."
    by_assignment = {}
    for result in results:
        by_assignment.setdefault(result["assignment"], []).append(result.get("hours_spent"))
    rows = []
    for assignment, hours in sorted(by_assignment.items()):
        reports = sorted(h for h in hours if isinstance(h, (int, float)))
        if len(reports) >= 2:
            lower, median, upper = statistics.quantiles(reports, n=4, method="inclusive")
        else:
            lower = median = upper = reports[0] if reports else None
        rows.append([assignment, len(hours), len(reports), *(_hours(v) for v in (median, lower, upper))])
    return rows


def _hours(value: float | None) -> str:
    return "" if value is None else f"{round(value, 2):g}"


def write_time_spent(results: list[dict], path: Path | str) -> int:
    "OUT/time_spent.csv from the results; the number of submissions that reported their hours."
    rows = time_spent_rows(results)
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(COLUMNS)
    writer.writerows(rows)
    write_atomic(path, text.getvalue())
    return sum(row[2] for row in rows)
