"""What autograde does with input that is wrong: a typo is answered before the seconds of set-up, a student's own
folder given as the class is refused, and students graded earlier into the grading folder are never dropped."""

import csv
import json

import pytest

from grading.cli import main
from grading.grade import autograde


@pytest.fixture
def no_setup(monkeypatch):
    "Checking the sandbox is the first step of set-up (seconds): a test that reaches it fails."

    def started(*args):
        raise AssertionError("the sandbox was checked before the typo was answered")

    monkeypatch.setattr(autograde, "isolation_for", started)


def submissions_of(root, *students):
    for student in students:
        path = root / student / "02_function" / "02_function.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text("{")  # never read: every test here ends before
    return root


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["submisions"], "submisions: no such folder (did you mean '{tmp}/submissions'?)"),
        (
            ["submissions", "--notebooks", "{tmp}/notebook"],
            "notebook: the notebooks folder does not exist (did you mean",
        ),
        (["submissions", "--due", "02_functon=2026-12-01T23:59"], "'02_functon' (did you mean '02_function'?)"),
        (["submissions/alice"], "its folders (02_function) are assignments, so it is one student's folder: pass its"),
    ],
)
def test_a_typo_or_a_students_folder_is_answered_before_the_set_up(tmp_path, course, no_setup, capsys, args, message):
    submissions_of(tmp_path / "submissions", "alice", "bob")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    argv[0] = str(tmp_path / argv[0])
    if "--notebooks" not in argv:
        argv += ["--notebooks", str(course)]
    code = main(["autograde", *argv, "--out", str(tmp_path / "grades")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert message.replace("{tmp}", str(tmp_path)) in err
    assert not (tmp_path / "grades").exists()


def earlier_run(out):
    "What an earlier run into OUT left of carol (graded, 30 hours late at 50 %): her result and her gradebook entry."
    result = {
        "student": "carol",
        "assignment": "02_function",
        "score": 3.0,
        "max_score": 4.0,
        "note": "",
        "fingerprint": {"submission": "x", "setup": "y", "variant": "z"},
        "tests": {"t1": {"score": 3.0, "max_score": 4.0, "fingerprint": "f", "message": ""}},
        "feedback": "full",
        "variant": "v",
    }
    (out / "results" / "carol").mkdir(parents=True)
    (out / "results" / "carol" / "02_function.json").write_text(json.dumps(result))
    late = {
        "submitted_at": "2026-12-03T05:59:00+00:00",
        "late_by_hours": 30.0,
        "penalty_fraction": 0.5,
        "late_note": "late by the notebook's file time as received",
    }
    book = {"carol": {"02_function": {"score": 3.0, "max_score": 4.0, "note": "", "tests": {}, **late}}}
    (out / "gradebook.json").write_text(json.dumps(book))


def test_grading_another_class_into_the_folder_keeps_the_students_graded_there_and_says_so(
    tmp_path, course, monkeypatch, capsys
):
    """Grading a second class into a grading folder dropped the first class's students from grades.csv without a
    word (an instructor's finding): their rows stay, late penalty included, and stderr names them."""
    monkeypatch.setattr(autograde, "isolation_for", lambda *args: "none")
    out = tmp_path / "grades"
    earlier_run(out)
    page = out / "feedback" / "carol" / "02_function.html"
    page.parent.mkdir(parents=True)
    page.write_text("every test's message")  # written under --feedback full
    submissions = submissions_of(tmp_path / "submissions", "dave")  # an unreadable notebook: a row, nothing to run
    code = main(["autograde", str(submissions), "--out", str(out), "--notebooks", str(course), "--feedback", "none"])
    err = capsys.readouterr().err
    assert code == 1  # dave's notebook is not graded
    assert "1 earlier results of submissions not in this SUBMISSIONS folder; of 1 students not in it: carol" in err
    with open(out / "grades.csv") as file:
        rows = {row["student"]: row for row in csv.DictReader(file)}
    assert sorted(rows) == ["carol", "dave"]
    carol = rows["carol"]
    assert (carol["score"], carol["penalty"], carol["final_score"]) == ("3", "1.5", "1.5")
    assert carol["note"] == "late by the notebook's file time as received"
    book = json.loads((out / "gradebook.json").read_text())
    assert book["carol"]["02_function"]["final_score"] == 1.5
    assert book["carol"]["02_function"]["penalty_fraction"] == 0.5
    assert not page.exists()  # this run's feedback policy holds for the pages of the students it kept
