"""The committed tinytorch/ is exactly what nbdev_export makes from notebooks/."""

import shutil
import subprocess
import sys

import pytest

from conftest import REPO
from grading.student.export import SKELETON

pytestmark = pytest.mark.slow  # nbdev_export of every notebook


def python_files(root):
    return {
        p.relative_to(root): p.read_text()
        for p in sorted((root / "tinytorch").rglob("*.py"))
        if "__pycache__" not in p.parts
    }


def test_nbdev_export_leaves_the_package_unchanged(tmp_path):
    shutil.copytree(REPO / "notebooks", tmp_path / "notebooks")
    shutil.copyfile(REPO / "settings.ini", tmp_path / "settings.ini")
    (tmp_path / "tinytorch").mkdir()
    for name in SKELETON:  # the files written by hand, which nbdev_export leaves as they are
        shutil.copyfile(REPO / "tinytorch" / name, tmp_path / "tinytorch" / name)
    result = subprocess.run(
        [sys.executable, "-c", "from nbdev.doclinks import nbdev_export; nbdev_export()"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    exported, committed = python_files(tmp_path), python_files(REPO)
    assert sorted(exported) == sorted(committed), "modules differ: run `python -m grading export` and commit"
    for name in committed:
        assert exported[name] == committed[name], f"{name} differs from its notebook: run `python -m grading export`"
