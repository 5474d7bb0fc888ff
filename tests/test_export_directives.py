"""Where the grader's export of a submission writes: into the job's package, whatever the student's cells say.

The grader exports each submission's package with nbdev outside the sandbox, and nbdev reads a code cell's first
`#|` lines as where to write it: a student's `#| exporti /a/file` appended their cell to any file of the grader's
(red team round 7, nadia in tests/test_redteam.py). A restored exercise cell carries the instructor's directives
(grading.common.answers.with_directives_of); the export refuses a module whose file is outside the package
(grading.student.export.module_maker_inside)."""

import copy
import shutil

import nbformat
import pytest
from nbdev.process import extract_directives

from conftest import REPO
from grading.common.answers import restored_notebook, with_directives_of
from grading.common.errors import GradingError
from grading.student.export import export_here

INSTRUCTOR_CELL = "#| export\nclass AddBackward:\n    pass\n"
CODE = "class AddBackward:\n    pass\n"

# A student's exercise cell, each with a directive of their own that nbdev would read: as the release wrote the first
# line, with spaces or none, after blank lines and a cell magic, as a cell magic, and behind a form feed, where nbdev (str.splitlines)
# starts a new line and Python does not.
ANSWERS = [
    "#| exporti /tmp/x/target\n#| export\n" + CODE,
    "#| export\n#| default_exp /tmp/x/module\n" + CODE,
    "# | exporti /tmp/x/target\n" + CODE,
    "#|exports /tmp/x/target\n" + CODE,
    "\n\n#| exporti /tmp/x/target\n\n" + CODE,
    "%%time\n#| exporti /tmp/x/target\n" + CODE,
    "%%exporti /tmp/x/target\n" + CODE,  # nbdev reads a cell magic's name as a directive too
    "#| export\x0c#| exporti /tmp/x/target\n" + CODE,
    "   #| exporti /tmp/x/target\n" + CODE,
    CODE,  # none at all: the instructor's are put back
]


def directives(source):
    return extract_directives(nbformat.v4.new_code_cell(source), remove=False)


@pytest.mark.parametrize("answer", ANSWERS)
def test_an_exercise_cell_keeps_its_code_and_only_the_instructors_directives(answer):
    restored = with_directives_of(INSTRUCTOR_CELL, answer)
    assert directives(restored) == {"export": []}, repr(restored)
    assert restored.endswith(CODE) and "/tmp/x" not in restored


def test_a_restored_notebook_has_the_instructors_directives_in_code_cells_and_the_students_text_elsewhere():
    def notebook(*sources):
        cells = []
        for i, (kind, source) in enumerate(sources):
            cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
            cell.metadata["nbgrader"] = {"solution": True, "grade_id": f"cell-{i}"}
            cells.append(cell)
        return nbformat.v4.new_notebook(cells=cells)

    instructor = notebook(("code", INSTRUCTOR_CELL), ("markdown", "An answer."))
    released = notebook(("code", "#| export\nclass AddBackward:\n    raise NotImplementedError\n"), ("markdown", "?"))
    submitted = notebook(("code", ANSWERS[0]), ("markdown", "#| exporti /tmp/x/target\nMy answer."))
    restored = restored_notebook(instructor, submitted, released)
    assert restored.cells[0].source == INSTRUCTOR_CELL
    assert restored.cells[1].source == "#| exporti /tmp/x/target\nMy answer."  # nbdev exports no markdown cell
    deleted = copy.deepcopy(submitted)
    deleted.cells = deleted.cells[1:]  # the exercise cell deleted: the release's stub, its directives the instructor's
    assert restored_notebook(instructor, deleted, released).cells[0].source == released.cells[0].source


def test_an_export_to_a_file_outside_the_package_writes_nothing_and_says_so(tmp_path):
    target = tmp_path / "target.py"
    target.write_text("KEPT = True\n")
    root = tmp_path / "course"
    (root / "notebooks").mkdir(parents=True)
    (root / "tinytorch" / "core").mkdir(parents=True)
    shutil.copyfile(REPO / "settings.ini", root / "settings.ini")
    for aimed in [f"#| exporti {tmp_path}/target", f"#| default_exp {tmp_path}/written", "#| exporti core..x"]:
        cells = [
            nbformat.v4.new_code_cell("#| default_exp core.sample"),
            nbformat.v4.new_code_cell("#| export\nA = 1"),
            nbformat.v4.new_code_cell(f"{aimed}\nB = 2"),
        ]
        nbformat.write(nbformat.v4.new_notebook(cells=cells), root / "notebooks" / "sample.ipynb")
        with pytest.raises(GradingError, match="not a module of the package in .*: nothing was written"):
            export_here(root)
        assert target.read_text() == "KEPT = True\n" and not (tmp_path / "written.py").exists()
    nbformat.write(nbformat.v4.new_notebook(cells=cells[:2]), root / "notebooks" / "sample.ipynb")
    export_here(root)  # the course's own directives are exported as before
    assert "A = 1" in (root / "tinytorch" / "core" / "sample.py").read_text()
