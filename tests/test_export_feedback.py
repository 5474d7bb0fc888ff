"""`export-feedback` (grading/lms/export_feedback.py): the feedback pages, self-contained, laid out for Moodle's zip
upload, Canvas's SpeedGrader, Gradescope's students or one zip per student; the late penalty and the final score on
the page; a page for a submission that could not be read. Made from a gradebook and kept runs written here, no grading.
"""

import json
import zipfile

import nbformat
import pytest

from grading.cli import main
from grading.common.notebooks import write_atomic
from grading.reports.page import render

E = "04_elementwise"
NOT_JSON = (
    "not a valid notebook (not valid JSON: Expecting ',' delimiter: line 40 column 1 (char 1234)). Re-download it or "
    "restore it from Jupyter's checkpoint. <script>alert(1)</script>"
)


def result(student, score, feedback="full"):
    "A kept result as autograde writes results/<student>/<nb>.json."
    tests = {
        "test_mul": {
            "score": score,
            "max_score": 6.0,
            "message": "" if score else "expected 6, got 5",
            "hidden": False,
        },
        "test_add": {"score": 4.0, "max_score": 4.0, "message": "", "hidden": False},
    }
    total = sum(t["score"] for t in tests.values())
    return {"student": student, "assignment": E, "tests": tests, "score": total, "max_score": 10.0, "note": "",
            "feedback": feedback}  # fmt: skip


def kept_run(out, student, score, feedback="full"):
    "The result and the notebook as it ran, kept by autograde; the gradebook entry for them."
    folder = out / "results" / student
    folder.mkdir(parents=True, exist_ok=True)
    made = result(student, score, feedback)
    (folder / f"{E}.json").write_text(json.dumps(made))
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("The gradient of $x^2$ is $$\\frac{d}{dx} x^2 = 2x$$"),
            nbformat.v4.new_code_cell("y = mul(a, b)", outputs=[nbformat.v4.new_output("stream", text="5\n")]),
        ]
    )
    (folder / f"{E}.notebook.ipynb").write_text(nbformat.writes(nb))
    entry = {k: made[k] for k in ("score", "max_score", "note", "tests", "feedback")}
    return dict(entry, final_score=made["score"])


@pytest.fixture
def graded(tmp_path):
    """A graded class: ada late (a penalty of 2 of 10 points), dee on time with the page autograde made, eve with a
    page of an older run (MathJax from a sibling folder), bob's notebook unreadable."""
    out = tmp_path / "grades"
    ada = dict(kept_run(out, "ada", 6.0), penalty=2.0, penalty_fraction=0.2, late_by_hours=26.5, final_score=8.0)
    dee = dict(kept_run(out, "dee", 6.0), penalty=0.0, late_by_hours=None)
    eve = kept_run(out, "eve", 0.0)
    book = {
        "ada": {E: ada},
        "dee": {E: dee},
        "eve": {E: eve},
        "bob": {E: {"score": 0, "max_score": 0, "note": NOT_JSON}},
    }
    (out / "gradebook.json").write_text(json.dumps(book))
    banner = '<div id="tinytorch-score"><h2>04_elementwise: 10 / 10</h2>made by autograde for dee</div>'
    write_atomic(out / "feedback" / "dee" / f"{E}.html", render(nbformat.v4.new_notebook(), E, banner))
    old = '<html><script src="../.mathjax/MathJax.js"></script><div id="tinytorch-score"><h2>x</h2></div>$x^2$</html>'
    write_atomic(out / "feedback" / "eve" / f"{E}.html", old)
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "student,name,email,moodle_participant\n"
        f"ada,Ada Lovelace,ada@uni.example,{E}=101 05_reductions=301\n"
        f"bob,Bob_Smith,bob@uni.example,{E}=102\n"
        "dee,Dee Jones,,\n"
        f"eve,Eve Adams,eve@uni.example,{E}=105\n"
    )
    return out, roster


def export(out, layout, target, *extra):
    return main(["export-feedback", str(out), "--layout", layout, "--out", str(target), *map(str, extra)])


def pages_in(path):
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name).decode() for name in archive.namelist()}


def test_each_students_zip_holds_pages_that_need_no_other_file_and_show_maths_as_mathml(graded, tmp_path, capsys):
    out, _ = graded
    assert export(out, "zip-per-student", tmp_path / "zips") == 0
    assert sorted(p.name for p in (tmp_path / "zips").iterdir()) == ["ada.zip", "bob.zip", "dee.zip", "eve.zip"]
    for student in ("ada", "bob", "dee", "eve"):
        (name, page), *others = pages_in(tmp_path / "zips" / f"{student}.zip").items()
        assert others == [] and name == f"{E}-feedback.html"
        assert "<script" not in page and "<link" not in page and ".mathjax" not in page, student
    ada = pages_in(tmp_path / "zips" / "ada.zip")[f"{E}-feedback.html"]
    assert ada.count("<math") == 2 and "<mfrac>" in ada, "the kept run's maths, drawn by the browser"
    assert "4 feedback pages written" in capsys.readouterr().out


def test_a_late_page_shows_the_penalty_and_the_final_score_read_at_export_time(graded, tmp_path):
    out, _ = graded
    book = json.loads((out / "gradebook.json").read_text())
    book["ada"][E].update(penalty=3.0, final_score=7.0)  # a later due date or policy: the gradebook changed, no regrade
    (out / "gradebook.json").write_text(json.dumps(book))
    assert export(out, "zip-per-student", tmp_path / "zips") == 0
    ada = pages_in(tmp_path / "zips" / "ada.zip")[f"{E}-feedback.html"]
    assert "<b>Final score: 7 / 10</b>" in ada and "26.5 hours after the due date" in ada
    assert "took 3 of the 10 points" in ada
    assert ada.index("04_elementwise: 10 / 10") < ada.index("Final score"), "under the autograded score"
    dee = pages_in(tmp_path / "zips" / "dee.zip")[f"{E}-feedback.html"]
    assert "Final score" not in dee and "made by autograde for dee" in dee, "autograde's own page, no late line"


