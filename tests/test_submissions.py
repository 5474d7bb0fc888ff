"""Reading a folder of submissions (grading.grade.submissions): whatever a folder holds, every other student is found, and
nothing is read through a link out of a student's own folder."""

import json
import os
import string

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grading.common.errors import GradingError
from grading.common.notebooks import nbgrader_meta, read_notebook
from grading.grade import submissions
from grading.grade.submissions import find_submissions

KNOWN = {"01_tiny": {"cell-a", "cell-b"}}


def notebook_text(nbgrader=None):
    "A small notebook of the assignment 01_tiny (its cells carry the known grade ids)."
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": nbgrader or {"grade_id": "cell-a", "solution": True}}),
        nbformat.v4.new_code_cell("assert x", metadata={"nbgrader": {"grade_id": "cell-b", "grade": True}}),
    ]
    return nbformat.writes(nb)


def submit(root, student, text=None, assignment="01_tiny"):
    path = root / student / assignment / f"{assignment}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(notebook_text() if text is None else text)
    return path


def notes(problems):
    return {(p.student, p.assignment): p.note for p in problems}


def test_a_symlinked_student_folder_is_refused_and_the_others_are_found(tmp_path):
    submit(tmp_path, "alice")
    os.symlink(tmp_path / "alice", tmp_path / "mallory")
    found, problems = find_submissions(tmp_path, KNOWN)
    assert [s for s, _, _ in found] == ["alice"]
    assert "symbolic link" in notes(problems)[("mallory", "")]


def test_a_symlinked_assignment_folder_or_notebook_is_refused(tmp_path):
    original = submit(tmp_path, "alice")
    (tmp_path / "mallory").mkdir()
    os.symlink(original.parent, tmp_path / "mallory" / "01_tiny")
    (tmp_path / "trent" / "01_tiny").mkdir(parents=True)
    os.symlink(original, tmp_path / "trent" / "01_tiny" / "01_tiny.ipynb")
    found, problems = find_submissions(tmp_path, KNOWN)
    assert [s for s, _, _ in found] == ["alice"]
    assert "symbolic link" in notes(problems)[("mallory", "01_tiny")]
    assert "symbolic link" in notes(problems)[("trent", "01_tiny")]


def test_a_hard_linked_notebook_is_refused_naming_the_link(tmp_path):
    instructor = tmp_path / "instructor.ipynb"
    instructor.write_text(notebook_text())
    (tmp_path / "subs" / "mallory" / "01_tiny").mkdir(parents=True)
    os.link(instructor, tmp_path / "subs" / "mallory" / "01_tiny" / "01_tiny.ipynb")
    submit(tmp_path / "subs", "alice")
    found, problems = find_submissions(tmp_path / "subs", KNOWN)
    assert [s for s, _, _ in found] == ["alice"]
    assert "hard link" in notes(problems)[("mallory", "01_tiny")]


def test_a_300_character_folder_name_gets_a_note_and_no_file_is_built_from_it(tmp_path):
    long_name = "s" * 240  # the longest name the file system allows is 255 bytes
    submit(tmp_path, long_name)
    submit(tmp_path, "alice")
    found, problems = find_submissions(tmp_path, KNOWN)
    assert [s for s, _, _ in found] == ["alice"]
    (problem,) = problems
    assert "240 bytes long (at most 100)" in problem.note and len(problem.student) <= 60


def test_a_cell_whose_nbgrader_metadata_is_a_string_is_read_as_a_cell_without_metadata(tmp_path):
    submit(tmp_path, "alice", notebook_text(nbgrader="not a dict"))
    found, problems = find_submissions(tmp_path, KNOWN)
    assert [s for s, _, _ in found] == ["alice"] and problems == []  # cell-b still says which notebook it is
    assert "nbgrader metadata of cell(s) 1 is broken" in submissions.broken_cells_note(read_notebook(found[0][2]))
    assert nbgrader_meta({"metadata": {"nbgrader": ["grade_id"]}}) == {}
    assert nbgrader_meta({"metadata": {"nbgrader": {"grade_id": ["x"]}}}) == {}


