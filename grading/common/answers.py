"""A course notebook with answers put in: the release solved with the instructor's answers (the reference check, the
demo's alice, the tests' solved students), and the instructor's notebook with a student's exercise cells (what the
verdict runs, what the marker reads)."""

import copy
import re
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
        if meta.get("solution") and meta.get("grade_id") in answers:
            answer = answers[meta.get("grade_id")]
            cell.source = with_directives_of(cell.source, answer) if cell.cell_type == "code" else answer
    return nb


# nbdev reads the leading lines of a code cell that start with "#|" as what to export where: the module, and so the
# file it writes. An exercise cell's are the instructor's, never the student's: the grader exports each submission
# outside the sandbox, and a student's "#| exporti /a/file/of/the/graders" would have nbdev append the student's code
# to that file (red team round 7). The patterns are nbdev's own (nbdev.process: _dir_pre, _cell_mgc, first_code_ln).
DIRECTIVE = re.compile(r"\s*#\s*\|")
CELL_MAGIC = re.compile(r"^\s*%%\w+")


def leading_count(lines: list[str]) -> int:
    "How many of a cell's lines nbdev reads as its directives: those before the first line of code."
    code = (
        i for i, line in enumerate(lines) if line.strip() and not DIRECTIVE.match(line) and not CELL_MAGIC.match(line)
    )
    return next(code, len(lines))


def with_directives_of(instructor_source: str, answer: str) -> str:
    "The student's answer with the instructor cell's nbdev directives in the place of its own (split as nbdev does)."
    theirs = instructor_source.splitlines(True)
    directives = [line.rstrip("\r\n") + "\n" for line in theirs[: leading_count(theirs)] if DIRECTIVE.match(line)]
    lines = answer.splitlines(True)  # its leading lines go, cell magics too: nbdev reads "%%exporti NAME" as one
    return "".join(directives + lines[leading_count(lines) :])
