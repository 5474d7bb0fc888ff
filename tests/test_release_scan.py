"""release scans every file of the kit against the answers of every notebook, not only the notebook's own."""

import json
import shutil

import nbformat
import pytest
from release_helpers import course_copy, release_in

from grading.authoring.leaks import answer_parts, find_leaks, is_answer, normalise, scan_for_solutions
from grading.common.errors import GradingError
from grading.common.notebooks import course_notebooks

ANSWER = "return (grad_output * 2 * x,)"  # notebook 02's SquareBackward


@pytest.mark.parametrize(
    "line",
    [
        "return result",
        "### END SOLUTION",
        "### BEGIN HIDDEN TESTS",
        "import numpy as np",
        "from tinytorch.core.tensor import Tensor",
        "pass",
        "x",
        "    return out  ",
        "",
        "# return (grad_output * 2 * x,)",
        "return None",
        "loss.backward()",
        "(x,) = self.saved_tensors",
        "return (grad,)",
        "else:",
    ],
)
def test_boilerplate_is_not_an_answer(line):
    assert not is_answer(line)


@pytest.mark.parametrize(
    "line",
    [
        ANSWER,
        "self.saved_tensors = tuple(tensors)",
        "grad[j] = (plus - minus) / (2 * eps)",
        "return (grad_output * (x.data > 0),)",
        "grad_b = np.ones(len(g_rows), dtype=g.dtype) @ g_rows",
    ],
)
def test_specific_lines_are_answers(line):
    assert is_answer(line)


def test_whitespace_does_not_hide_an_answer():
    assert (
        normalise("return (grad_output*2*x, )") == normalise("  return ( grad_output * 2 * x ,)") == normalise(ANSWER)
    )


def test_the_expression_of_an_answer_is_an_answer_too():
    assert answer_parts(ANSWER) == [ANSWER, "grad_output * 2 * x"]
    assert "tuple(tensors)" not in answer_parts("self.saved_tensors = tuple(tensors)")  # too generic alone
    assert answer_parts("return result") == []


