"""The grader's own faults and the instructor's interruptions: a job killed from outside leaves its row not graded
(and the next run grades it), Ctrl-C ends every job and sandbox at once and loses nothing, and a busy machine gives
the table of a quiet one."""

import copy
import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO
from grading.common.answers import solved
from grading.common.notebooks import read_notebook, write_notebook

pytestmark = pytest.mark.slow
NB = "02_function"
SLOW_RULE = """    def apply(self, grad_output):
        (x,) = self.saved_tensors
        import time

        end = time.process_time() + 1.0  # an honest but slow rule: one second of CPU per call
        while time.process_time() < end:
            pass
        return (grad_output * 2 * x,)"""


def start(submissions, out, *options):
    return subprocess.Popen(
        [sys.executable, "-m", "grading", "autograde", str(submissions), "--out", str(out), *options],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def table(out):
    with open(Path(out) / "grades.csv") as f:
        return {(r["student"], r["assignment"]): (r["score"], r["max_score"], r["note"]) for r in csv.DictReader(f)}


def processes_mentioning(text):
    """The pids of processes whose command line or output file holds `text`: jobs and sandboxes name the run's
    folder on their command line, and a job writes into its log, named after its spec (grading.grade.forkserver)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            named = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            if text in named or text in os.readlink(f"/proc/{pid}/fd/1"):
                found.append(int(pid))
        except OSError:
            pass
    return found


def wait_for(condition, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"waited {timeout} s for {what}")


@pytest.fixture(scope="module")
def alice(kit):
    released = read_notebook(kit / NB / f"{NB}.ipynb")
    return solved(released, read_notebook(REPO / "notebooks" / f"{NB}.ipynb"))


def make_class(root, notebook, students):
    for student in students:
        write_notebook(notebook, Path(root) / student / NB / f"{NB}.ipynb")
    return Path(root)


def jobs_of(out, spec):
    """The processes of the run into `out` that hold `spec` (its job, named after its spec file): other tests grade
    notebooks of the same student and name at the same time (pytest-xdist's other worker), and must not be hit."""
    mine = set(processes_mentioning(str(out)))
    return [pid for pid in processes_mentioning(spec) if pid in mine]


def test_a_job_killed_from_outside_is_not_graded_and_the_next_run_grades_it(alice, tmp_path):
    subs = make_class(tmp_path / "subs", alice, ["alice"])
    out = tmp_path / "out"
    run = start(subs, out, "--workers", "1")
    victim = wait_for(lambda: jobs_of(out, f"alice__{NB}.spec"), 600, "alice's job")
    os.kill(victim[0], signal.SIGKILL)  # as the kernel's out-of-memory killer would
    _, errors = run.communicate(timeout=600)
    assert run.returncode == 1, errors
    score, _, note = table(out)[("alice", NB)]
    assert score == "" and note.startswith("not graded: the grading job was killed (SIGKILL"), note
    again = start(subs, out, "--workers", "1")
    _, errors = again.communicate(timeout=600)
    assert again.returncode == 0, errors
    assert table(out)[("alice", NB)][:2] == ("4", "4")


def test_ctrl_c_ends_every_job_and_sandbox_and_the_next_run_resumes(alice, tmp_path):
    students = ["ann", "ben", "cat", "dan", "eve"]
    subs = make_class(tmp_path / "subs", alice, students)
    out = tmp_path / "out"
    run = start(subs, out, "--workers", "1")
    wait_for(lambda: list((out / "results").glob("*/*.json")), 900, "the first graded submission")
    wait_for(lambda: jobs_of(out, f"__{NB}.spec"), 300, "the next job")
    run.send_signal(signal.SIGINT)
    started = time.monotonic()
    _, errors = run.communicate(timeout=60)
    stopped_in = time.monotonic() - started
    assert run.returncode == 130, errors
    assert stopped_in < 10, f"Ctrl-C took {stopped_in:.1f} s to act"  # measured: well under 3 s on a quiet machine
    time.sleep(0.5)
    assert processes_mentioning(str(out)) == [], "a job or sandbox of the stopped run is still alive"
    kept = {s for (s, _), row in table(out).items() if row[0] == "4"}
    assert kept, "the submissions graded before Ctrl-C are kept"
    # an instructor's finding: the export took the stopped run's table, the rest as not handed in
    export = [sys.executable, "-m", "grading", "export-grades", str(out), "--format", "gradescope"]
    refused = subprocess.run([*export, "--out", str(tmp_path / "early")], capture_output=True, text=True, cwd=REPO)
    assert refused.returncode == 2 and "the last autograde run stopped before it graded every submission (" in (
        refused.stderr
    ), refused.stderr
    assert f"{len(students) - len(kept)} left" in refused.stderr and not (tmp_path / "early").exists()
    again = start(subs, out, "--workers", "1")
    output, errors = again.communicate(timeout=900)
    assert again.returncode == 0, errors
    assert f"{len(kept)} submissions already graded (unchanged since): kept" in output
    assert {s: row[0] for (s, _), row in table(out).items()} == dict.fromkeys(students, "4")
    exported = subprocess.run([*export, "--out", str(tmp_path / "done")], capture_output=True, text=True, cwd=REPO)
    assert exported.returncode == 0, exported.stderr


def test_a_busy_machine_gives_the_table_of_a_quiet_one(alice, tmp_path):
    slow = copy.deepcopy(alice)
    for cell in slow.cells:
        if "class SquareBackward" in cell.source:
            head = cell.source.split("    def apply")[0]
            cell.source = head + SLOW_RULE
    subs = tmp_path / "subs"
    make_class(subs, alice, ["alice"])
    make_class(subs, slow, ["slowpoke"])
    options = ["--cell-timeout", "2", "--notebook-timeout", "600"]
    quiet = start(subs, tmp_path / "quiet", *options)
    _, errors = quiet.communicate(timeout=900)
    assert quiet.returncode == 0, errors
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(4 * (os.cpu_count() or 1))]
    try:
        time.sleep(2)  # the load is there before grading starts
        loaded = start(subs, tmp_path / "busy", *options)
        _, errors = loaded.communicate(timeout=1800)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    assert loaded.returncode == 0, errors
    assert table(tmp_path / "busy") == table(tmp_path / "quiet")
    assert table(tmp_path / "quiet")[("slowpoke", NB)][:2] == ("4", "4")


def test_a_page_the_grader_cannot_make_loses_no_score(alice, tmp_path):
    """A renderer failure (a pasted image's reference or an unclosed <style> did it, before page.py handled them) kept
    the job from writing its result: the row was 'not graded'. Now the score stands and the note says why there is no
    page. The failure is made here by a sitecustomize that breaks the page's renderer in every grading process."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(
        "import grading.reports.feedback as feedback\n"
        "made = feedback.publish\n"
        "def publish(path, *args, **kwargs):\n"
        "    if 'alice' in str(path):  # (the reference solution's page, checked first, is made)\n"
        "        raise ValueError('not enough values to unpack (the renderer, broken on purpose)')\n"
        "    return made(path, *args, **kwargs)\n"
        "feedback.publish = publish\n"
    )
    subs = make_class(tmp_path / "subs", alice, ["alice"])
    (tmp_path / "out" / "feedback" / "alice").mkdir(parents=True)
    (tmp_path / "out" / "feedback" / "alice" / f"{NB}.html").write_text("an earlier run's page")
    env = {**os.environ, "PYTHONPATH": f"{hooks}{os.pathsep}{REPO}"}
    done = subprocess.run(
        [sys.executable, "-m", "grading", "autograde", str(subs), "--out", str(tmp_path / "out")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    score, most, note = table(tmp_path / "out")[("alice", NB)]
    assert float(score) == float(most) == 4 and "no feedback page: the grader could not make it" in note, note
    assert not (tmp_path / "out" / "feedback" / "alice" / f"{NB}.html").exists()


# Seconds of a quiet machine's time, as the grader counts them (grading/grade/clock.py: a busy machine's second
# counts as less), so that twelve calls of 4 s outrun the notebook's 20 s however busy the machine is (other tests
# run at the same time on pytest-xdist's workers); a plain time.sleep fit in the stretched budget under a load of 2.
QUIET_SLEEP = """    import os, time

    def _quiet_sleep(seconds):
        left = seconds
        while left > 0:
            started = time.monotonic()
            time.sleep(0.5)
            try:
                fields = open("/proc/loadavg").read().split()
                busy = max(float(fields[0]), int(fields[3].split("/")[0]) - 1) / (os.cpu_count() or 1)
            except (OSError, ValueError, IndexError):
                busy = 1.0
            left -= (time.monotonic() - started) / max(1.0, busy)

"""


def test_calls_that_sleep_past_the_notebooks_time_end_in_a_grade_not_a_fault_of_the_grader(kit, tmp_path):
    """Red team round 6: each call slept just under the per-call limit (no CPU, so no CPU limit), twelve of them in
    a hidden cell, and the job outran its limit: "not graded, a fault of the grader", at every run, exit 1. No call
    waits past the notebook's time now: the test it ran in fails, the cells after it are not run, and it is graded."""
    nb = "01_tensor"
    released = read_notebook(kit / nb / f"{nb}.ipynb")

    def sleepy(grade_id, code):
        old = "    try:\n        return Tensor(numpy_op(a.data, b.data))"
        if old not in code:
            return code
        hidden_shapes = "    if a.shape in [(3, 1), (5,), (2, 1, 3)]:  # the hidden test's only\n"
        return code.replace(old, QUIET_SLEEP + hidden_shapes + "        _quiet_sleep(4)\n" + old, 1)

    notebook = solved(released, read_notebook(REPO / "notebooks" / f"{nb}.ipynb"), edit=sleepy)
    write_notebook(notebook, tmp_path / "subs" / "sleepy" / nb / f"{nb}.ipynb")
    run = start(tmp_path / "subs", tmp_path / "out", "--cell-timeout", "5", "--notebook-timeout", "20")
    output, errors = run.communicate(timeout=900)
    assert run.returncode == 0, output + errors  # graded: a fault of the grader exits 1
    score, maximum, note = table(tmp_path / "out")[("sleepy", nb)]
    assert float(score) < float(maximum) and "not every test ran: the time limit for this notebook" in note, note
