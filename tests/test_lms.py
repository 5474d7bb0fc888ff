"""Grade export for Canvas, Moodle and Gradescope: a hand-made gradebook exported in each format and read back in
that format's documented layout; a row the LMS cannot match never goes into an import file but into its side file,
and is listed; what was not graded is exported as --missing says, with its note; no cell can start a spreadsheet
formula; bad input gets a one-line error."""

import csv
import json

import pytest

from conftest import cli, run_cli
from grading.common.csvsafe import PLAIN_IDENTIFIER
from grading.common.errors import GradingError
from grading.intake.roster import read_roster
from grading.lms.export_grades import export_grades

HIDDEN = "### BEGIN HIDDEN TESTS"


def scored(score, max_score, message=""):
    return {"score": score, "max_score": max_score, "message": message}


GRADEBOOK = {
    "alice": {
        "04_elementwise": {
            "score": 5.0,
            "max_score": 5.0,
            "note": "",
            "tests": {
                "add_backward": scored(1.0, 1.0),
                "add_backward_hidden": scored(2.0, 2.0),
                "sub_backward": scored(2.0, 2.0),
            },
        },
        "05_matmul_and_reductions": {
            "score": 1.5,
            "max_score": 4.0,
            "note": "",
            "tests": {"matmul_backward": scored(1.5, 1.5), "sum_backward": scored(0.0, 2.5, "AssertionError")},
        },
    },
    "bob": {
        "04_elementwise": {
            "score": 0.0,
            "max_score": 5.0,
            "note": "",
            "tests": {
                "add_backward": scored(0.0, 1.0, "NotImplementedError: Exercise AddBackward is not done yet"),
                "add_backward_hidden": scored(0.0, 2.0, "NotImplementedError"),
                "sub_backward": scored(0.0, 2.0, "NotImplementedError"),
            },
        }
    },
    # a submission autograde could not read: an entry without tests
    "nick": {"04_elementwise": {"score": 0, "max_score": 0, "note": "not a valid notebook (not valid JSON)"}},
    # graded, but not in the roster
    "zed": {
        "04_elementwise": {
            "score": 3.0,
            "max_score": 5.0,
            "note": "",
            "tests": {
                "add_backward": scored(1.0, 1.0),
                "add_backward_hidden": scored(2.0, 2.0),
                "sub_backward": scored(0.0, 2.0, "wrong sign"),
            },
        }
    },
}

ROSTER = [
    ["student", "name", "email", "lms_id", "sis_id", "section"],
    ["alice", "Alice Liddell", "alice@example.edu", "101", "S-1", "A"],
    ["bob", "Bob Builder", "bob@example.edu", "102", "S-2", "A"],
    ["carol", "Carol Danvers", "carol@example.edu", "103", "S-3", "B"],  # in the roster, nothing submitted
    ["nick", "Nick Fury", "nick@example.edu", "104", "S-4", "B"],
]


def notebook(cells):
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}


def cell_of(grade_id, points, hidden=False):
    source = [f"# test: {grade_id} ({points} points)\n", "assert True\n"]
    if hidden:
        source += [f"{HIDDEN}\n", "assert True\n", "### END HIDDEN TESTS\n"]
    meta = {"grade": True, "grade_id": grade_id, "points": points, "locked": True, "solution": False}
    return {"cell_type": "code", "metadata": {"nbgrader": meta}, "source": source, "outputs": []}


@pytest.fixture
def grading(tmp_path):
    "A grading folder (gradebook.json made by hand), a roster and the instructor notebooks it refers to."
    out = tmp_path / "grades"
    out.mkdir()
    (out / "gradebook.json").write_text(json.dumps(GRADEBOOK, indent=1, sort_keys=True))
    with open(tmp_path / "roster.csv", "w", newline="") as f:
        csv.writer(f).writerows(ROSTER)
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    # the notebook's order (sub_backward before add_backward_hidden) is not the gradebook's alphabetical one
    cells = [cell_of("add_backward", 1), cell_of("sub_backward", 2), cell_of("add_backward_hidden", 2, True)]
    (nbs / "04_elementwise.ipynb").write_text(json.dumps(notebook(cells)))
    cells = [cell_of("matmul_backward", 1.5, True), cell_of("sum_backward", 2.5)]
    (nbs / "05_matmul_and_reductions.ipynb").write_text(json.dumps(notebook(cells)))
    return out, tmp_path / "roster.csv", nbs


