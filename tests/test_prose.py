"""Every chapter reads as a chapter: at least 45 % of what a student is handed is prose.

The measure is the student release's: markdown characters over all characters, with the solution regions and the
hidden tests removed (the student never sees them). Given code that a student need not read to learn a chapter goes to
a given-code notebook (02b_diagnosis, 15_viz: nothing to write or grade there), which this measure leaves out.
"""

import re

import nbformat

from conftest import REPO
from grading.common.notebooks import HIDDEN_BEGIN, HIDDEN_END, SOLUTION_BEGIN, SOLUTION_END
from grading.grade.autograde import graded_assignments

LEAST_PROSE = 0.45
NOT_RELEASED = re.compile(
    f"{re.escape(SOLUTION_BEGIN)}.*?{re.escape(SOLUTION_END)}|{re.escape(HIDDEN_BEGIN)}.*?{re.escape(HIDDEN_END)}",
    re.DOTALL,
)


def prose_share(nb):
    "Markdown characters over all characters of `nb` as released: solution regions and hidden tests left out."
    prose = code = 0
    for cell in nb.cells:
        released = len(NOT_RELEASED.sub("", cell.source))
        if cell.cell_type == "markdown":
            prose += released
        else:
            code += released
    return prose / (prose + code) if prose + code else 1.0


def test_the_measure_leaves_out_solutions_and_hidden_tests():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("x" * 10),
        nbformat.v4.new_code_cell(f"def f():\n{SOLUTION_BEGIN}\n{'y' * 1000}\n{SOLUTION_END}"),
        nbformat.v4.new_code_cell(f"{HIDDEN_BEGIN}\n{'z' * 1000}\n{HIDDEN_END}"),
    ]
    assert prose_share(nb) == 10 / (10 + len("def f():\n"))
    nb.cells.append(nbformat.v4.new_code_cell("w" * 90))
    assert prose_share(nb) < LEAST_PROSE


def test_every_chapter_is_at_least_45_percent_prose_as_released():
    thin = {}
    for stem in graded_assignments():  # the given-code notebooks are not assignments: nothing there to learn by doing
        share = prose_share(nbformat.read(REPO / "notebooks" / f"{stem}.ipynb", 4))
        if share < LEAST_PROSE:
            thin[stem] = f"{share:.1%}"
    assert not thin, (
        f"chapters under {LEAST_PROSE:.0%} prose (markdown over all of the release): {thin}; move given code that a "
        "student need not read into a given-code notebook (as 02b_diagnosis and 15_viz), or explain more"
    )
