"""The capstone's leaderboard (grading.reports.leaderboard): what the hidden test measured reaches each result
(grading.grade.heldout.record, grading.grade.job.score), and the instructor's command ranks the class into a table
and a picture of accuracy against size. Made from results written here: no grading run."""

import json

import pytest

from conftest import cli
from grading.common.errors import GradingError
from grading.grade import heldout, job
from grading.reports import leaderboard


def result(out, student, score, measured=None, failed=""):
    "A capstone result as autograde keeps it, in OUT/results/<student>/16_capstone.json."
    tests = {"capstone_held_out": {"score": score, "max_score": 3.0, "message": failed}}
    record = {"student": student, "score": score, "max_score": 3.0, "note": "", "tests": tests}
    if measured:
        record["measured"] = dict(zip(["accuracy", "parameters"], measured))
    path = out / "results" / student / f"{leaderboard.ASSIGNMENT}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record))


def test_the_leaderboard_ranks_by_accuracy_then_size_and_lists_the_unmeasured_last(tmp_path):
    result(tmp_path, "ann", 3.0, (0.912, 19210))
    result(tmp_path, "bob", 3.0, (0.912, 2730))  # as accurate with fewer numbers: ranked above ann
    result(tmp_path, "cat", 0.0, (0.401, 650), "held-out accuracy 0.401; at least 0.75 passes")
    result(tmp_path, "dan", 0.0, None, "the model holds 94360 numbers (frozen ones count too); at most 20000")
    shown = cli("leaderboard", tmp_path)
    assert shown.returncode == 0, shown.stderr
    table = (tmp_path / leaderboard.TABLE).read_text()
    lines = [line for line in table.splitlines() if line.startswith("| ") and "rank" not in line]
    assert [line.split(" | ")[1] for line in lines] == ["bob", "ann", "cat", "dan"], table
    assert lines[0] == "| 1 | bob | 0.912 | 2,730 | 3 / 3 |", lines[0]
    assert lines[3].startswith("| – | dan | not measured: capstone_held_out: the model holds 94360 numbers"), lines[3]
    assert (tmp_path / leaderboard.PICTURE).read_bytes().startswith(b"\x89PNG")
    assert table in shown.stdout


def test_the_leaderboard_of_a_folder_without_capstone_results_is_a_one_line_error(tmp_path):
    with pytest.raises(GradingError, match="no 16_capstone results"):
        leaderboard.write(tmp_path)
    result = cli("leaderboard", tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and not (tmp_path / leaderboard.TABLE).exists()


def test_what_the_hidden_test_records_reaches_the_result_of_its_submission_only():
    heldout.use("")  # a submission starts
    heldout.record(0.91234, 19210)
    heldout.use(None)  # it ends: its result is written after this
    spec = type("Spec", (), {"student": "s", "assignment": "16_capstone", "fingerprint": {}, "variant": "v"})()
    spec.feedback_policy, spec.sandboxed, spec.student_user = "full", True, ""
    assert job.score(spec, {}, {}, [])["measured"] == {"accuracy": 0.9123, "parameters": 19210}
    heldout.use("")  # the next submission starts with nothing measured
    assert "measured" not in job.score(spec, {}, {}, [])
