"""One grade (issue 22.3): the marks given to written answers in formgrader (OUT/marking/gradebook.db) reach
grades.csv, gradebook.json and the LMS exports; a submission with an answer not marked yet is flagged; a late penalty
takes its fraction of the total; a test's score edited in formgrader is reverted, and said."""

import csv
import json
import os
import shutil
import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from conftest import REPO, run_cli
from grading.common.notebooks import read_notebook, write_notebook
from grading.grade.gradebook import Row, apply_late, write_gradebook, write_table
from grading.lms.lms import export_grades, mark_entry
from grading.reports.late import Late
from grading.reports.marking import Marks, revert_test_edit

ASSIGNMENT = "01_tensor"
AUTO = 13.0  # the points of 01_tensor's tests; its three written answers have 1 point each
ANSWERS = ["understand_broadcast_gradient", "understand_keepdims", "understand_new_tensors"]
EDITED = "the grader's score stands: change the test and regrade instead"


# -- Without nbgrader: the table, the gradebook and the export given marks -------------------------------------------


def result(student, score):
    return {"student": student, "assignment": ASSIGNMENT, "score": score, "max_score": AUTO, "note": "", "tests": {}}


def test_the_table_has_the_marks_blank_while_an_answer_is_unmarked(tmp_path):
    done = Row("ada", ASSIGNMENT, "x", AUTO, AUTO, manual_points=3, marks=Marks(2.5, 3, []))
    partly = Row("bo", ASSIGNMENT, "x", 4, AUTO, manual_points=3, marks=Marks(1, 3, ANSWERS[:2]))
    write_table([done, partly], tmp_path / "grades.csv")
    with open(tmp_path / "grades.csv") as f:
        ada, bo = csv.DictReader(f)
    assert (ada["manual_points"], ada["manual_score"], ada["final_score"]) == ("3", "2.5", "15.5")
    assert (bo["manual_points"], bo["manual_score"], bo["final_score"]) == ("3", "", "5"), "the marks made so far"


def test_a_late_penalty_takes_its_fraction_of_the_total():
    row = Row("ada", ASSIGNMENT, "x", AUTO, AUTO, manual_points=3, marks=Marks(3, 3, []))
    (row,) = apply_late([row], {("ada", ASSIGNMENT): Late("2026-12-02T10:00:00+00:00", 30, 0.2)})
    assert (row.penalty, row.final_score) == (pytest.approx(3.2), pytest.approx(12.8))


def test_the_gradebook_keeps_the_marks_and_what_is_unmarked(tmp_path):
    answers = {ASSIGNMENT: dict.fromkeys(ANSWERS, 1)}
    marked = {("ada", ASSIGNMENT): Marks(3, 3, []), ("bo", ASSIGNMENT): Marks(1, 3, ANSWERS[:2])}
    late = {("ada", ASSIGNMENT): Late("2026-12-02T10:00:00+00:00", 30, 0.2)}
    results = [result("ada", AUTO), result("bo", 4), result("cy", 2)]
    write_gradebook(results, [], tmp_path / "gradebook.json", answers, late, marked)
    book = {s: e[ASSIGNMENT] for s, e in json.loads((tmp_path / "gradebook.json").read_text()).items()}
    assert book["ada"]["manual_score"] == 3 and book["ada"]["manual_unmarked"] == []
    assert (book["ada"]["penalty"], book["ada"]["final_score"], book["ada"]["penalty_fraction"]) == (3.2, 12.8, 0.2)
    assert book["bo"]["manual_score"] is None and book["bo"]["manual_unmarked"] == ANSWERS[:2]
    assert book["bo"]["final_score"] == 5
    assert book["cy"]["manual_unmarked"] == ANSWERS and book["cy"]["final_score"] == 2, "not in OUT/marking: unmarked"


