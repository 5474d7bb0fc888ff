"""Every command explains bad input in one line and exits non-zero, and grades what it can."""

import csv
import shutil

import nbformat
import pytest

from conftest import REPO, cli, run_cli

COMMANDS = ["metadata", "export", "release", "autograde", "check", "demo"]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command):
    result = cli(command, "--help")
    assert result.returncode == 0 and "usage" in result.stdout


def one_line_error(result):
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode != 0 and lines, result.stderr
    return lines


def test_autograde_missing_folder(tmp_path):
    result = cli("autograde", tmp_path / "nowhere", "--out", tmp_path / "out")
    assert "no such folder" in one_line_error(result)[0] and result.returncode == 2


def test_autograde_refuses_an_out_folder_in_the_submissions_or_a_file_and_the_kit(tmp_path):
    "An instructor's --out SUBMISSIONS made the next run grade 'students' named feedback and results."
    subs = tmp_path / "subs"
    (subs / "ada" / "01_tensor").mkdir(parents=True)
    for out in (subs, subs / "grades"):
        error = one_line_error(cli("autograde", subs, "--out", out))[0]
        assert "submissions folder" in error and str(tmp_path / "grades") in error
    assert sorted(p.name for p in subs.iterdir()) == ["ada"]  # nothing written there
    (tmp_path / "a-file").write_text("")
    assert "that is a file" in one_line_error(cli("autograde", subs, "--out", tmp_path / "a-file"))[0]
    (tmp_path / "kit" / "01_tensor").mkdir(parents=True)
    (tmp_path / "kit" / ".release-manifest.json").write_text("{}")
    error = one_line_error(cli("autograde", tmp_path / "kit", "--out", tmp_path / "g"))[0]
    assert "this is the student kit" in error and not (tmp_path / "g").exists()
    (tmp_path / "kit" / "01_tensor" / "01_tensor.ipynb").write_text("{}")
    error = one_line_error(cli("autograde", subs, "--out", tmp_path / "g", "--notebooks", tmp_path / "kit"))[0]
    assert "contains no notebooks. It holds notebooks in folders (01_tensor, ...): a student kit?" in error


def test_check_missing_notebook(tmp_path):
    assert "no such file" in one_line_error(cli("check", tmp_path / "none.ipynb"))[0]


def test_check_invalid_json(tmp_path):
    (tmp_path / "bad.ipynb").write_text("{not json")
    assert "not valid JSON" in one_line_error(cli("check", tmp_path / "bad.ipynb"))[0]


def test_release_refuses_to_overwrite_a_foreign_folder(tmp_path):
    (tmp_path / "precious.txt").write_text("keep me")
    assert "not empty" in one_line_error(cli("release", "--out", tmp_path))[0]
    assert (tmp_path / "precious.txt").read_text() == "keep me"


def test_metadata_check_reports_a_malformed_notebook(tmp_path):
    (tmp_path / "broken.ipynb").write_text("")
    assert "empty" in one_line_error(cli("metadata", "--check", tmp_path / "broken.ipynb"))[0]


@pytest.mark.slow  # runs autograde
def test_bad_submissions_are_reported_in_the_table_and_on_the_console(tmp_path):
    subs = tmp_path / "subs"
    (subs / "dave" / "01_tensor").mkdir(parents=True)
    (subs / "dave" / "01_tensor" / "01_tensor.ipynb").write_text('{"cells": [')
    (subs / "erin" / "99_magic").mkdir(parents=True)
    (subs / "frank" / "02_function").mkdir(parents=True)
    (subs / "frank" / "02_function" / "my_work.ipynb").write_text("{}")
    (subs / "gina" / "03_gradcheck").mkdir(parents=True)
    shutil.copyfile(REPO / "notebooks" / "01_tensor.ipynb", subs / "gina" / "03_gradcheck" / "03_gradcheck.ipynb")
    result = run_cli("autograde", subs, "--out", tmp_path / "out")
    errors = one_line_error(result)
    assert result.returncode == 1 and len(errors) == 4
    with open(tmp_path / "out" / "grades.csv") as f:
        notes = {r["student"]: r["note"] for r in csv.DictReader(f)}
    assert "not valid JSON" in notes["dave"]
    assert "unknown assignment '99_magic'" in notes["erin"]
    assert "missing 02_function.ipynb (found: my_work.ipynb): rename it to 02_function.ipynb" in notes["frank"]
    assert "not the 03_gradcheck notebook" in notes["gina"]


def tiny_kit(root, *sources):
    "A kit in `root` (settings.ini reading notebooks from it, an empty tinytorch/) holding 04_tiny of these code cells."
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    (root / "04_tiny").mkdir()
    nbformat.write(nb, root / "04_tiny" / "04_tiny.ipynb")
    (root / "settings.ini").write_text(
        (REPO / "settings.ini").read_text().replace("nbs_path = notebooks", "nbs_path = .")
    )
    (root / "tinytorch").mkdir()
    return root / "04_tiny" / "04_tiny.ipynb"


