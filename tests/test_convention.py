"""The authoring convention derives nbgrader metadata, and every notebook agrees with it."""

import nbformat
import pytest

from conftest import REPO, run_cli
from grading.authoring.convention import derive_cell, derive_notebook
from grading.common.errors import GradingError


def code(source):
    return nbformat.v4.new_code_cell(source)


def test_every_notebook_agrees_with_the_convention():
    result = run_cli("metadata", "--check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_solution_cell_is_named_after_what_it_defines():
    meta = derive_cell(
        code("#| export\nclass AddBackward:\n    ### BEGIN SOLUTION\n    pass\n    ### END SOLUTION"), "x"
    )
    assert meta["grade_id"] == "solution-AddBackward" and meta["solution"] and not meta["locked"]


def test_test_cell_header_gives_id_and_points():
    meta = derive_cell(code("# test: add_backward (3 points)\nassert True"), "x")
    assert meta == {
        "grade": True,
        "grade_id": "add_backward",
        "locked": True,
        "points": 3,
        "schema_version": 3,
        "solution": False,
        "task": False,
    }
    assert derive_cell(code("# test: one (1 point)\npass"), "x")["points"] == 1


def test_other_cells_are_read_only():
    cell = nbformat.v4.new_markdown_cell("# Title")
    cell.id = "abc"
    meta = derive_cell(cell, "x")
    assert meta["locked"] and not meta["grade"] and meta["grade_id"] == "cell-abc"


@pytest.mark.parametrize(
    "source, words",
    [
        ("# test: add backward 2 points\nassert 1", "malformed test header"),
        ("x = 1\n### BEGIN SOLUTION\nx = 2\n### END SOLUTION", "must define a class or function"),
        ("### BEGIN HIDDEN TESTS\nassert 1\n### END HIDDEN TESTS", "hidden tests must be in a test cell"),
    ],
)
def test_broken_cells_are_explained(source, words):
    with pytest.raises(GradingError, match=words):
        derive_cell(code(source), "nb.ipynb, cell 3")


def test_duplicate_ids_are_refused():
    nb = nbformat.v4.new_notebook()
    nb.cells = [code("# test: same (1 point)\npass"), code("# test: same (2 points)\npass")]
    with pytest.raises(GradingError, match="both have the id 'same'"):
        derive_notebook(nb, "nb.ipynb")


GIVEN_CHAPTERS = {
    "02b_diagnosis.ipynb",
    "15_viz.ipynb",
}  # given code only: released to read, not graded (grading/grade/autograde.py skips them)


def test_every_exercise_has_tests_worth_points():
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        metas = derive_notebook(nbformat.read(path, 4), path.name)
        if path.name in GIVEN_CHAPTERS:
            assert not any(m["solution"] or m["grade"] for m in metas), f"{path.name} is given code only"
            continue
        assert any(m["solution"] for m in metas), f"{path.name} has no exercise"
        assert sum(m.get("points", 0) for m in metas) > 0, f"{path.name} has no points"


@pytest.mark.parametrize("source", ["%matplotlib inline\nimport numpy", "x = 1\n!pip install torch"])
def test_ipython_magics_are_refused_because_the_clean_room_runs_plain_python(source):
    with pytest.raises(GradingError, match="plain Python"):
        derive_cell(code(source), "nb.ipynb, cell 3")


def test_a_demonstration_is_a_read_only_cell_the_grader_skips():
    from grading.grade.verdict import plan_cells

    demo = code("# demo: a training run\nhistory = [1, 2]\nprint(history)")
    meta = derive_cell(demo, "x")
    assert meta["locked"] and not meta["grade"] and not meta["solution"]
    nb = nbformat.v4.new_notebook()
    nb.cells = [code("x = 1"), demo, code("# test: t (1 point)\nassert x == 1")]
    for cell, meta in zip(nb.cells, derive_notebook(nb, "nb.ipynb")):
        cell.metadata["nbgrader"] = meta
    assert [c["kind"] for c in plan_cells(nb)] == ["setup", "demo", "test"]


@pytest.mark.parametrize(
    "later, name",
    [
        ("# test: t (1 point)\nassert len(history) == 2", "history"),
        ("def plot():\n    return model.weight", "model"),
        ("for layer in net:\n    pass", "net"),
    ],
)
def test_a_name_a_demonstration_sets_and_a_later_cell_reads_is_refused(later, name):
    nb = nbformat.v4.new_notebook()
    demo = "# demo: a training run\nimport numpy as net\nhistory = []\nfor model in [1]:\n    history.append(model)"
    nb.cells = [code(demo), nbformat.v4.new_markdown_cell("history"), code(later)]
    with pytest.raises(GradingError, match=f"nb.ipynb, cell 1: this demonstration .* sets {name}, which cell 3 uses"):
        derive_notebook(nb, "nb.ipynb")


def test_a_later_demonstration_may_read_what_an_earlier_one_set_and_a_functions_own_names_are_its_own():
    nb = nbformat.v4.new_notebook()
    first = "# demo: one\ndef train(steps):\n    losses = []\n    return losses\nresult = train(3)"
    later = [
        "# demo: two\nprint(result)",  # a demonstration too: skipped alike
        "def f(losses):\n    return losses",  # a parameter
        "def g():\n    train = 1\n    return train",  # a function's own variable
        "print([result for result in range(2)])",  # a comprehension's
        "for train in range(2):\n    print(train)",  # a loop's variable
        "result = 3\nprint(result)",  # set again before it is read
    ]
    nb.cells = [code(first)] + [code(source) for source in later]
    derive_notebook(nb, "nb.ipynb")


def test_a_demonstration_holds_no_exercise_or_test():
    source = "# demo: x\ndef f():\n    ### BEGIN SOLUTION\n    pass\n    ### END SOLUTION"
    with pytest.raises(GradingError, match="holds no exercise or test"):
        derive_cell(code(source), "nb.ipynb, cell 3")
