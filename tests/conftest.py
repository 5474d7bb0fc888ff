import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
os.environ.setdefault("TINYTORCH_QUIET", "1")


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
