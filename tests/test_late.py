"""The late policy (grading.reports.late): due dates, the penalty, the submission's time (the file's, or a trusted
timestamp.txt), and the grade table's columns. Every time is fixed: no test sleeps or reads the clock."""

import csv
import os
from datetime import timedelta

import pytest

from conftest import cli
from grading.common.errors import GradingError
from grading.grade.gradebook import Row, apply_late, write_table
from grading.reports.late import Policy, assess, make_policy, parse_penalty, parse_time

NOW = parse_time("2026-12-10T12:00+00:00", "test")
DUE = "2026-12-01T23:59+00:00"


def submission(tmp_path, stamp=None, mtime=None, student="ada"):
    "A submission folder with its notebook, and timestamp.txt when `stamp` is given."
    folder = tmp_path / student / "09_nn"
    folder.mkdir(parents=True)
    notebook = folder / "09_nn.ipynb"
    notebook.write_text("{}")
    if stamp is not None:
        (folder / "timestamp.txt").write_text(stamp)
    if mtime is not None:
        os.utime(notebook, (mtime.timestamp(), mtime.timestamp()))
    return notebook


def test_times_as_nbgrader_writes_them_and_as_iso_8601():
    utc = parse_time("2026-12-02 01:59:00.123456 UTC", "timestamp.txt")
    assert utc == parse_time("2026-12-02T01:59:00.123456Z", "x") == parse_time("2026-12-02T02:59:00.123456+01:00", "x")
    assert parse_time("2026-12-02 02:59:00 +0100", "x") == utc.replace(microsecond=0)
    assert parse_time("2026-12-01T23:59", "x").tzinfo is not None, "no zone: the grading machine's local time"


def test_a_malformed_due_date_names_the_option_and_the_format():
    with pytest.raises(GradingError, match=r"--due 1 December.*expected YYYY-MM-DDTHH:MM"):
        make_policy(["1 December"])
    with pytest.raises(GradingError, match=r"--due 09_nn=tomorrow: 'tomorrow' is not a date"):
        make_policy(["09_nn=tomorrow"])
    for date in ("2026-12-01", "20261201", "2026-W49-2"):  # an instructor's finding: each was 00:00 of the day
        with pytest.raises(GradingError, match=rf"'{date}' has no time of day; expected YYYY-MM-DDTHH:MM.*T23:59"):
            make_policy([f"09_nn={date}"])


def test_a_due_file_maps_assignments_and_its_errors_name_the_file(tmp_path):
    good = tmp_path / "due.json"
    good.write_text(
        '{"09_nn": "2026-12-01T23:59Z", "10_optimizers": {"due": "2026-12-08T23:59Z", "released": "2026-12-02T09:00Z"}}'
    )
    policy = make_policy(["10_optimizers=2026-12-09T23:59Z"], good, "10%/day")
    assert policy.due_of("09_nn") == parse_time("2026-12-01T23:59Z", "x")
    assert policy.due_of("10_optimizers") == parse_time("2026-12-09T23:59Z", "x"), "the command line wins"
    assert policy.released_of("10_optimizers") == parse_time("2026-12-02T09:00Z", "x")
    assert policy.due_of("11_training") is None
    bad = tmp_path / "bad.json"
    bad.write_text('{"09_nn": "next Friday"}')
    with pytest.raises(GradingError, match=r"bad.json: 09_nn: due: 'next Friday' is not a date and time; expected"):
        make_policy(due_file=bad)
    bad.write_text("[1, 2")
    with pytest.raises(GradingError, match="bad.json: not valid JSON"):
        make_policy(due_file=bad)
    with pytest.raises(GradingError, match="cannot read the due-date file"):
        make_policy(due_file=tmp_path / "missing.json")


