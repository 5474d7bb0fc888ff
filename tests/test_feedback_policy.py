"""How much the students' feedback pages show (`--feedback full|summary|none`), and that the policy is recorded;
with one real autograde run: variants recorded per student, pages rewritten under another policy without regrading."""

import csv
import json

import nbformat
import pytest

from conftest import REPO, run_cli
from grading.common.answers import solved
from grading.common.errors import GradingError
from grading.common.notebooks import read_notebook, write_notebook
from grading.grade.gradebook import page_path, result_path
from grading.grade.regrade import refeedback
from grading.reports.feedback import publish


def result(**tests):
    rows = {
        name: {"score": s, "max_score": m, "message": msg, "hidden": name.endswith("_hidden"), "fingerprint": "f"}
        for name, (s, m, msg) in tests.items()
    }
    return {
        "student": "ada",
        "assignment": "09_nn",
        "tests": rows,
        "score": sum(r["score"] for r in rows.values()),
        "max_score": sum(r["max_score"] for r in rows.values()),
        "note": "",
        "fingerprint": {},
    }


GRADED = result(
    linear=(1, 1, ""),
    linear_hidden=(0, 2, "AssertionError: the secret shapes (5, 7)"),
    module=(0, 1, "AssertionError: visible message"),
    module_hidden=(2, 2, ""),
)
PAGE = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("the notebook as it ran")])


def test_full_shows_every_test_and_its_message(tmp_path):
    publish(tmp_path / "p.html", PAGE, "09_nn", GRADED, "full")
    page = (tmp_path / "p.html").read_text()
    assert "linear_hidden" in page and "the secret shapes" in page and "visible message" in page
    assert "09_nn: 3 / 6" in page and "the notebook as it ran" in page


def test_summary_shows_the_total_the_visible_tests_and_only_a_count_of_hidden_ones(tmp_path):
    publish(tmp_path / "p.html", PAGE, "09_nn", GRADED, "summary")
    page = (tmp_path / "p.html").read_text()
    assert "09_nn: 3 / 6" in page and "<b>linear</b>" in page and "<b>module</b>" in page
    assert "hidden tests: 1 of 2 passed" in page
    assert "linear_hidden" not in page and "module_hidden" not in page and "secret shapes" not in page


def test_none_writes_no_page_and_removes_an_earlier_one(tmp_path):
    publish(tmp_path / "p.html", PAGE, "09_nn", GRADED, "full")
    publish(tmp_path / "p.html", PAGE, "09_nn", GRADED, "none")
    assert not (tmp_path / "p.html").exists()
    with pytest.raises(GradingError, match="expected one of full, summary, none"):
        publish(tmp_path / "p.html", PAGE, "09_nn", GRADED, "totals")


def test_a_kept_result_gets_its_page_again_under_a_new_policy(tmp_path):
    kept = dict(GRADED, feedback="full")
    result_path(tmp_path, "ada", "09_nn").parent.mkdir(parents=True)
    result_path(tmp_path, "ada", "09_nn").write_text(json.dumps(kept))
    page_path(tmp_path, "ada", "09_nn").write_text(nbformat.writes(PAGE))
    again = refeedback(tmp_path, kept, "summary")
    page = (tmp_path / "feedback" / "ada" / "09_nn.html").read_text()
    assert again["feedback"] == "summary" and "hidden tests: 1 of 2 passed" in page and "the notebook as it" in page
    assert json.loads(result_path(tmp_path, "ada", "09_nn").read_text())["feedback"] == "summary", "recorded"
    assert refeedback(tmp_path, again, "summary") is again, "the same policy: nothing to do"


def test_an_unknown_policy_is_refused_by_the_command(tmp_path):
    result = run_cli("autograde", tmp_path, "--out", tmp_path / "out", "--feedback", "totals")
    assert result.returncode == 2 and "invalid choice: 'totals'" in result.stderr


@pytest.fixture(scope="module")
def two_students(kit, tmp_path_factory):
    "ada and bo hand in the same solved 09_nn; graded with --feedback summary."
    root = tmp_path_factory.mktemp("policy")
    source = read_notebook(REPO / "notebooks" / "09_nn.ipynb")
    nb = solved(read_notebook(kit / "09_nn" / "09_nn.ipynb"), source)
    for student, hours in (("ada", "2"), ("bo", "3.5")):  # the optional last cell (tests/test_time_spent.py)
        nb.cells[-1].source = f"# hours spent (optional, not graded)\nhours_spent = {hours}"
        write_notebook(nb, root / "submissions" / student / "09_nn" / "09_nn.ipynb")
    out = root / "grades"
    first = run_cli("autograde", root / "submissions", "--out", out, "--feedback", "summary")
    assert first.returncode == 0, first.stderr
    return root, out, first


