"""`python -m grading demo` checks its own table against the README's promise and fails when it differs."""

from conftest import REPO
from grading.cli import demo_mismatches
from grading.grade.autograde import graded_assignments
from grading.grade.gradebook import Row


def promised_rows():
    rows = []
    for assignment in graded_assignments():
        rows += [Row("alice", assignment, "", 5, 5), Row("bob", assignment, "", 0, 5)]
    return rows


def test_the_promised_table_has_no_mismatch():
    assert demo_mismatches(promised_rows()) == []


def test_alice_scoring_zero_everywhere_is_a_mismatch_for_every_notebook():
    rows = [Row(r.student, r.assignment, "", 0, 5, "your module did not finish importing") for r in promised_rows()]
    wrong = demo_mismatches(rows)
    assert len(wrong) == len(graded_assignments())
    assert all(line.startswith("alice/") and "expected 5" in line for line in wrong)


def test_a_missing_row_and_a_row_not_graded_are_mismatches():
    rows = promised_rows()
    rows = [r for r in rows if not (r.student == "bob" and r.assignment == "04_elementwise")]
    rows.append(Row("carol", "01_tensor", "", note="not graded: the sandbox could not be started", problem=True))
    wrong = demo_mismatches(rows)
    assert "bob/04_elementwise: no row" in wrong
    assert any(line.startswith("carol/01_tensor: not graded") for line in wrong)


def test_the_readme_states_the_promise_the_demo_checks():
    "The demo's error says the table 'is not what the README promises': the README says what that is."
    readme = " ".join((REPO / "README.md").read_text().split())
    assert "alice gets full marks in every graded notebook, bob 0" in readme
