import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
os.environ.setdefault("TINYTORCH_QUIET", "1")
# The courses the grader makes from the notebooks are kept for this test session, not in the user's ~/.cache
# (grading/authoring/course.py: made_course); tests of that cache set their own.
SESSION_CACHE = None
if "TINYTORCH_GRADING_CACHE" not in os.environ:
    SESSION_CACHE = os.environ["TINYTORCH_GRADING_CACHE"] = tempfile.mkdtemp(prefix="tinytorch-grading-cache-")


def pytest_sessionfinish(session, exitstatus):
    if SESSION_CACHE:
        shutil.rmtree(SESSION_CACHE, ignore_errors=True)


def run_cli(*args, cwd=REPO):
    "Run `python -m grading ARGS` as a user would; return the CompletedProcess."
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "grading", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )


def pytest_collection_modifyitems(items):
    "A test that needs the released kit is slow: it releases the course and, mostly, autogrades submissions of it."
    for item in items:
        if "kit" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def kit(tmp_path_factory):
    "The student kit, released once for the whole test session."
    out = tmp_path_factory.mktemp("kit") / "kit"
    result = run_cli("release", "--out", out)
    assert result.returncode == 0, result.stderr
    return out
