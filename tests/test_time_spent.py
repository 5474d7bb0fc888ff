"""How long each notebook takes (issue 23): the optional last cell `hours_spent = None`, read as text from the
submissions (never run) and summed up per notebook in OUT/time_spent.csv. The end-to-end run is in
test_feedback_policy (two students who report 2 and 3.5 hours)."""

import csv

import nbformat
import pytest

from conftest import REPO
from grading.authoring.convention import HOURS_SPENT, derive_cell
from grading.common.notebooks import nbgrader_meta, read_notebook
from grading.grade.autograde import graded_assignments
from grading.grade.timespent import reported_hours, time_spent_rows, write_time_spent


def notebook(*sources):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])


@pytest.mark.parametrize(
    "source, hours",
    [
        ("# hours spent (optional, not graded)\nhours_spent = 2.5", 2.5),
        ("hours_spent=3", 3.0),
        ("hours_spent = 1.  # about", 1.0),
        ("hours_spent = .75", 0.75),
        ("    hours_spent = 4", 4.0),  # indented: still the line a student meant
        ("hours_spent = None", None),
        ("hours_spent = 0", None),
        ("hours_spent = -2", None),
        ("hours_spent = 150", None),  # minutes for hours: no report rather than a wrong median
        ("hours_spent = 1e9", None),
        ("hours_spent = 2 + 3", None),  # an expression is never evaluated
        ("hours_spent = float('nan')", None),
        ("hours_spent = __import__('os').system('touch /tmp/pwned')", None),
        ("hours_spent = '3'", None),
        ("hours_spent = ٣", None),  # a digit of another script: float() would take it
        ("x = 1\n# hours_spent = 3", None),
    ],
)
def test_a_report_is_a_plain_number_of_hours_and_anything_else_is_none(source, hours):
    assert reported_hours(notebook(source)) == hours


def test_the_last_report_counts_and_markdown_is_not_read():
    nb = notebook("hours_spent = 1", "hours_spent = 2")
    nb.cells.append(nbformat.v4.new_markdown_cell("hours_spent = 9"))
    assert reported_hours(nb) == 2.0
    assert reported_hours(notebook("hours_spent = " + "1" * 10_000)) is None


def test_each_notebook_gets_its_median_and_quartiles(tmp_path):
    results = [{"assignment": "01_tensor", "hours_spent": h} for h in (1.0, 2.0, 4.0, None)]
    results += [{"assignment": "02_function", "hours_spent": None}, {"assignment": "02_function"}]  # an old result
    results += [{"assignment": "03_gradcheck", "hours_spent": 1.5}]
    assert time_spent_rows(results) == [
        ["01_tensor", 4, 3, "2", "1.5", "3"],
        ["02_function", 2, 0, "", "", ""],
        ["03_gradcheck", 1, 1, "1.5", "1.5", "1.5"],
    ]
    assert write_time_spent(results, tmp_path / "time_spent.csv") == 4
    with open(tmp_path / "time_spent.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows[0] == {
        "assignment": "01_tensor",
        "submissions": "4",
        "reported": "3",
        "median_hours": "2",
        "lower_quartile": "1.5",
        "upper_quartile": "3",
    }


def test_every_graded_notebook_ends_with_an_editable_hours_cell_that_reports_nothing():
    for stem in graded_assignments():
        nb = read_notebook(REPO / "notebooks" / f"{stem}.ipynb")
        last = nb.cells[-1]
        assert last.cell_type == "code" and last.source.startswith("# hours spent (optional, not graded)"), stem
        meta = nbgrader_meta(last)
        assert meta == derive_cell(last, stem) and meta["grade_id"] == HOURS_SPENT, stem
        assert meta["solution"] and not meta["locked"] and not meta["grade"], f"{stem}: the student must edit it"
        assert "#| export" not in last.source and reported_hours(nb) is None, stem
        assert "not graded" in nb.cells[-2].source, f"{stem}: the text above the cell says what it is for"


def test_the_release_keeps_the_hours_cell_as_written(kit):
    "nbgrader replaces an editable cell that has no solution region by a stub that raises: the release puts it back."
    for stem in graded_assignments():
        source = read_notebook(REPO / "notebooks" / f"{stem}.ipynb").cells[-1]
        released = read_notebook(kit / stem / f"{stem}.ipynb").cells[-1]
        assert released.source == source.source and "hours_spent = None" in released.source, stem
        assert nbgrader_meta(released)["grade_id"] == HOURS_SPENT and not nbgrader_meta(released)["locked"], stem
        exec(compile(released.source, stem, "exec"), {})  # Run All goes through it
