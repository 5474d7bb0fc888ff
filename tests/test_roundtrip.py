"""Release, submit, autograde: full marks for solutions, zero for the untouched release, one wrong answer costs
exactly its exercise's points, and the kit never contains solution code."""

import csv

import nbformat
import pytest
from test_kit_references import raised_by

from conftest import REPO, run_cli
from grading.common.answers import solved
from grading.common.notebooks import read_notebook, solution_lines, write_notebook

pytestmark = pytest.mark.slow  # releases the kit and autogrades it


@pytest.fixture(scope="module")
def graded(graded_demo):
    with open(graded_demo["grades"] / "grades.csv") as f:
        rows = list(csv.DictReader(f))
    return graded_demo["result"], rows, graded_demo["grades"]


def test_autograde_exits_zero_and_writes_one_row_per_student_and_notebook(graded):
    result, rows, _ = graded
    assert result.returncode == 0, result.stderr
    given = {"02b_diagnosis", "15_viz"}  # given code only: not graded
    notebooks = sorted(p.stem for p in (REPO / "notebooks").glob("*.ipynb") if p.stem not in given)
    assert sorted(r["assignment"] for r in rows if r["student"] == "alice") == notebooks, "given code is not graded"
    assert list(rows[0])[:5] == ["student", "assignment", "notebook", "score", "max_score"]


def test_the_demo_check_finds_nothing_wrong_with_alice_and_bob(graded):
    from grading.cli.grading_commands import demo_mismatches
    from grading.grade.gradebook import Row

    _, rows, _ = graded
    table = [
        Row(r["student"], r["assignment"], r["notebook"], float(r["score"]), float(r["max_score"]), r["note"])
        for r in rows
        if r["student"] in ("alice", "bob")
    ]
    assert demo_mismatches(table) == []


def test_solutions_score_full_marks(graded):
    _, rows, _ = graded
    for row in (r for r in rows if r["student"] == "alice"):
        assert float(row["max_score"]) > 0 and row["score"] == row["max_score"], row


def test_untouched_release_scores_zero_without_error(graded):
    _, rows, _ = graded
    for row in (r for r in rows if r["student"] == "bob"):
        assert float(row["score"]) == 0 and float(row["max_score"]) > 0 and row["note"] == "", row


def test_one_wrong_answer_loses_exactly_its_points(graded):
    _, rows, grades = graded
    (carol,) = [r for r in rows if r["student"] == "carol"]
    (alice,) = [r for r in rows if r["student"] == "alice" and r["assignment"] == "04_elementwise"]
    points = {}
    for cell in read_notebook(REPO / "notebooks" / "04_elementwise.ipynb").cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            points[meta["grade_id"]] = meta["points"]
    assert float(carol["score"]) == float(alice["score"]) - points["mul_backward"] - points["mul_backward_hidden"]


def test_feedback_names_the_wrong_rule_but_hides_hidden_tests(graded):
    _, _, grades = graded
    html = (grades / "feedback" / "carol" / "04_elementwise.html").read_text()
    assert "MulBackward, input 0" in html and "analytic" in html
    assert "np.array([1e6, -1e6])" not in html, "hidden test code must not appear in feedback"


def test_the_package_a_notebook_is_graded_with_says_a_later_exercise_is_not_there(graded):
    "A capstone (16) built with 17's BatchNorm1d met its stub while graded: the page said only 'NotImplementedError:'."
    released = graded[2] / ".grading" / "released" / "tinytorch" / "core" / "norm.py"
    source = released.read_text()
    assert "NotImplementedError()" not in source
    message = raised_by(next(line for line in source.splitlines() if "BatchNorm1d is an exercise" in line))
    assert message.startswith("NotImplementedError: BatchNorm1d is an exercise of 17_norm.ipynb, a later notebook")
    assert "Use only what the notebooks up to the one graded here build." in message


def test_kit_has_no_solution_code(kit):
    secret = [
        line
        for line in solution_lines(read_notebook(p) for p in sorted((REPO / "notebooks").glob("*.ipynb")))
        if len(line) > 12
    ]
    assert len(secret) > 100
    for file in (p for p in kit.rglob("*") if p.is_file()):
        try:
            text = file.read_text()
        except UnicodeDecodeError:
            continue
        assert not [line for line in secret if line in text], file


def test_kit_layout_and_its_own_package(kit):
    assert (kit / "01_tensor" / "01_tensor.ipynb").exists() and (kit / "settings.ini").exists()
    module = (kit / "tinytorch" / "core" / "elementwise.py").read_text()
    assert 'NotImplementedError("Exercise AddBackward in 04_elementwise.ipynb' in module
    for stem in [
        "04_elementwise",
        "06_autograd",
    ]:  # 06 keeps its pictures in the repository (grading/authoring/pictures.py)
        nb = nbformat.read(kit / stem / f"{stem}.ipynb", 4)
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), f"{stem}: outputs are cleared"
    from grading.authoring.release import STUDENT_KIT

    shipped = [p.relative_to(kit / "grading").as_posix() for p in (kit / "grading").rglob("*") if p.is_file()]
    assert sorted(p for p in shipped if "__pycache__" not in p) == sorted(STUDENT_KIT)


def test_student_who_fills_a_cell_and_reexports_gets_their_code(kit, tmp_path):
    import shutil

    mine = tmp_path / "kit"
    shutil.copytree(kit, mine)
    path = mine / "04_elementwise" / "04_elementwise.ipynb"
    nb = solved(read_notebook(path), read_notebook(REPO / "notebooks" / "04_elementwise.ipynb"))
    write_notebook(nb, path)
    result = run_cli("export", cwd=mine)
    assert result.returncode == 0, result.stderr
    module = (mine / "tinytorch" / "core" / "elementwise.py").read_text()
    assert "return unbroadcast(grad_output, a.shape), unbroadcast(grad_output, b.shape)" in module


def test_check_reports_each_visible_test(kit):
    untouched = run_cli("check", kit / "02_function" / "02_function.ipynb")
    assert untouched.returncode == 1
    assert (
        "FAIL    function_base (1 point): NotImplementedError: Exercise Function in 02_function.ipynb"
        in untouched.stdout
    )
    assert (
        "HIDDEN  square_backward_hidden" in untouched.stdout
        and "0 passed, 3 failed (1 hidden test run when graded)" in untouched.stdout
    )
    solution = run_cli("check", REPO / "notebooks" / "02_function.ipynb")
    assert solution.returncode == 0 and "4 passed, 0 failed" in solution.stdout, solution.stdout


def test_a_demonstration_is_not_run_when_graded_and_the_page_says_so(graded):
    "18's training run and timing table are demonstrations ('# demo:'): the page says the grader skips them."
    from grading.grade.outputs import DEMO_NOT_RUN

    _, _, grades = graded
    html = (grades / "feedback" / "alice" / "18_attention.html").read_text()
    demos = [
        c for c in read_notebook(REPO / "notebooks" / "18_attention.ipynb").cells if c.source.startswith("# demo:")
    ]
    assert len(demos) == 2 and html.count(DEMO_NOT_RUN.strip()) == 2, "each demonstration's output is the note"
    assert "causal mask" in html, "a cell that is no demonstration shows its output"
