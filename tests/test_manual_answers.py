"""Written answers marked by hand ("check your understanding", issue 12): `<!-- answer: name (n points) -->` cells
get nbgrader's manually graded metadata, the release replaces the model answer, the scan treats it as a secret,
autograde leaves the points out of the score and records them, and OUT/marking is a formgrader course to mark them."""

import csv
import json
import shutil

import nbformat
import pytest

from conftest import REPO, run_cli
from grading.authoring.convention import apply_convention, derive_cell, derive_notebook, manual_answers
from grading.authoring.release import find_leaks, release, scan_for_solutions
from grading.cli import written_answers
from grading.common.errors import GradingError
from grading.common.notebooks import read_notebook, write_notebook
from grading.grade.gradebook import Row, write_table
from grading.grade.spec import manual_note, manual_points
from grading.grade.spec import test_cells as autograded_tests
from grading.lms.lms import export_grades
from grading.reports.marking import as_plain_text, marking_notebook

QUESTION = "Why does `SumBackward` return a gradient of ones, shaped like the input?"
MODEL = "Every input element adds to the sum with slope one, so each gets the incoming gradient unchanged."
HEADER = "<!-- answer: why_ones (3 points) -->"


def markdown(source, cell_id="md"):
    cell = nbformat.v4.new_markdown_cell(source)
    cell.id = cell_id
    return cell


def code(source, cell_id="code"):
    cell = nbformat.v4.new_code_cell(source)
    cell.id = cell_id
    return cell


def test_an_answer_cell_becomes_a_manually_graded_answer():
    meta = derive_cell(markdown(f"{HEADER}\n{MODEL}"), "x")
    assert meta == {
        "solution": True,
        "grade": True,
        "points": 3,
        "grade_id": "why_ones",
        "locked": False,
        "task": False,
        "schema_version": 3,
    }
    assert derive_cell(markdown("<!-- answer: half (0.5 point) -->\nYes, because."), "x")["points"] == 0.5
    assert not derive_cell(markdown(f"A note.\n{HEADER}\n{MODEL}"), "x")["grade"], "the header must be the first line"


@pytest.mark.parametrize(
    "cell, words",
    [
        (markdown("<!-- answer: why ones (3 points) -->\nx"), r"malformed answer header .*why ones"),
        (markdown("<!-- answer: why_ones (three points) -->\nx"), "write it as '<!-- answer: name \\(2 points\\) -->'"),
        (markdown("<!-- Answer: why_ones 3 points -->\nx"), "malformed answer header"),
        (markdown("<!-- answer: why_ones (3 points)\nx"), "malformed answer header"),
        (markdown(f"{HEADER}\n\n"), "has no model answer"),
        (code(f"{HEADER}\nx = 1"), "must start a markdown cell"),
    ],
)
def test_a_malformed_answer_header_names_the_notebook_and_cell(cell, words):
    nb = nbformat.v4.new_notebook()
    nb.cells = [markdown(QUESTION, "q"), cell]
    with pytest.raises(GradingError, match=r"^tiny\.ipynb, cell 2: .*" + words):
        derive_notebook(nb, "tiny.ipynb")


def test_an_answer_and_a_test_cannot_share_a_name():
    nb = nbformat.v4.new_notebook()
    nb.cells = [code("# test: why_ones (1 point)\nassert True"), markdown(f"{HEADER}\n{MODEL}")]
    with pytest.raises(GradingError, match="cells 1 and 2 both have the id 'why_ones'"):
        derive_notebook(nb, "tiny.ipynb")


def tiny_course(folder, stem="01_tiny"):
    "A notebook with a test cell, a question and its answer cell, its metadata derived: {stem: path}."
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        markdown("# A tiny notebook", "c-title"),
        code("# test: truth (2 points)\nassert 1 + 1 == 2", "c-test"),
        markdown(f"**Question.** {QUESTION}", "c-question"),
        markdown(f"{HEADER}\n{MODEL}", "c-answer"),
    ]
    path = folder / f"{stem}.ipynb"
    write_notebook(nb, path)
    apply_convention(path)
    return {stem: path}


def test_written_answers_are_not_tests(tmp_path):
    nb = read_notebook(next(iter(tiny_course(tmp_path).values())))
    assert list(autograded_tests(nb)) == ["truth"], "the answer's points are not autograded"
    assert manual_answers(nb) == {"why_ones": 3} and manual_points(nb) == 3
    assert written_answers(tmp_path / "01_tiny.ipynb") == [("why_ones", 3.0, True)]
    assert "3 points of this notebook are marked by hand" in manual_note(3)
    assert "1 point of this notebook is marked by hand" in manual_note(1) and manual_note(0) == ""