def test_an_export_without_a_marking_course_takes_the_gradebooks_marks(tmp_path):
    entry = {"score": 4.0, "max_score": AUTO, "note": "", "manual_points": 3, "tests": {}}
    book = {"ada": {ASSIGNMENT: dict(entry, manual_score=3, final_score=7.0)}, "bo": {ASSIGNMENT: entry}}
    (tmp_path / "grades").mkdir()
    (tmp_path / "grades" / "gradebook.json").write_text(json.dumps(book))
    (tmp_path / "roster.csv").write_text("student,name,email\nada,Ada,ada@example.edu\nbo,Bo,bo@example.edu\n")
    report = export_grades(tmp_path / "grades", "moodle", tmp_path / "moodle.csv", roster=tmp_path / "roster.csv")
    with open(tmp_path / "moodle.csv") as f:
        ada, bo = csv.DictReader(f)
    assert (ada[ASSIGNMENT], ada[f"Feedback for {ASSIGNMENT}"]) == ("7", "7 of 16 points.")
    assert (bo[ASSIGNMENT], bo[f"Feedback for {ASSIGNMENT}"]) == ("4", "written answers not marked yet")
    assert any(w.startswith("1 submission with written answers not all marked yet") for w in report.warnings)


def test_an_export_recomputes_the_final_score_with_the_late_fraction():
    entry = {"score": 13.0, "manual_points": 3, "penalty": 2.6, "penalty_fraction": 0.2, "final_score": 10.4}
    mark_entry(entry, Marks(3, 3, []))
    assert (entry["manual_score"], entry["penalty"], entry["final_score"]) == (3, 3.2, 12.8)


def test_a_test_score_given_in_formgrader_is_cleared_and_said():
    said = []
    grade = SimpleNamespace(name="tensor_shapes", manual_score=0.0, extra_credit=0.5, needs_manual_grade=True)
    revert_test_edit(grade, "ada", ASSIGNMENT, said.append)
    assert (grade.manual_score, grade.extra_credit, grade.needs_manual_grade) == (None, None, False)
    assert said == [
        f"marking course: ada/{ASSIGNMENT}: test tensor_shapes was given 0 + 0.5 in formgrader, ignored: {EDITED}"
    ]


# -- Graded once: autograde, marks given in formgrader, autograde again ----------------------------------------------


def give(db, marks):
    "Set grades in OUT/marking/gradebook.db as formgrader does: {(student, grade name): manual score}."
    from grading.authoring.course import gradebook

    with gradebook(f"sqlite:///{db}") as gb:
        for (student, name), score in marks.items():
            grade = gb.find_grade(name, ASSIGNMENT, ASSIGNMENT, student)
            grade.manual_score, grade.needs_manual_grade = score, False
        gb.db.commit()


def grade_of(db, student, name):
    from grading.authoring.course import gradebook

    with gradebook(f"sqlite:///{db}") as gb:
        grade = gb.find_grade(name, ASSIGNMENT, ASSIGNMENT, student)
        return grade.manual_score, grade.score


@pytest.fixture(scope="module")
def marked(tmp_path_factory):
    """01_tensor graded for alice (solved), bob (untouched) and carol (solved, 30 hours late at 10%/day); then alice's
    answers marked, one of bob's, carol's; a test of alice's given 0 in formgrader; and autograde run again."""
    from grading.authoring.release import student_notebooks
    from grading.common.answers import solved

    root = tmp_path_factory.mktemp("marks")
    shutil.copytree(REPO / "notebooks", root / "nbs", ignore=shutil.ignore_patterns(".*"))
    instructor = read_notebook(root / "nbs" / f"{ASSIGNMENT}.ipynb")
    released = student_notebooks({ASSIGNMENT: root / "nbs" / f"{ASSIGNMENT}.ipynb"}, root / "course")[ASSIGNMENT]
    due = datetime.now(UTC).replace(microsecond=0) - timedelta(days=5)
    for student, nb, handed_in in [
        ("alice", solved(released, instructor), due - timedelta(hours=1)),
        ("bob", released, due - timedelta(hours=1)),
        ("carol", solved(released, instructor), due + timedelta(hours=30)),
    ]:
        path = root / "subs" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        write_notebook(nb, path)
        os.utime(path, (handed_in.timestamp(), handed_in.timestamp()))
    command = ["autograde", root / "subs", "--out", root / "grades", "--notebooks", root / "nbs"]
    command += ["--due", f"{ASSIGNMENT}={due.isoformat()}", "--late-penalty", "10%/day"]
    first = run_cli(*command)
    assert first.returncode == 0, first.stdout + first.stderr
    db = root / "grades" / "marking" / "gradebook.db"
    marks = {("alice", ANSWERS[0]): 1, ("alice", ANSWERS[1]): 0.5, ("alice", ANSWERS[2]): 1, ("bob", ANSWERS[1]): 1}
    marks.update({("carol", name): 1 for name in ANSWERS})
    give(db, {**marks, ("alice", "tensor_shapes"): 0})
    started = time.monotonic()
    again = run_cli(*command)
    assert again.returncode == 0, again.stdout + again.stderr
    return root, command, again, time.monotonic() - started