def export(grading, fmt, out, *extra, roster=True):
    "Export with --missing blank unless told: the fixture's bob has 04 graded and no 05 (tests/test_lms_import.py)."
    grades, roster_path, nbs = grading
    missing = [] if "--missing" in extra or fmt == "gradescope" else ["--missing", "blank"]
    args = ["export-grades", grades, "--format", fmt, "--out", out, "--notebooks", nbs, *missing, *extra]
    if roster:
        args += ["--roster", roster_path]
    return run_cli(*args)


def left_out(result, count=1):
    """Written, and exit 1 for the graded students the import file lacks (the fixture's zed: not in the roster, or
    with no email for Moodle): an upload now would leave their grades out, so the command says so and fails (an
    instructor's finding: a Moodle file without most students exited 0)."""
    students = "1 student" if count == 1 else f"{count} students"
    return result.returncode == 1 and f"error: {students} left out of" in result.stderr


def read_csv(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.reader(f))


def test_canvas_gradebook_import_layout(grading, tmp_path):
    result = export(grading, "canvas", tmp_path / "canvas.csv")
    assert left_out(result), result.stderr
    rows = read_csv(tmp_path / "canvas.csv")
    # Canvas's importer: Student, ID, then SIS User ID, SIS Login ID, and Section as the last student column
    assert rows[0] == [
        "Student",
        "ID",
        "SIS User ID",
        "SIS Login ID",
        "Section",
        "04_elementwise",
        "05_matmul_and_reductions",
    ]
    assert rows[1] == ["Points Possible", "", "", "", "", "5", "4"]
    by_name = {r[0]: r for r in rows[2:]}
    assert [r[0] for r in rows[2:]] == ["Alice Liddell", "Bob Builder", "Carol Danvers", "Nick Fury"], "no zed"
    assert by_name["Alice Liddell"] == ["Alice Liddell", "101", "S-1", "", "A", "5", "1.5"], "no email as a login"
    assert by_name["Bob Builder"][5:] == ["0", ""]
    assert by_name["Carol Danvers"] == ["Carol Danvers", "103", "S-3", "", "B", "", ""]
    assert by_name["Nick Fury"][5:] == ["", ""], "an unreadable submission was not graded: blank by default"
    assert all(len(r) == len(rows[0]) for r in rows)


def test_a_student_canvas_cannot_find_but_by_name_goes_to_the_side_file(grading, tmp_path):
    "An instructor's finding: a roster line of a name alone (a Moodle download) was a Canvas row 'Alice Liddell,,,,'."
    _, roster_path, _ = grading
    with open(roster_path, "w", newline="") as f:
        csv.writer(f).writerows([ROSTER[0], ["alice", "Alice Liddell", "", "", "", "A"], *ROSTER[2:]])
    result = export(grading, "canvas", tmp_path / "canvas.csv")
    assert left_out(result, 2), result.stderr
    assert [r[0] for r in read_csv(tmp_path / "canvas.csv")[2:]] == ["Bob Builder", "Carol Danvers", "Nick Fury"]
    (left,) = [r for r in read_csv(tmp_path / "canvas.notes.csv") if r[0] == "alice" and r[3] == "04_elementwise"]
    assert left[4:6] == ["5", "no"] and "no Canvas user id, SIS user id or login in the roster" in left[6]
    assert "since the LMS could not find them" in result.stderr and "alice" in result.stderr


def test_roster_mismatches_are_listed_on_stderr(grading, tmp_path):
    result = export(grading, "canvas", tmp_path / "canvas.csv")
    lines = result.stderr.splitlines()
    assert any("not in the roster" in line and "zed" in line and "canvas.notes.csv" in line for line in lines), (
        result.stderr
    )
    assert any("no graded submission" in line and "carol" in line for line in lines), result.stderr
    assert any("nick/04_elementwise: not graded" in line and "not a valid notebook" in line for line in lines)
    assert "canvas grades written to" in result.stdout


