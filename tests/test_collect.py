"""`python -m grading collect`: each LMS's bulk download, laid out as that LMS documents it, becomes the folder
autograde reads, with the roster, the submission times and a report of every file that could not be placed."""

import csv
import functools
import os
import stat
import zipfile
from datetime import UTC, datetime, timedelta, timezone

import nbformat
import pytest

from grading.cli import main
from grading.common.errors import GradingError
from grading.common.notebooks import REPO, nbgrader_meta, read_notebook
from grading.intake import downloads
from grading.intake.collect import collect
from grading.intake.roster import read_roster
from tests.conftest import run_cli


@functools.cache
def course_meta(assignment):
    "The nbgrader metadata of the first cell of the course notebook `assignment` that has a grade id."
    source = read_notebook(REPO / "notebooks" / f"{assignment}.ipynb")
    return next(nbgrader_meta(c) for c in source.cells if nbgrader_meta(c).get("grade_id"))


def tiny(assignment="02_function", text=""):
    "A small notebook whose one cell carries the nbgrader metadata of a cell of the course notebook `assignment`."
    cell = nbformat.v4.new_code_cell(f"# {text or 'my work'}", id="work")
    cell.metadata["nbgrader"] = dict(course_meta(assignment))
    nb = nbformat.v4.new_notebook()
    nb.cells = [cell]
    return nbformat.writes(nb).encode()


def make_zip(path, files):
    "A zip of {name: bytes}, every member dated 2026-12-05 10:00 (as when an LMS made the download)."
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=(2026, 12, 5, 10, 0, 0)), data)
    return path


def report(out):
    with open(out / "collect-report.csv", encoding="utf-8") as file:
        return {row["file"]: row for row in csv.DictReader(file)}


def notebook(out, student, assignment):
    return out / student / assignment / f"{assignment}.ipynb"


def test_a_canvas_download_is_laid_out_by_student_and_assignment_with_a_roster(tmp_path, course):
    download = make_zip(
        tmp_path / "canvas.zip",
        {
            "lovelaceada_1001_501_02_function.ipynb": tiny(),
            "lovelaceada_1001_502_03_gradcheck (1).ipynb": tiny("03_gradcheck"),  # renamed by the browser
            "hopper_grace_LATE_1002_503_02_function-1.ipynb": tiny(),  # Canvas's LATE; -1 for a repeated name
            "turingalan_1003_504_answers.pdf": b"%PDF-1.4",
            "notes.txt": b"not from Canvas",
        },
    )
    out = tmp_path / "submissions"
    result = collect(download, "canvas", out, notebooks_dir=course)
    assert notebook(out, "lovelaceada-1001", "02_function").read_bytes() == tiny()
    assert notebook(out, "lovelaceada-1001", "03_gradcheck").is_file()
    assert notebook(out, "hopper-grace-1002", "02_function").is_file()
    roster = {p.student: p for p in read_roster(out / "roster.csv")}  # export-grades reads it as it is
    assert roster["lovelaceada-1001"].lms_id == "1001"
    assert roster["hopper-grace-1002"].name == "hopper_grace"
    assert "turingalan-1003" in roster  # handed in, but no notebook: export-grades will say so
    rows = report(out)
    assert "LATE" in rows["hopper_grace_LATE_1002_503_02_function-1.ipynb"]["note"]
    assert rows["turingalan_1003_504_answers.pdf"]["status"] == "not placed"
    assert "not a notebook (.pdf)" in rows["turingalan_1003_504_answers.pdf"]["note"]
    assert "is this a Canvas download" in rows["notes.txt"]["note"]
    assert {r.file for r in result.not_placed} == {"turingalan_1003_504_answers.pdf", "notes.txt"}
    assert any("no submission times" in line for line in result.warnings)


def test_a_notebook_whose_name_says_no_assignment_is_placed_by_its_cells(tmp_path, course):
    download = make_zip(
        tmp_path / "canvas.zip",
        {"curiemarie_7_1_homework.ipynb": tiny("03_gradcheck"), "curiemarie_7_2_scratch.ipynb": b'{"cells": []}'},
    )
    out = tmp_path / "submissions"
    collect(download, "canvas", out, notebooks_dir=course)
    assert notebook(out, "curiemarie-7", "03_gradcheck").read_bytes() == tiny("03_gradcheck")
    rows = report(out)
    assert "told by its cells" in rows["curiemarie_7_1_homework.ipynb"]["note"]
    assert rows["curiemarie_7_2_scratch.ipynb"]["status"] == "not placed"


def test_gradescope_sets_each_notebooks_time_to_created_at_and_keeps_the_latest(tmp_path, course):
    metadata = """\
submission_11:
  :submitters:
  - :name: Ada Lovelace
    :sid: '1815'
    :email: ada@uni.edu
  :created_at: 2026-12-01 23:12:03.123456000 -08:00
  :score: 0.0
  :results: !ruby/hash:ActiveSupport::HashWithIndifferentAccess
    score: 0.0
submission_12:
  :submitters:
  - :name: Ada Lovelace
    :sid: '1815'
    :email: ada@uni.edu
  :created_at: 2026-12-01 20:00:00.000000000 -08:00
submission_13:
  :submitters:
  - :name: Grace Hopper
    :sid: '1906'
    :email: grace@uni.edu
  - :name: Alan Turing
    :sid: '1912'
    :email: alan@uni.edu
  :created_at: 2026-11-30 09:30:00.000000000 Z
"""
    root = "assignment_42_export/"
    download = make_zip(
        tmp_path / "gradescope.zip",
        {
            root + "submission_metadata.yml": metadata.encode(),
            root + "submission_11/02_function.ipynb": tiny(text="latest"),
            root + "submission_12/02_function.ipynb": tiny(text="earlier"),
            root + "submission_13/kit/02_function/02_function.ipynb": tiny(text="pair"),
            root + "submission_99/02_function.ipynb": tiny(),
        },
    )
    out = tmp_path / "submissions"
    result = collect(download, "gradescope", out, notebooks_dir=course)
    ada = notebook(out, "1815", "02_function")
    assert b"latest" in ada.read_bytes()
    due = datetime(2026, 12, 1, 23, 12, 3, 123456, tzinfo=timezone(timedelta(hours=-8)))
    assert abs(os.stat(ada).st_mtime - due.timestamp()) < 0.001
    pair = datetime(2026, 11, 30, 9, 30, tzinfo=UTC).timestamp()
    for sid in ("1906", "1912"):  # a group submission: a copy for each submitter
        assert abs(os.stat(notebook(out, sid, "02_function")).st_mtime - pair) < 0.001
    rows = report(out)
    assert rows[root + "submission_12/02_function.ipynb"]["status"] == "superseded"
    note = rows[root + "submission_12/02_function.ipynb"]["note"]
    assert "earlier submission than" in note and "by the LMS's submission time, which was kept" in note, note
    assert rows[root + "submission_99/02_function.ipynb"]["status"] == "not placed"
    roster = {p.student: p for p in read_roster(out / "roster.csv")}
    assert (roster["1815"].name, roster["1815"].email, roster["1815"].sis_id) == ("Ada Lovelace", "ada@uni.edu", "1815")
    assert not result.warnings