def test_penalties_per_started_day_or_hour_with_a_cap():
    ten = parse_penalty("10%/day")
    assert ten.of(timedelta(0)) == 0 and ten.of(timedelta(minutes=1)) == pytest.approx(0.1)
    assert ten.of(timedelta(days=1, seconds=1)) == pytest.approx(0.2)
    assert ten.of(timedelta(days=30)) == 1.0, "never more than the score"
    assert parse_penalty("10%/day, max=25%").of(timedelta(days=5)) == pytest.approx(0.25)
    assert parse_penalty("5%/hour").of(timedelta(hours=2, minutes=1)) == pytest.approx(0.15)
    assert parse_penalty("zero").of(timedelta(seconds=1)) == 1.0
    assert parse_penalty("none").of(timedelta(days=3)) == 0.0
    for bad in ("10 percent", "10%/week", "150%/day", "10%/day,max=200%"):
        with pytest.raises(GradingError, match="expected 'none', 'zero', or"):
            parse_penalty(bad)
    with pytest.raises(GradingError, match="needs a due date"):
        make_policy(penalty="10%/day")


def test_by_default_the_time_is_the_files_and_a_timestamp_txt_in_the_folder_is_not_read(tmp_path):
    "A student who puts an on-time timestamp.txt next to a late notebook is still late."
    policy = make_policy([DUE], penalty="10%/day")
    assert not policy.trust_timestamps
    late = parse_time("2026-12-03T10:00+00:00", "x")
    forged = submission(tmp_path, "2026-12-01 12:00:00 UTC", mtime=late)
    result = assess(policy, "09_nn", forged, NOW)
    assert result.submitted_at == "2026-12-03T10:00:00+00:00" and result.penalty == pytest.approx(0.2)
    assert "file time as received" in result.note and "timestamp.txt was not read (--trust-timestamps" in result.note
    junk = assess(policy, "09_nn", submission(tmp_path, "junk", mtime=late, student="bo"), NOW)
    assert not junk.problem and junk.penalty == pytest.approx(0.2), "an unread timestamp.txt cannot be malformed"
    on_time = assess(policy, "09_nn", submission(tmp_path, mtime=parse_time(DUE, "x"), student="cy"), NOW)
    assert on_time.penalty == 0 and on_time.note == ""


def test_a_symlinked_notebook_has_the_links_own_time_not_its_targets(tmp_path):
    policy = make_policy([DUE], penalty="10%/day")
    target = submission(tmp_path, mtime=parse_time("2026-12-01T12:00+00:00", "x"), student="elsewhere")
    link = tmp_path / "ada" / "09_nn" / "09_nn.ipynb"
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    late = parse_time("2026-12-02T00:30+00:00", "x").timestamp()
    os.utime(link, (late, late), follow_symlinks=False)
    assert assess(policy, "09_nn", link, NOW).penalty == pytest.approx(0.1)


def test_with_trust_timestamps_the_time_comes_from_timestamp_txt_else_from_the_file(tmp_path):
    policy = make_policy([DUE], penalty="10%/day", trust_timestamps=True)
    on_time_file = parse_time("2026-12-01T12:00+00:00", "x")
    late = assess(policy, "09_nn", submission(tmp_path, "2026-12-03 10:00:00.000000 UTC", mtime=on_time_file), NOW)
    assert late.submitted_at == "2026-12-03T10:00:00+00:00"
    assert late.late_by_hours == pytest.approx(34.02) and late.penalty == pytest.approx(0.2) and not late.problem
    on_time = assess(policy, "09_nn", submission(tmp_path, "2026-12-01 23:00:00 UTC", student="bo"), NOW)
    assert on_time.late_by_hours == 0 and on_time.penalty == 0 and on_time.note == ""
    by_mtime = submission(tmp_path, mtime=parse_time("2026-12-02T00:30+00:00", "x"), student="cy")
    late = assess(policy, "09_nn", by_mtime, NOW)
    assert late.penalty == pytest.approx(0.1) and late.note == "late by the notebook's file time as received"