def test_a_student_the_roster_lacks_goes_to_the_side_file_never_into_the_import(grading, tmp_path):
    for fmt in ("canvas", "moodle"):
        assert left_out(export(grading, fmt, tmp_path / f"{fmt}.csv"))
        assert not any("zed" in cell for row in read_csv(tmp_path / f"{fmt}.csv") for cell in row)
        side = [r for r in read_csv(tmp_path / f"{fmt}.notes.csv") if r[0] == "zed"]
        assert [r[3:6] for r in side] == [["04_elementwise", "3", "no"], ["05_matmul_and_reductions", "", "no"]]
        assert side[0][6].startswith("not in the roster: add them"), side[0]
    header = read_csv(tmp_path / "moodle.notes.csv")[0]
    assert header == ["student", "name", "email", "assignment", "grade", "in_import", "note"]


def test_a_moodle_row_without_the_column_mapped_by_is_left_out_never_blank(grading, tmp_path):
    "A blank identifier would make Moodle give the row's grade to the student of the row above."
    grades, roster, nbs = grading
    with open(roster, "a", newline="") as f:
        csv.writer(f).writerow(["zed", "Zed Zero", "", "105", "", "B"])
    result = export(grading, "moodle", tmp_path / "m.csv")
    assert left_out(result), result.stderr
    assert [r[1] for r in read_csv(tmp_path / "m.csv")[1:]] == [
        "Alice Liddell",
        "Bob Builder",
        "Carol Danvers",
        "Nick Fury",
    ]
    (side,) = [r for r in read_csv(tmp_path / "m.notes.csv") if r[3] == "04_elementwise"]
    assert side[:6] == ["zed", "Zed Zero", "", "04_elementwise", "3", "no"] and "no ID number (sis_id)" in side[6]
    assert "map from 'ID number' to 'ID number'" in result.stderr and "zed" in result.stderr
    # the same roster line is fine for Canvas, which matches by its ID
    assert export(grading, "canvas", tmp_path / "c.csv").returncode == 0
    assert "Zed Zero" in [r[0] for r in read_csv(tmp_path / "c.csv")]


@pytest.mark.parametrize("missing, cell", [("blank", ""), ("zero", "0"), ("excused", "EX")])
def test_what_was_not_graded_is_exported_as_missing_says(grading, tmp_path, missing, cell):
    assert left_out(export(grading, "canvas", tmp_path / "c.csv", "--missing", missing))
    rows = {r[0]: r for r in read_csv(tmp_path / "c.csv")[2:]}
    assert rows["Carol Danvers"][5:] == [cell, cell], "no submission at all"
    assert rows["Nick Fury"][5:] == [cell, cell], "an unreadable submission, and one not handed in"
    assert rows["Bob Builder"][5:] == ["0", cell], "a graded 0 stays 0"
    if missing != "excused":
        assert left_out(export(grading, "moodle", tmp_path / "m.csv", "--missing", missing))
        moodle = {r[0]: r for r in read_csv(tmp_path / "m.csv")[1:]}
        assert moodle["S-4"][2] == moodle["S-3"][2] == cell, "by ID number: nick and carol"


def test_moodle_has_no_excused_grade_and_says_so(grading, tmp_path):
    error = one_line_error(export(grading, "moodle", tmp_path / "m.csv", "--missing", "excused"))
    assert "--missing excused: Moodle's grade import has no excused grade" in error and "--missing keep" in error
    assert not (tmp_path / "m.csv").exists()
    assert "--missing must be one of keep, zero, excused, blank" in one_line_error(
        export(grading, "canvas", tmp_path / "c.csv", "--missing", "ignore")
    )


def test_moodle_grade_import_layout(grading, tmp_path):
    result = export(grading, "moodle", tmp_path / "moodle.csv")
    assert left_out(result), result.stderr
    rows = read_csv(tmp_path / "moodle.csv")
    assert rows[0] == [
        "ID number",
        "Full name",
        "04_elementwise",
        "Feedback for 04_elementwise",
        "05_matmul_and_reductions",
        "Feedback for 05_matmul_and_reductions",
    ]
    by_id = {r[0]: r for r in rows[1:]}
    assert by_id["S-1"] == ["S-1", "Alice Liddell", "5", "5 of 5 points.", "1.5", "1.5 of 4 points."], "never empty"
    assert by_id["S-3"][2:] == [
        "",
        "No submission of 04_elementwise was graded.",
        "",
        "No submission of 05_matmul_and_reductions was graded.",
    ]
    assert by_id["S-4"][2:4] == ["", "not a valid notebook (not valid JSON)"], "the note is feedback"
    assert "" not in by_id, "every row has the ID number Moodle finds the student by"
    assert len(rows) == 1 + 4