def test_an_empty_folder_a_huge_file_and_a_broken_cell_each_get_their_own_note(tmp_path, monkeypatch):
    monkeypatch.setattr(submissions, "MAX_NOTEBOOK_MB", 1)
    (tmp_path / "empty").mkdir()
    submit(tmp_path, "huge", notebook_text() + " " * 2**21)
    broken = json.loads(notebook_text())
    broken["cells"][0]["source"] = 42
    submit(tmp_path, "broken", json.dumps(broken))
    submit(tmp_path, "alice")
    found, problems = find_submissions(tmp_path, KNOWN)
    assert [s for s, _, _ in found] == ["alice"]
    by_student = notes(problems)
    assert "is empty" in by_student[("empty", "")]
    assert "more than the 1 MB" in by_student[("huge", "01_tiny")]
    assert "cell 1 is not a cell" in by_student[("broken", "01_tiny")]


# -- Fuzzing: whatever the folder holds, the reader returns, and every student folder is accounted for -------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
cells = st.fixed_dictionaries(
    {"cell_type": st.sampled_from(["code", "markdown", "raw", 3, None]), "source": st.text(max_size=30) | json_values},
    optional={"metadata": json_values | st.fixed_dictionaries({"nbgrader": json_values}), "outputs": json_values},
)
notebooks = st.one_of(
    st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
    json_values.map(json.dumps),
    st.fixed_dictionaries(
        {"cells": st.lists(cells, max_size=4), "nbformat": st.sampled_from([4, 3, "4"])},
        optional={"metadata": json_values, "nbformat_minor": json_values},
    ).map(json.dumps),
    st.just(notebook_text()),
)
names = st.text(
    alphabet=st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)), min_size=1, max_size=120
).filter(lambda n: n not in (".", "..") and len(n.encode()) < 250)


def test_a_notebook_handed_in_as_another_assignment_is_named_as_that_one(tmp_path):
    "An instructor's finding: 'none of its cells are there' did not say it was another assignment's notebook."
    known = {**KNOWN, "02_other": {"cell-z"}}
    submit(tmp_path, "ada", assignment="02_other")  # 01_tiny's cells, in 02_other's folder
    found, problems = find_submissions(tmp_path, known)
    assert not found
    assert notes(problems)[("ada", "02_other")] == (
        "this is not the 02_other notebook: none of its cells are there; it has the cells of 01_tiny (handed in as "
        "the wrong assignment?)"
    )


def test_an_exercise_cell_the_student_deleted_is_named():
    "An instructor's finding: a deleted exercise cell graded as the release's stub showed 'NotImplementedError: ' only."
    from grading.grade.submissions import missing_exercises_note

    released = nbformat.reads(notebook_text(), as_version=4)
    kept = nbformat.reads(notebook_text(), as_version=4)
    assert missing_exercises_note(kept, released) == ""
    kept.cells = kept.cells[1:]  # the exercise cell deleted, the test kept
    assert missing_exercises_note(kept, released).startswith(
        "exercise cell(s) cell-a missing from the notebook (deleted?)"
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.lists(st.tuples(names, notebooks), min_size=1, max_size=4, unique_by=lambda e: e[0]))
def test_any_folder_of_submissions_is_read_without_an_exception(tmp_path_factory, entries):
    root = tmp_path_factory.mktemp("subs")
    for name, text in entries:
        submit(root, name, text)
    submit(root, "zz-honest" + string.digits)
    found, problems = find_submissions(root, KNOWN)
    students = {s for s, _, _ in found} | {p.student for p in problems}
    assert ("zz-honest" + string.digits, "01_tiny") in {(s, a) for s, a, _ in found}
    for name, _ in entries:
        if not name.startswith("."):
            assert submissions.shown(name) in students, f"{name!r} has no row"


@pytest.mark.parametrize("name", ["<img src=x onerror=alert(2)>", 'x";alert(1);"', "a&b", "=1+1", "＝1+1", "o'hara"])
def test_a_student_folder_name_that_html_or_a_script_string_would_read_is_refused(name):
    """The folder name becomes the student's id in nbgrader's marking pages (formgrader), whose templates do not
    escape it: an attacker helper ran script in the marker's Jupyter from a folder named <img src=x onerror=...>."""
    problem = submissions.name_problem(name)
    assert problem and "rename the folder" in problem


@pytest.mark.parametrize(
    "name", ["alice", "ada-example-edu", "Ada Lovelace", "a.b+c@x.edu", "émile", "e\u0301mile", "Łukasz"]
)
def test_names_of_letters_digits_accents_and_a_little_punctuation_are_taken(name):
    assert submissions.name_problem(name) is None


