"""A call past its wall-clock backstop: one that computes goes on to its CPU limit (on a loaded machine the backstop
ran out first, and an endless loop was told it waited on something); one that sleeps ends at the backstop."""

import subprocess
import sys
import time

import pytest

from conftest import fake_worker
from grading.grade import remote
from grading.sandbox import sandbox


def cpu_after(process, seconds):
    "The sandbox's CPU seconds now and `seconds` later."
    first = sandbox.cpu_seconds_used(process)
    time.sleep(seconds)
    return first, sandbox.cpu_seconds_used(process)


@pytest.mark.skipif(sandbox.problem() is not None, reason="no bubblewrap sandbox here")
def test_the_cpu_of_a_sandbox_is_counted_and_a_sleeping_one_uses_none():
    for code, computing in [("while True: pass", True), ("import time; time.sleep(60)", False)]:
        process = sandbox.start([sandbox.interpreter(), "-I", "-c", code], [], memory_mb=512, cpu_seconds=30)
        try:
            time.sleep(0.5)  # Python started
            first, then = cpu_after(process, 1.5)
        finally:
            sandbox.stop(process)
        assert (then - first > 0.3) if computing else (then - first < 0.1), (code, first, then)


def test_without_a_cgroup_the_process_itself_is_counted():
    process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        first, then = cpu_after(process, 1.5)
    finally:
        process.kill()
        process.wait()
    assert then - first > 0.3, (first, then)


class LateWorker:
    "A worker whose reply comes after `late` backstops, and whose sandbox uses `cpu_per_wait` CPU s in each."

    def __init__(self, late, cpu_per_wait):
        self.late, self.cpu_per_wait, self.waits, self.process = late, cpu_per_wait, 0, None

    def receive(self, budget, overran=None):
        self.waits += 1
        if self.waits <= self.late:
            raise TimeoutError()
        return {"op": "return"}, []


@pytest.mark.parametrize(
    "late, cpu_per_wait, limit, replies, waits",
    [
        (0, 0.0, 10, True, 1),  # on time
        (2, 4.0, 10, True, 3),  # computing (a backstop of 15 s, 4 CPU s in each): waited for until it replies
        (remote.EXTENSIONS + 1, 4.0, 100, False, remote.EXTENSIONS + 1),  # computing, but past every extension
        (2, 10.0, 10, False, 2),  # past its CPU limit of 10 s and the overrun: it ignores the alarm (gina)
        (1, 0.0, 10, False, 1),  # sleeping: the backstop ends it
    ],
)
def test_a_late_call_is_waited_for_while_its_sandbox_computes(monkeypatch, late, cpu_per_wait, limit, replies, waits):
    worker = LateWorker(late, cpu_per_wait)
    monkeypatch.setattr(sandbox, "cpu_seconds_used", lambda process: worker.waits * worker.cpu_per_wait)
    proxy = remote.Remote.__new__(remote.Remote)
    proxy.stopwatch = remote.Stopwatch()
    proxy.budget, proxy.plan = None, {"cell_timeout": limit}
    if replies:
        assert proxy.receive_reply(worker, wait=15, left=15) == ({"op": "return"}, [])
    else:
        with pytest.raises(TimeoutError):
            proxy.receive_reply(worker, wait=15, left=15)
    assert worker.waits == waits


class Notebook:
    "A notebook's time (a clock.Budget) of `seconds`, of which each of the worker's waits takes 15 s."

    def __init__(self, seconds, worker):
        self.seconds, self.worker = seconds, worker

    def remaining(self):
        return self.seconds - 15 * self.worker.waits


