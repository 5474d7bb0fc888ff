"""The courses the grader makes with nbgrader (generate_assignment of every notebook: a third of a second each) are kept
between runs and copied, while the notebooks and nbgrader are unchanged (grading/authoring/course.py: made_course).
A kept course is used only if it is whole and in a folder nobody else can write to; otherwise the course is made as
before, and nbgrader's refusals are the same with or without the cache."""

import json
import os
import shutil
import sqlite3

import pytest

from conftest import REPO
from grading.authoring import course
from grading.authoring.course import COMPLETE, Course, gradebook, made_course
from grading.common.errors import GradingError
from grading.reports import marking

NOTEBOOKS = {stem: REPO / "notebooks" / f"{stem}.ipynb" for stem in ("01_tensor", "02b_diagnosis")}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(course.CACHE_VARIABLE, str(folder))
    return folder


def count_generations(monkeypatch):
    "A list that gets one entry per assignment nbgrader generates from now on."
    calls, generate = [], Course.generate

    def counted(self, assignment):
        calls.append(assignment)
        return generate(self, assignment)

    monkeypatch.setattr(Course, "generate", counted)
    return calls


def assignments(root):
    with gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        return sorted(a.name for a in gb.assignments)


def test_a_second_course_of_the_same_notebooks_is_copied_not_generated(cache, tmp_path, monkeypatch):
    generated = count_generations(monkeypatch)
    first = made_course(NOTEBOOKS, tmp_path / "first")
    assert sorted(generated) == sorted(NOTEBOOKS)
    second = made_course(NOTEBOOKS, tmp_path / "second")
    assert len(generated) == len(NOTEBOOKS)  # nothing generated the second time
    for stem in NOTEBOOKS:
        assert second[stem].read_bytes() == first[stem].read_bytes()
        assert (tmp_path / "second" / "source" / stem / f"{stem}.ipynb").read_bytes() == NOTEBOOKS[stem].read_bytes()
    assert assignments(tmp_path / "second") == sorted(NOTEBOOKS)
    assert not (tmp_path / "second" / COMPLETE).exists()
    assert [p.name for p in cache.iterdir()] == [course.course_key(NOTEBOOKS)]
    assert cache.stat().st_mode & 0o777 == 0o700


def test_a_changed_notebook_is_generated_again(cache, tmp_path, monkeypatch):
    generated = count_generations(monkeypatch)
    made_course(NOTEBOOKS, tmp_path / "first")
    changed = tmp_path / "01_tensor.ipynb"
    nb = json.loads(NOTEBOOKS["01_tensor"].read_text())
    nb["cells"][0]["source"] = "# A changed title\n"
    changed.write_text(json.dumps(nb))
    release = made_course({**NOTEBOOKS, "01_tensor": changed}, tmp_path / "second")
    assert len(generated) == 2 * len(NOTEBOOKS)
    assert "# A changed title" in release["01_tensor"].read_text()
    assert len(list(cache.iterdir())) == 2


def test_a_course_left_half_made_is_not_used(cache, tmp_path, monkeypatch):
    made_course(NOTEBOOKS, tmp_path / "first")
    entry = cache / course.course_key(NOTEBOOKS)
    (entry / COMPLETE).unlink()  # as a run killed between copying and marking it complete would leave it
    (entry / "release" / "01_tensor" / "01_tensor.ipynb").write_text("cut short")
    generated = count_generations(monkeypatch)
    release = made_course(NOTEBOOKS, tmp_path / "second")
    assert sorted(generated) == sorted(NOTEBOOKS)
    assert json.loads(release["01_tensor"].read_text())["cells"]


@pytest.mark.parametrize("how", ["group-writable", "another user's"])
def test_a_cache_folder_others_could_write_to_is_not_used(cache, tmp_path, monkeypatch, how):
    cache.mkdir()
    if how == "group-writable":
        cache.chmod(0o770)
    else:
        monkeypatch.setattr(os, "getuid", lambda: cache.stat().st_uid + 1)
    generated = count_generations(monkeypatch)
    made_course(NOTEBOOKS, tmp_path / "first")
    made_course(NOTEBOOKS, tmp_path / "second")
    assert len(generated) == 2 * len(NOTEBOOKS)
    assert list(cache.iterdir()) == []
    assert assignments(tmp_path / "second") == sorted(NOTEBOOKS)


