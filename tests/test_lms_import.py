"""Grades land in the LMS as the platforms read them (issue 46): a class of three, a late solved notebook (Ada), a
blank one (Bob) and a roster-only student with a non-ASCII name (Zoë), exported in-process and read back by a
row-by-row simulation of each platform's importer (tests/lms_importers.py): no grade goes to the wrong student, none
is erased, and the file says what the item's maximum is."""

import csv
import json
import time

import pytest
from lms_importers import (
    Assign,
    ImportStopped,
    canvas_import,
    moodle_grade_import,
    moodle_shows,
    moodle_worksheet_import,
    read_rows,
)

from grading import cli

A = "04_elementwise"
TESTS = {"add_backward": 9.0, "mul_backward": 15.0}  # 24 points of tests, and 3 of a written answer: 27 possible


def entry(score, *, late_by_hours=None, fraction=0.0, manual=3.0):
    "A gradebook entry as autograde writes one (grading.grade.gradebook.write_gradebook and late_record)."
    total = score + manual
    penalty = round(total * fraction, 4)
    tests = {
        name: {"score": points if score else 0.0, "max_score": points, "message": ""} for name, points in TESTS.items()
    }
    result = {"score": score, "max_score": 24.0, "note": "", "tests": tests, "variant": "", "feedback": "full"}
    result.update(manual_points=3.0, manual_score=manual, manual_unmarked=[], final_score=round(total - penalty, 4))
    if late_by_hours is not None:
        result.update(submitted_at="2026-12-03T06:30:00+00:00", late_by_hours=late_by_hours, penalty=penalty)
        result.update(penalty_fraction=fraction)
    return result


GRADEBOOK = {"ada": {A: entry(24.0, late_by_hours=30.5, fraction=0.2)}, "bob": {A: entry(0.0, manual=0.0)}}
ZOE = "Zoë Ñúñez"


def notebook_with_tests():
    cells = []
    for name, points in TESTS.items():
        meta = {"grade": True, "grade_id": name, "points": points, "locked": True, "solution": False}
        cell = {"cell_type": "code", "id": name, "metadata": {"nbgrader": meta}, "source": "assert True", "outputs": []}
        cells.append(cell | {"execution_count": None})
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}


@pytest.fixture
def course(tmp_path):
    "The grading folder of the class of three (gradebook.json as autograde writes it) and the instructor notebooks."
    (tmp_path / "grades").mkdir()
    (tmp_path / "grades" / "gradebook.json").write_text(json.dumps(GRADEBOOK, indent=1), encoding="utf-8")
    (tmp_path / "nbs").mkdir()
    (tmp_path / "nbs" / f"{A}.ipynb").write_text(json.dumps(notebook_with_tests()))
    return tmp_path


def roster(path, *lines, header=("student", "name", "email", "lms_id", "sis_id", "login_id", "moodle_participant")):
    with open(path, "w", newline="", encoding="utf-8") as file:
        csv.writer(file).writerows([header, *lines])
    return path


def export(course, fmt, roster_path, *extra, out=None):
    "Run export-grades in-process; (exit code, stderr lines, the file written)."
    out = out or course / f"{fmt}.csv"
    args = ["export-grades", str(course / "grades"), "--format", fmt, "--out", str(out), "--roster", str(roster_path)]
    code = cli.main([*args, "--notebooks", str(course / "nbs"), *map(str, extra)])
    return code, out


SITE = [  # Moodle's users across the whole site: Ada and Bob of this course, Zoë, and someone of another course
    {"id": 1, "username": "ada", "idnumber": "S-1", "email": "ada@example.edu"},
    {"id": 2, "username": "bob", "idnumber": "", "email": "bob@example.edu"},
    {"id": 3, "username": "zoe", "idnumber": "S-3", "email": "zoe@example.edu"},
    {"id": 9, "username": "other", "idnumber": "S-9", "email": "other@example.edu"},
]
MOODLE_ROSTER = [
    ["ada", "Ada Lovelace", "ada@example.edu", "", "S-1", "", ""],
    ["bob", "Bob Builder", "bob@example.edu", "", "", "", ""],  # no ID number: the case
    ["zoe", ZOE, "zoe@example.edu", "", "S-3", "", ""],
]