def test_a_late_page_with_written_answers_not_marked_yet_says_its_final_score_is_so_far(graded, tmp_path):
    out, _ = graded
    book = json.loads((out / "gradebook.json").read_text())
    book["ada"][E].update(manual_points=3.0, manual_score=None)
    (out / "gradebook.json").write_text(json.dumps(book))
    assert export(out, "zip-per-student", tmp_path / "zips") == 0
    ada = pages_in(tmp_path / "zips" / "ada.zip")[f"{E}-feedback.html"]
    assert "<b>Final score so far: 8 / 13</b>" in ada and "written answers are not marked yet" in ada


def test_an_unreadable_submission_gets_a_page_saying_so_and_how_to_hand_it_in_again(graded, tmp_path, capsys):
    out, _ = graded
    assert export(out, "zip-per-student", tmp_path / "zips") == 0
    bob = pages_in(tmp_path / "zips" / "bob.zip")[f"{E}-feedback.html"]
    assert "04_elementwise: not graded" in bob and "could not read the file you handed in" in bob
    assert "not valid JSON: Expecting &#x27;,&#x27; delimiter" in bob, "the note, escaped"
    assert "File &gt; Download" in bob and "hand in the downloaded file again" in bob and "checkpoint.." not in bob
    assert "<script" not in bob and "&lt;script&gt;" in bob, "the note is text"
    assert "1 submission could not be read" in capsys.readouterr().out


def test_a_page_of_an_older_run_is_made_again_from_the_kept_run(graded, tmp_path):
    out, _ = graded
    assert export(out, "canvas", tmp_path / "canvas") == 0
    eve = (tmp_path / "canvas" / E / "eve" / f"{E}-feedback.html").read_text()
    assert "<script" not in eve and "<math" in eve and "expected 6, got 5" in eve


def moodle_reads(path):
    """(participant id, plugin type, plugin name, file) as Moodle's feedback upload reads a file's path
    (assignfeedback_file_zip_importer::is_valid_filename_for_import): the folder split at '_' into at most 5 parts."""
    folder, file = path.split("/", 1)
    info = folder.split("_", 4)
    return info[1], info[2], info[3], file


def test_moodle_gets_a_zip_per_assignment_whose_folders_carry_each_students_participant_id(graded, tmp_path, capsys):
    out, roster = graded
    assert export(out, "moodle", tmp_path / "moodle", "--roster", roster) == 1
    zipped = pages_in(tmp_path / "moodle" / f"{E}.zip")
    assert sorted(moodle_reads(name) for name in zipped) == [
        (number, "assignsubmission", "file", f"{E}-feedback.html") for number in ("101", "102", "105")
    ]
    assert "Bob Smith_102_assignsubmission_file/04_elementwise-feedback.html" in zipped, "'_' in a name split it"
    assert "not valid JSON" in zipped["Bob Smith_102_assignsubmission_file/04_elementwise-feedback.html"]
    err = capsys.readouterr().err
    assert "dee/04_elementwise: left out of 04_elementwise.zip: no participant id of 04_elementwise" in err


def test_moodle_without_a_roster_is_refused_before_anything_is_written(graded, tmp_path, capsys):
    out, _ = graded
    assert export(out, "moodle", tmp_path / "moodle") == 2
    assert "--layout moodle needs --roster" in capsys.readouterr().err and not (tmp_path / "moodle").exists()


def test_gradescope_gets_a_folder_per_students_email(graded, tmp_path, capsys):
    out, roster = graded
    assert export(out, "gradescope", tmp_path / "gs", "--roster", roster) == 0
    assert sorted(p.name for p in (tmp_path / "gs").iterdir()) == [
        "ada@uni.example", "bob@uni.example", "dee", "eve@uni.example"
    ]  # fmt: skip
    assert (tmp_path / "gs" / "ada@uni.example" / f"{E}-feedback.html").is_file()
    said = capsys.readouterr().err
    assert said.count("no email address") == 1 and "no email address in the roster for dee: their folders" in said


def test_a_submission_the_grader_failed_on_gets_no_page_and_the_export_exits_1(graded, tmp_path, capsys):
    out, _ = graded
    book = json.loads((out / "gradebook.json").read_text())
    book["cy"] = {E: dict(kept_run(out, "cy", 0.0), graded=False, note="not graded: the sandbox could not start")}
    (out / "gradebook.json").write_text(json.dumps(book))
    assert export(out, "zip-per-student", tmp_path / "zips") == 1
    assert not (tmp_path / "zips" / "cy.zip").exists() and (tmp_path / "zips" / "ada.zip").exists()
    assert "cy/04_elementwise: no page: not graded, a fault of the grader's" in capsys.readouterr().err


def test_pages_of_a_run_without_feedback_are_named_and_not_made(graded, tmp_path, capsys):
    out, _ = graded
    book = json.loads((out / "gradebook.json").read_text())
    book["fay"] = {E: dict(kept_run(out, "fay", 6.0, feedback="none"))}
    (out / "gradebook.json").write_text(json.dumps(book))
    assert export(out, "zip-per-student", tmp_path / "zips") == 1
    assert not (tmp_path / "zips" / "fay.zip").exists()
    assert "fay/04_elementwise: no page: autograde ran with --feedback none" in capsys.readouterr().err
