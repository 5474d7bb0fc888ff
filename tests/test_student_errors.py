"""What a student reads when their code breaks: each case of tests/student_errors.py (a syntax error in one cell, an
exception at import, an endless loop, sys.exit, 20 GB, ...) is graded once, all in one autograde run, and the words
the student reads are pinned where the student reads them: the test's message in gradebook.json, the feedback page,
the note in grades.csv and the LMS's feedback column (Moodle's export). The student's own words reach all of them
(the error's name and message, the cell and its line, what the code did); no type or file of the grader's does."""

import csv
import html
import json
import re

import pytest
from student_errors import CASES

from grading.cli import main

pytestmark = pytest.mark.slow

GRADER_WORDS = [
    *("WireError", "StudentError", "GraderFault", "CellTimeout", "CallTimeout", "Session", "Remote"),
    *(
        "receiver cannot read",
        "not plain data",
        "Traceback",
        "verdict.py",
        "remote.py",
        "stand_ins.py",
        "worker.py",
        "wire.py",
        "/grader/",
    ),
]


@pytest.fixture(scope="module")
def graded(kit, tmp_path_factory):
    "The cases graded in one run and exported for Moodle: (gradebook, {student: note}, {notebook: Moodle rows}, OUT)."
    from student_errors import write_cases

    root = tmp_path_factory.mktemp("student-errors")
    write_cases(kit, root / "submissions")
    out = root / "grades"
    assert main(["autograde", str(root / "submissions"), "--out", str(out), "--cell-timeout", "5"]) == 0
    roster = root / "roster.csv"
    with open(roster, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["student", "name", "email", "lms_id"])
        for number, case in enumerate(CASES, 1):
            writer.writerow([case.student, f"Student {case.student}", f"{case.student}@example.edu", 100 + number])
    rows = {}  # one Moodle file per assignment: a file of several would need an empty cell for those who lack one
    for notebook in sorted({case.notebook for case in CASES}):
        moodle = root / f"moodle-{notebook}.csv"
        export = ["export-grades", str(out), "--format", "moodle", "--roster", str(roster), "--out", str(moodle)]
        assert main([*export, "--assignment", notebook]) == 0
        with open(moodle, newline="", encoding="utf-8-sig") as file:
            rows[notebook] = list(csv.reader(file))
    book = json.loads((out / "gradebook.json").read_text())
    with open(out / "grades.csv", newline="") as file:
        notes = {row["student"]: row["note"] for row in csv.DictReader(file)}
    return book, notes, rows, out


def moodle_feedback(rows, case):
    "The case's text in the Moodle export's feedback column (a header that starts with 'Feedback'), found by its row."
    header, *body = rows[case.notebook]
    columns = [i for i, name in enumerate(header) if name.startswith("Feedback")]
    columns = [i for i in columns if case.notebook in header[i]] or columns
    row = next(r for r in body if f"{case.student}@example.edu" in r or f"Student {case.student}" in r)
    return " ".join(row[i] for i in columns)


def page_text(out, case):
    "The feedback page as its reader sees it: the text, without the page's own styles and scripts."
    page = (out / "feedback" / case.student / f"{case.notebook}.html").read_text()
    page = re.sub(r"<(style|script)\b.*?</\1>", "", page, flags=re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


@pytest.mark.parametrize("case", CASES, ids=[c.student for c in CASES])
def test_the_student_reads_what_their_code_did_in_their_words_and_no_word_of_the_graders(graded, case):
    book, notes, rows, out = graded
    entry = book[case.student][case.notebook]
    assert entry["score"] is not None and entry["tests"], f"{case.did}: the student's doing, graded"
    feedback, page = moodle_feedback(rows, case), page_text(out, case)
    assert entry["note"] == notes[case.student] and entry["note"] in feedback
    for words in case.says:
        assert words in entry["note"], (case.did, entry["note"])
        assert words in page, case.did
    for test, words in case.test_says.items():
        message = entry["tests"][test]["message"]
        assert words in message, (case.did, test, message)
        assert words in page, (case.did, test)
    for text in [entry["note"], feedback, page, *(t["message"] for t in entry["tests"].values())]:
        assert not [word for word in GRADER_WORDS if word in text], (case.did, text[:500])


def test_only_the_broken_exercise_loses_points(graded):
    "One cell's syntax error costs the tests of that exercise, not the others (the cells run one by one)."
    book, _, _, _ = graded
    tests = book["syntax-mul"]["04_elementwise"]["tests"]
    lost = {test for test, result in tests.items() if result["score"] < result["max_score"]}
    assert lost == {"mul_backward", "mul_backward_hidden"}


def test_a_deleted_given_cell_is_put_back_and_costs_nothing(graded):
    book, _, _, _ = graded
    entry = book["deleted-given"]["04_elementwise"]
    assert entry["score"] == entry["max_score"] and not entry["note"]


def test_ten_megabytes_of_prints_are_cut_short_on_the_page_and_cost_nothing(graded):
    book, _, _, out = graded
    entry = book["prints-10mb"]["04_elementwise"]
    page = (out / "feedback" / "prints-10mb" / "04_elementwise.html").read_text()
    assert entry["score"] == entry["max_score"]
    assert "output truncated: the code printed more than 100,000 characters" in page and len(page) < 3_000_000


def test_a_visible_test_that_passed_says_so_on_the_page_and_the_hidden_tests_say_why_once(graded):
    "col2im's syntax error fails three hidden tests of Conv2dBackward: the why of their messages is said once."
    book, _, _, out = graded
    tests = book["syntax-col2im"]["12_conv"]["tests"]
    assert sum("its message is not shown" in t["message"] for t in tests.values()) == 3
    page = page_text(out, next(c for c in CASES if c.student == "syntax-col2im"))
    assert page.count("could write them into the message") == 1
    assert page.count("✔ passed") == 1  # maxpool2d_backward, the visible test that passed