def test_moodle_maps_by_a_column_without_blanks_so_no_grade_goes_to_the_row_above(course, capsys):
    "Issue 46.1: with ID number first and blank for Bob, Moodle gave Bob's 0 and feedback to Ada."
    code, out = export(course, "moodle", roster(course / "r.csv", *MOODLE_ROSTER))
    err = capsys.readouterr().err
    assert code == 0, err
    rows = read_rows(out)
    (how,) = [line for line in err.splitlines() if "map from" in line]
    column = how.split("map from '")[1].split("'")[0]
    assert column == rows[0][0] == "Email address", "the column to map by is first, and said"
    assert all(row[0] for row in rows[1:]), "no blank identifier"
    grades, feedback = moodle_grade_import(rows, column, "email", SITE, {A: "item"}, {f"Feedback for {A}": "item"})
    assert grades == {1: {"item": 21.6}, 2: {"item": 0.0}}, "Ada's late 27 less 20 %, Bob's 0; Zoë untouched"
    assert "late" in feedback[1]["item"] and feedback[2]["item"] == "0 of 27 points.", "no empty feedback erases"


def test_moodle_shows_a_note_as_written_and_no_students_text_as_markup(course):
    """Moodle shows imported feedback as HTML: an error's "(<exercise>, line 3)" lost its "<exercise>" as a tag, and a
    student's text in a note (the message their code raised) was markup in the gradebook."""
    note = "your module could not be imported (SyntaxError: invalid syntax (<exercise>, line 3)) & <img src=x>"
    book = json.loads((course / "grades" / "gradebook.json").read_text())
    book["bob"][A]["note"] = note
    (course / "grades" / "gradebook.json").write_text(json.dumps(book))
    code, out = export(course, "moodle", roster(course / "r.csv", *MOODLE_ROSTER))
    assert code == 0
    _, feedback = moodle_grade_import(
        read_rows(out), "Email address", "email", SITE, {A: "item"}, {f"Feedback for {A}": "item"}
    )
    assert note in moodle_shows(feedback[2]["item"]) and "<img" not in feedback[2]["item"]
    lines = [["bob", "Bob Builder", "", "", "", "", f"{A}=102"]]
    code, out = export(course, "moodle-worksheet", roster(course / "w.csv", *lines))
    assign = Assign(maximum=27, participants={"102": 2})
    moodle_worksheet_import(read_rows(out), assign)
    assert note in moodle_shows(assign.feedback[2]) and "<img" not in assign.feedback[2]


def test_the_old_layout_would_have_given_bobs_grade_to_ada(course):
    "The simulation itself: mapped by a column with a blank, the row above's student gets the grade."
    rows = [["ID number", "Full name", A], ["S-1", "Ada", "21.6"], ["", "Bob", "0"]]
    grades, _ = moodle_grade_import(rows, "ID number", "idnumber", SITE, {A: "item"})
    assert grades == {1: {"item": 0.0}}, "Bob's 0 lands on Ada"
    with pytest.raises(ImportStopped):
        moodle_grade_import([["ID number", A], ["", "0"]], "ID number", "idnumber", SITE, {A: "item"})


def test_a_student_with_nothing_graded_gets_no_cell_that_erases(course, capsys):
    "Issue 46.3: an empty grade cleared a hand-entered grade in Moodle; by default Zoë has no row at all."
    code, out = export(course, "moodle", roster(course / "r.csv", *MOODLE_ROSTER))
    assert code == 0
    assert ZOE not in [row[1] for row in read_rows(out)]
    assert "in the roster but no graded submission (exported as nothing: no cell" in capsys.readouterr().err
    code, out = export(course, "moodle", course / "r.csv", "--missing", "blank")
    grades, _ = moodle_grade_import(read_rows(out), "Email address", "email", SITE, {A: "item"})
    assert grades[3] == {"item": None}, "only when asked: blank erases Zoë's grade"


def test_a_file_that_needs_an_empty_cell_is_refused(course, capsys):
    "A student graded in one assignment and not in another would need an empty cell, which erases: refused."
    book = json.loads((course / "grades" / "gradebook.json").read_text())
    book["ada"]["05_matmul_and_reductions"] = entry(10.0)
    (course / "grades" / "gradebook.json").write_text(json.dumps(book))
    for fmt in ("moodle", "canvas"):
        lines = (
            MOODLE_ROSTER[:2]
            if fmt == "moodle"
            else [["ada", "A", "", "501", "", "", ""], ["bob", "B", "", "502", "", "", ""]]
        )
        code, out = export(course, fmt, roster(course / "r.csv", *lines), out=course / f"refused-{fmt}.csv")
        assert code == 2 and not out.exists()
        assert "bob has no graded submission of 05_matmul_and_reductions" in capsys.readouterr().err