def test_export_names_the_notebook_cell_and_line_of_a_syntax_error(tmp_path):
    "nbdev's own message is 'SyntaxError: invalid syntax', nothing more; a student needs to know where to look."
    tiny_kit(
        tmp_path,
        "#| default_exp core.tiny",
        "#| export\nclass AddBackward:\n    def apply(self, g):\n        return (g,,)",
    )
    result = run_cli("export", cwd=tmp_path)
    assert result.returncode != 0
    assert (
        "04_tiny/04_tiny.ipynb, the exported cell of AddBackward (code cell 2), line 4: invalid syntax: return (g,,). "
        "Fix that line in the notebook" in result.stderr
    ), result.stderr


def test_export_refuses_two_notebooks_that_export_the_same_module(tmp_path):
    """An executed copy saved in the kit (jupyter nbconvert --output out13.ipynb) exports the same module as the
    student's notebook; nbdev took whichever it read last, so a fresh reader's later edits silently did not count."""
    path = tiny_kit(tmp_path, "#| default_exp core.tiny", "#| export\ndef f():\n    return 1")
    shutil.copyfile(path, tmp_path / "out04.ipynb")
    shutil.copyfile(path, tmp_path / "04_tiny" / "_scratch.ipynb")  # a name starting with _: nbdev skips it
    result = run_cli("export", cwd=tmp_path)
    assert result.returncode != 0 and not (tmp_path / "tinytorch" / "core").exists()
    assert "04_tiny/04_tiny.ipynb and out04.ipynb both export tinytorch's module core.tiny" in result.stderr, (
        result.stderr
    )
    assert "move the other out of this folder" in result.stderr
    (tmp_path / "out04.ipynb").unlink()
    result = run_cli("export", cwd=tmp_path)
    assert result.returncode == 0 and (tmp_path / "tinytorch" / "core" / "tiny.py").exists(), result.stderr


def failed_check(root, *sources):
    "The lines `check` prints for a tiny kit of these code cells (under the authoring convention), which must fail."
    from grading.authoring.convention import apply_convention

    path = tiny_kit(root, *sources)
    apply_convention(path)
    result = run_cli("check", path, cwd=root)
    assert result.returncode == 1, result.stdout + result.stderr
    return result.stdout.splitlines()


def test_check_names_an_exercise_cell_that_did_not_run(tmp_path):
    "A syntax error in an exercise shows in its tests only as a NameError; check names the cell and the error first."
    lines = failed_check(
        tmp_path,
        "def double(x):\n    ### BEGIN SOLUTION\n    return [2 * x\n    ### END SOLUTION",
        "# test: doubles (1 point)\nassert double(2) == 4",
    )
    assert lines[0].startswith("ERROR   the cell of double raised SyntaxError: "), lines
    assert lines[1].startswith("FAIL    doubles (1 point): NameError: name 'double' is not defined"), lines


def test_check_names_a_given_cell_that_failed_through_the_students_code(tmp_path):
    """07's given GELU demo fails when the student's TanhBackward is wrong; check said nothing of it, and the grade's
    note named the cell by its id (cell-c07-gelu-demo). Both now name it by its first line."""
    lines = failed_check(
        tmp_path,
        "def double(x):\n    ### BEGIN SOLUTION\n    return 3 * x\n    ### END SOLUTION",
        "# Given: doubling twice is multiplying by 4\nassert double(double(1)) == 4, 'double(double(1)) is not 4'",
        "# test: doubles (1 point)\nassert double(2) == 4",
    )
    assert lines[0] == (
        "ERROR   the given cell '# Given: doubling twice is multiplying by 4' raised AssertionError: double(double(1)) "
        "is not 4: it runs your code above it, so fix that first"
    ), lines
    assert lines[1].startswith("FAIL    doubles (1 point)"), lines


def test_both_exports_print_their_report_with_one_function(capsys):
    "Warnings and how to import go to stderr, what was written to stdout, then the errors; an error makes it exit 1."
    from grading.cli.lms_commands import print_report

    code = print_report(["w"], howto=["map by email"], done=["written to out.csv"], errors=["2 students left out"])
    out, err = capsys.readouterr()
    assert code == 1 and out == "written to out.csv\n"
    assert err.splitlines() == ["warning: w", "to import: map by email", "error: 2 students left out"]
    assert print_report([], done=["3 feedback pages written"], errors=[]) == 0


def test_the_console_table_shows_no_score_for_a_row_the_grader_could_not_grade(capsys):
    "grades.csv leaves a not-graded row's score empty; the console table printed 0 there, as if the work earned none."
    from grading.cli.grading_commands import print_table
    from grading.grade.gradebook import Row

    note = "not graded: the grading job was killed (SIGKILL). This is a fault of the grader"
    rows = [Row("alice", "12_conv", "12_conv.ipynb", 0.0, 13.0, note, graded=False)]
    print_table(rows + [Row("bob", "12_conv", "12_conv.ipynb", 0.0, 13.0, "")])
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:4] == ["alice", "12_conv", "-", "13"], lines[1]
    assert lines[2].split()[:4] == ["bob", "12_conv", "0", "13"], lines[2]
