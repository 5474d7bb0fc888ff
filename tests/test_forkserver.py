"""The fork server (grading.grade.forkserver): every grading job is a fresh fork of a process that has the grader imported,
in a session of its own, with the status a new process would have; jobs die with the server, a dead server is
replaced, and no job starts from what an earlier job left."""

import csv
import os
import shutil
import signal
import time

import pytest

from conftest import REPO, run_cli
from grading.common.notebooks import read_notebook, write_notebook
from grading.grade.forkserver import ForkServer
from grading.grade.runner import job_env, kill


@pytest.fixture(scope="module")
def server():
    "One server for these tests (a killed or closed one is started again by the next job)."
    made = ForkServer(job_env(), REPO)
    yield made
    made.close()


def waiting_job(server, folder):
    "A job that waits (its spec is a named pipe nobody writes), so that it can be looked at while it runs."
    spec = folder / "spec.json"
    os.mkfifo(spec)
    return server.start(spec, folder / "spec.log")


def alive(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_job_ends_with_the_status_and_the_log_a_new_process_would_have(server, tmp_path):
    job = server.start(tmp_path / "missing.json", tmp_path / "job.log")
    assert job.wait(60) == 1
    assert "FileNotFoundError" in (tmp_path / "job.log").read_text()


def test_a_job_has_its_own_session_and_killing_it_reports_the_signal(server, tmp_path):
    job = waiting_job(server, tmp_path)
    deadline = time.monotonic() + 30
    while os.getsid(job.pid) != job.pid and time.monotonic() < deadline:
        time.sleep(0.01)
    assert os.getsid(job.pid) == job.pid != os.getsid(0)
    assert job.poll() is None
    kill(job)  # as grading.grade.runner does: the job's whole process group
    assert job.returncode == -signal.SIGKILL and not alive(job.pid)


def test_jobs_die_with_their_server_and_the_next_job_gets_a_new_one(server, tmp_path):
    (tmp_path / "a").mkdir()
    job = waiting_job(server, tmp_path / "a")
    first = server.process
    first.kill()
    assert job.wait(30) == -signal.SIGKILL
    deadline = time.monotonic() + 30
    while alive(job.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(job.pid), "a job outlived its fork server"
    again = server.start(tmp_path / "missing.json", tmp_path / "again.log")
    assert server.process is not first and again.wait(60) == 1


def test_closing_the_server_kills_the_jobs_it_still_runs(server, tmp_path):
    job = waiting_job(server, tmp_path)
    server.close()
    deadline = time.monotonic() + 30
    while alive(job.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(job.pid)


LEAK_CHECK = """
import sys
import grading
assert "nbconvert" in sys.modules, "this job is not a fork of the warm fork server"
assert not hasattr(grading, "earlier_job"), "a job started with what an earlier job left"
grading.earlier_job = True
"""


@pytest.mark.slow
def test_every_job_starts_from_the_servers_state_and_not_an_earlier_jobs(kit, tmp_path):
    """An instructor's test cell (it runs in the job's own process) that fails if the process is not a fork of the
    warm server or holds what another job put there: three students, one worker, every one full marks."""
    from grading.common.answers import solved

    shutil.copytree(REPO / "notebooks", tmp_path / "nbs", ignore=shutil.ignore_patterns(".*"))
    path = tmp_path / "nbs" / "01_tensor.ipynb"
    nb = read_notebook(path)
    test_cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))
    test_cell.source += "\n" + LEAK_CHECK
    write_notebook(nb, path)
    alice = solved(read_notebook(kit / "01_tensor" / "01_tensor.ipynb"), nb)
    for student in ["ann", "ben", "cat"]:
        write_notebook(alice, tmp_path / "subs" / student / "01_tensor" / "01_tensor.ipynb")
    result = run_cli(
        *("autograde", tmp_path / "subs", "--out", tmp_path / "out", "--notebooks", tmp_path / "nbs"),
        *("--workers", "1"),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    with open(tmp_path / "out" / "grades.csv") as table:
        rows = [(r["student"], r["score"], r["max_score"], r["note"]) for r in csv.DictReader(table)]
    assert [(student, score == most) for student, score, most, _ in rows] == [
        (s, True) for s in ["ann", "ben", "cat"]
    ], rows
