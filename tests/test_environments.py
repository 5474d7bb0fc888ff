"""Right grades wherever an instructor runs the grader: from a venv that is not activated (as cron, a Makefile or an
IDE runs it), from a venv of copied files kept under /tmp, and with a class whose folder holds a malformed notebook,
a symbolic link and an over-long name. A grading environment that cannot grade the instructor's own solution grades
nobody."""

import csv
import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from grading.common.answers import solved
from grading.common.notebooks import read_notebook, write_notebook

pytestmark = pytest.mark.slow
NB = "02_function"  # a short notebook: 4 points, a few seconds to grade


def plain_environment():
    "What cron gives a command: no activated venv, nothing of ours on PATH."
    keep = {k: v for k, v in os.environ.items() if k in ("HOME", "LANG", "TINYTORCH_QUIET")}
    return {**keep, "PATH": "/usr/bin:/bin"}


def grade(python, submissions, out, *options, env=None):
    return subprocess.run(
        [str(python), "-m", "grading", "autograde", str(submissions), "--out", str(out), *options],
        cwd=REPO,
        env={**plain_environment(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=1200,
    )


def table(out):
    with open(Path(out) / "grades.csv") as f:
        return {(r["student"], r["assignment"]): r for r in csv.DictReader(f)}


def write_submission(root, student, nb, assignment=NB):
    path = Path(root) / student / assignment / f"{assignment}.ipynb"
    write_notebook(nb, path)
    return path


@pytest.fixture(scope="module")
def notebooks(kit):
    "(alice's solved notebook, the untouched release) of NB."
    released = read_notebook(kit / NB / f"{NB}.ipynb")
    return solved(released, read_notebook(REPO / "notebooks" / f"{NB}.ipynb")), released


def test_a_messy_class_is_graded_from_a_venv_that_is_not_activated(notebooks, tmp_path):
    alice, release = notebooks
    subs = tmp_path / "subs"
    write_submission(subs, "alice", alice)
    write_submission(subs, "bob", release)
    broken = json.loads(json.dumps(alice))
    for cell in broken["cells"]:
        if "nbgrader" in cell["metadata"]:
            cell["metadata"]["nbgrader"] = "graded"
    (subs / "carol" / NB).mkdir(parents=True)
    (subs / "carol" / NB / f"{NB}.ipynb").write_text(json.dumps(broken))
    os.symlink(subs / "alice", subs / "mallory")
    write_submission(subs, "x" * 240, alice)
    result = grade(sys.executable, subs, tmp_path / "out")
    rows = table(tmp_path / "out")
    assert result.returncode == 1, result.stderr  # the three problems are errors on the console
    assert rows[("alice", NB)]["score"] == rows[("alice", NB)]["max_score"] == "4", rows[("alice", NB)]
    assert rows[("bob", NB)]["score"] == "0"
    assert "nbgrader metadata of cell(s)" in rows[("carol", NB)]["note"]
    assert "symbolic link" in rows[("mallory", "")]["note"]
    (long_row,) = [r for (s, _), r in rows.items() if s.startswith("xxx")]
    assert "240 bytes long" in long_row["note"]
    assert "SAWarning" not in result.stderr + result.stdout, "nbgrader's SQLAlchemy warnings are not the user's"


def test_a_venv_of_copies_under_tmp_grades_the_reference_to_full_marks(notebooks, tmp_path_factory):
    venv = tmp_path_factory.mktemp("venv-copies") / "venv"  # under /tmp, which the sandbox replaces with its own
    subprocess.run([sys.executable, "-m", "venv", "--copies", "--without-pip", str(venv)], check=True, timeout=120)
    site_packages = next(venv.glob("lib/python3*/site-packages"))
    (site_packages / "course.pth").write_text("\n".join(site.getsitepackages()) + "\n")  # this venv's packages
    shutil.copytree(Path(sys.prefix) / "share" / "jupyter", venv / "share" / "jupyter")  # and their data files
    subs = tmp_path_factory.mktemp("subs")
    write_submission(subs, "alice", notebooks[0])
    out = tmp_path_factory.mktemp("out")
    result = grade(venv / "bin" / "python", subs, out)
    assert result.returncode == 0, result.stderr
    assert table(out)[("alice", NB)]["score"] == "4", table(out)[("alice", NB)]


def test_an_environment_that_cannot_grade_the_reference_grades_nobody(notebooks, tmp_path):
    subs = tmp_path / "subs"
    write_submission(subs, "alice", notebooks[0])
    result = grade(sys.executable, subs, tmp_path / "out", "--memory-mb", "100")
    assert result.returncode == 2
    assert "the grading environment is broken" in result.stderr and NB in result.stderr
    assert not (tmp_path / "out" / "grades.csv").exists(), "nobody is graded"


def test_a_reference_check_passed_for_one_output_folder_counts_for_the_next(notebooks, tmp_path):
    "The instructor who grades each week into a new folder has the reference graded once, not every week."
    alice, _ = notebooks
    write_submission(tmp_path / "subs", "alice", alice)
    cache = {"TINYTORCH_GRADING_CACHE": str(tmp_path / "cache")}
    first = grade(sys.executable, tmp_path / "subs", tmp_path / "week1", env=cache)
    second = grade(sys.executable, tmp_path / "subs", tmp_path / "week2", env=cache)
    assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
    assert "checking the grading environment" in first.stdout + first.stderr
    assert "checking the grading environment" not in second.stdout + second.stderr
    assert table(tmp_path / "week1") == table(tmp_path / "week2")