@pytest.mark.parametrize("name", ["alice ", " alice", "alice.", ".alice", "-alice"])
def test_a_name_that_windows_or_a_roster_would_change_is_refused(name):
    "Windows drops a trailing space or dot ('alice ' is 'alice' there), and a roster cell read back is stripped."
    assert "cannot name a file everywhere" in submissions.name_problem(name)


@pytest.mark.parametrize("name", ["con", "CON", "Aux", "nul.ipynb", "com1", "LPT9", "com\u00b9", "conin$"])
def test_a_name_windows_keeps_for_a_device_is_refused(name):
    "A class's feedback zip with a folder `con` cannot be unpacked on Windows: the instructor is told to rename it."
    problem = submissions.name_problem(name)
    assert problem and "Windows keeps for a device" in problem and "rename the folder" in problem


@pytest.mark.parametrize("name", ["cont", "console", "com10", "auxiliary", "nullah", "lpt"])
def test_names_that_only_begin_like_a_device_are_taken(name):
    assert submissions.name_problem(name) is None


def test_one_students_folder_passed_as_the_class_is_refused_naming_its_parent(tmp_path):
    """A student's own folder given as SUBMISSIONS made a grading folder with "students" named after assignments
    (an instructor's finding)."""
    submit(tmp_path / "class", "alice")
    with pytest.raises(GradingError) as error:
        find_submissions(tmp_path / "class" / "alice", KNOWN)
    assert "its folders (01_tiny) are assignments, so it is one student's folder: pass its parent" in str(error.value)
    assert str(tmp_path / "class") in str(error.value)


def test_a_mistyped_submissions_folder_is_named_with_the_nearest_one(tmp_path):
    submit(tmp_path / "submissions", "alice")
    with pytest.raises(GradingError) as error:
        find_submissions(tmp_path / "submisions", KNOWN)
    assert f"no such folder (did you mean {str(tmp_path / 'submissions')!r}?)" in str(error.value)


def test_a_folder_of_notebooks_with_no_student_folders_says_where_they_belong(tmp_path):
    (tmp_path / "01_tiny.ipynb").write_text(notebook_text())
    with pytest.raises(GradingError) as error:
        find_submissions(tmp_path, KNOWN)
    assert "contains no student folders" in str(error.value)
    assert "It holds notebooks (01_tiny.ipynb): put each in <student>/<assignment>/." in str(error.value)


def test_a_lone_surrogate_in_a_notebook_is_read_as_u_fffd_and_the_notebook_can_be_written_again(tmp_path):
    "JSON may hold one ('\\ud800'), UTF-8 cannot: the job that wrote the notebook back failed (red team round 8)."
    from grading.common.notebooks import parse_notebook, write_notebook

    text = notebook_text().replace('"x = 1"', '"x = 1  # \\ud800 and \\ud83d\\ude00"')
    text = text.replace('"metadata": {', '"metadata": {"note \\udfff": ["\\ud800"], ', 1)
    nb = parse_notebook(text.encode(), "sub.ipynb")
    assert nb.cells[0].source == "x = 1  # \ufffd and \U0001f600", "a lone one replaced, a pair kept"
    write_notebook(nb, tmp_path / "again.ipynb")
    assert "\ufffd" in read_notebook(tmp_path / "again.ipynb").cells[0].source


def test_a_notebook_of_more_json_objects_than_any_notebook_has_is_refused_before_it_is_parsed():
    "16 million empty objects (48 MB) took the grader 8 GB to parse (red team round 8); braces in text do not count."
    from grading.common.defaults import MAX_NOTEBOOK_CONTAINERS
    from grading.common.notebooks import parse_notebook

    nb = json.loads(notebook_text())
    nb["metadata"]["x"] = [{}] * (MAX_NOTEBOOK_CONTAINERS + 1)
    with pytest.raises(GradingError, match="more than 100,000 JSON objects and lists"):
        parse_notebook(json.dumps(nb).encode(), "sub.ipynb")
    nb["metadata"]["x"] = "{[" * MAX_NOTEBOOK_CONTAINERS  # code and output full of brackets: one string
    assert parse_notebook(json.dumps(nb).encode(), "sub.ipynb").metadata["x"].startswith("{[")