def table(root):
    with open(root / "grades" / "grades.csv") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


@pytest.mark.slow
def test_a_second_run_takes_the_marks_without_grading_again(marked):
    root, _, again, seconds = marked
    assert "3 submissions already graded" in again.stdout and "re-graded" not in again.stdout, again.stdout
    rows = table(root)
    alice, bob, carol = rows["alice"], rows["bob"], rows["carol"]
    assert (alice["score"], alice["manual_points"], alice["manual_score"], alice["final_score"]) == (
        "13",
        "3",
        "2.5",
        "15.5",
    )
    assert (bob["score"], bob["manual_score"], bob["final_score"]) == ("0", "", "1"), "bob's answers: one marked"
    assert (carol["score"], carol["manual_score"], carol["penalty"], carol["final_score"]) == ("13", "3", "3.2", "12.8")
    print(f"second run (nothing graded): {seconds:.1f} s")


@pytest.mark.slow
def test_the_gradebook_has_the_marks_and_the_answers_left(marked):
    root = marked[0]
    book = json.loads((root / "grades" / "gradebook.json").read_text())
    alice, bob, carol = (book[s][ASSIGNMENT] for s in ("alice", "bob", "carol"))
    assert (alice["manual_score"], alice["manual_unmarked"], alice["final_score"]) == (2.5, [], 15.5)
    assert (bob["manual_score"], bob["manual_unmarked"], bob["final_score"]) == (None, [ANSWERS[0], ANSWERS[2]], 1)
    assert (carol["manual_score"], carol["penalty_fraction"], carol["final_score"]) == (3, 0.2, 12.8)


@pytest.mark.slow
def test_a_test_score_edited_in_formgrader_is_reverted_and_said(marked):
    root, _, again, _ = marked
    line = f"alice/{ASSIGNMENT}: test tensor_shapes was given 0 in formgrader, ignored: {EDITED}"
    assert line in again.stdout + again.stderr
    assert grade_of(root / "grades" / "marking" / "gradebook.db", "alice", "tensor_shapes") == (None, 1.0)
    assert table(root)["alice"]["score"] == "13"