def grades(out):
    with open(out / "grades.csv") as f:
        return [{k: v for k, v in r.items() if k != "note"} for r in csv.DictReader(f)]


def test_each_student_has_a_recorded_variant_and_full_marks(two_students):
    _, out, _ = two_students
    book = json.loads((out / "gradebook.json").read_text())
    ada, bo = book["ada"]["09_nn"], book["bo"]["09_nn"]
    assert ada["score"] == ada["max_score"] == bo["score"] > 0, "a right answer passes every variant"
    assert len(ada["variant"]) == 16 and ada["variant"] != bo["variant"]
    assert ada["feedback"] == "summary"
    secret = (out / ".grading-secret").read_bytes().strip()
    assert secret.decode() not in (out / "gradebook.json").read_text(), "the secret is never in the gradebook"


def test_the_hours_the_students_reported_give_the_notebook_s_median(two_students):
    _, out, first = two_students
    assert "time spent: 2 of 2 submissions report their hours" in first.stdout
    with open(out / "time_spent.csv") as f:
        (row,) = list(csv.DictReader(f))
    assert row == {
        "assignment": "09_nn",
        "submissions": "2",
        "reported": "2",
        "median_hours": "2.75",
        "lower_quartile": "2.38",
        "upper_quartile": "3.12",
    }


def test_summary_pages_hide_the_hidden_tests_names(two_students):
    _, out, _ = two_students
    page = (out / "feedback" / "ada" / "09_nn.html").read_text()
    hidden = sum("### BEGIN HIDDEN TESTS" in c.source for c in read_notebook(REPO / "notebooks" / "09_nn.ipynb").cells)
    assert hidden >= 2 and f"hidden tests: {hidden} of {hidden} passed" in page
    assert "linear_hidden" not in page.split("</div>")[0]


def test_another_policy_later_rewrites_the_pages_without_grading_again(two_students):
    root, out, _ = two_students
    before = grades(out)
    none = run_cli("autograde", root / "submissions", "--out", out, "--feedback", "none")
    assert none.returncode == 0, none.stderr
    assert "2 submissions already graded" in none.stdout and "(the previous run: summary)" in none.stdout
    assert "time spent: 2 of 2 submissions report their hours" in none.stdout, "a kept result keeps its report"
    assert not (out / "feedback" / "ada" / "09_nn.html").exists() and grades(out) == before
    full = run_cli("autograde", root / "submissions", "--out", out, "--feedback", "full")
    assert full.returncode == 0 and "2 submissions already graded" in full.stdout
    page = (out / "feedback" / "bo" / "09_nn.html").read_text()
    assert "linear_hidden" in page and grades(out) == before
    assert json.loads((out / "gradebook.json").read_text())["bo"]["09_nn"]["feedback"] == "full"


def test_a_notebook_older_than_the_result_it_replaces_is_named_in_a_warning(tmp_path):
    "An instructor regraded a corrected notebook from a side folder; the next class run put back the old grade silently."
    import os
    import time

    from grading.grade.regrade import older_than_its_result

    notebook = tmp_path / "02_function.ipynb"
    notebook.write_text("{}")
    graded = time.time()
    os.utime(notebook, (graded - 600, graded - 600))  # changed ten minutes before the result was graded
    previous = {
        "student": "dave",
        "assignment": "02_function",
        "score": 4.0,
        "max_score": 4.0,
        "graded_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(graded)),
        "fingerprint": {"submission": "the corrected one"},
    }
    warning = older_than_its_result(notebook, previous, {"submission": "this one"})
    assert (
        warning.startswith("warning: dave/02_function: its result (4.0 of 4.0) was graded at")
        and str(notebook) in warning
    )
    assert older_than_its_result(notebook, previous, {"submission": "the corrected one"}) == ""  # the same notebook
    os.utime(notebook, (graded + 600, graded + 600))  # handed in again after the grading: the usual case
    assert older_than_its_result(notebook, previous, {"submission": "this one"}) == ""
    assert older_than_its_result(notebook, None, {"submission": "this one"}) == ""