def test_moodle_says_the_maximum_and_scales_to_one(course, capsys):
    "Issue 46.2: raw points of 27 read 27/100 in a default Moodle item; the maximum is said, or scaled to."
    code, out = export(course, "moodle", roster(course / "r.csv", *MOODLE_ROSTER))
    assert code == 0
    assert "Maximum grade of each grade item: 04_elementwise: 27" in capsys.readouterr().err
    code, out = export(course, "moodle", course / "r.csv", "--scale-to", "100")
    assert code == 0 and "grade item: 04_elementwise: 100" in capsys.readouterr().err
    grades, _ = moodle_grade_import(read_rows(out), "Email address", "email", SITE, {A: "item"})
    assert grades[1]["item"] == pytest.approx(80.0), "21.6 of 27 is 80 of 100"


def test_the_moodle_worksheet_imports_by_participant_id_without_emails(course, capsys):
    "Issue 46.6 and 41.6: the worksheet Moodle's assignment imports by 'Participant N', no email needed."
    lines = [
        ["ada", "Ada Lovelace", "", "", "", "", f"{A}=101"],
        ["bob", "Bob Builder", "", "", "", "", f"{A}=102 05_matmul_and_reductions=7"],
        ["zoe", ZOE, "", "", "", "", ""],
    ]
    code, out = export(course, "moodle-worksheet", roster(course / "r.csv", *lines))
    err = capsys.readouterr().err
    assert code == 0, err
    rows = read_rows(out)
    assert rows[0][:5] == ["Identifier", "Full name", "Email address", "Status", "Grade"]
    assert rows[0][-1] == "Feedback comments" and "Last modified (grade)" in rows[0]
    assign = Assign(maximum=27, participants={"101": 1, "102": 2, "103": 3}, feedback={3: "well done, by hand"})
    assign.grades[3] = (25.0, 0)
    changed = moodle_worksheet_import(rows, assign)
    assert assign.grades[1][0] == 21.6 and assign.grades[2][0] == 0.0
    assert 3 not in changed and assign.feedback[3] == "well done, by hand", "Zoë's hand-entered grade stays"
    assert "final score 21.6 of 27" in assign.feedback[1], "the late penalty and the final score reach the student"
    assert "Maximum grade to 27" in err
    later = Assign(maximum=27, participants={"101": 1}, grades={1: (26.0, time.time() + 3600)})
    assert moodle_worksheet_import(rows, later) == {} and later.grades[1][0] == 26.0, "changed in Moodle since: kept"
    small = Assign(maximum=24, participants={"101": 1, "102": 2})
    moodle_worksheet_import(rows, small)
    assert 1 in small.grades, "21.6 fits an item of 24; the message says to set 27"


def test_the_worksheet_leaves_out_a_graded_student_without_a_participant_id_and_fails(course, capsys):
    lines = [["ada", "Ada Lovelace", "", "", "", "", f"{A}=101"], ["bob", "Bob Builder", "", "", "", "", ""]]
    code, out = export(course, "moodle-worksheet", roster(course / "r.csv", *lines))
    err = capsys.readouterr().err
    assert code == 1 and "1 student left out" in err
    assert [row[0] for row in read_rows(out)[1:]] == ["Participant 101"]
    (side,) = [r for r in read_rows(course / "moodle-worksheet.notes.csv") if r[0] == "bob"]
    assert "no Moodle participant id of 04_elementwise" in side[6]


def test_collect_keeps_moodles_participant_id_for_the_worksheet(course, tmp_path, capsys):
    "Issue 41.6: the id in every Moodle folder name was read and thrown away; now roster.csv keeps it."
    download = tmp_path / "moodle"
    for name, participant in [("Ada Lovelace", 101), ("Bob Builder", 102)]:
        folder = download / f"{name}_{participant}_assignsubmission_file_"
        folder.mkdir(parents=True)
        (folder / f"{A}.ipynb").write_text(json.dumps(notebook_with_tests()))
    subs = tmp_path / "subs"
    assert (
        cli.main(["collect", str(download), "--lms", "moodle", "--out", str(subs), "--notebooks", str(course / "nbs")])
        == 0
    )
    assert "moodle_participant" in capsys.readouterr().err
    with open(subs / "roster.csv", encoding="utf-8") as file:
        people = {row["student"]: row for row in csv.DictReader(file)}
    assert {s: p["moodle_participant"] for s, p in people.items()} == {
        "ada-lovelace": f"{A}=101",
        "bob-builder": f"{A}=102",
    }
    book = {"ada-lovelace": GRADEBOOK["ada"], "bob-builder": GRADEBOOK["bob"]}
    (course / "grades" / "gradebook.json").write_text(json.dumps(book))
    code, out = export(course, "moodle-worksheet", subs / "roster.csv")
    assert code == 0
    assign = Assign(maximum=27, participants={"101": 1, "102": 2})
    moodle_worksheet_import(read_rows(out), assign)
    assert {user: grade for user, (grade, _) in assign.grades.items()} == {1: 21.6, 2: 0.0}