def test_trust_timestamps_is_an_option_of_autograde():
    from grading.cli import parser
    from grading.cli.grading_commands import late_policy

    args = ["autograde", "subs", "--out", "out", "--due", DUE]
    assert not late_policy(parser().parse_args(args)).trust_timestamps
    assert late_policy(parser().parse_args([*args, "--trust-timestamps"])).trust_timestamps


def test_a_malformed_timestamp_is_reported_with_the_file_and_the_format(tmp_path):
    policy = make_policy([DUE], penalty="10%/day", trust_timestamps=True)
    late = assess(policy, "09_nn", submission(tmp_path, "yesterday, around noon"), NOW)
    assert late.problem and late.penalty == 0
    assert "ada/09_nn/timestamp.txt" in late.note and "expected YYYY-MM-DDTHH:MM" in late.note
    empty = assess(policy, "09_nn", submission(tmp_path, "", student="bo"), NOW)
    assert empty.problem and "timestamp.txt: empty" in empty.note
    no_due = Policy(trust_timestamps=True)
    assert assess(no_due, "09_nn", submission(tmp_path, "junk", student="cy"), NOW).note == "", "no due date"


def test_a_timestamp_in_the_future_or_before_the_release_is_reported_not_penalised(tmp_path):
    policy = make_policy([DUE], penalty="zero", released="2026-11-20T09:00Z", trust_timestamps=True)
    future = assess(policy, "09_nn", submission(tmp_path, "2027-01-01 00:00:00 UTC"), NOW)
    assert future.penalty == 0 and "in the future" in future.note and not future.problem
    early = assess(policy, "09_nn", submission(tmp_path, "2026-11-01 00:00:00 UTC", student="bo"), NOW)
    assert early.penalty == 0 and "before the release" in early.note
    by_file = make_policy([DUE], penalty="zero", released="2026-11-20T09:00Z")
    touched = submission(tmp_path, mtime=parse_time("2027-01-01T00:00Z", "x"), student="cy")
    assert "file time is in the future" in assess(by_file, "09_nn", touched, NOW).note


def test_the_grade_table_keeps_the_score_and_adds_the_late_columns(tmp_path):
    policy = make_policy([DUE], penalty="10%/day", trust_timestamps=True)
    late = {
        ("ada", "09_nn"): assess(policy, "09_nn", submission(tmp_path, "2026-12-03 10:00:00 UTC"), NOW),
        ("bo", "09_nn"): assess(policy, "09_nn", submission(tmp_path, "2026-12-01 12:00:00 UTC", student="bo"), NOW),
    }
    rows = apply_late([Row("ada", "09_nn", "09_nn.ipynb", 10, 12), Row("bo", "09_nn", "09_nn.ipynb", 12, 12)], late)
    write_table(rows, tmp_path / "grades.csv")
    with open(tmp_path / "grades.csv") as f:
        ada, bo = csv.DictReader(f)
    assert ada["score"] == "10" and ada["late_by_hours"] == "34.02" and ada["penalty"] == "2"
    assert ada["final_score"] == "8" and ada["submitted_at"] == "2026-12-03T10:00:00+00:00"
    assert bo["score"] == bo["final_score"] == "12" and bo["late_by_hours"] == "0" and bo["penalty"] == "0"


def test_the_command_refuses_a_bad_due_date_before_grading(tmp_path):
    (tmp_path / "subs" / "ada").mkdir(parents=True)
    result = cli("autograde", tmp_path / "subs", "--out", tmp_path / "out", "--due", "soon", "--unsafe-no-sandbox")
    assert result.returncode == 2 and "--due soon: 'soon' is not a date and time; expected" in result.stderr
    assert not (tmp_path / "out").exists(), "nothing is graded or written"