def test_canvas_notes_and_late_penalties_go_to_the_side_file(grading, tmp_path):
    grades, _, _ = grading
    book = json.loads((grades / "gradebook.json").read_text())
    book["alice"]["04_elementwise"].update(late_by_hours=30.5, penalty=1.0, final_score=4.0)
    (grades / "gradebook.json").write_text(json.dumps(book))
    assert left_out(export(grading, "canvas", tmp_path / "c.csv"))
    assert read_csv(tmp_path / "c.csv")[2][5] == "4", "the final score is uploaded"
    notes = {(r[0], r[3]): r for r in read_csv(tmp_path / "c.notes.csv") if r[5] == "yes"}
    late = "handed in 30.5 hours late: 1 of 5 points taken, final score 4 of 5"
    assert notes["alice", "04_elementwise"][4:] == ["4", "yes", late]
    assert notes["nick", "04_elementwise"][6] == "not a valid notebook (not valid JSON)"
    assert notes["carol", "05_matmul_and_reductions"][6] == "No submission of 05_matmul_and_reductions was graded."
    assert ("alice", "05_matmul_and_reductions") not in notes, "a grade without a note has no line"
    assert left_out(export(grading, "moodle", tmp_path / "m.csv"))
    alice = next(r for r in read_csv(tmp_path / "m.csv") if r[0] == "S-1")
    assert alice[2:4] == ["4", "handed in 30.5 hours late: 1 of 5 points taken, final score 4 of 5"]


def test_gradescope_results_json_per_student(grading, tmp_path):
    out = tmp_path / "gradescope"
    result = export(grading, "gradescope", out)
    assert result.returncode == 0, result.stderr
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("results.json"))
    students = ["alice", "bob", "carol", "nick", "zed"]
    assert written == sorted(
        f"{a}/{s}/results.json" for a in ["04_elementwise", "05_matmul_and_reductions"] for s in students
    )
    alice = json.loads((out / "04_elementwise" / "alice" / "results.json").read_text())
    assert alice["score"] == 5.0
    assert [t["name"] for t in alice["tests"]] == ["add_backward", "sub_backward", "add_backward_hidden"]
    for test in alice["tests"]:
        assert set(test) == {"name", "score", "max_score", "status", "visibility", "output"}
    visibility = {t["name"]: t["visibility"] for t in alice["tests"]}
    assert visibility == {
        "add_backward": "visible",
        "sub_backward": "visible",
        "add_backward_hidden": "after_published",
    }
    assert sum(t["score"] for t in alice["tests"]) == alice["score"]
    assert alice["extra_data"]["email"] == "alice@example.edu"
    bob = json.loads((out / "04_elementwise" / "bob" / "results.json").read_text())
    assert bob["score"] == 0 and {t["status"] for t in bob["tests"]} == {"failed"}
    assert bob["tests"][0]["output"].startswith("NotImplementedError")
    matmul = json.loads((out / "05_matmul_and_reductions" / "alice" / "results.json").read_text())
    assert [(t["name"], t["score"], t["max_score"], t["visibility"], t["status"]) for t in matmul["tests"]] == [
        ("matmul_backward", 1.5, 1.5, "after_published", "passed"),
        ("sum_backward", 0.0, 2.5, "visible", "failed"),
    ]
    carol = json.loads((out / "04_elementwise" / "carol" / "results.json").read_text())
    assert carol["score"] == 0 and carol["tests"] == [] and "No submission" in carol["output"]
    nick = json.loads((out / "04_elementwise" / "nick" / "results.json").read_text())
    assert nick["score"] == 0 and "not a valid notebook" in nick["output"]


def test_gradescope_hidden_visibility_and_one_assignment(grading, tmp_path):
    out = tmp_path / "gs"
    result = export(grading, "gradescope", out, "--assignment", "04_elementwise", "--hidden-visibility", "hidden")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["04_elementwise"]
    zed = json.loads((out / "04_elementwise" / "zed" / "results.json").read_text())
    assert {t["name"]: t["visibility"] for t in zed["tests"]}["add_backward_hidden"] == "hidden"


