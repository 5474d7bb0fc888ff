"""Students' code cannot rewrite the data the tests check it against (issue 21's attacks): each cheat is graded beside
its honest twin (the same wrong answer, without touching the test's data) and earns no more than the twin, with a
message that names what it changed."""

import json

import pytest

from conftest import REPO, run_cli
from grading.common.answers import solved
from grading.common.notebooks import nbgrader_meta, read_notebook, write_notebook

pytestmark = pytest.mark.slow

CHEATS = {
    # notebook: {grade id: (the cheat's code, its honest twin's code)}
    "01_tensor": {
        "solution-matmul": (
            "shape = np.matmul(a.data, b.data).shape\na.data[...] = 0\nb.data[...] = 0\nreturn Tensor(np.zeros(shape))",
            "return Tensor(np.zeros(np.matmul(a.data, b.data).shape))",
        ),
        "solution-tensor_sum": (
            "out = x.data.sum(axis=axis, keepdims=keepdims)\nx.data[...] = 0\nreturn Tensor(np.zeros_like(out))",
            "return Tensor(np.zeros_like(x.data.sum(axis=axis, keepdims=keepdims)))",
        ),
    },
    "11_training": {
        "solution-accuracy": (
            "predicted = np.argmax(logits.data, axis=1)\nif isinstance(labels, np.ndarray):\n    labels[...] = predicted\n"
            "return float(np.mean(predicted == np.asarray(labels)))",
            "predicted = np.argmax(logits.data, axis=1)\nreturn float(np.mean(predicted == np.asarray(labels)))",
        ),
        "solution-train_epoch": ("y[...] = 0\nlosses.append(0.0)", "losses.append(0.0)"),
    },
    "14_higher_order": {
        "solution-hessian_vector_product": (
            "for p in params:\n    p.data[...] = 0\nfor v in vectors:\n    v[...] = 0\n"
            "products = [Tensor(np.zeros(p.shape)) for p in params]",
            "products = [Tensor(np.zeros(p.shape)) for p in params]",
        ),
    },
}


def edited(kit, notebook, which):
    "The solved notebook with each listed exercise's solution replaced by the cheat (0) or its twin (1)."
    source = read_notebook(REPO / "notebooks" / f"{notebook}.ipynb")
    regions = {nbgrader_meta(c).get("grade_id"): solution_region(c.source) for c in source.cells}

    def edit(grade_id, code):
        if grade_id not in CHEATS[notebook]:
            return code
        region = regions[grade_id]
        indent = region[0][: len(region[0]) - len(region[0].lstrip())]
        body = "\n".join(indent + line for line in CHEATS[notebook][grade_id][which].splitlines())
        assert "\n".join(region) in code
        return code.replace("\n".join(region), body)

    released = read_notebook(kit / notebook / f"{notebook}.ipynb")
    return solved(released, source, edit=edit)


def solution_region(source):
    "The lines between a cell's solution markers."
    lines = source.splitlines()
    if "### BEGIN SOLUTION" not in source:
        return []
    start = next(i for i, line in enumerate(lines) if "### BEGIN SOLUTION" in line)
    end = next(i for i, line in enumerate(lines) if "### END SOLUTION" in line)
    return lines[start + 1 : end]


@pytest.fixture(scope="module")
def graded(kit, tmp_path_factory):
    root = tmp_path_factory.mktemp("tests-data")
    for notebook in CHEATS:
        write_notebook(edited(kit, notebook, 0), root / "subs" / "cheat" / notebook / f"{notebook}.ipynb")
        write_notebook(edited(kit, notebook, 1), root / "subs" / "twin" / notebook / f"{notebook}.ipynb")
    result = run_cli("autograde", root / "subs", "--out", root / "grades")
    assert result.returncode == 0, result.stderr
    return json.loads((root / "grades" / "gradebook.json").read_text())


@pytest.mark.parametrize("notebook", sorted(CHEATS))
def test_changing_the_tests_data_earns_no_more_than_the_honest_wrong_answer(graded, notebook):
    cheat, twin = graded["cheat"][notebook], graded["twin"][notebook]
    assert cheat["score"] <= twin["score"], (cheat["score"], twin["score"])
    # a test's message, or the run's note when the change was caught in a given cell (11's `fit` trains the model)
    messages = " ".join([cheat["note"], *(test["message"] for test in cheat["tests"].values())])
    assert "in place" in messages, messages[:2000]
    assert "\n" not in cheat["note"] and "cell-c" not in cheat["note"], cheat["note"]  # one line, no cell id
