"""Marks made in formgrader since autograde wrote the gradebook: the export takes them, as they are now.

The final score of an entry with new marks is computed again by the one definition, grading.reports.late.penalised,
of the autograded score, the marks and the late fraction autograde kept; grades.csv keeps the earlier one until the
next autograde run, and the export says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..common.layout import MARKING
from ..reports.late import penalised
from .entries import NOT_MARKED, graded, not_marked
from .lms_input import Gradebook, number

if TYPE_CHECKING:  # marking needs nbgrader, which add_marks does without
    from ..reports.marking import Marks


def add_marks(book: Gradebook, grading_dir: str | Path, warnings: list[str]) -> None:
    "Put the marks of GRADING_DIR/marking, as they are now, into the gradebook's entries (grading.reports.marking.read_marks)."
    if not (Path(grading_dir) / MARKING / "gradebook.db").is_file():
        return
    try:
        from ..reports.marking import read_marks
    except ImportError as error:
        warnings.append(f"the marks of the written answers are those of the last autograde run ({error})")
        return
    for (student, assignment), marks in read_marks(grading_dir, warnings.append).items():
        entry = book.get(student, {}).get(assignment)
        if entry is not None and graded(entry) and "manual_points" in entry:
            mark_entry(entry, marks)


def mark_entry(entry: dict, marks: Marks) -> None:
    "One entry with its marks (a grading.reports.marking.Marks), and its final score again: the late fraction of the total."
    fraction = entry.get("penalty_fraction") if number(entry.get("penalty_fraction")) else 0.0
    penalty, final = penalised(entry["score"] + marks.score, fraction)
    entry.update(manual_score=marks.manual_score, manual_unmarked=marks.unmarked, final_score=final)
    if "penalty" in entry:
        entry["penalty"] = penalty


def unmarked_warning(book: Gradebook, assignments: list[str], grading_dir: str | Path) -> str:
    "The warning that counts the exported submissions whose written answers are not all marked, or ''."
    counts = {}
    for entries in book.values():
        for assignment, entry in entries.items():
            if assignment in assignments and graded(entry) and not_marked(entry):
                counts[assignment] = counts.get(assignment, 0) + 1
    if not counts:
        return ""
    total = sum(counts.values())
    listed = ", ".join(f"{a}: {n}" for a, n in sorted(counts.items()))
    return (
        f"{total} submission{'' if total == 1 else 's'} with written answers not all marked yet ({listed}), exported "
        f"with the marks made so far and the note '{NOT_MARKED}'; mark them in formgrader "
        f"({Path(grading_dir) / 'marking'}, see docs/instructor.md) and export again"
    )


def changed_since_grading(
    book: Gradebook, written_before: dict[tuple[str, str], float | None], assignments: list[str]
) -> str:
    "The warning that final scores differ from grades.csv, since marks were made after autograde wrote it, or ''."
    changed = sorted(
        f"{student}/{a}"
        for student, entries in book.items()
        for a, entry in entries.items()
        if a in assignments
        and number(written_before.get((student, a)))
        and entry.get("final_score") != written_before[student, a]
    )
    if not changed:
        return ""
    return (
        f"{len(changed)} final score(s) here include marks made after autograde wrote grades.csv, which still has the "
        f"earlier ones ({', '.join(changed[:5])}): the next autograde run writes them there too"
    )