def test_gradescope_tests_of_an_unknown_notebook_stay_hidden(grading, tmp_path):
    grades, roster, nbs = grading
    (nbs / "05_matmul_and_reductions.ipynb").unlink()
    report = export_grades(grades, "gradescope", tmp_path / "gs", roster=roster, notebooks_dir=nbs)
    assert any("05_matmul_and_reductions" in w and "no instructor notebook" in w for w in report.warnings)
    alice = json.loads((tmp_path / "gs" / "05_matmul_and_reductions" / "alice" / "results.json").read_text())
    assert {t["visibility"] for t in alice["tests"]} == {"after_published"}


def test_per_test_scores_come_from_results_when_the_gradebook_lacks_them(grading, tmp_path):
    grades, roster, nbs = grading
    book = json.loads((grades / "gradebook.json").read_text())
    tests = book["zed"]["04_elementwise"].pop("tests")
    (grades / "gradebook.json").write_text(json.dumps(book))
    (grades / "results" / "zed").mkdir(parents=True)
    (grades / "results" / "zed" / "04_elementwise.json").write_text(json.dumps({"tests": tests, "score": 3.0}))
    export_grades(grades, "gradescope", tmp_path / "gs", roster=roster, notebooks_dir=nbs)
    zed = json.loads((tmp_path / "gs" / "04_elementwise" / "zed" / "results.json").read_text())
    assert len(zed["tests"]) == 3 and zed["score"] == 3.0


def test_a_csv_export_needs_a_roster_and_gradescope_does_not(grading, tmp_path):
    for fmt in ("canvas", "moodle"):
        error = one_line_error(export(grading, fmt, tmp_path / "x.csv", roster=False))
        assert f"--format {fmt} needs --roster ROSTER.csv" in error and "grades.csv" in error
    assert not (tmp_path / "x.csv").exists()
    result = export(grading, "gradescope", tmp_path / "gs", roster=False)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "gs" / "04_elementwise").iterdir()) == ["alice", "bob", "nick", "zed"]
    assert "no --roster" in result.stderr


def test_a_problem_without_an_assignment_is_reported_not_made_a_column(grading, tmp_path):
    grades, roster, nbs = grading
    book = json.loads((grades / "gradebook.json").read_text())
    book["erin"] = {"stray.ipynb": {"score": 0, "max_score": 0, "note": "a notebook outside an assignment folder"}}
    (grades / "gradebook.json").write_text(json.dumps(book))
    result = export(grading, "canvas", tmp_path / "c.csv")
    assert left_out(result, 2), result.stderr
    assert "stray.ipynb" not in read_csv(tmp_path / "c.csv")[0]
    assert "stray.ipynb" not in {r[3] for r in read_csv(tmp_path / "c.notes.csv")}
    assert "erin/stray.ipynb: not an assignment" in result.stderr


def one_line_error(result):
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    return lines[0]


def test_error_missing_gradebook(grading, tmp_path):
    (tmp_path / "empty").mkdir()
    roster = ["--roster", grading[1]]
    result = run_cli("export-grades", tmp_path / "empty", "--format", "canvas", "--out", tmp_path / "c.csv", *roster)
    assert "gradebook.json: no gradebook here" in one_line_error(result)
    result = run_cli("export-grades", tmp_path / "nowhere", "--format", "canvas", "--out", tmp_path / "c.csv", *roster)
    assert "no such folder" in one_line_error(result)


def test_an_export_never_replaces_autograde_s_own_files_and_a_folder_is_not_a_file(grading, tmp_path):
    "An instructor's --out grades/grades.csv replaced autograde's table; --out FOLDER ended in a traceback."
    grades, roster, nbs = grading
    (grades / "grades.csv").write_text("autograde's table")
    common = ["--roster", roster, "--notebooks", nbs, "--missing", "blank"]
    for out in (grades / "grades.csv", grades / "gradebook.json", grades / "results" / "x.csv"):
        result = cli("export-grades", grades, "--format", "canvas", "--out", out, *common)
        assert "that is autograde's own" in one_line_error(result), result.stderr
    result = cli("export-grades", grades, "--format", "canvas", "--out", tmp_path, *common)
    assert f"--out {tmp_path}: that is a folder; give the file to write" in one_line_error(result)
    result = cli("export-feedback", grades, "--layout", "canvas", "--out", grades / "feedback", "--notebooks", nbs)
    assert "that is autograde's own feedback" in one_line_error(result)
    assert (grades / "grades.csv").read_text() == "autograde's table"
    assert json.loads((grades / "gradebook.json").read_text()) == GRADEBOOK
    assert not [p for p in tmp_path.rglob("*.tmp")] and not (grades / "results").exists()


