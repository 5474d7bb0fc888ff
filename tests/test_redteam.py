"""Red team: a class of 30 generated submissions (grading/classroom.py), good, partial, broken and cheating, graded
in one command; every student gets the score their honest work earns, and nothing of the grader's is lost.

Then the same class is graded again by a run killed halfway and restarted (same table), and again after a hidden
test was changed (only that test's scores change)."""
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, run_cli
from grading.autograde import Row
from grading.classroom import ELEMENTWISE, NEEDS_ROOT, compare, make_class
from grading.notebooks import read_notebook, write_notebook
from grading.sandbox import isolation

FULL_ISOLATION = isolation() == "full"
OPTIONS = ["--cell-timeout", "10", "--notebook-timeout", "120"]


def read_rows(grades):
    with open(Path(grades) / "grades.csv") as f:
        return [Row(r["student"], r["assignment"], r["notebook"], float(r["score"]), float(r["max_score"]), r["note"])
                for r in csv.DictReader(f)]


@pytest.fixture(scope="module")
def graded_class(kit, tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    expected = make_class(kit, root / "submissions", grades=root / "grades")
    started = time.time()
    result = run_cli("autograde", root / "submissions", "--out", root / "grades", *OPTIONS)
    seconds = time.time() - started
    return root, expected, result, read_rows(root / "grades"), seconds


def test_the_class_has_30_submissions_of_every_kind(graded_class):
    _, expected, _, rows, _ = graded_class
    assert len(expected) == 30 and {r.student for r in rows} == set(expected)
    assert sum("problem" in e for e in expected.values()) == 5


@pytest.mark.parametrize("student", ["alice", "bob", "carol", "dan", "rosa", "tara", "uma"])
def test_good_partial_and_wrong_work_scores_what_it_earns(graded_class, student):
    check(graded_class, student)


@pytest.mark.parametrize("student", ["erin", "frank", "gina", "hank", "ivy", "jack", "kim", "liam", "maya"])
def test_broken_code_costs_only_the_tests_that_need_it(graded_class, student):
    "A syntax error, endless loops, os._exit, a segfault, a memory bomb, 20 MB of output, sys.exit, input()."
    check(graded_class, student)


@pytest.mark.parametrize("student", ["nick", "olga", "pete", "quinn", "sam"])
def test_bad_files_are_named_in_the_table_and_cost_no_one_else(graded_class, student):
    check(graded_class, student)
    _, _, result, _, _ = graded_class
    assert f"error: {student}/" in result.stderr


@pytest.mark.parametrize("student", ["vic", "wes", "xena", "yuri", "zoe"])
def test_patching_what_the_tests_rely_on_earns_nothing(graded_class, student):
    "Scratch cells patching check_backward and np.allclose; patched checkers on import and during a test; a "
    "replaced builtin; Tensor.backward replaced in notebook 07."
    check(graded_class, student)


@pytest.mark.skipif(not FULL_ISOLATION, reason="file isolation needs the grader to run as root (Linux)")
@pytest.mark.parametrize("student", sorted(NEEDS_ROOT))
def test_reading_the_answer_key_or_writing_grades_earns_nothing(graded_class, student):
    "Importing the reference module by path, reading the instructor's notebook and gradebook, writing the grades."
    check(graded_class, student)


def check(graded_class, student):
    _, expected, _, rows, _ = graded_class
    assert not compare(rows, {student: expected[student]}), [r for r in rows if r.student == student]


@pytest.mark.skipif(not FULL_ISOLATION, reason="file isolation needs the grader to run as root (Linux)")
def test_the_grader_files_survive_an_attack(graded_class):
    root, _, _, rows, _ = graded_class
    alice = json.loads((root / "grades" / "results" / "alice" / f"{ELEMENTWISE}.json").read_text())
    assert alice["score"] == alice["max_score"] == 24
    book = json.loads((root / "grades" / "gradebook.json").read_text())
    assert book["kate"][ELEMENTWISE]["score"] == 0 and book["alice"][ELEMENTWISE]["score"] == 24
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob("tinytorch-sandbox-*/stolen.txt"))


def test_feedback_is_written_and_bounded(graded_class):
    root, _, _, _, _ = graded_class
    kim = (root / "grades" / "feedback" / "kim" / f"{ELEMENTWISE}.html").read_text()
    assert "output truncated" in kim and len(kim) < 2_000_000, "20 MB of prints must not reach the feedback"
    vic = (root / "grades" / "feedback" / "vic" / f"{ELEMENTWISE}.html").read_text()
    assert 'id="tinytorch-score"' in vic and f"{ELEMENTWISE}: 0 / 24" in vic
    assert "BROADCAST_PAIRS + [((2, 1, 3), (4, 1))]" not in vic, "hidden test code must not appear in feedback"


