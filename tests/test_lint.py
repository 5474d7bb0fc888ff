"Ruff, configured in pyproject.toml, finds nothing to fix in the repository (notebooks included)."

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def ruff(*args):
    "The ruff of this Python's environment (a venv used without activating it too), else the one on PATH."
    beside = Path(sys.executable).parent / "ruff"
    found = str(beside) if beside.exists() else shutil.which("ruff")
    if found is None:
        pytest.fail(
            'ruff is not installed: run  pip install -e ".[dev]"  (it pins the version the code is formatted with)'
        )
    return subprocess.run([found, *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_check_is_clean():
    result = ruff("check", ".")
    assert result.returncode == 0, "ruff check found problems; `ruff check --fix .` fixes some:\n" + result.stdout


def test_ruff_format_is_clean():
    result = ruff("format", "--check", ".")
    assert result.returncode == 0, (
        "files are not formatted; run `ruff format .` (then `python -m grading export` if notebooks changed):\n"
        + result.stdout
    )


def test_ruff_is_the_pinned_version():
    pinned = next(line for line in (ROOT / "pyproject.toml").read_text().splitlines() if '"ruff==' in line)
    version = ruff("--version").stdout.split()[-1]
    assert f"ruff=={version}" in pinned, f"ruff {version} is installed but pyproject.toml pins {pinned.strip()}"


TYPED = ["grading"]  # every function of the grader has type hints (issue 42), private ones too


def test_every_function_of_the_grader_has_type_hints():
    result = ruff("check", *TYPED, "--select", "ANN", "--ignore", "ANN401", "--output-format", "concise")
    assert result.returncode == 0, "functions without type hints (parameters and return):\n" + result.stdout
