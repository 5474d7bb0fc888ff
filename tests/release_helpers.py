"""Helpers for tests that release a small course of their own: a copy of what `release` reads, and the command."""

import os
import shutil
import subprocess
import sys

from conftest import REPO
from grading.student.export import SKELETON


def course_copy(tmp_path, stems):
    "What `release` reads, in a folder of its own: the grading package, some notebooks, settings and the skeleton."
    root = tmp_path / "course"
    shutil.copytree(REPO / "grading", root / "grading", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "notebooks").mkdir()
    for stem in stems:
        shutil.copyfile(REPO / "notebooks" / f"{stem}.ipynb", root / "notebooks" / f"{stem}.ipynb")
    shutil.copyfile(REPO / "settings.ini", root / "settings.ini")
    (root / "tinytorch").mkdir()
    for name in SKELETON:
        shutil.copyfile(REPO / "tinytorch" / name, root / "tinytorch" / name)
    shutil.copytree(REPO / "tinytorch" / "data", root / "tinytorch" / "data")
    return root


def release_in(root, out, *options):
    "Run `python -m grading release --out OUT [OPTIONS]` with the course copy at `root`; the CompletedProcess."
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run(
        [sys.executable, "-m", "grading", "release", "--out", str(out), *options],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