def test_moodle_folders_and_prefixed_files_give_slugged_student_folders(tmp_path, course):
    download = tmp_path / "moodle"  # unpacked, as a folder
    files = {
        "Jane Doe_501_assignsubmission_file/02_function.ipynb": tiny(),
        "Jane Doe_501_assignsubmission_onlinetext/onlinetext.html": b"<p>hi</p>",
        "José Ñúñez O'Brien_502_assignsubmission_file_02_function.ipynb": tiny(),
        "Sam Lee_503_assignsubmission_file_/02_function.ipynb": tiny(text="one"),
        "Sam Lee_504_assignsubmission_file_/02_function.ipynb": tiny(text="other"),
        "__MACOSX/._02_function.ipynb": b"junk",
    }
    for name, data in files.items():
        (download / name).parent.mkdir(parents=True, exist_ok=True)
        (download / name).write_bytes(data)
    out = tmp_path / "submissions"
    result = collect(download, "moodle", out, notebooks_dir=course)
    assert notebook(out, "jane-doe", "02_function").is_file()
    assert notebook(out, "jose-nunez-o-brien", "02_function").is_file()
    assert b"one" in notebook(out, "sam-lee-503", "02_function").read_bytes()  # same name: the id tells them apart
    assert b"other" in notebook(out, "sam-lee-504", "02_function").read_bytes()
    roster = {p.student: p.name for p in read_roster(out / "roster.csv")}
    assert roster["jose-nunez-o-brien"] == "José Ñúñez O'Brien"
    rows = report(out)
    assert "onlinetext submission" in rows["Jane Doe_501_assignsubmission_onlinetext/onlinetext.html"]["note"]
    assert rows["__MACOSX/._02_function.ipynb"]["status"] == "skipped"  # in the report, not an error
    assert any("email" in line for line in result.warnings)


def test_a_zip_whose_names_are_utf8_without_the_flag_gives_the_folders_of_the_same_download_unpacked(tmp_path, course):
    """An instructor's finding: Info-ZIP's zip writes UTF-8 names without the UTF-8 flag, which zipfile reads as CP437:
    "José Müller" became the folder jos-m-ller and the roster name "Jos├⌐ M├╝ller"; unpacked, jose-muller."""
    name = "José Müller_123_assignsubmission_file_/02_function.ipynb"
    stand_in = "x" * len(name.encode())  # ASCII, so zipfile sets no flag; then the UTF-8 bytes put in its place
    plain = make_zip(tmp_path / "plain.zip", {stand_in: tiny()})
    raw = plain.read_bytes()
    assert raw.count(stand_in.encode()) == 2  # the member's local header and the central directory
    (tmp_path / "moodle.zip").write_bytes(raw.replace(stand_in.encode(), name.encode()))
    with zipfile.ZipFile(tmp_path / "moodle.zip") as archive:
        assert not archive.infolist()[0].flag_bits & 0x800 and archive.namelist() != [name]
    out = tmp_path / "submissions"
    collect(tmp_path / "moodle.zip", "moodle", out, notebooks_dir=course)
    assert notebook(out, "jose-muller", "02_function").is_file()
    assert {p.student: p.name for p in read_roster(out / "roster.csv")} == {"jose-muller": "José Müller"}
    assert name in report(out)


def test_a_download_collected_as_another_lms_is_refused_with_the_lms_that_fits(tmp_path, course):
    "An instructor's finding: a Canvas zip collected with --lms moodle wrote an empty folder and a line per file."
    download = make_zip(
        tmp_path / "canvas.zip",
        {"lovelaceada_1001_501_02_function.ipynb": tiny(), "turingalan_1003_504_02_function.ipynb": tiny()},
    )
    out = tmp_path / "submissions"
    with pytest.raises(GradingError, match=r"named as a canvas \(2 of them\) download names them: pass --lms canvas"):
        collect(download, "moodle", out, notebooks_dir=course)
    assert not out.exists(), "nothing is written"


def test_a_flat_folder_takes_either_layout_and_refuses_links(tmp_path, course):
    download = tmp_path / "flat"
    (download / "alice" / "02_function").mkdir(parents=True)
    (download / "alice" / "02_function" / "02_function.ipynb").write_bytes(tiny())
    (download / "bob").mkdir()
    (download / "bob" / "my work.ipynb").write_bytes(tiny("03_gradcheck"))
    (download / "-eve").mkdir()
    (download / "-eve" / "02_function.ipynb").write_bytes(tiny())
    (download / "carol").mkdir()
    (download / "carol" / "02_function.ipynb").symlink_to(REPO / "notebooks" / "02_function.ipynb")
    (download / "mallory").symlink_to(REPO / "notebooks")
    out = tmp_path / "submissions"
    collect(download, "flat", out, notebooks_dir=course)
    assert notebook(out, "alice", "02_function").is_file()
    assert notebook(out, "bob", "03_gradcheck").is_file()
    assert notebook(out, "eve", "02_function").is_file()  # '-eve' cannot name a folder autograde reads
    assert not (out / "carol").exists() and not (out / "mallory").exists()
    rows = report(out)
    assert "symbolic link" in rows["carol/02_function.ipynb"]["note"]
    assert "symbolic link" in rows["mallory"]["note"]
    assert "cannot name a student's folder" in rows["'-eve/02_function.ipynb"]["note"]  # ' : grading.common.csvsafe


def test_zip_members_outside_the_download_links_and_too_large_ones_are_refused(tmp_path, course, monkeypatch):
    monkeypatch.setattr(downloads, "LIMIT", 50_000)
    download = make_zip(
        tmp_path / "flat.zip",
        {
            "../../escaped/02_function.ipynb": tiny(),
            "/etc/02_function.ipynb": tiny(),
            "alice/../../02_function.ipynb": tiny(),
            "bob/02_function.ipynb": tiny() + b" " * 60_000,
            "carol/02_function.ipynb": tiny(),
        },
    )
    with zipfile.ZipFile(download, "a") as archive:  # a member that is a symbolic link (as `zip --symlinks` stores it)
        link = zipfile.ZipInfo("dave/02_function.ipynb")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, str(REPO / "notebooks" / "02_function.ipynb"))
    out = tmp_path / "work" / "submissions"
    result = collect(download, "flat", out, notebooks_dir=course)
    written = [p for p in tmp_path.rglob("*.ipynb") if not p.is_relative_to(course)]
    assert written == [notebook(out, "carol", "02_function")]
    rows = report(out)
    for name in ("../../escaped/02_function.ipynb", "/etc/02_function.ipynb", "alice/../../02_function.ipynb"):
        assert "leads out of the download" in rows[name]["note"]
    assert "larger than" in rows["bob/02_function.ipynb"]["note"]
    assert "symbolic link" in rows["dave/02_function.ipynb"]["note"]
    assert len(result.not_placed) == 5