def test_distribution_plot_and_gradebook_are_written(graded_class):
    root, _, _, rows, seconds = graded_class
    png = root / "grades" / "distribution.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    book = json.loads((root / "grades" / "gradebook.json").read_text())
    assert book["carol"][ELEMENTWISE]["tests"]["mul_backward_hidden"]["score"] == 0
    graded = sum(1 for r in rows if r.max_score)
    print(f"\nclass of {len(rows)}: {graded} notebooks graded in {seconds:.0f} s "
          f"({graded / (seconds / 60):.1f} per minute, {os.cpu_count()} workers)")


def test_killed_run_restarts_to_the_same_table(graded_class, tmp_path):
    "A run killed after its first results, then started again, ends with the table of the uninterrupted run."
    root, expected, _, rows, _ = graded_class
    subs = tmp_path / "submissions"
    for student in ["alice", "carol", "dan", "nick", "hank", "wes"]:
        shutil.copytree(root / "submissions" / student, subs / student)
    out = tmp_path / "grades"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    process = subprocess.Popen([sys.executable, "-m", "grading", "autograde", str(subs), "--out", str(out),
                                "--workers", "1", *OPTIONS], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    while not list((out / "results").glob("*/*.json")) and time.time() < deadline:
        time.sleep(0.5)
    process.send_signal(signal.SIGKILL)
    process.wait()
    finished = len(list((out / "results").glob("*/*.json")))
    assert 1 <= finished < 5, "the kill must land halfway"
    again = run_cli("autograde", subs, "--out", out, *OPTIONS)
    assert f"{finished} submissions already graded" in again.stdout
    uninterrupted = {(r.student, r.assignment): r.values() for r in rows if r.student in
                     {"alice", "carol", "dan", "nick", "hank", "wes"}}
    assert {(r.student, r.assignment): r.values() for r in read_rows(out)} == uninterrupted


def test_regrading_after_a_hidden_test_is_fixed_changes_only_that_test(graded_class, tmp_path):
    root, _, _, _, _ = graded_class
    subs = tmp_path / "submissions"
    for student in ["alice", "carol"]:
        shutil.copytree(root / "submissions" / student, subs / student)
    shutil.copytree(REPO / "notebooks", tmp_path / "notebooks")
    out = tmp_path / "grades"
    first = run_cli("autograde", subs, "--out", out, *OPTIONS, "--notebooks", tmp_path / "notebooks")
    assert first.returncode == 0, first.stderr
    before = json.loads((out / "gradebook.json").read_text())
    path = tmp_path / "notebooks" / f"{ELEMENTWISE}.ipynb"
    nb = read_notebook(path)
    (cell,) = [c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "add_backward_hidden"]
    # the instructor "fixes" add_backward_hidden: it now also checks something every student gets wrong
    cell.source = cell.source.replace("### END HIDDEN TESTS", "assert False, 'a stricter check'\n### END HIDDEN TESTS")
    write_notebook(nb, path)
    again = run_cli("autograde", subs, "--out", out, *OPTIONS, "--notebooks", tmp_path / "notebooks")
    assert "re-graded add_backward_hidden; other tests kept their scores" in again.stdout, again.stdout
    after = json.loads((out / "gradebook.json").read_text())
    for student in ["alice", "carol"]:
        old, new = before[student][ELEMENTWISE]["tests"], after[student][ELEMENTWISE]["tests"]
        assert new["add_backward_hidden"]["score"] == 0 < old["add_backward_hidden"]["score"]
        assert {t: v for t, v in new.items() if t != "add_backward_hidden"} == \
               {t: v for t, v in old.items() if t != "add_backward_hidden"}


def test_a_patch_made_while_a_test_runs_fails_that_test_and_says_why(graded_class):
    root, _, _, _, _ = graded_class
    tests = json.loads((root / "grades" / "gradebook.json").read_text())["xena"][ELEMENTWISE]["tests"]
    message = tests["mul_backward"]["message"]
    assert "while this test ran, your code replaced" in message and "gradcheck.compare_gradient" in message
    assert tests["add_backward"]["score"] == 1, "tests that ran before the patch keep their points"
