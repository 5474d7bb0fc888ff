"""The reference check's memory across output folders (grading.grade.reference.CheckedElsewhere): a pass counts
only for the same course, environment and held-out digits, and a damaged or missing record means checking again."""

from types import SimpleNamespace

import pytest

from grading.grade.reference import CheckedElsewhere


def a_run(folder, course="course-1", held_out=""):
    (folder / "prepared").parent.mkdir(parents=True, exist_ok=True)
    (folder / "prepared").write_text(course)
    return SimpleNamespace(state=folder, held_out_digest=lambda assignment: held_out)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TINYTORCH_GRADING_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_pass_counts_for_another_output_folder_of_the_same_course_and_environment(tmp_path, cache):
    CheckedElsewhere(a_run(tmp_path / "week1" / ".grading"), "env").add("04_elementwise")
    later = CheckedElsewhere(a_run(tmp_path / "week2" / ".grading"), "env")
    assert later.has("04_elementwise") and not later.has("05_matmul_and_reductions")


@pytest.mark.parametrize(
    "changed",
    [
        {"course": "course-2"},  # a notebook of the course changed
        {"key": "other-env"},  # another Python, its packages, or other limits
        {"held_out": "other-digits"},  # the instructor's held-out digits changed
    ],
)
def test_a_pass_does_not_count_once_the_course_the_environment_or_the_held_out_digits_change(tmp_path, cache, changed):
    CheckedElsewhere(a_run(tmp_path / "a", held_out="digits"), "env").add("16_capstone")
    run = a_run(tmp_path / "b", changed.get("course", "course-1"), changed.get("held_out", "digits"))
    assert not CheckedElsewhere(run, changed.get("key", "env")).has("16_capstone")


def test_a_damaged_record_means_checking_again_and_is_written_anew(tmp_path, cache):
    cache.mkdir(mode=0o700)
    (cache / "reference-checks.json").write_text("{not json")
    memory = CheckedElsewhere(a_run(tmp_path / "a"), "env")
    assert not memory.has("04_elementwise")
    memory.add("04_elementwise")
    assert CheckedElsewhere(a_run(tmp_path / "b"), "env").has("04_elementwise")


def test_with_the_cache_turned_off_nothing_is_remembered(tmp_path, monkeypatch):
    monkeypatch.setenv("TINYTORCH_GRADING_CACHE", "")
    CheckedElsewhere(a_run(tmp_path / "a"), "env").add("04_elementwise")
    assert not CheckedElsewhere(a_run(tmp_path / "b"), "env").has("04_elementwise")