def tiny_notebook(path, *cells):
    nb = nbformat.v4.new_notebook()
    for index, (source, meta) in enumerate(cells):
        cell = nbformat.v4.new_code_cell(source)
        cell.id = f"cell-{index}"
        cell.metadata["nbgrader"] = meta
        nb.cells.append(cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def test_find_leaks_in_another_notebook_and_in_a_test_message(tmp_path):
    exercise = {"grade_id": "solution-SquareBackward", "solution": True, "grade": False}
    given = {"grade_id": "cell-x", "solution": False, "grade": False}
    test = {"grade_id": "square", "solution": False, "grade": True, "points": 1}
    square = "class SquareBackward:\n    def apply(self, grad_output):\n        (x,) = self.saved_tensors\n"
    message = ('assert ok, "grad_x should be grad_output*2*x"', test)
    first = tiny_notebook(
        tmp_path / "source" / "02_a.ipynb",
        (
            f"{square}        ### BEGIN SOLUTION\n        {ANSWER}\n        return result\n        ### END SOLUTION",
            exercise,
        ),
        message,
    )
    later = tiny_notebook(
        tmp_path / "source" / "03_b.ipynb", ("def good(grad_output, x):\n    return (grad_output*2*x, )", given)
    )
    kit = tmp_path / "kit"
    tiny_notebook(
        kit / "02_a.ipynb", (f"{square}        raise NotImplementedError()\n        return result", exercise), message
    )
    shutil.copyfile(later, kit / "03_b.ipynb")
    (kit / "README.md").write_text("Your function ends with: return result\n")  # boilerplate: not a leak
    notebooks = {"02_a": first, "03_b": later}
    leaks = [(f.name, where, secret.stem, secret.exercise) for f, where, line, secret in find_leaks(kit, notebooks)]
    assert leaks == [
        ("02_a.ipynb", "cell 2 (cell-1)", "02_a", "SquareBackward"),
        ("03_b.ipynb", "cell 1 (cell-0)", "02_a", "SquareBackward"),
    ]
    (kit / "02_a.ipynb").unlink()  # the scan stops at the first leak: leave only the later notebook's
    with pytest.raises(
        GradingError,
        match=r"^03_b\.ipynb, cell 1 \(cell-0\): 03_b gives away the answer to exercise "
        r"SquareBackward of 02_a \('return \(grad_output \* 2 \* x,\)'\) in the line",
    ):
        scan_for_solutions(kit, notebooks)


def test_the_real_kit_shows_no_answer(kit):
    assert list(find_leaks(kit, course_notebooks())) == []


def plant(path, cell_id, line):
    "Add `line` to the end of one cell of a notebook, as an author might paste it."
    nb = json.loads(path.read_text())
    cell = next(c for c in nb["cells"] if c["id"] == cell_id)
    cell["source"] = "".join(cell["source"]) + "\n" + line
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


@pytest.mark.slow
@pytest.mark.parametrize(
    "cell_id, line",
    [
        ("c03-018", f"def also_good(grad_output, x):\n    {ANSWER}"),  # given code
        ("c03-015", 'assert True, "GoodSquare: grad_x should be grad_output * 2 * x"'),  # a test's message
    ],
)
def test_an_earlier_answer_planted_in_a_later_notebook_stops_the_release(tmp_path, cell_id, line):
    root = course_copy(tmp_path, ["02_function", "03_gradcheck"])
    plant(root / "notebooks" / "03_gradcheck.ipynb", cell_id, line)
    out = tmp_path / "kit"
    result = release_in(root, out)
    errors = [text for text in result.stderr.splitlines() if text.startswith("error:")]
    assert result.returncode != 0 and len(errors) == 1, result.stderr
    error = errors[0]
    assert error.startswith("error: 03_gradcheck/03_gradcheck.ipynb, cell "), error
    assert f"({cell_id})" in error and "03_gradcheck gives away" in error, error
    assert f"the answer to exercise SquareBackward of 02_function ({ANSWER!r})" in error, error
    assert line.splitlines()[-1].strip() in error and "the kit was not released" in error, error
    assert not out.exists(), "nothing is released"


@pytest.mark.slow
def test_the_unplanted_copy_releases(tmp_path):
    root = course_copy(tmp_path, ["02_function", "03_gradcheck"])
    result = release_in(root, tmp_path / "kit")
    assert result.returncode == 0, result.stderr


UNBROADCAST_PROBE = r"""
import importlib, inspect, pkgutil
import numpy as np
import tinytorch.core

rng = np.random.default_rng(4)
probes = [(rng.normal(size=(2, 3, 4)), (3, 1)), (rng.normal(size=(2, 3)), (3,))]
right = [probes[0][0].sum(axis=0).sum(axis=-1, keepdims=True), probes[1][0].sum(axis=0)]


def results(value):
    "The arrays in what a function returned, looking one level into a tuple or list."
    values = value if isinstance(value, (tuple, list)) else [value]
    arrays = [v if isinstance(v, np.ndarray) else getattr(v, "data", None) for v in values]  # a Tensor's data
    return [a for a in arrays if isinstance(a, np.ndarray)]


for info in pkgutil.iter_modules(tinytorch.core.__path__):
    module = importlib.import_module(f"tinytorch.core.{info.name}")
    for name, function in inspect.getmembers(module, inspect.isfunction):
        if function.__module__ != module.__name__:
            continue
        found = 0
        for (grad, shape), wanted in zip(probes, right):
            try:
                out = function(grad.copy(), shape)
            except BaseException:
                break
            if any(r.shape == wanted.shape and np.allclose(r, wanted) for r in results(out)):
                found += 1
        if found == 2:
            print(f"{module.__name__}.{name}")
"""


def test_no_given_function_of_the_kit_sums_a_gradient_back(kit):
    """A given function that does what notebook 04's `unbroadcast` exercise does would give its answer away, however
    it is written (the line scan only sees copied lines). Every function of the kit's package is called as
    unbroadcast(grad, shape) would be, and none may return the sum (02b's diagnosis once did, as `_summed_back`)."""
    import subprocess
    import sys

    found = subprocess.run(
        [sys.executable, "-c", UNBROADCAST_PROBE], cwd=kit, capture_output=True, text=True, timeout=300
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.split() == [], f"these functions of the kit sum a gradient back: {found.stdout}"