@pytest.mark.parametrize(
    "cpu, notebook, left, ending",
    [
        ([5.5, 5.6], 100, 100, remote.Overran),  # past its limit of 5 s, then starved of CPU (CI, red team gina)
        ([1.6, 3.2, 4.8, 6.4, 6.5], 1000, 1000, remote.Overran),  # slowed: past its limit at the last extension
        ([0.0], 100, 100, TimeoutError),  # sleeping: the backstop ends it, whatever the CPU limit
        ([3.0, 3.5], 100, 100, TimeoutError),  # computed, then sleeps under its limit: the backstop
        ([3.0, 4.0], 20, 20, remote.NotebookTimeUp),  # computing under its limit when the notebook's time ran out
        ([3.0], 15, 15, remote.NotebookTimeUp),  # computing, and no notebook time left to wait on
        ([0.0], 5, 100, remote.NotebookTimeUp),  # `left` from before a callback: the notebook's own time counts
    ],
)
def test_a_call_is_ended_with_what_ended_it(monkeypatch, cpu, notebook, left, ending):
    """`cpu`: the sandbox's CPU seconds after each wait of 15 s (the notebook's time goes by as much); the CPU limit
    is 5 s, OVERRUN 2 s, COMPUTING 0.1."""
    monkeypatch.setattr(remote, "COMPUTING", 0.1)
    worker = LateWorker(len(cpu), None)
    monkeypatch.setattr(sandbox, "cpu_seconds_used", lambda process: ([0.0, *cpu])[worker.waits])
    proxy = remote.Remote.__new__(remote.Remote)
    proxy.stopwatch = remote.Stopwatch()
    proxy.budget, proxy.plan = Notebook(notebook, worker), {"cell_timeout": 5}
    with pytest.raises(TimeoutError) as raised:
        proxy.receive_reply(worker, wait=15, left=left)
    assert type(raised.value) is ending
    assert worker.waits == len(cpu)
    assert [e[0] for e in proxy.stopwatch.endings] == [ending.__name__]  # for TINYTORCH_TIMINGS


def test_a_call_past_its_limit_has_a_moment_for_its_alarms_reply(monkeypatch):
    "An endless loop that obeys its alarm (red team frank), slowed by a busy machine: its reply comes after the limit."
    worker = LateWorker(4, None)
    monkeypatch.setattr(sandbox, "cpu_seconds_used", lambda process: [0.0, 1.6, 3.2, 4.8, 6.41][worker.waits])
    proxy = remote.Remote.__new__(remote.Remote)
    proxy.stopwatch = remote.Stopwatch()
    proxy.budget, proxy.plan = Notebook(1000, worker), {"cell_timeout": 6.4}
    assert proxy.receive_reply(worker, wait=15, left=1000) == ({"op": "return"}, [])
    assert worker.waits == 5


STARTED = 'os.write(out, wire.pack({"op": "hello"}, []) + wire.pack({"op": "ready"}, []))\n'
SPIN = "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPROF})  # as gina of the red team does\nwhile True:\n    pass\n"
TRICKLE = """os.write(out, struct.pack("<Q", 1000))  # a reply of 1,000 bytes, sent a byte every 0.3 s


def trickle():
    for _ in range(200):
        time.sleep(0.3)
        os.write(out, b"x")


threading.Thread(target=trickle, daemon=True).start()
"""


def call_overruns(tmp_path, monkeypatch, code):
    """Start a worker that runs `code` once started, and wait for a reply to a call with a CPU limit of 1 s and an
    OVERRUN of 0.5 s; return the sandbox's CPU seconds the wait took. Overran must end it."""
    monkeypatch.setattr(remote, "OVERRUN", 0.5)  # a second and a half of CPU in all
    script = fake_worker(tmp_path, STARTED + code)
    setup = remote.WorkerSetup({"op": "plan", "cell_timeout": 1}, [], {"memory_mb": 256}, False, str(script))
    worker = remote.Worker(setup, remote.Stopwatch())
    proxy = remote.Remote.__new__(remote.Remote)
    proxy.stopwatch = remote.Stopwatch()
    proxy.budget, proxy.plan = None, {"cell_timeout": 1}
    try:
        before = sandbox.cpu_seconds_used(worker.process)
        with pytest.raises(remote.Overran):
            proxy.receive_reply(worker, wait=60, left=60)
        used = sandbox.cpu_seconds_used(worker.process) - before
        (ending,) = proxy.stopwatch.endings  # its record holds the CPU seconds read, not the threshold
        assert ending[0] == "Overran" and 1.5 <= ending[1] <= used + 0.01 and ending[1] != 1.5, ending
        return used
    finally:
        worker.close()


def test_a_call_that_computes_past_its_cpu_limit_is_ended_then_not_at_the_backstop(tmp_path, monkeypatch):
    used = call_overruns(tmp_path, monkeypatch, SPIN)
    assert 1.5 <= used < 3.5, f"ended after {used:.1f} s of CPU, not at 1.5 (its limit of 1 s and OVERRUN)"


def test_a_call_that_trickles_its_reply_while_it_spins_is_ended_at_its_overrun(tmp_path, monkeypatch):
    "Its bytes came more often than the once-a-second look at the CPU, which then never came: the backstop did."
    call_overruns(tmp_path, monkeypatch, TRICKLE + SPIN)