def test_notebooks_already_there_are_replaced_only_with_force(tmp_path, course):
    download = make_zip(tmp_path / "canvas.zip", {"doejane_5_1_02_function.ipynb": tiny()})
    out = tmp_path / "submissions"
    collect(download, "canvas", out, notebooks_dir=course)
    again = collect(download, "canvas", out, notebooks_dir=course)  # the same download twice: nothing to replace
    assert [r.status for r in again.rows] == ["unchanged"]
    target = notebook(out, "doejane-5", "02_function")
    target.write_bytes(tiny(text="graded by hand"))
    with pytest.raises(GradingError, match=r"1 notebook\(s\) there differ.*doejane-5.*--force"):
        collect(download, "canvas", out, notebooks_dir=course)
    assert b"graded by hand" in target.read_bytes()
    collect(download, "canvas", out, force=True, notebooks_dir=course)
    assert target.read_bytes() == tiny()


def test_the_roster_and_the_report_keep_what_earlier_collects_wrote(tmp_path, course):
    out = tmp_path / "submissions"
    out.mkdir()
    (out / "roster.csv").write_text("student,name,email\nlovelaceada-1001,Ada Lovelace,ada@uni.edu\n")
    first = make_zip(tmp_path / "a.zip", {"lovelaceada_1001_1_02_function.ipynb": tiny(), "x.txt": b""})
    second = make_zip(tmp_path / "b.zip", {"hopper_1002_2_03_gradcheck.ipynb": tiny("03_gradcheck")})
    collect(first, "canvas", out, notebooks_dir=course)
    collect(second, "canvas", out, notebooks_dir=course)
    collect(second, "canvas", out, notebooks_dir=course)  # again: its own rows replaced, not doubled
    roster = read_roster(out / "roster.csv")
    assert [(p.student, p.name, p.email) for p in roster] == [
        ("lovelaceada-1001", "Ada Lovelace", "ada@uni.edu"),  # the instructor's line, as it was
        ("hopper-1002", "hopper", ""),
    ]
    with open(out / "collect-report.csv", encoding="utf-8") as file:
        files = [row["file"] for row in csv.DictReader(file)]
    assert sorted(files) == ["hopper_1002_2_03_gradcheck.ipynb", "lovelaceada_1001_1_02_function.ipynb", "x.txt"]