def export(root, fmt, out):
    (root / "roster.csv").write_text(
        "student,name,email,lms_id\nalice,Alice,alice@example.edu,1\nbob,Bob,bob@example.edu,2\n"
        "carol,Carol,carol@example.edu,3\n"
    )
    result = run_cli(
        "export-grades", root / "grades", "--format", fmt, "--out", out, "--roster", root / "roster.csv",
        "--notebooks", root / "nbs",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    with open(out, encoding="utf-8-sig") as f:
        return list(csv.DictReader(f)), result.stderr


@pytest.mark.slow
def test_the_exports_take_the_marks_and_flag_what_is_unmarked(marked):
    root = marked[0]
    moodle, warnings = export(root, "moodle", root / "moodle.csv")
    grades = {r["Full name"]: (r[ASSIGNMENT], r[f"Feedback for {ASSIGNMENT}"]) for r in moodle}
    assert grades["Alice"] == ("15.5", "15.5 of 16 points.") and grades["Bob"] == (
        "1",
        "written answers not marked yet",
    )
    assert grades["Carol"][0] == "12.8" and "3.2 of 16 points taken" in grades["Carol"][1]
    assert f"1 submission with written answers not all marked yet ({ASSIGNMENT}: 1)" in warnings
    canvas, _ = export(root, "canvas", root / "canvas.csv")
    assert [r[ASSIGNMENT] for r in canvas] == ["16", "15.5", "1", "12.8"], "Points Possible, then each grade"
    with open(root / "canvas.notes.csv", encoding="utf-8-sig") as f:
        notes = {r["student"]: r["note"] for r in csv.DictReader(f)}
    assert notes["bob"] == "written answers not marked yet" and "alice" not in notes


@pytest.mark.slow
def test_an_export_reads_the_marks_made_since_autograde(marked):
    root = marked[0]
    db = root / "grades" / "marking" / "gradebook.db"
    give(db, {("bob", ANSWERS[0]): 0, ("bob", ANSWERS[2]): 1, ("carol", "tensor_elementwise"): 0.5})
    canvas, warnings = export(root, "canvas", root / "canvas-2.csv")
    assert [r[ASSIGNMENT] for r in canvas] == ["16", "15.5", "2", "12.8"]
    assert "not all marked" not in warnings and not (root / "canvas-2.notes.csv").read_text().count("not marked")
    assert f"carol/{ASSIGNMENT}: test tensor_elementwise was given 0.5 in formgrader, ignored: {EDITED}" in warnings
    assert grade_of(db, "carol", "tensor_elementwise") == (None, 2.0)


@pytest.mark.slow
def test_a_test_added_after_marking_keeps_every_mark_and_is_graded(marked, tmp_path):
    """The instructor splits a test in two after the answers were marked: nbgrader refuses to add a graded cell to an
    assignment with submissions, so the marking course records them again, and no mark is lost."""
    import copy

    root = marked[0]
    for name in ["subs", "nbs", "grades"]:
        shutil.copytree(root / name, tmp_path / name)
    path = tmp_path / "nbs" / f"{ASSIGNMENT}.ipynb"
    nb = read_notebook(path)
    at, test = next(
        (i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")
    )
    added = copy.deepcopy(test)
    added.id = "c01-added-test"
    added.metadata["nbgrader"]["grade_id"] = "added_test"
    added.metadata["nbgrader"]["points"] = 1
    added.source = "# test: added_test (1 point)\nassert True, 'a check the instructor added after marking'"
    nb.cells.insert(at + 1, added)
    write_notebook(nb, path)
    from grading.reports.marking import read_marks

    with open(tmp_path / "grades" / "grades.csv") as f:
        before = {r["student"]: r for r in csv.DictReader(f)}
    marks_before = read_marks(tmp_path / "grades")
    command = ["autograde", tmp_path / "subs", "--out", tmp_path / "grades", "--notebooks", tmp_path / "nbs"]
    command += [str(a) for a in marked[1][6:]]  # the due date and late penalty of the first runs
    result = run_cli(*command)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "could not be updated" not in result.stdout + result.stderr, result.stdout + result.stderr
    assert "submission(s) were recorded again" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr  # nbgrader's refusal is handled: its log is not shown
    assert not (tmp_path / "grades" / "marking" / "kept-marks.json").read_text().strip("{}\n ")  # all restored
    with open(tmp_path / "grades" / "grades.csv") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    for student, row in rows.items():  # one more point of tests for everyone (it calls no exercise)
        assert (float(row["score"]), row["max_score"]) == (float(before[student]["score"]) + 1, "14"), (student, row)
    assert read_marks(tmp_path / "grades") == marks_before and len(marks_before) == 3  # every mark, as it was
    assert rows["alice"]["manual_score"] == "2.5"
    db = tmp_path / "grades" / "marking" / "gradebook.db"
    assert grade_of(db, "alice", ANSWERS[1]) == (0.5, 0.5)
    assert grade_of(db, "alice", "added_test") == (None, 1.0)