@pytest.mark.parametrize("parent", ["group-writable", "another user's"])
def test_a_cache_folder_in_a_folder_others_could_write_to_is_not_used(tmp_path, monkeypatch, parent):
    """Another user who can rename entries of a folder above the cache could swap in a course of their own while this
    run makes one (a helper of issue 25's review did, with renameat2 in a loop)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    if parent == "group-writable":
        shared.chmod(0o770)
    elif os.geteuid() == 0:
        os.chown(shared, 65534, 65534)  # nobody's
    else:
        pytest.skip("giving a folder to another user needs root (the CI machine runs the tests as root)")
    cache = shared / "cache"
    monkeypatch.setenv(course.CACHE_VARIABLE, str(cache))
    generated = count_generations(monkeypatch)
    made_course(NOTEBOOKS, tmp_path / "first")
    made_course(NOTEBOOKS, tmp_path / "second")
    assert len(generated) == 2 * len(NOTEBOOKS)
    assert [p.name for p in cache.iterdir()] == []
    assert assignments(tmp_path / "second") == sorted(NOTEBOOKS)


def test_a_cache_folder_in_a_sticky_folder_or_through_a_link_is_used(tmp_path, monkeypatch):
    "In a sticky folder (as /tmp is) nobody else can rename this user's entries; a link is resolved once, up front."
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    (tmp_path / "link").symlink_to(sticky)
    monkeypatch.setenv(course.CACHE_VARIABLE, str(tmp_path / "link" / "cache"))
    generated = count_generations(monkeypatch)
    made_course(NOTEBOOKS, tmp_path / "first")
    made_course(NOTEBOOKS, tmp_path / "second")
    assert len(generated) == len(NOTEBOOKS)
    assert [p.name for p in (sticky / "cache").iterdir()] == [course.course_key(NOTEBOOKS)]


def test_an_empty_setting_turns_the_cache_off(tmp_path, monkeypatch):
    monkeypatch.setenv(course.CACHE_VARIABLE, "")
    generated = count_generations(monkeypatch)
    made_course(NOTEBOOKS, tmp_path / "first")
    made_course(NOTEBOOKS, tmp_path / "second")
    assert len(generated) == 2 * len(NOTEBOOKS)


def test_nbgraders_refusal_is_raised_and_nothing_is_kept(cache, tmp_path):
    broken = tmp_path / "broken.ipynb"
    nb = json.loads(NOTEBOOKS["01_tensor"].read_text())
    graded = [c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id")]
    graded[1]["metadata"]["nbgrader"]["grade_id"] = graded[0]["metadata"]["nbgrader"]["grade_id"]  # a duplicate id
    broken.write_text(json.dumps(nb))
    with pytest.raises(GradingError, match="nbgrader could not make the student version of broken"):
        made_course({"broken": broken}, tmp_path / "course")
    assert [p.name for p in cache.iterdir()] == []


def test_only_the_most_recently_used_courses_are_kept(cache, tmp_path, monkeypatch):
    monkeypatch.setattr(course, "KEPT_COURSES", 2)
    one = {"01_tensor": NOTEBOOKS["01_tensor"]}
    made_course(one, tmp_path / "a")
    made_course({"02b_diagnosis": NOTEBOOKS["02b_diagnosis"]}, tmp_path / "b")
    os.utime(cache / course.course_key(one) / COMPLETE, (1, 1))  # long unused
    made_course(NOTEBOOKS, tmp_path / "c")
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        course.course_key(n) for n in ({"02b_diagnosis": NOTEBOOKS["02b_diagnosis"]}, NOTEBOOKS)
    )


def test_a_new_marking_course_starts_from_the_master_course_without_generating(cache, tmp_path, monkeypatch):
    made_course(NOTEBOOKS, tmp_path / "master")
    generated = count_generations(monkeypatch)
    with_answers = {"01_tensor": NOTEBOOKS["01_tensor"]}  # 02b_diagnosis has no written answer
    root = tmp_path / "marking"
    root.mkdir()
    marking.seed(root, tmp_path / "master", with_answers, root / ".assignments.json")
    assert marking.prepare_assignments(root, with_answers, root / ".assignments.json", print) == ["01_tensor"]
    assert generated == []
    assert assignments(root) == ["01_tensor"]
    # the same cells as a marking course generated from scratch would have
    scratch = tmp_path / "scratch"
    Course(scratch).add_assignments(with_answers)
    query = "SELECT name, type FROM base_cell ORDER BY type, name"
    seeded, generated_here = (sqlite3.connect(r / "gradebook.db").execute(query).fetchall() for r in (root, scratch))
    assert seeded == generated_here and ("understand_keepdims", "GradeCell") in seeded


def test_a_marking_course_in_use_is_not_seeded_again(cache, tmp_path):
    made_course(NOTEBOOKS, tmp_path / "master")
    root = tmp_path / "marking"
    shutil.copytree(tmp_path / "master", root)
    (root / ".assignments.json").write_text("{}")
    before = (root / "gradebook.db").read_bytes()
    marking.seed(root, tmp_path / "master", {"01_tensor": NOTEBOOKS["01_tensor"]}, root / ".assignments.json")
    assert (root / "gradebook.db").read_bytes() == before


def test_a_kept_course_removed_by_another_runs_clean_up_meanwhile_is_made_here(cache, tmp_path, monkeypatch):
    made_course(NOTEBOOKS, tmp_path / "first")
    entry = cache / course.course_key(NOTEBOOKS)

    def removed_meanwhile(path, *args, **kwargs):
        shutil.rmtree(entry)  # between the check that the course is whole and its use
        raise FileNotFoundError(path)

    monkeypatch.setattr(course.os, "utime", removed_meanwhile)
    generated = count_generations(monkeypatch)
    release = made_course(NOTEBOOKS, tmp_path / "second")
    assert sorted(generated) == sorted(NOTEBOOKS)
    assert all(path.exists() for path in release.values())
    assert assignments(tmp_path / "second") == sorted(NOTEBOOKS)


def test_a_new_grading_folder_copies_the_kept_packages_and_a_changed_notebook_exports_anew(
    cache, tmp_path, monkeypatch
):
    "autograde's state (grading/grade/autograde.py: prepare): the course and both exported packages, kept together."
    from grading.grade import autograde

    exports, export = [], autograde.export_package
    monkeypatch.setattr(autograde, "export_package", lambda folder: exports.append(folder) or export(folder))
    autograde.prepare(NOTEBOOKS, tmp_path / "first" / ".grading")
    assert len(exports) == 2  # the reference package and the released one
    autograde.prepare(NOTEBOOKS, tmp_path / "second" / ".grading")
    assert len(exports) == 2  # copied, not exported again
    for package in ("reference", "released"):
        first, second = (tmp_path / run / ".grading" / package / "tinytorch" for run in ("first", "second"))
        files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
        assert files and files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
        assert all((first / f).read_bytes() == (second / f).read_bytes() for f in files)
    changed = tmp_path / "01_tensor.ipynb"
    changed.write_text(NOTEBOOKS["01_tensor"].read_text().replace("Tensor", "Tensor ", 1))
    autograde.prepare({**NOTEBOOKS, "01_tensor": changed}, tmp_path / "third" / ".grading")
    assert len(exports) == 4


def test_nbgrader_s_cell_check_checks_its_schema_once_and_refuses_what_jsonschema_refuses(monkeypatch):
    import jsonschema
    from nbgrader.nbgraderformat.v3 import MetadataValidatorV3

    schema = MetadataValidatorV3().schema
    checked = []
    kind = jsonschema.validators.validator_for(schema)
    monkeypatch.setattr(kind, "check_schema", classmethod(lambda cls, s: checked.append(s)))
    compiled = course.CompiledSchemas()
    good = {"schema_version": 3, "grade": True, "solution": False, "locked": True, "grade_id": "t", "points": 1}
    bad = dict(good, points="many")
    for _ in range(3):
        compiled.validate(good, schema)
    for refused_by in (compiled.validate, jsonschema.validate):
        with pytest.raises(jsonschema.ValidationError) as refusal:
            refused_by(bad, schema)
        assert "'many' is not of type 'number'" in str(refusal.value)
    assert len(checked) == 2, "the schema was checked at every call, or not at all"  # compiled once, jsonschema once