def test_a_reason_every_student_shares_is_said_once_with_their_names(grading, tmp_path):
    "An instructor's roster without Canvas ids: the error repeated one long reason once per student."
    grades, _, nbs = grading
    with open(tmp_path / "no-ids.csv", "w", newline="") as f:
        csv.writer(f).writerows([row[:3] for row in ROSTER])  # student, name, email: no lms_id, no sis_id
    result = cli(
        "export-grades", grades, "--format", "canvas", "--out", tmp_path / "c.csv", "--roster", tmp_path / "no-ids.csv",
        "--notebooks", nbs, "--missing", "blank",
    )  # fmt: skip
    error = one_line_error(result)
    assert error.count("no Canvas user id") == 1 and "alice, bob" in error, error
    assert not (tmp_path / "c.csv").exists()


def test_export_from_the_submissions_folder_says_which_folder_to_give(tmp_path):
    (tmp_path / "subs" / "ada" / "01_tensor").mkdir(parents=True)
    (tmp_path / "subs" / "ada" / "01_tensor" / "01_tensor.ipynb").write_text("{}")
    result = cli("export-feedback", tmp_path / "subs", "--layout", "canvas", "--out", tmp_path / "fb")
    assert "This folder holds students' notebooks: give the --out folder of" in one_line_error(result)
    assert "--out " + str(tmp_path / "subs") not in result.stderr  # it once told the user to grade into it


def test_error_unknown_format(grading, tmp_path):
    assert "unknown format 'blackboard'" in one_line_error(export(grading, "blackboard", tmp_path / "x.csv"))
    assert not (tmp_path / "x.csv").exists()


def test_error_gradebook_not_json(grading, tmp_path):
    (grading[0] / "gradebook.json").write_text("{half a file")
    assert "not a readable gradebook" in one_line_error(export(grading, "canvas", tmp_path / "x.csv"))


@pytest.mark.parametrize(
    "text, words",
    [
        ("student,name\nalice,Alice\n", "line 1: the header must be student,name,email"),
        ("student,name,email,phone\n", "line 1: the header must be"),
        ("Student,ID,SIS User ID,Section\n", "missing name, email. `collect` writes such a roster"),  # Canvas's export
        ("student,name,email\nalice,Alice,alice@example.edu\nbob,Bob\n", "line 3: 2 fields, the header has 3"),
        ("student,name,email\n,Nobody,n@example.edu\n", "line 2: the student id"),
        (
            "student,name,email\nalice,Alice,alice@example.edu\n\nalice,Again,a2@example.edu\n",
            "line 4: student 'alice' is already on line 2",
        ),
        ("student,name,email\nalice,Alice,not-an-address\n", "line 2: 'not-an-address' is not an email address"),
        ("", "the roster is empty"),
    ],
)
def test_error_malformed_roster_names_the_line(grading, tmp_path, text, words):
    (tmp_path / "bad.csv").write_text(text)
    with pytest.raises(GradingError, match=words.replace("(", r"\(")):
        read_roster(tmp_path / "bad.csv")


def test_error_malformed_roster_from_the_command_line(grading, tmp_path):
    grades, _, nbs = grading
    (tmp_path / "bad.csv").write_text("student,name,email\nalice,Alice\n")
    result = run_cli(
        "export-grades",
        grades,
        "--format",
        "moodle",
        "--out",
        tmp_path / "m.csv",
        "--roster",
        tmp_path / "bad.csv",
        "--notebooks",
        nbs,
    )
    assert "bad.csv line 2: 2 fields" in one_line_error(result)
    result = run_cli(
        "export-grades",
        grades,
        "--format",
        "moodle",
        "--out",
        tmp_path / "m.csv",
        "--roster",
        tmp_path / "none.csv",
        "--notebooks",
        nbs,
    )
    assert "no such roster file" in one_line_error(result)


