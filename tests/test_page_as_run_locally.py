"""The feedback page shows the given cells' outputs of the grader's run, in which the student's functions run in the
sandbox and the cells in the grader. A given cell whose demo relies on something that does not cross (a class the
cell defines, whose methods the sandbox never gets) prints other numbers there than in the student's own Jupyter:
11's forgotten zero_grad() showed the same accuracies with and without it. Each such demo, checked on the page of the
instructor's own notebook graded as a submission."""

import json
import re
import shutil

import pytest

from conftest import REPO, run_cli


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    root = tmp_path_factory.mktemp("page-as-local")
    for notebook in ("06_autograd", "11_training"):
        (root / "subs" / "ref" / notebook).mkdir(parents=True)
        shutil.copyfile(
            REPO / "notebooks" / f"{notebook}.ipynb", root / "subs" / "ref" / notebook / f"{notebook}.ipynb"
        )
    result = run_cli("autograde", root / "subs", "--out", root / "grades")
    assert result.returncode == 0, result.stderr[-2000:]
    return root / "grades" / "results" / "ref"


def printed(page, words):
    "What the code cell holding `words` printed on the page."
    cells = json.loads(page.read_text())["cells"]
    (cell,) = [c for c in cells if c["cell_type"] == "code" and words in "".join(c["source"])]
    return "".join("".join(o.get("text", "")) for o in cell.get("outputs", []) if o.get("output_type") == "stream")


@pytest.mark.slow
def test_the_forgotten_zero_grad_demo_shows_its_effect_on_the_page(pages):
    text = printed(pages / "11_training.notebook.ipynb", "def train_without_zero_grad")
    found = re.search(r"epoch 10: validation accuracy ([\d.]+) with zero_grad\(\), ([\d.]+) without", text)
    assert found, text
    with_it, without = map(float, found.groups())
    assert with_it > 0.9 and without < 0.5, text  # 0.941 and 0.191 in a local run


@pytest.mark.slow
def test_an_intermediate_results_gradient_reaches_the_page(pages):
    """06's retain_grad() and grad() of an intermediate result printed None on the page: the gradient the worker stored
    was refused (the graph it was reached from was released by then), and grad() kept its requests in a module dict
    the sandbox never saw."""
    page = pages / "06_autograd.notebook.ipynb"
    assert "dL/dy = Tensor([ 1., -1.,  2.])" in printed(page, "y.retain_grad()")
    assert "grad() of an intermediate result: Tensor([ 1., -1.,  2.])" in printed(page, "grad() of an intermediate")