CANVAS_STUDENTS = [
    {"id": 501, "name": "Ada Lovelace", "sortable_name": "Lovelace, Ada", "sis_user_id": "S-1", "login_id": "ada"},
    {"id": 502, "name": "Robert Builder", "sortable_name": "Builder, Robert", "sis_user_id": "", "login_id": "+bob"},
    {"id": 503, "name": ZOE, "sortable_name": "Ñúñez, Zoë", "sis_user_id": "S-3", "login_id": "zoe"},
]


def test_canvas_gets_only_ids_it_matches_on_and_the_assignment_id(course, capsys):
    "Issue 46.4, 46.5, 46.8: no email as a login, '+bob' as it is, the column `Name (ID)`; Zoë's score kept."
    lines = [
        ["ada", "Ada Lovelace", "ada@example.edu", "501", "", "", ""],
        ["bob", "Bob Builder", "bob@example.edu", "", "", "+bob", ""],
        ["zoe", ZOE, "zoe@example.edu", "", "S-3", "", ""],
    ]
    code, out = export(course, "canvas", roster(course / "r.csv", *lines), "--canvas-assignment", f"{A}=777")
    err = capsys.readouterr().err
    assert code == 0, err
    rows = read_rows(out)
    assert rows[0][5:] == [f"{A} (777)"] and rows[1][5:] == ["27"]
    assert not any("@" in cell for row in rows for cell in row[3:4]), "never an email as the SIS Login ID"
    scores = {(503, 777): "24", (501, 777): "20"}
    changes = canvas_import(rows, CANVAS_STUDENTS, {777: "Elementwise (week 4)"}, scores)
    assert sorted(changes) == [(501, 777, "20", "21.6"), (502, 777, "", "0")], "Zoë's 24 is not '24 → blank'"
    assert "Points Possible to its maximum (04_elementwise: 27)" in err


def test_canvas_reads_assignment_ids_from_its_own_export_and_warns_without_one(course, capsys):
    lines = [["ada", "Ada Lovelace", "", "501", "", "", ""], ["bob", "Bob Builder", "", "502", "", "", ""]]
    export_file = course / "canvas-export.csv"
    export_file.write_text(f"Student,ID,SIS User ID,SIS Login ID,Section,{A} (777),Current Score\n", encoding="utf-8")
    code, out = export(course, "canvas", roster(course / "r.csv", *lines), "--canvas-export", export_file)
    assert code == 0 and read_rows(out)[0][5:] == [f"{A} (777)"]
    capsys.readouterr()
    code, out = export(course, "canvas", course / "r.csv")
    assert code == 0 and "no Canvas assignment id for 04_elementwise" in capsys.readouterr().err


def test_a_canvas_roster_line_with_only_an_email_is_left_out_and_the_fix_is_said(course, capsys):
    lines = [
        ["ada", "Ada Lovelace", "ada@example.edu", "501", "", "", ""],
        ["bob", "Bob", "bob@example.edu", "", "", "", ""],
    ]
    code, out = export(course, "canvas", roster(course / "r.csv", *lines))
    assert code == 1
    assert [row[0] for row in read_rows(out)[2:]] == ["Ada Lovelace"]
    (side,) = [r for r in read_rows(course / "canvas.notes.csv") if r[0] == "bob"]
    assert "never by email" in side[6] and "Canvas's gradebook export" in side[6]


def test_an_identifier_that_a_formula_needs_is_never_written(course, capsys):
    "A login like '=HYPERLINK(…)' cannot be written raw (a spreadsheet runs it) nor quoted (Canvas misses it)."
    lines = [
        ["ada", "Ada", "", "", "", '=HYPERLINK("http://x")', ""],
        ["bob", "=cmd|' /C calc'!A0", "", "502", "", "", ""],
    ]
    code, out = export(course, "canvas", roster(course / "r.csv", *lines))
    assert code == 1
    cells = [cell for row in read_rows(out) for cell in row]
    assert "'=cmd|' /C calc'!A0" in cells, "a name is neutralised"
    assert not any(cell.startswith(("=", "@", "-")) for cell in cells)
    (side,) = [r for r in read_rows(course / "canvas.notes.csv") if r[0] == "ada"]
    assert "starts like a spreadsheet formula" in side[6]


