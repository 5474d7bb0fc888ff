"""A course notebook with answers put in: the release solved with the instructor's answers (the reference check, the
demo's alice, the tests' solved students), and the instructor's notebook with a student's exercise cells (what the
verdict runs, what the marker reads)."""

import copy
from collections.abc import Callable

from .notebooks import NotebookNode, nbgrader_meta, strip_markers


def solved(
    release_nb: NotebookNode, source_nb: NotebookNode, edit: Callable[[str, str], str] | None = None
) -> NotebookNode:
    "The release notebook with each exercise filled in from the instructor's solution (optionally edited)."
    answers = {
        nbgrader_meta(c).get("grade_id"): strip_markers(c.source)
        for c in source_nb.cells
        if nbgrader_meta(c).get("solution")
    }
    nb = copy.deepcopy(release_nb)
    for cell in nb.cells:
        grade_id = nbgrader_meta(cell).get("grade_id")
        if nbgrader_meta(cell).get("solution") and grade_id in answers:
            cell.source = edit(grade_id, answers[grade_id]) if edit else answers[grade_id]
    return nb


def restored_notebook(instructor: NotebookNode, submitted: NotebookNode, released: NotebookNode) -> NotebookNode:
    """The instructor's notebook with the student's exercise cells put in: given code, setup and tests are the
    instructor's whatever the student did to them; an exercise cell the student deleted is the release's stub."""
    answers = {nbgrader_meta(c).get("grade_id"): c.source for c in released.cells if nbgrader_meta(c).get("solution")}
    answers.update(
        {
            nbgrader_meta(c).get("grade_id"): c.source
            for c in submitted.cells
            if nbgrader_meta(c).get("solution") and nbgrader_meta(c).get("grade_id") in answers
        }
    )
    nb = copy.deepcopy(instructor)
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if meta.get("solution"):
            cell.source = answers.get(meta.get("grade_id"), cell.source)
    return nb