def test_the_scan_flags_a_leaked_model_answer(tmp_path):
    notebooks = tiny_course(tmp_path / "source")
    kit = tmp_path / "kit"
    kit.mkdir()
    (kit / "README.md").write_text(f"{QUESTION}\nHint: every input element adds to the sum.\n")  # not a leak
    assert list(find_leaks(kit, notebooks)) == []
    (kit / "notes.md").write_text("Remember: " + MODEL.replace(" ", "  ").replace(",", " ,") + "\n")  # spacing aside
    leaks = [(f.name, where, secret.kind, secret.exercise) for f, where, _, secret in find_leaks(kit, notebooks)]
    assert leaks == [("notes.md", "line 1", "answer", "why_ones")]
    with pytest.raises(GradingError, match=r"^notes\.md, line 1: .*the model answer to question why_ones of 01_tiny"):
        scan_for_solutions(kit, notebooks)


def test_the_grade_table_has_a_manual_points_column(tmp_path):
    write_table([Row("alice", "01_tiny", "01_tiny.ipynb", 2, 2, "", manual_points=3)], tmp_path / "grades.csv")
    with open(tmp_path / "grades.csv") as f:
        (row,) = list(csv.DictReader(f))
    assert (row["score"], row["max_score"], row["manual_points"]) == ("2", "2", "3")


