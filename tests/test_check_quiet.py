"""`python -m grading check` prints the test results, not ipykernel's "TCP without encryption" warning (issue 22, 7), and
its kernels use one BLAS thread unless the user chose otherwise."""

import os
import subprocess
import sys

import nbformat
import pytest

from grading.student.check import TCP_WARNING, kernel_stderr
from tests.conftest import run_cli


def test_the_kernels_stderr_loses_only_the_tcp_warning(capsys):
    script = (
        "import sys; "
        f"print('[IPKernelApp] WARNING | {TCP_WARNING}. All communication is sent in plain text.', file=sys.stderr); "
        "print('[IPKernelApp] WARNING | some other warning', file=sys.stderr)"
    )
    with kernel_stderr() as stderr:
        subprocess.run([sys.executable, "-c", script], stderr=stderr, check=True)
    err = capsys.readouterr().err
    assert TCP_WARNING not in err
    assert "some other warning" in err


@pytest.mark.slow
def test_check_prints_no_tcp_warning(tmp_path):
    nb = nbformat.v4.new_notebook()
    test = nbformat.v4.new_code_cell("assert 1 + 1 == 2")
    test.metadata["nbgrader"] = {"grade": True, "grade_id": "sums", "points": 1, "solution": False, "locked": True}
    nb.cells = [nbformat.v4.new_code_cell("x = 1"), test]
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nb, path)
    result = run_cli("check", path)
    assert result.returncode == 0, result.stderr
    assert "PASS    sums (1 point)" in result.stdout
    assert "without encryption" not in result.stdout + result.stderr


@pytest.mark.slow
def test_check_shows_the_note_a_passing_test_prints(tmp_path):
    nb = nbformat.v4.new_notebook()
    test = nbformat.v4.new_code_cell(
        "assert 1 + 1 == 2\nprint('a line of output')\nprint('Note: a hidden test checks more')"
    )
    test.metadata["nbgrader"] = {"grade": True, "grade_id": "sums", "points": 1, "solution": False, "locked": True}
    nb.cells = [test]
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nb, path)
    result = run_cli("check", path)
    assert "PASS    sums (1 point): Note: a hidden test checks more\n" in result.stdout, result.stdout


def test_the_kernels_get_one_blas_thread_unless_the_user_chose(monkeypatch):
    from grading.common.environment import kernel_environment

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    with kernel_environment("/somewhere"):
        assert os.environ["OPENBLAS_NUM_THREADS"] == "1", "small matrices: one BLAS thread by default"
        assert os.environ["OMP_NUM_THREADS"] == "3", "a value the user set is kept"
        assert os.environ["PYTHONPATH"] == "/somewhere"
    assert "OPENBLAS_NUM_THREADS" not in os.environ, "the grader's own environment is restored"
