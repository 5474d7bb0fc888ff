"""A row the grader failed on for a reason of its own is *not graded*: no score in grades.csv, and no 0 in any LMS
export; and a student's folder name never reaches grades.csv as a formula."""

import csv

from grading.grade.autograde import failed_result
from grading.grade.gradebook import Row, write_table
from grading.grade.spec import Spec
from grading.lms import lms
from grading.lms.entries import Grades
from grading.lms.lms_input import Person


def spec():
    return Spec(
        **{name: "" for name in ("student", "assignment", "submitted", "instructor", "released", "master")},
        reference="",
        module_file="",
        module="",
        earlier_modules=[],
        scratch="",
        result="",
        feedback="",
    )


def test_a_row_not_graded_has_no_score_in_the_table_and_a_formula_name_is_neutralised(tmp_path):
    rows = [
        Row("alice", "01_tensor", "01_tensor.ipynb", 13, 13),
        Row(
            '=HYPERLINK("http://x","y")',
            "01_tensor",
            "01_tensor.ipynb",
            0,
            13,
            "not graded: the job was killed",
            problem=True,
            graded=False,
        ),
    ]
    write_table(rows, tmp_path / "grades.csv")
    with open(tmp_path / "grades.csv") as f:
        table = list(csv.DictReader(f))
    hostile = table[0]
    assert hostile["student"].startswith("'=") and hostile["score"] == "" and hostile["final_score"] == ""
    assert table[1]["score"] == "13" and table[1]["final_score"] == "13"


def test_a_grader_fault_is_marked_not_graded_and_no_export_turns_it_into_a_0():
    entry = failed_result(spec(), {"t": (2.0, "f")}, "not graded: the grading job was killed (SIGKILL)")
    assert entry["graded"] is False and entry["problem"]
    book = {"bob": {"01_tensor": {"score": 0.0, "max_score": 2.0, "note": entry["note"], "graded": False, "tests": {}}}}
    person = Person("bob", "Bob", "bob@example.org")
    assert not lms.graded(book["bob"]["01_tensor"])
    for missing in ("keep", "zero", "blank"):  # no cell: the LMS keeps what it holds, and no 0 for the grader's fault
        assert Grades(book, missing=missing).cell(person, "01_tensor") is None, missing
    assert (
        "not graded" in lms.gradescope_results(person, "01_tensor", book["bob"]["01_tensor"], None, "visible")["output"]
    )