def test_lms_export_counts_the_written_answers_and_flags_them_unmarked(tmp_path):
    entry = {"score": 2.0, "max_score": 2.0, "note": "", "manual_points": 3, "tests": {"truth": {"score": 2.0}}}
    (tmp_path / "grades").mkdir()
    (tmp_path / "grades" / "gradebook.json").write_text(json.dumps({"alice": {"01_tiny": entry}}))
    tiny_course(tmp_path / "nbs")
    (tmp_path / "roster.csv").write_text("student,name,email,lms_id\nalice,Alice,alice@example.edu,101\n")
    report = export_grades(
        tmp_path / "grades",
        "canvas",
        tmp_path / "canvas.csv",
        roster=tmp_path / "roster.csv",
        notebooks_dir=tmp_path / "nbs",
    )
    with open(tmp_path / "canvas.csv", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    assert rows[0][5:] == ["01_tiny"] and rows[1][5:] == ["5"] and rows[2][5:] == ["2"], "no mark yet"
    (warning,) = [w for w in report.warnings if "not all marked" in w]
    assert warning.startswith("1 submission with written answers not all marked yet (01_tiny: 1)")


def test_the_marking_notebook_shows_answers_as_plain_text_and_runs_nothing():
    released = nbformat.v4.new_notebook()
    answer = markdown("YOUR ANSWER HERE", "c-answer")
    answer.metadata["nbgrader"] = {"grade": True, "solution": True, "grade_id": "why_ones", "points": 3}
    exercise = code("def f():\n    raise NotImplementedError()", "c-ex")
    exercise.metadata["nbgrader"] = {"grade": False, "solution": True, "grade_id": "solution-f"}
    released.cells = [exercise, answer]
    submitted = nbformat.from_dict(json.loads(nbformat.writes(released)))
    submitted.cells[0].source = "def f():\n    return 1"
    submitted.cells[0].outputs = [nbformat.v4.new_output("stream", text="<script>alert(1)</script>")]
    submitted.cells[1].source = "It is ```linear```. <script>alert(1)</script>"
    nb = marking_notebook(released, submitted)
    assert nb.cells[0].source == "def f():\n    return 1" and nb.cells[0].outputs == []
    assert nb.cells[1].source == "````text\nIt is ```linear```. <script>alert(1)</script>\n````"
    assert as_plain_text("plain") == "```text\nplain\n```"


@pytest.mark.slow  # runs nbgrader's generate_assignment
def test_release_replaces_the_model_answer(tmp_path):
    notebooks = tiny_course(tmp_path / "nbs")
    out = tmp_path / "kit"
    release(out, tmp_path / "nbs")
    nb = read_notebook(out / "01_tiny" / "01_tiny.ipynb")
    (answer,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "why_ones"]
    assert answer.source == "YOUR ANSWER HERE" and answer.cell_type == "markdown"
    assert answer.metadata["nbgrader"]["points"] == 3 and answer.metadata["nbgrader"]["solution"]
    text = "\n".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    assert "slope one" not in text and "why_ones (3 points)" not in text
    assert list(find_leaks(out, notebooks)) == []
    check = run_cli("check", out / "01_tiny" / "01_tiny.ipynb", cwd=out)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "MANUAL  why_ones: not answered yet (the cell still says YOUR ANSWER HERE), marked by hand" in check.stdout
    assert "1 passed, 0 failed; 1 written answer marked by hand, 1 not answered yet" in check.stdout
    (answer,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "why_ones"]
    answer.source = "Each input element adds to the sum once."
    write_notebook(nb, out / "01_tiny" / "01_tiny.ipynb")
    check = run_cli("check", out / "01_tiny" / "01_tiny.ipynb", cwd=out)
    assert "MANUAL  why_ones: marked by hand (3 points)" in check.stdout
    assert "1 passed, 0 failed; 1 written answer marked by hand" in check.stdout and "not answered" not in check.stdout


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The course with a question and its answer cell added to 01_tensor; alice solved 01 and answered, bob handed in
    its student version untouched."""
    from grading.authoring.release import student_notebooks
    from grading.common.answers import solved

    root = tmp_path_factory.mktemp("manual")
    shutil.copytree(REPO / "notebooks", root / "nbs", ignore=shutil.ignore_patterns(".*"))
    path = root / "nbs" / "01_tensor.ipynb"
    nb = read_notebook(path)
    auto = sum(points for points, _ in autograded_tests(nb).values())
    manual = manual_points(nb) + 3
    nb.cells += [markdown(f"**Question.** {QUESTION}", "c-question"), markdown(f"{HEADER}\n{MODEL}", "c-answer")]
    write_notebook(nb, path)
    apply_convention(path)
    released = student_notebooks({"01_tensor": path}, root / "course")["01_tensor"]
    alice = solved(released, read_notebook(path))
    for cell in alice.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "why_ones":
            cell.source = "Each element adds with slope 1. <b>bold</b>"
    write_notebook(alice, root / "subs" / "alice" / "01_tensor" / "01_tensor.ipynb")
    write_notebook(released, root / "subs" / "bob" / "01_tensor" / "01_tensor.ipynb")
    result = run_cli("autograde", root / "subs", "--out", root / "grades", "--notebooks", root / "nbs")
    assert result.returncode == 0, result.stdout + result.stderr
    return root, auto, manual


def table(root):
    with open(root / "grades" / "grades.csv") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


@pytest.mark.slow
def test_autograde_keeps_the_auto_total_and_records_the_manual_points(graded):
    root, auto, manual = graded
    rows = table(root)
    assert auto > 0 and float(rows["alice"]["score"]) == float(rows["alice"]["max_score"]) == auto
    assert float(rows["bob"]["score"]) == 0 and float(rows["bob"]["max_score"]) == auto
    assert float(rows["alice"]["manual_points"]) == float(rows["bob"]["manual_points"]) == manual
    book = json.loads((root / "grades" / "gradebook.json").read_text())
    assert (
        book["alice"]["01_tensor"]["manual_points"] == manual and "why_ones" not in book["alice"]["01_tensor"]["tests"]
    )
    page = (root / "grades" / "feedback" / "alice" / "01_tensor.html").read_text()
    assert f"{manual:g} points of this notebook are marked by hand" in page
    export = run_cli(
        "export-grades", root / "grades", "--format", "gradescope", "--out", root / "gs", "--notebooks", root / "nbs"
    )
    assert export.returncode == 0 and "2 submissions with written answers not all marked" in export.stderr, (
        export.stderr
    )


@pytest.mark.slow
def test_the_marking_course_holds_the_answers_and_the_verdicts_scores(graded):
    from nbgrader.api import Gradebook

    root, auto, manual = graded
    marking = root / "grades" / "marking"
    assert (marking / "nbgrader_config.py").exists()
    nb = read_notebook(marking / "autograded" / "alice" / "01_tensor" / "01_tensor.ipynb")
    (answer,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "why_ones"]
    assert answer.source == "```text\nEach element adds with slope 1. <b>bold</b>\n```"
    with Gradebook(f"sqlite:///{marking / 'gradebook.db'}") as gb:
        grade = gb.find_grade("why_ones", "01_tensor", "01_tensor", "alice")
        assert grade.needs_manual_grade and grade.auto_score is None and grade.max_score == 3
        assert gb.find_submission_notebook("01_tensor", "01_tensor", "alice").score == auto
        assert gb.find_submission_notebook("01_tensor", "01_tensor", "bob").score == 0
        grade.manual_score, grade.needs_manual_grade = 2, False  # what formgrader does when alice's answer is marked
        gb.db.commit()
    again = run_cli("autograde", root / "subs", "--out", root / "grades", "--notebooks", root / "nbs")
    assert again.returncode == 0, again.stderr
    with Gradebook(f"sqlite:///{marking / 'gradebook.db'}") as gb:
        notebook = gb.find_submission_notebook("01_tensor", "01_tensor", "alice")
        assert notebook.score == auto + 2, "a later run keeps the instructor's marks"
        assert not gb.find_grade("why_ones", "01_tensor", "01_tensor", "alice").needs_manual_grade
    assert float(table(root)["alice"]["score"]) == auto, "the marks never change the autograded table"
