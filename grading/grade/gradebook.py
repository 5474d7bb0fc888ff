"""The gradebook and the table: OUT/grades.csv, OUT/gradebook.json and OUT/distribution.png, made from the results.

A `Row` is one line of grades.csv; its final score is the late policy's (grading.reports.late.penalised), never a
formula of its own. Every file is written atomically: a reader never sees half of one. Where a result, the notebook a
job kept and its feedback page lie under OUT is said here too.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..common import csvsafe
from ..common.errors import GradingError
from ..common.layout import FEEDBACK, RESULTS
from ..common.notebooks import write_atomic
from ..reports import marking
from ..reports.late import penalised
from ..reports.page import plain_notebook

if TYPE_CHECKING:
    from nbformat import NotebookNode

    from ..reports.late import Late
    from ..reports.marking import Marks

COLUMNS = ["student", "assignment", "notebook", "score", "max_score", "note", "manual_points", "manual_score"]


LATE_COLUMNS = ["submitted_at", "late_by_hours", "penalty", "final_score"]  # score stays the autograded score


@dataclass
class Row:
    student: str
    assignment: str
    notebook: str
    score: float = 0.0
    max_score: float = 0.0
    note: str = ""
    problem: bool = False  # not graded (a bad file, a grader failure): an error on the console, exit code 1
    manual_points: float = 0.0  # written answers' points, marked by hand (OUT/marking): not in score or max_score
    marks: marking.Marks | None = None  # the marks given to them so far (grading.reports.marking.read_marks)
    submitted_at: str = ""  # the late policy's columns (grading.reports.late)
    late_by_hours: float | None = None
    penalty_fraction: float = 0.0  # the fraction of the total taken for lateness (grading.reports.late)
    graded: bool = True  # False: the grader failed for a reason of its own; no score is written, the next run retries

    @property
    def total(self) -> float:
        "The autograded score and the marks given so far: what a late penalty takes its fraction of."
        return self.score + (self.marks.score if self.marks else 0.0)

    @property
    def penalty(self) -> float:
        "Points taken for lateness."
        return penalised(self.total, self.penalty_fraction)[0]

    @property
    def final_score(self) -> float:
        return penalised(self.total, self.penalty_fraction)[1]

    def late_values(self) -> list[str]:
        late = "" if self.late_by_hours is None else f"{self.late_by_hours:g}"
        final = f"{round(self.final_score, 4):g}" if self.graded else ""
        return [self.submitted_at, late, f"{round(self.penalty, 4):g}", final]

    def values(self) -> list[str]:
        return [
            self.student,
            self.assignment,
            self.notebook,
            f"{self.score:g}" if self.graded else "",
            f"{self.max_score:g}",
            self.note,
            f"{self.manual_points:g}",
            self.manual_score_cell(),
        ]

    def manual_score_cell(self) -> str:
        "The marks of the written answers; blank while one is unmarked (or nothing was graded)."
        if not self.graded or (self.marks and self.marks.unmarked):
            return ""
        return f"{self.marks.score if self.marks else 0.0:g}"


def result_path(out: Path | str, student: str, assignment: str) -> Path:
    return Path(out) / RESULTS / student / f"{assignment}.json"


def page_path(out: Path | str, student: str, assignment: str) -> Path:
    "The notebook the page shows (JSON), kept so that the feedback page can be written again under another policy."
    return Path(out) / RESULTS / student / f"{assignment}.notebook.ipynb"


def kept_notebook(path: Path | str) -> NotebookNode | None:
    "The notebook a job kept at `path` (page_path), as grading.reports.page.plain_notebook reads it; None if there is none."
    try:
        return plain_notebook(json.loads(Path(path).read_text()))
    except (OSError, ValueError, GradingError):
        return None


def feedback_path(out: Path | str, student: str, assignment: str) -> Path:
    return Path(out) / FEEDBACK / student / f"{assignment}.html"


def rows_of(
    results: list[dict],
    problems: list[Row],
    answers: dict[str, dict[str, float]] | None = None,
    marked: dict[tuple[str, str], Marks] | None = None,
) -> list[Row]:
    """The table's rows; `answers`: {assignment: {name: points}} of its written answers, marked by hand; `marked`:
    their marks, {(student, assignment): grading.reports.marking.Marks} (grading.reports.marking.read_marks)."""
    rows = list(problems)
    for r in results:
        written = (answers or {}).get(r["assignment"]) or {}
        rows.append(
            Row(
                r["student"],
                r["assignment"],
                f"{r['assignment']}.ipynb",
                r["score"],
                r["max_score"],
                r["note"],
                problem=r.get("problem", False),
                manual_points=float(sum(written.values())),
                marks=marks_for(r, written, marked) if written else None,
                graded=r.get("graded", True),
            )
        )
    return sorted(rows, key=lambda r: (r.student, r.assignment))


def write_table(rows: list[Row], path: Path | str) -> None:
    "Write the grade table atomically: a reader never sees half a file."
    text = io.StringIO()
    writer = csvsafe.writer(text)  # a student's folder name may start like a formula: =HYPERLINK(...)
    writer.writerow(COLUMNS + LATE_COLUMNS)
    for row in sorted(rows, key=lambda r: (r.student, r.assignment)):
        writer.writerow(row.values() + row.late_values())
    write_atomic(path, text.getvalue())


def marks_for(result: dict, written: dict[str, float], marked: dict[tuple[str, str], Marks] | None) -> Marks:
    "The Marks of a result's written answers ({name: points}): from OUT/marking, else none yet."
    found = (marked or {}).get((result["student"], result["assignment"]))
    return found if found is not None else marking.none_yet(written)


def late_record(result: dict, late: Late | None, marks: Marks | None = None) -> dict:
    """What the gradebook keeps of a result's variant, feedback policy and late policy (`late`: a grading.reports.late.Late),
    and its final score: the autograded score and the marks (`marks`: grading.reports.marking.Marks) less the late penalty."""
    record = {"variant": result.get("variant", ""), "feedback": result.get("feedback", "full")}
    if result.get("fingerprint", {}).get("held_out"):  # measured on the instructor's own digits (grading.grade.heldout)
        record["held_out_digits"] = result["fingerprint"]["held_out"]
    fraction = late.penalty if late is not None else 0.0
    penalty, final = penalised(result["score"] + (marks.score if marks else 0.0), fraction)
    if late is not None:
        record.update(
            submitted_at=late.submitted_at, late_by_hours=late.late_by_hours, penalty=penalty, penalty_fraction=fraction
        )
        if late.note:  # for a later run that keeps this row without its submission (earlier_late)
            record["late_note"] = late.note
    if result.get("graded", True):
        record["final_score"] = final
    return record


def apply_late(rows: list[Row], late: dict[tuple[str, str], Late]) -> list[Row]:
    "Fill the rows' late columns from {(student, assignment): grading.reports.late.Late}; a bad timestamp is a problem."
    for row in rows:
        found = late.get((row.student, row.assignment))
        if found is None:
            continue
        row.submitted_at, row.late_by_hours = found.submitted_at, found.late_by_hours
        row.penalty_fraction = found.penalty
        row.note = "; ".join(n for n in [row.note, found.note] if n)
        row.problem = row.problem or found.problem
    return rows


def write_gradebook(
    results: list[dict],
    problems: list[Row],
    path: Path | str,
    answers: dict[str, dict[str, float]] | None = None,
    late: dict[tuple[str, str], Late] | None = None,
    marked: dict[tuple[str, str], Marks] | None = None,
) -> None:
    "OUT/gradebook.json; `answers` and `marked` as for rows_of, `late`: {(student, assignment): grading.reports.late.Late}."
    book = {}
    for r in results:
        written = (answers or {}).get(r["assignment"]) or {}
        marks = marks_for(r, written, marked) if written else None
        entry = book.setdefault(r["student"], {})[r["assignment"]] = {
            "score": r["score"],
            "max_score": r["max_score"],
            "note": r["note"],
            **({} if r.get("graded", True) else {"graded": False}),
            "tests": {
                t: {"score": v["score"], "max_score": v["max_score"], "message": v["message"]}
                for t, v in r["tests"].items()
            },
        }
        if marks is not None:  # marked by hand in OUT/marking, not in the score
            entry.update(
                manual_points=float(sum(written.values())),
                manual_score=marks.manual_score,
                manual_unmarked=marks.unmarked,
            )
        entry.update(late_record(r, (late or {}).get((r["student"], r["assignment"])), marks))
    for p in problems:
        book.setdefault(p.student, {})[p.assignment or p.notebook] = {"score": 0, "max_score": 0, "note": p.note}
    write_atomic(path, json.dumps(book, indent=1, sort_keys=True))


def student_percentages(rows: list[Row]) -> dict[str, float]:
    """{student: final score as a % of the points available}, over the rows that have a score: a missing or
    unreadable submission (a problem row) and one the grader could not grade are left out, not counted as 0 %.
    A notebook's written answers count once every one of them is marked: before, neither their marks nor their
    points (a notebook solved in full is at 100 % while its answers wait for a marker)."""
    totals = {}
    for r in rows:
        if r.problem or not r.graded:
            continue
        score, most = totals.get(r.student, (0.0, 0.0))
        marked = r.marks is not None and not r.marks.unmarked
        got = r.final_score if r.marks is None or marked else penalised(r.score, r.penalty_fraction)[1]
        totals[r.student] = (score + got, most + r.max_score + (r.manual_points if marked else 0.0))
    return {student: 100 * s / m if m else 0.0 for student, (s, m) in totals.items()}


def plot_distribution(rows: list[Row], path: Path | str) -> None:
    "A histogram of each student's final score, as a percentage of the points available; PNG, written atomically."
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    percent = list(student_percentages(rows).values())
    figure, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist(percent, bins=list(range(0, 101, 10)), color="#4a7bd0", edgecolor="white")
    ax.set_xlabel("total score (% of the points of the notebooks handed in; written answers once marked)")
    ax.set_ylabel("students")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # whole students, never 0.5
    ax.set_title(f"Grade distribution ({len(percent)} students)")
    figure.tight_layout()
    tmp = Path(path).with_name(f".{Path(path).name}.tmp.png")
    figure.savefig(tmp, dpi=100)
    plt.close(figure)
    os.replace(tmp, path)