def test_the_files_start_with_a_byte_order_mark_so_excel_reads_the_names(course):
    code, out = export(course, "moodle", roster(course / "r.csv", *MOODLE_ROSTER), "--missing", "zero")
    assert code == 0
    data = out.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and ZOE.encode() in data


def test_no_export_writes_a_file_without_a_grade(course, capsys):
    "Issue 41.6: the Moodle export said 'written' for a file with only its header."
    lines = [["ada", "Ada", "", "", "", "", ""], ["bob", "Bob", "", "", "", "", ""]]
    code, out = export(course, "moodle", roster(course / "r.csv", *lines))
    err = capsys.readouterr()
    assert code == 2 and not out.exists() and "written" not in err.out
    assert "--format moodle-worksheet" in err.err


def test_a_moodle_item_over_100_points_is_said_with_the_fix(course, capsys):
    book = json.loads((course / "grades" / "gradebook.json").read_text())
    for student in book.values():
        student[A]["max_score"] = 140.0
    (course / "grades" / "gradebook.json").write_text(json.dumps(book))
    code, _ = export(course, "moodle", roster(course / "r.csv", *MOODLE_ROSTER))
    assert code == 0 and "refuses the whole file at a grade above 100" in capsys.readouterr().err


def test_the_final_score_has_one_definition_in_grading_and_in_every_export(monkeypatch):
    "Issue 42.3: autograde's Row, the gradebook and the export's new marks all call reports.late.penalised."
    from types import SimpleNamespace

    from grading.grade import gradebook
    from grading.lms import marked

    row = gradebook.Row("ada", A, f"{A}.ipynb", score=20.0, penalty_fraction=0.25)
    assert (row.penalty, row.final_score) == (5.0, 15.0)
    monkeypatch.setattr(gradebook, "penalised", lambda total, fraction: (1.0, 42.0))
    monkeypatch.setattr(marked, "penalised", lambda total, fraction: (1.0, 42.0))
    assert row.final_score == 42.0, "Row has no formula of its own"
    entry = {"score": 20.0, "penalty_fraction": 0.25, "penalty": 5.0, "final_score": 15.0}
    marked.mark_entry(entry, SimpleNamespace(score=3.0, manual_score=3.0, unmarked=[]))
    assert entry["final_score"] == 42.0


def test_an_export_says_when_its_final_scores_are_newer_than_grades_csv():
    from grading.lms.marked import changed_since_grading

    book = {"ada": {A: {"final_score": 23.0}}, "bob": {A: {"final_score": 0.0}}}
    warning = changed_since_grading(book, {("ada", A): 21.6, ("bob", A): 0.0}, [A])
    assert warning.startswith("1 final score(s) here include marks made after autograde wrote grades.csv")
    assert f"ada/{A}" in warning and "bob" not in warning
    assert changed_since_grading(book, {("ada", A): 23.0, ("bob", A): 0.0}, [A]) == ""


@pytest.mark.parametrize("missing", ["keep", "zero", "blank"])
def test_a_submission_the_grader_failed_on_gets_no_grade_in_any_export_and_the_export_fails(course, missing, capsys):
    """A fault of the grader's (autograde's "graded": false) is not the student's 0: whatever --missing says, no LMS
    file gives that student a grade or erases one, and the export exits 1 naming them."""
    book = json.loads((course / "grades" / "gradebook.json").read_text())
    book["bob"][A] = {
        "score": 0.0,
        "max_score": 24.0,
        "note": "not graded: the grading job was killed",
        "graded": False,
    }
    (course / "grades" / "gradebook.json").write_text(json.dumps(book))
    people = roster(
        course / "roster.csv",
        ["ada", "Ada", "ada@x.org", "1", "", "ada", ""],
        ["bob", "Bob", "bob@x.org", "2", "", "bob", ""],
    )
    code, out = export(course, "canvas", people, "--missing", missing)
    err = capsys.readouterr().err
    assert code == 1 and "the grader could not grade bob/04_elementwise" in err, err
    rows = list(csv.reader(out.read_text(encoding="utf-8-sig").splitlines()))
    assert not [row for row in rows if row[0] == "Bob"], "bob's row would change his grade in Canvas"
    code, out = export(course, "gradescope", people, out=course / "gs")
    assert code == 1 and not (course / "gs" / A / "bob").exists(), "no results.json: a 0 would be the student's"
    assert (course / "gs" / A / "ada" / "results.json").exists()