def test_roster_with_a_byte_order_mark_and_optional_columns(tmp_path):
    (tmp_path / "r.csv").write_text("\ufeffStudent,Name,Email,login_id\nalice,Alice,alice@example.edu,aliddell\n")
    (person,) = read_roster(tmp_path / "r.csv")
    assert (person.student, person.login_id, person.lms_id) == ("alice", "aliddell", "")


HOSTILE = ['=HYPERLINK("http://x","y")', "+1+cmd|' /C calc'!A0", "@SUM(1,1)", "-2+3"]


def test_no_cell_of_any_export_starts_a_spreadsheet_formula(grading, tmp_path):
    "Names, ids, emails and notes come from students and the roster; in every CSV they are text, not formulas."
    grades, roster, nbs = grading
    with open(roster, "a", newline="") as f:
        for index, name in enumerate(HOSTILE):
            csv.writer(f).writerow([f"h{index}", name, f"h{index}@example.edu", name, name, name])
        csv.writer(f).writerow(["h9", "Minus Mail", "-2+3@example.edu", "109", "S-9", "B"])
    book = json.loads((grades / "gradebook.json").read_text())
    for index, name in enumerate(HOSTILE):
        entry = dict(book["alice"]["04_elementwise"], note=name)
        book[f"h{index}"] = {"04_elementwise": entry}
        book[name.replace("/", "_")] = {"04_elementwise": entry}  # graded, not in the roster: the side file
    (grades / "gradebook.json").write_text(json.dumps(book))
    files = []
    for fmt, missing in [("canvas", "blank"), ("canvas", "excused"), ("moodle", "zero")]:
        out = tmp_path / f"{fmt}-{missing}.csv"
        result = export(grading, fmt, out, "--missing", missing)
        assert left_out(result, 8 if fmt == "canvas" else 5), result.stderr  # canvas: h0-h2's ids run formulas
        files += [out, out.with_name(f"{out.stem}.notes.csv")]
    cells = [cell for path in files for row in read_csv(path) for cell in row]
    risky = [cell for cell in cells if cell.startswith(("=", "+", "-", "@", "\t", "\r"))]
    assert risky and all(PLAIN_IDENTIFIER.fullmatch(cell) for cell in risky), "only ids that can run nothing"
    for name in HOSTILE:
        assert "'" + name in cells, f"{name} is kept, as text"
    moodle = read_csv(tmp_path / "moodle-zero.csv")
    assert "-2+3@example.edu" in {r[0] for r in moodle}, "an email is written as Moodle matches it, unquoted"
    canvas_side = read_csv(tmp_path / "canvas-blank.notes.csv")
    assert {r[0] for r in canvas_side if "starts like a spreadsheet formula" in r[6]} == {"h0", "h1", "h2"}


@pytest.mark.parametrize("field", ["lms_id", "sis_id", "email"])
def test_a_roster_in_which_two_students_share_an_id_is_refused(grading, tmp_path, field):
    "Two lines with one Canvas id (an edited roster, or one collect once wrote) would give one's grade to the other."
    _, roster, _ = grading
    people = read_roster(roster)
    rows = [["student", "name", "email", "lms_id", "sis_id"]]
    rows += [[p.student, p.name, p.email, p.lms_id, p.sis_id] for p in people]
    rows.append(["mallory", "Mallory", "m@example.edu", "999", "S-999"])
    rows[-1][{"email": 2, "lms_id": 3, "sis_id": 4}[field]] = rows[1][{"email": 2, "lms_id": 3, "sis_id": 4}[field]]
    with open(roster, "w", newline="", encoding="utf-8") as file:
        csv.writer(file).writerows(rows)
    result = export(grading, "canvas", tmp_path / "canvas.csv")
    assert result.returncode != 0 and not (tmp_path / "canvas.csv").exists()
    assert f"students {people[0].student} and mallory have the same" in result.stderr, result.stderr


def test_a_mistyped_assignment_names_the_nearest_one_in_the_gradebook(grading, tmp_path):
    grades, roster, nbs = grading
    with pytest.raises(GradingError, match=r"assignment '04_elementwis' \(did you mean '04_elementwise'\?\) is not in"):
        export_grades(grades, "gradescope", tmp_path / "gs", roster=roster, notebooks_dir=nbs, only=["04_elementwis"])