def test_a_due_date_for_an_assignment_the_course_does_not_have_is_refused_before_grading(tmp_path):
    """An instructor's finding: a typo in --due NAME=DATE or in the due file gave that assignment no due date, so no
    late submission was penalised, with exit 0 and no word."""
    (tmp_path / "subs" / "ada").mkdir(parents=True)
    (tmp_path / "due.json").write_text('{"08_losses": "2026-12-02T23:59Z", "04_elementwse": "2026-12-01T23:59Z"}')
    for options in (["--due", "04_elementwse=2026-12-01T23:59Z"], ["--due-file", tmp_path / "due.json"]):
        result = cli("autograde", tmp_path / "subs", "--out", tmp_path / "out", *options, "--unsafe-no-sandbox")
        assert result.returncode == 2, result.stderr
        assert "'04_elementwse' (did you mean '04_elementwise'?), not an assignment of this course" in result.stderr
        assert "08_losses" not in result.stderr.split("the assignments are")[0], "a right name is not named"
        assert not (tmp_path / "out").exists(), "nothing is graded or written"


def test_a_run_without_late_options_keeps_the_due_dates_of_the_earlier_run(tmp_path):
    """An instructor's finding: grading again after a fix, with the guide's plain command, dropped every late penalty
    without a word. The options of the last run that had any are kept in OUT; --late-penalty none drops them."""
    (tmp_path / "subs" / "ada").mkdir(parents=True)
    run = ["autograde", tmp_path / "subs", "--out", tmp_path / "out", "--unsafe-no-sandbox"]
    cli(*run, "--due", "04_elementwise=2026-12-01T23:59Z", "--late-penalty", "10%/day")
    again = cli(*run)
    kept = "late policy of the earlier runs into"
    assert f"{kept} {tmp_path / 'out'}: due 04_elementwise=2026-12-01T23:59+00:00, penalty 10%/day" in again.stdout
    dropped = cli(*run, "--late-penalty", "none")
    assert kept not in dropped.stdout and kept not in cli(*run).stdout, "dropped for the next runs too"


def test_the_lms_export_takes_the_final_score():
    from types import SimpleNamespace

    from grading.lms.entries import Grades

    book = {"ada": {"09_nn": {"score": 10, "max_score": 12, "final_score": 8}}, "bo": {"09_nn": {"score": 12}}}
    assert Grades(book).cell(SimpleNamespace(student="ada"), "09_nn") == "8"
    assert Grades(book).cell(SimpleNamespace(student="bo"), "09_nn") == "12", "an older gradebook: the score"


def test_a_notebook_timed_by_its_download_gets_no_late_penalty_and_a_warning(tmp_path):
    "An instructor's Canvas class graded with --due: every notebook had the download's time, and everyone was late."
    from grading.grade.autograde import download_times

    report = [
        "download,file,status,student,assignment,time,time_from,note",
        "c.zip,ada_1_2_09_nn.ipynb,placed,ada,09_nn,2026-12-07T18:37:24+00:00,the file's time in the download,",
        "g.zip,bob/09_nn.ipynb,placed,bob,09_nn,2026-11-30T10:00:00+00:00,the LMS's submission time,",
        "c.zip,cy_3_4_10_optimizers.ipynb,placed,cy,10_optimizers,2026-12-07T18:37:24+00:00,the file's time in the download,",
    ]
    (tmp_path / "collect-report.csv").write_text("\n".join(report) + "\n")
    found = [
        (s, a, tmp_path / s / a / f"{a}.ipynb")
        for s, a in (("ada", "09_nn"), ("bob", "09_nn"), ("cy", "10_optimizers"))
    ]
    said = []
    late = download_times(make_policy(["09_nn=2026-12-01T23:59"], penalty="10%/day"), found, said.append)
    assert list(late) == [("ada", "09_nn")]  # bob's time is the LMS's; cy's notebook has no due date
    assert late[("ada", "09_nn")].penalty == 0 and "its download's" in late[("ada", "09_nn")].note
    assert said == [said[0]] and said[0].startswith("warning: late policy not applied to 1 notebook: their time")
    assert download_times(make_policy(), found, said.append) == {}