def test_the_command_names_each_file_not_placed_on_stderr_and_exits_1(tmp_path, course, capsys):
    download = make_zip(tmp_path / "canvas.zip", {"doejane_5_1_02_function.ipynb": tiny(), "readme.txt": b""})
    out = tmp_path / "submissions"
    code = main(["collect", str(download), "--lms", "canvas", "--out", str(out), "--notebooks", str(course)])
    captured = capsys.readouterr()
    assert code == 1
    assert "not placed: readme.txt: not named as Canvas names" in captured.err
    assert captured.err.count("\n") == 2  # the warning about times, and the one file
    assert "1 notebook of 1 student in" in captured.out and "1 file not placed" in captured.out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.zip", "--lms", "canvas"], "missing.zip: no such file or folder"),
        (["notzip.zip", "--lms", "canvas"], "notzip.zip: not a readable zip file"),
        (["canvas.zip", "--lms", "blackboard"], "--lms 'blackboard': expected one of canvas, moodle, gradescope, flat"),
        (["canvas.zip", "--lms", "gradescope"], "has no submission_metadata.yml"),
        (["folder", "--lms", "flat"], "is inside the download"),
    ],
)
def test_a_bad_download_or_option_is_one_error_line(tmp_path, course, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notzip.zip").write_bytes(b"PK but not a zip")
    make_zip(tmp_path / "canvas.zip", {"doejane_5_1_02_function.ipynb": tiny()})
    (tmp_path / "folder" / "alice").mkdir(parents=True)
    out = "folder/out" if args[0] == "folder" else "out"
    code = main(["collect", *args, "--out", out, "--notebooks", str(course)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: ") and err.count("\n") == 1
    assert message in err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_collect_then_autograde_grades_the_notebook_late_by_the_lms_time(tmp_path):
    from grading.sandbox.sandbox import problem

    solved = (REPO / "notebooks" / "02_function.ipynb").read_bytes()  # the instructor's: full marks
    metadata = (
        "submission_1:\n  :submitters:\n  - :name: Ada Lovelace\n    :sid: '1815'\n    :email: ada@uni.edu\n"
        "  :created_at: 2026-12-02 01:30:00.000000000 Z\n"
    )
    download = make_zip(
        tmp_path / "gradescope.zip",
        {"submission_metadata.yml": metadata.encode(), "submission_1/02_function.ipynb": solved},
    )
    submissions, grades = tmp_path / "submissions", tmp_path / "grades"
    result = run_cli("collect", download, "--lms", "gradescope", "--out", submissions)
    assert result.returncode == 0, result.stderr
    unsafe = ["--unsafe-no-sandbox"] if problem() is not None else []
    due = ["--due", "2026-12-01T23:59+00:00", "--late-penalty", "10%/day"]
    result = run_cli("autograde", submissions, "--out", grades, "--workers", "1", *due, *unsafe)
    assert result.returncode == 0, result.stdout + result.stderr
    with open(grades / "grades.csv", encoding="utf-8") as file:
        (row,) = [r for r in csv.DictReader(file) if r["assignment"] == "02_function"]
    assert row["student"] == "1815"
    assert float(row["score"]) == float(row["max_score"]) > 0
    assert float(row["late_by_hours"]) == pytest.approx(1.52, abs=0.01)  # 01:30 against 23:59 the day before
    assert float(row["penalty"]) > 0


def test_a_flat_folder_name_that_must_change_never_lands_on_another_students_or_on_collects_files(tmp_path, course):
    """'!!!' slugs to nothing and '<script>' to 'script': each took a real student's folder of that name (one
    notebook 'superseded'), and a folder named roster.csv crashed collect after it had placed the notebooks."""
    download = tmp_path / "flat"
    for folder, text in [("!!!", "a"), ("student", "b"), ("<script>", "c"), ("script", "d"), ("roster.csv", "e")]:
        (download / folder).mkdir(parents=True)
        (download / folder / "02_function.ipynb").write_bytes(tiny(text=text))
    out = tmp_path / "submissions"
    collect(download, "flat", out, notebooks_dir=course)
    placed = {p.parent.parent.name: p.read_text() for p in out.glob("*/02_function/02_function.ipynb")}
    assert len(placed) == 5 and {"student", "script", "roster-csv"} <= set(placed), sorted(placed)
    assert "# b" in placed["student"] and "# d" in placed["script"] and "# e" in placed["roster-csv"]
    assert (out / "roster.csv").is_file() and (out / "collect-report.csv").is_file()
    assert sorted(p.student for p in read_roster(out / "roster.csv")) == sorted(placed)


def placed_folders(out, assignment="02_function"):
    "{student folder: the text of its notebook of `assignment`}"
    return {p.parent.parent.name: p.read_text() for p in out.glob(f"*/{assignment}/{assignment}.ipynb")}


def test_moodle_students_whose_folders_would_be_one_get_each_their_own(tmp_path, course):
    "Two Anna Bs get anna-b-5 and anna-b-9 (their ids), and a third student named Anna B 5 slugs to anna-b-5 too."
    download = make_zip(
        tmp_path / "moodle.zip",
        {
            "Anna B_5_assignsubmission_file_/02_function.ipynb": tiny(text="five"),
            "Anna B_9_assignsubmission_file_/02_function.ipynb": tiny(text="nine"),
            "Anna B 5_7_assignsubmission_file_/02_function.ipynb": tiny(text="seven"),
        },
    )
    out = tmp_path / "submissions"
    result = collect(download, "moodle", out, notebooks_dir=course)
    placed = placed_folders(out)
    assert sorted("# " + w in text for w in ("five", "nine", "seven") for text in placed.values()).count(True) == 3
    assert len(placed) == 3 and "anna-b-9" in placed and "anna-b-5" not in placed, sorted(placed)
    assert all(r.status == "placed" for r in result.rows), result.rows
    assert sum("another student of this download also has the folder anna-b-5" in r.note for r in result.rows) == 2
    assert any("3 student folder(s) have a suffix" in line for line in result.warnings), result.warnings


GRADESCOPE_PAIR = """\
submission_1:
  :submitters:
  - :name: A B
    :sid: {sid}
    :email: someone@uni.edu
  :created_at: 2026-12-01 10:00:00 Z
submission_2:
  :submitters:
  - :name: Another
    :email: {email}
  :created_at: 2026-12-01 11:00:00 Z
"""


@pytest.mark.parametrize(
    "sid, email",
    [("a-b-x", "a.b@x"), ("AB-X", "ab@x")],  # the same slug; the same slug but for case (macOS ignores case)
)
def test_gradescope_a_student_id_and_another_students_email_that_slug_alike_stay_apart(tmp_path, course, sid, email):
    download = make_zip(
        tmp_path / "gs.zip",
        {
            "submission_metadata.yml": GRADESCOPE_PAIR.format(sid=sid, email=email).encode(),
            "submission_1/02_function.ipynb": tiny(text="one"),
            "submission_2/02_function.ipynb": tiny(text="two"),
        },
    )
    out = tmp_path / "submissions"
    result = collect(download, "gradescope", out, notebooks_dir=course)
    placed = placed_folders(out)
    assert len(placed) == 2 and len({name.casefold() for name in placed}) == 2, sorted(placed)
    assert all(r.status == "placed" for r in result.rows), result.rows
    assert sorted(p.student for p in read_roster(out / "roster.csv")) == sorted(placed)


def test_a_student_the_roster_knows_keeps_their_folder_and_no_one_takes_anothers(tmp_path, course):
    """Ada's first export had her student id (folder 1815); the next has only her email: her notebooks go to 1815
    still. Somebody else whose email slugs to a folder the roster gives to another student gets a folder of their own;
    so does a flat folder 'Alice' where the roster has 'alice' (one folder where case is ignored)."""
    out = tmp_path / "submissions"
    out.mkdir()
    (out / "roster.csv").write_text(
        "student,name,email,sis_id\n1815,Ada Lovelace,ada@uni.edu,1815\nbob-uni-edu,Bob,bob@uni.edu,77\nalice,,,\n"
    )
    metadata = """\
submission_1:
  :submitters:
  - :name: Ada Lovelace
    :email: ADA@uni.edu
  :created_at: 2026-12-01 10:00:00 Z
submission_2:
  :submitters:
  - :name: Bob Two
    :email: bob.uni@edu
  :created_at: 2026-12-01 11:00:00 Z
"""
    download = make_zip(
        tmp_path / "gs.zip",
        {
            "submission_metadata.yml": metadata.encode(),
            "submission_1/02_function.ipynb": tiny(text="ada"),
            "submission_2/02_function.ipynb": tiny(text="bob two"),
        },
    )
    collect(download, "gradescope", out, notebooks_dir=course)
    placed = placed_folders(out)
    assert "# ada" in placed.pop("1815"), "Ada's notebook goes to the folder the roster gives her"
    ((folder, text),) = placed.items()
    assert folder.startswith("bob-uni-edu-") and "# bob two" in text
    flat = tmp_path / "flat"
    (flat / "Alice").mkdir(parents=True)
    (flat / "Alice" / "03_gradcheck.ipynb").write_bytes(tiny("03_gradcheck", text="Alice"))
    collect(flat, "flat", out, notebooks_dir=course)
    (folder,) = placed_folders(out, "03_gradcheck")
    assert folder.startswith("Alice-"), folder
    roster = [p.student for p in read_roster(out / "roster.csv")]
    assert roster[:3] == ["1815", "bob-uni-edu", "alice"] and len(roster) == len(set(roster)) == 5, roster


def test_a_class_of_large_notebooks_is_never_all_in_memory(tmp_path, course):
    """collect keeps a digest of each notebook, not its bytes, and reads it again to write it: 12 notebooks of 3 MB
    (each within the limit, as a student may make one with large outputs) never take more than a few at once."""
    import tracemalloc

    big = tiny(text="x" * (3 * 2**20))
    download = make_zip(tmp_path / "canvas.zip", {f"s{i}_{100 + i}_{i}_02_function.ipynb": big for i in range(12)})
    out = tmp_path / "submissions"
    tracemalloc.start()
    try:
        result = collect(download, "canvas", out, notebooks_dir=course)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(result.placed) == 12
    assert peak < 5 * len(big), f"peak {peak / 2**20:.0f} MB for notebooks of {len(big) / 2**20:.0f} MB"


def test_a_notebook_that_changes_between_reading_and_writing_is_not_placed(tmp_path, course, monkeypatch):
    download = tmp_path / "flat"
    (download / "alice").mkdir(parents=True)
    (download / "alice" / "02_function.ipynb").write_bytes(tiny(text="first"))
    reads = []
    real = downloads.Member.read

    def read_then_change(member):
        reads.append(member.path)
        data, why = real(member)
        return (data + b" " if len(reads) > 1 else data), why

    monkeypatch.setattr(downloads.Member, "read", read_then_change)
    result = collect(download, "flat", tmp_path / "submissions", notebooks_dir=course)
    (row,) = result.rows
    assert row.status == "not placed" and "changed in the download while collect read it" in row.note, row
    assert not (tmp_path / "submissions" / "alice" / "02_function").exists()


def test_a_moodle_name_that_slugs_to_anothers_folder_of_an_earlier_collect_gets_its_own(tmp_path, course):
    """The first download had two Anna Bs (anna-b-5 and anna-b-9); the next has one 'Anna B 5', whose name slugs
    to anna-b-5: the roster names that folder's student 'Anna B', so this one gets a folder of their own."""
    first = make_zip(
        tmp_path / "first.zip",
        {
            "Anna B_5_assignsubmission_file_/02_function.ipynb": tiny(text="five"),
            "Anna B_9_assignsubmission_file_/02_function.ipynb": tiny(text="nine"),
        },
    )
    second = make_zip(tmp_path / "second.zip", {"Anna B 5_3_assignsubmission_file_/02_function.ipynb": tiny(text="3")})
    out = tmp_path / "submissions"
    collect(first, "moodle", out, notebooks_dir=course)
    result = collect(second, "moodle", out, notebooks_dir=course, force=True)
    assert "# five" in notebook(out, "anna-b-5", "02_function").read_text()
    (row,) = result.rows
    assert row.status == "placed" and row.student.startswith("anna-b-5-"), row
    assert "roster.csv gives the folder anna-b-5 to another student" in row.note


# An attacker's round (F1 to F9): a student who picks their name or their files' names, against collect's folders


def h8(*who):
    "The suffix grading.intake.folders gives the student `who` (their folder, ids, email and name)."
    import hashlib

    return hashlib.sha256("\0".join(who).encode()).hexdigest()[:8]


def test_a_name_that_slugs_to_anothers_suffixed_folder_does_not_take_it(tmp_path, course):
    "Anna B's folder is anna-b-<hash> (roster.csv gave anna-b to 'Anna-B'); 'Anna-B-<hash>' slugs to it too."
    out = tmp_path / "submissions"
    first = make_zip(tmp_path / "1.zip", {"Anna-B_9_assignsubmission_file/02_function.ipynb": tiny(text="a1")})
    collect(first, "moodle", out, notebooks_dir=course)
    suffix = h8("anna-b", "", "", "", "Anna B")
    second = make_zip(
        tmp_path / "2.zip",
        {
            "Anna B_5_assignsubmission_file/03_gradcheck.ipynb": tiny("03_gradcheck", "VICTIM"),
            f"Anna-B-{suffix}_12_assignsubmission_file/03_gradcheck.ipynb": tiny("03_gradcheck", "ATTACKER"),
        },
    )
    result = collect(second, "moodle", out, notebooks_dir=course)
    assert all(r.status == "placed" for r in result.rows), result.rows
    placed = placed_folders(out, "03_gradcheck")
    assert len(placed) == 2 and sum("VICTIM" in text for text in placed.values()) == 1, sorted(placed)
    (victim,) = [r.student for r in result.rows if "Anna B_5" in r.file]
    assert "VICTIM" in placed[victim] and "ATTACKER" not in placed[victim]


def test_a_name_the_roster_quotes_is_the_same_name_when_read_back(tmp_path, course):
    "roster.csv writes '-Anna' as \"'-Anna\" (no spreadsheet formula); read back, it is -Anna again: one folder."
    out = tmp_path / "submissions"
    first = make_zip(tmp_path / "1.zip", {"-Anna_5_assignsubmission_file/02_function.ipynb": tiny(text="one")})
    second = make_zip(tmp_path / "2.zip", {"-Anna_8_assignsubmission_file/03_gradcheck.ipynb": tiny("03_gradcheck")})
    collect(first, "moodle", out, notebooks_dir=course)
    result = collect(second, "moodle", out, notebooks_dir=course)
    assert [r.student for r in result.rows] == ["anna"], result.rows
    assert [(p.student, p.name) for p in read_roster(out / "roster.csv")] == [("anna", "-Anna")]


def test_a_canvas_name_that_reads_as_another_students_file_is_not_collected(tmp_path, course):
    """A student whose sortable name is lovelaceada_1001_9999999999 (user 2002): their files read first as user
    1001's (the victim's), with a larger file id. Such a file is not collected, nor its student put in the roster: it
    would supersede the victim's, or be graded (and exported) under the victim's id where she handed in nothing."""
    download = make_zip(
        tmp_path / "canvas.zip",
        {
            "lovelaceada_1001_208490284_02_function.ipynb": tiny(text="VICTIM"),
            "lovelaceada_1001_9999999999_2002_208490290_02_function.ipynb": tiny(text="ATTACKER"),
            "x_1001_9_2002_601_03_gradcheck.ipynb": tiny("03_gradcheck", "ATTACKER"),  # where she handed in nothing
        },
    )
    out = tmp_path / "submissions"
    result = collect(download, "canvas", out, notebooks_dir=course)
    assert "VICTIM" in notebook(out, "lovelaceada-1001", "02_function").read_text()
    assert [r.status for r in result.rows].count("placed") == 1 and len(placed_folders(out, "03_gradcheck")) == 0
    doubtful = report(out)["lovelaceada_1001_9999999999_2002_208490290_02_function.ipynb"]
    assert doubtful["status"] == "not placed", doubtful
    assert (
        "read as user 1001's file or as user 9999999999's file 2002 or user 2002's file 208490290" in doubtful["note"]
    )
    assert [p.lms_id for p in read_roster(out / "roster.csv")] == ["1001"]
    plain = make_zip(tmp_path / "plain.zip", {"turingalan_1003_504_10_x_1_y.ipynb": tiny()})  # no _<id>_<id>_ inside
    assert [r.status for r in collect(plain, "canvas", tmp_path / "other", notebooks_dir=course).rows] == ["placed"]


def test_a_roster_folder_that_is_no_folder_name_is_never_used(tmp_path, course):
    out = tmp_path / "sub" / "submissions"
    out.mkdir(parents=True)
    (out / "roster.csv").write_text("student,name,email,lms_id\n..,Ada,,1001\n")
    download = make_zip(tmp_path / "canvas.zip", {"lovelaceada_1001_501_02_function.ipynb": tiny()})
    collect(download, "canvas", out, notebooks_dir=course)
    assert not (tmp_path / "sub" / "02_function").exists()
    assert notebook(out, "lovelaceada-1001", "02_function").is_file()


def test_two_downloads_saved_at_one_path_keep_each_their_rows_of_the_report(tmp_path, course):
    "Canvas names every download submissions.zip: the second assignment's must not erase the first one's rows."
    out, path = tmp_path / "submissions", tmp_path / "dl" / "submissions.zip"
    path.parent.mkdir()
    make_zip(path, {"doejane_5_1_02_function.ipynb": tiny()})
    collect(path, "canvas", out, notebooks_dir=course)
    make_zip(path, {"doejane_5_2_03_gradcheck.ipynb": tiny("03_gradcheck")})
    collect(path, "canvas", out, notebooks_dir=course)
    collect(path, "canvas", out, notebooks_dir=course)  # the same download again: its rows replaced, not doubled
    assert sorted(report(out)) == ["doejane_5_1_02_function.ipynb", "doejane_5_2_03_gradcheck.ipynb"]


@pytest.mark.parametrize(
    "metadata, message",
    [
        ("submission_1:\n  :submitters: 5\n", "submitters are not a list"),
        ("submission_1: &a\n  :submitters: [*a]\n", "refers to itself"),
    ],
)
def test_gradescope_metadata_that_is_no_export_is_one_clear_error(tmp_path, course, metadata, message):
    download = make_zip(
        tmp_path / "gs.zip", {"submission_metadata.yml": metadata.encode(), "submission_1/a.ipynb": tiny()}
    )
    with pytest.raises(GradingError, match=message):
        collect(download, "gradescope", tmp_path / "submissions", notebooks_dir=course)


def test_a_moodle_folder_name_that_is_not_utf8_is_collected_with_its_roster_and_report(tmp_path, course):
    download = tmp_path / "moodle"
    folder = os.path.join(os.fsencode(download), b"Jos\xe9_5_assignsubmission_file")
    os.makedirs(folder)
    with open(os.path.join(folder, b"02_function.ipynb"), "wb") as file:
        file.write(tiny())
    out = tmp_path / "submissions"
    result = collect(download, "moodle", out, notebooks_dir=course)
    assert [r.status for r in result.rows] == ["placed"]
    assert [p.name for p in read_roster(out / "roster.csv")] == ["Jos?"]
    assert len(report(out)) == 1


def test_a_suffixed_folder_name_stays_within_what_autograde_takes(tmp_path, course):
    from grading.common.names import name_problem

    download = make_zip(
        tmp_path / "flat.zip",
        {"A" * 95 + "/02_function.ipynb": tiny(text="upper"), "a" * 95 + "/02_function.ipynb": tiny()},
    )
    out = tmp_path / "submissions"
    result = collect(download, "flat", out, notebooks_dir=course)
    assert len(placed_folders(out)) == 2 and [r.status for r in result.rows] == ["placed", "placed"]
    assert all(name_problem(r.student) is None for r in result.rows), [r.student for r in result.rows]


def test_a_submitter_listed_twice_in_one_group_gets_one_notebook(tmp_path, course):
    metadata = "submission_1:\n  :submitters:\n  - :sid: '1'\n  - :sid: '1'\n  :created_at: 2026-12-01 10:00:00 Z\n"
    download = make_zip(
        tmp_path / "gs.zip", {"submission_metadata.yml": metadata.encode(), "submission_1/02_function.ipynb": tiny()}
    )
    result = collect(download, "gradescope", tmp_path / "submissions", notebooks_dir=course)
    assert [(r.status, r.student) for r in result.rows] == [("placed", "1")], result.rows


def test_a_name_typed_on_a_mac_and_on_windows_is_one_student(tmp_path, course):
    "José in NFC (a zip made on Windows) and in NFD (a folder unpacked on a Mac): one folder, jose."
    import unicodedata

    out = tmp_path / "submissions"
    nfc = unicodedata.normalize("NFC", "José")
    first = make_zip(tmp_path / "1.zip", {f"{nfc}_5_assignsubmission_file/02_function.ipynb": tiny()})
    collect(first, "moodle", out, notebooks_dir=course)
    download = tmp_path / "mac"
    folder = download / (unicodedata.normalize("NFD", "José") + "_7_assignsubmission_file")
    folder.mkdir(parents=True)
    (folder / "03_gradcheck.ipynb").write_bytes(tiny("03_gradcheck"))
    result = collect(download, "moodle", out, notebooks_dir=course)
    assert [r.student for r in result.rows] == ["jose"], result.rows


def test_a_student_named_like_a_windows_device_gets_a_folder_windows_can_hold(tmp_path, course):
    "Moodle's 'Con' and a flat download's 'aux': folders student-con and student-aux, which grading then takes."
    from grading.common.names import name_problem

    moodle = make_zip(tmp_path / "m.zip", {"Con_5_assignsubmission_file/02_function.ipynb": tiny()})
    out = tmp_path / "submissions"
    result = collect(moodle, "moodle", out, notebooks_dir=course)
    flat = make_zip(tmp_path / "f.zip", {"aux/02_function.ipynb": tiny()})
    result_flat = collect(flat, "flat", out, notebooks_dir=course)
    students = [r.student for r in result.rows + result_flat.rows]
    assert students == ["student-con", "student-aux"], result.rows + result_flat.rows
    assert all(name_problem(s) is None for s in students) and set(placed_folders(out)) == set(students)


# A second attacker's round: the owner of a roster line keeps its folder; every file is a row


def gradescope_export(path, submitters):
    "A Gradescope export of {folder: [(name, sid, email)]}, each submission one 02_function notebook."
    lines = []
    for folder, people in submitters.items():
        lines += [f"{folder}:", "  :submitters:"]
        for name, sid, email in people:
            lines += [f"  - :name: {name}", f"    :sid: '{sid}'", f"    :email: {email}"]
        lines.append("  :created_at: 2026-12-01 10:00:00 Z")
    files = {"submission_metadata.yml": "\n".join(lines).encode()}
    files.update({f"{folder}/02_function.ipynb": tiny(text=folder) for folder in submitters})
    return make_zip(path, files)


def test_the_student_the_roster_gives_a_folder_keeps_it_when_another_slugs_to_it(tmp_path, course):
    out = tmp_path / "submissions"
    ada = ("Ada", "1815", "ada@uni.edu")
    collect(gradescope_export(tmp_path / "1.zip", {"submission_1": [ada]}), "gradescope", out, notebooks_dir=course)
    second = gradescope_export(
        tmp_path / "2.zip", {"submission_1": [ada], "submission_2": [("Mallory", "1815.", "mallory@uni.edu")]}
    )
    result = collect(second, "gradescope", out, notebooks_dir=course, force=True)
    assert "submission_1" in notebook(out, "1815", "02_function").read_text(), "Ada keeps her folder"
    (mallory,) = [r.student for r in result.rows if r.file.startswith("submission_2")]
    assert mallory.startswith("1815-"), mallory
    assert [p.student for p in read_roster(out / "roster.csv")] == ["1815", mallory]


@pytest.mark.parametrize("other", ["Ada Lovelace!", "ADA  LOVELACE"])
def test_a_moodle_name_like_anothers_never_takes_her_folder(tmp_path, course, other):
    "'Ada Lovelace!' slugs like her name; 'ADA  LOVELACE' only differs in case and spaces: neither is her."
    out = tmp_path / "submissions"
    first = make_zip(tmp_path / "1.zip", {"Ada Lovelace_5_assignsubmission_file/02_function.ipynb": tiny(text="V1")})
    collect(first, "moodle", out, notebooks_dir=course)
    second = make_zip(
        tmp_path / "2.zip",
        {
            "Ada Lovelace_7_assignsubmission_file/03_gradcheck.ipynb": tiny("03_gradcheck", "V2"),
            f"{other}_8_assignsubmission_file/03_gradcheck.ipynb": tiny("03_gradcheck", "ATTACKER"),
        },
    )
    result = collect(second, "moodle", out, notebooks_dir=course)
    assert "V2" in notebook(out, "ada-lovelace", "03_gradcheck").read_text()
    (theirs,) = [r.student for r in result.rows if r.file.startswith(other)]
    assert theirs.startswith("ada-lovelace-"), theirs
    alone = make_zip(tmp_path / "3.zip", {f"{other}_9_assignsubmission_file/03_gradcheck.ipynb": tiny("03_gradcheck")})
    (row,) = collect(alone, "moodle", out, notebooks_dir=course, force=True).rows
    assert row.student != "ada-lovelace", "without her in the download, the folder is still hers"


def test_every_file_of_the_download_is_a_row_of_the_report(tmp_path, course):
    "A Moodle name starting with '.' is a student; checkpoints and macOS's extras are 'skipped' rows, not errors."
    download = make_zip(
        tmp_path / "m.zip",
        {
            ".Ada_5_assignsubmission_file/02_function.ipynb": tiny(),
            "Bob_6_assignsubmission_file/.ipynb_checkpoints/02_function-checkpoint.ipynb": tiny(),
            "Bob_6_assignsubmission_file/__MACOSX/._03_gradcheck.ipynb": b"",
        },
    )
    out = tmp_path / "submissions"
    result = collect(download, "moodle", out, notebooks_dir=course)
    rows = {r.file: r.status for r in result.rows}
    assert rows[".Ada_5_assignsubmission_file/02_function.ipynb"] == "placed"
    assert list(rows.values()).count("skipped") == 2 and not result.not_placed, rows
    assert len(report(out)) == 3


def test_a_folder_name_with_a_space_at_its_end_is_no_students_folder(tmp_path, course):
    "'alice ' became a roster line that read back as 'alice', a duplicate, and every later collect stopped."
    out = tmp_path / "submissions"
    for i, (folder, nb) in enumerate([("alice", "02_function"), ("alice ", "03_gradcheck"), ("bob", "03_gradcheck")]):
        collect(make_zip(tmp_path / f"{i}.zip", {f"{folder}/{nb}.ipynb": tiny(nb)}), "flat", out, notebooks_dir=course)
    assert sorted(p.student for p in read_roster(out / "roster.csv")) == ["alice", "bob"]


def test_a_download_whose_path_is_not_printable_keeps_one_set_of_rows(tmp_path, course):
    download = tmp_path / "dl\u200e"
    (download / "alice").mkdir(parents=True)
    (download / "alice" / "02_function.ipynb").write_bytes(tiny())
    out = tmp_path / "submissions"
    for _ in range(3):
        collect(download, "flat", out, notebooks_dir=course)
    with open(out / "collect-report.csv", encoding="utf-8") as file:
        assert len(list(csv.DictReader(file))) == 1


# A third round: names ending in a classmate's user id; ids that change; what the roster then says


@pytest.mark.parametrize("attacker", ["lovelaceada_1001_2002_600_work.ipynb", "x_1001_2002_600_x.ipynb"])
def test_a_canvas_name_ending_in_a_classmates_user_id_is_not_read_as_hers(tmp_path, course, attacker):
    "Sortable name lovelaceada_1001 (or x_1001), user 2002, file 600: first read as user 1001's file 2002."
    download = make_zip(
        tmp_path / "canvas.zip",
        {"lovelaceada_1001_501_02_function.ipynb": tiny(text="VICTIM"), attacker: tiny(text="ATTACKER")},
    )
    out = tmp_path / "submissions"
    result = collect(download, "canvas", out, notebooks_dir=course)
    assert "VICTIM" in notebook(out, "lovelaceada-1001", "02_function").read_text()
    assert report(out)[attacker]["status"] == "not placed" and "user 2002's file 600" in report(out)[attacker]["note"]
    assert [p.student for p in read_roster(out / "roster.csv")] == ["lovelaceada-1001"]
    assert len(result.placed) == 1


def test_a_student_whose_id_changed_is_not_written_into_a_roster_export_grades_refuses(tmp_path, course):
    """Ada's sid was a1815, then A1815 (one id: case is ignored), then 20231815 with the same email: she is not
    added as a second line with her email (export-grades would refuse the class); a warning says so."""
    out = tmp_path / "submissions"
    for i, sid in enumerate(["a1815", "A1815", "20231815"]):
        export = gradescope_export(tmp_path / f"{i}.zip", {f"submission_{i}": [("Ada", sid, "ada@uni.edu")]})
        result = collect(export, "gradescope", out, notebooks_dir=course, force=True)
        if i == 1:
            assert [r.student for r in result.rows] == ["a1815"], result.rows
    assert [p.student for p in read_roster(out / "roster.csv")] == ["a1815"]
    assert any("not added to roster.csv" in line and "20231815" in line for line in result.warnings), result.warnings


def test_what_a_download_gives_that_the_roster_refuses_or_that_is_no_download_is_said(tmp_path, course):
    metadata = "submission_1:\n  :submitters:\n  - :sid: '7'\n    :email: not-an-email\n"
    export = make_zip(
        tmp_path / "gs.zip", {"submission_metadata.yml": metadata.encode(), "submission_1/02_function.ipynb": tiny()}
    )
    out = tmp_path / "submissions"
    collect(export, "gradescope", out, notebooks_dir=course)
    assert [(p.student, p.email) for p in read_roster(out / "roster.csv")] == [("7", "")]
    collect(export, "gradescope", out, notebooks_dir=course)  # the roster it wrote reads back
    bad_date = make_zip(
        tmp_path / "d.zip", {"submission_metadata.yml": b"submission_1:\n  :created_at: 2026-02-30 10:00:00 Z\n"}
    )
    with pytest.raises(GradingError, match="not readable YAML"):
        collect(bad_date, "gradescope", tmp_path / "other", notebooks_dir=course)
    huge = make_zip(tmp_path / "c.zip", {f"ada_{'9' * 5000}_1_02_function.ipynb": tiny()})
    (row,) = collect(huge, "canvas", tmp_path / "third", notebooks_dir=course).rows  # no ValueError from int()
    assert all(len(p.lms_id) <= 20 for p in read_roster(tmp_path / "third" / "roster.csv"))


def test_a_folder_a_student_made_to_look_like_moodles_is_not_anothers(tmp_path, course):
    download = make_zip(
        tmp_path / "m.zip",
        {"Mallory_8_assignsubmission_file_x/Ada Lovelace_5_assignsubmission_file/02_function.ipynb": tiny()},
    )
    (row,) = collect(download, "moodle", tmp_path / "submissions", notebooks_dir=course).rows
    assert row.status == "not placed" and "is not a folder Moodle names" in row.note, row


def test_a_truncated_notebook_is_named_at_collect_and_placed_for_its_row(tmp_path, course, capsys):
    """A notebook cut short in the download was placed without a word, and only autograde said it was unreadable:
    collect names it (a warning and the report's note) and places it, so that the student's row says so."""
    download = make_zip(tmp_path / "canvas.zip", {"doejane_5_1_02_function.ipynb": tiny()[:40]})
    out = tmp_path / "submissions"
    code = main(["collect", str(download), "--lms", "canvas", "--out", str(out), "--notebooks", str(course)])
    err = capsys.readouterr().err
    assert code == 0
    assert (
        "1 notebook(s) placed are not readable notebooks (cut short, or not saved by Jupyter): doejane-5/02_function"
        in err
    )
    row = report(out)["doejane_5_1_02_function.ipynb"]
    assert row["status"] == "placed"
    assert row["note"].startswith("not a readable notebook: not valid JSON (")
    assert notebook(out, "doejane-5", "02_function").read_bytes() == tiny()[:40]


def test_canvas_late_mark_is_read_in_either_case():
    "An instructor wrote _late_ by hand: it became part of the student's name (zedzoe-late-1004)."
    from grading.intake.downloads import CANVAS, CANVAS_ANONYMOUS

    for name in ("zedzoe_late_1004_5_04_elementwise.ipynb", "zedzoe_LATE_1004_5_04_elementwise.ipynb"):
        match = CANVAS.fullmatch(name)
        assert (match["name"], match["user"], bool(match["late"])) == ("zedzoe", "1004", True)
    for name in ("late_anon_x7_5_04_elementwise.ipynb", "LATE_anon_x7_5_04_elementwise.ipynb"):
        match = CANVAS_ANONYMOUS.fullmatch(name)
        assert (match["anon"], bool(match["late"])) == ("x7", True)


def worksheet(path, *rows):
    "A Moodle grading worksheet (Grading action > Download grading worksheet) of (participant id, full name, email)."
    header = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade", "Feedback comments"]
    with open(path, "w", newline="", encoding="utf-8-sig") as file:
        csv.writer(file).writerows(
            [header] + [[f"Participant {n}", name, email, "", "", "27", ""] for n, name, email in rows]
        )
    return path


def test_moodle_students_of_one_name_keep_their_folders_across_assignments_with_the_worksheets(tmp_path, course):
    "Two Anna Bs: their participant ids change with the assignment, their emails (from each worksheet) do not."
    out = tmp_path / "submissions"
    first = make_zip(
        tmp_path / "1.zip",
        {
            "Anna B_5_assignsubmission_file_/02_function.ipynb": tiny(text="ONE"),
            "Anna B_9_assignsubmission_file_/02_function.ipynb": tiny(text="TWO"),
        },
    )
    sheet = worksheet(tmp_path / "1.csv", ("5", "Anna B", "anna.one@uni.edu"), ("9", "Anna B", "anna.two@uni.edu"))
    result = collect(first, "moodle", out, notebooks_dir=course, worksheet=sheet)
    assert not any("by hand" in line or "no email addresses" in line for line in result.warnings), result.warnings
    second = make_zip(
        tmp_path / "2.zip",
        {
            "Anna B_12_assignsubmission_file_/03_gradcheck.ipynb": tiny("03_gradcheck", "TWO"),
            "Anna B_31_assignsubmission_file_/03_gradcheck.ipynb": tiny("03_gradcheck", "ONE"),
        },
    )
    sheet = worksheet(tmp_path / "2.csv", ("12", "Anna B", "anna.two@uni.edu"), ("31", "Anna B", "anna.one@uni.edu"))
    collect(second, "moodle", out, notebooks_dir=course, worksheet=sheet)
    functions, gradchecks = placed_folders(out), placed_folders(out, "03_gradcheck")
    assert sorted(functions) == sorted(gradchecks) and len(functions) == 2, (sorted(functions), sorted(gradchecks))
    for folder, text in functions.items():
        assert ("# ONE" in text) == ("# ONE" in gradchecks[folder]), f"{folder} holds two students' notebooks"
    emails = {p.student: p.email for p in read_roster(out / "roster.csv")}
    assert sorted(emails.values()) == ["anna.one@uni.edu", "anna.two@uni.edu"] and set(emails) == set(functions)


def test_another_assignments_worksheet_gives_no_email_and_writes_nothing(tmp_path, course):
    "Participant ids differ between assignments: another's worksheet would hand one student's email to another."
    download = make_zip(
        tmp_path / "m.zip",
        {
            "Ada Lovelace_5_assignsubmission_file_/02_function.ipynb": tiny(),
            "Bob Stone_6_assignsubmission_file_/02_function.ipynb": tiny(),
        },
    )
    other = worksheet(tmp_path / "w.csv", ("5", "Bob Stone", "bob@uni.edu"), ("6", "Ada Lovelace", "ada@uni.edu"))
    out = tmp_path / "submissions"
    with pytest.raises(GradingError, match="is not the worksheet of this download's assignment: participant 5 is "):
        collect(download, "moodle", out, notebooks_dir=course, worksheet=other)
    assert not out.exists()
    short = worksheet(tmp_path / "short.csv", ("5", "Ada Lovelace", "ada@uni.edu"))
    with pytest.raises(GradingError, match="participant 6 is 'Bob Stone' in the download and not in the worksheet"):
        collect(download, "moodle", out, notebooks_dir=course, worksheet=short)
    (tmp_path / "no-email.csv").write_text("Identifier,Full name,Grade\nParticipant 5,Ada Lovelace,\n")
    with pytest.raises(GradingError, match="no column Email address"):
        collect(download, "moodle", out, notebooks_dir=course, worksheet=tmp_path / "no-email.csv")
    with pytest.raises(GradingError, match="--worksheet is Moodle's grading worksheet"):
        collect(download, "canvas", out, notebooks_dir=course, worksheet=other)
    assert not out.exists()


def test_a_worksheet_name_is_read_as_moodle_writes_it_in_the_download_and_fills_an_earlier_roster_line(
    tmp_path, course
):
    "Moodle's folder names drop ' and turn _ into a space, and a group assignment puts '<group>-' first."
    out = tmp_path / "submissions"
    collect(
        make_zip(tmp_path / "0.zip", {"Sean OBrien_3_assignsubmission_file_/02_function.ipynb": tiny()}),
        "moodle",
        out,
        notebooks_dir=course,
    )
    assert [p.email for p in read_roster(out / "roster.csv")] == [""]
    download = make_zip(
        tmp_path / "m.zip",
        {
            "Sean OBrien_5_assignsubmission_file_/03_gradcheck.ipynb": tiny("03_gradcheck"),
            "Team A-Mia Lee Ng_6_assignsubmission_file_/03_gradcheck.ipynb": tiny("03_gradcheck"),
        },
    )
    sheet = worksheet(tmp_path / "w.csv", ("5", "Sean O'Brien", "sean@uni.edu"), ("6", "Mia Lee_Ng", "mia@uni.edu"))
    result = main(
        [
            "collect",
            str(download),
            "--lms",
            "moodle",
            "--out",
            str(out),
            "--notebooks",
            str(course),
            "--worksheet",
            str(sheet),
        ]
    )
    assert result == 0
    emails = {p.name: p.email for p in read_roster(out / "roster.csv")}
    assert emails == {"Sean OBrien": "sean@uni.edu", "Team A-Mia Lee Ng": "mia@uni.edu"}, emails
