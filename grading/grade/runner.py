"""Running grading jobs: one process per submission (grading.grade.job), `workers` of them at a time.

A job that fails for a reason of the grader's own (it crashed, the host killed it, its sandbox could not start, it
outlived every limit) leaves its row *not graded*: no score, the reason in the note, the run's exit status non-zero,
and the next run grades it again. Ctrl-C (or SIGTERM) stops the run at once: no job is started after it, every
running job is killed with its sandboxes (they die with their parent), and nothing already graded is lost.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..common.environment import ONE_BLAS_THREAD
from ..common.notebooks import REPO
from .clock import Budget
from .forkserver import ForkServer, ForkServerGone, Job, kill_group
from .limits import limit_memory
from .spec import FAULT

if TYPE_CHECKING:
    from .spec import Spec

# A job is `python -m grading.grade.job SPEC` (grading/__init__.py leaves out a module that takes a second to import).
JOB = "import sys; from grading.grade.job import main; sys.exit(main())"
JOB_ENV = {
    **ONE_BLAS_THREAD,  # a job per core, no more
    "MPLBACKEND": "Agg",  # the instructor's figures are drawn in the job, for the page (grading.grade.outputs)
}


class Interrupted(Exception):
    "The run was stopped (Ctrl-C): a job killed for that has no result, and none is recorded."


def not_graded(why: str) -> str:
    "The note of a row the grader could not grade, for a reason of its own."
    return f"not graded: {why}. This is a fault of the grader, not of the submission; run autograde again to grade it"


class Runner:
    "Starts job processes and can kill every one of them at once."

    def __init__(self, workers: int, timeout: float, warm: bool = True) -> None:
        self.workers, self.timeout = max(1, workers), timeout
        self.running, self.lock, self.stopping = set(), threading.Lock(), threading.Event()
        self.environment = ""  # where the jobs run, for the reference check's record: here, the grader's own Python
        # warm: jobs are forks of a process that has the grader imported (grading.grade.forkserver); else each a new Python
        self.forkserver = ForkServer(job_env(), REPO) if warm else None

    def start(self, spec_path: Path | str, log: Path, output: IO[str]) -> subprocess.Popen | Job:
        "Start the job for `spec_path`, its output going to `log` (an open file of that path)."
        if self.forkserver is not None:
            try:
                return self.forkserver.start(spec_path, log)
            except ForkServerGone:
                pass  # then as a new Python, as without the fork server
        return subprocess.Popen(
            [sys.executable, "-c", JOB, str(spec_path)],
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=REPO,
            start_new_session=True,  # Ctrl-C reaches the grader alone, which then kills the jobs itself
            env=job_env(),
            preexec_fn=limit_memory,
        )

    def run(self, spec: Spec, spec_path: Path | str) -> tuple[dict | None, str | None]:
        """Run one job; return (result, None) or (None, why it could not be graded). Raises Interrupted when the
        run is being stopped."""
        spec.save(spec_path)
        Path(spec.result).unlink(missing_ok=True)
        log = Path(spec_path).with_suffix(".log")
        with open(log, "w") as output:
            with self.lock:
                if self.stopping.is_set():
                    raise Interrupted()
                process = self.start(spec_path, log, output)
                self.running.add(process)
            try:
                finished = wait(process, Budget(self.timeout), self.stopping)
            finally:
                with self.lock:
                    self.running.discard(process)
            if not finished:
                kill(process)
        if self.stopping.is_set():
            raise Interrupted()
        result = load_result(spec.result)
        if not finished:
            if result is not None:  # the verdict was in: only the feedback page is missing
                result["note"] = "; ".join(
                    n for n in [result["note"], f"no feedback: grading took longer than {self.timeout} s"] if n
                )
                return result, None
            return None, not_graded(
                f"grading took longer than {self.timeout} s (of a quiet machine) and was stopped; if the machine is "
                "very busy, give more with --notebook-timeout"
            )
        if process.returncode == 0 and result is not None:
            return result, None
        return None, not_graded(cause(process.returncode, log))

    def stop(self) -> None:
        "Start no more jobs and kill the running ones (their sandboxes die with them)."
        with self.lock:
            self.stopping.set()
            for process in self.running:
                kill(process)

    def close(self) -> None:
        "Stop the fork server (grading.grade.cluster.ClusterRunner lets go of its cluster)."
        if self.forkserver is not None:
            self.forkserver.close()

    def map(self, function: Callable[[Any], object], items: Sequence[Any], progress: Callable | None = None) -> None:
        "Call `function(item)` for every item, `workers` at a time; on Ctrl-C stop everything, then re-raise."
        pool = concurrent.futures.ThreadPoolExecutor(self.workers)
        try:
            futures = [pool.submit(function, item) for item in items]
            waiting = concurrent.futures.as_completed(futures)
            for future in (progress or (lambda x, **k: x))(
                waiting, total=len(futures), desc="grading", unit="notebook"
            ):
                try:
                    future.result()
                except Interrupted:
                    pass
        except BaseException:
            self.stop()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)


def wait(process: subprocess.Popen | Job, budget: Budget, stopping: threading.Event) -> bool:
    "Wait for the process to end; False when the budget ran out first (or the run is stopping)."
    while process.poll() is None:
        if stopping.is_set() or budget.expired():
            return False
        try:  # returns as the job ends (a sleep here would add its length to every job)
            process.wait(timeout=min(0.2, max(0.01, budget.next_wait())))
        except subprocess.TimeoutExpired:
            pass
    return True


def kill(process: subprocess.Popen | Job) -> None:
    kill_group(process.pid)
    process.wait()


def cause(returncode: int, log: Path | str) -> str:
    "Why a job ended without a result, in words."
    lines = [line for line in Path(log).read_text(errors="replace").strip().splitlines() if line.strip()]
    last = lines[-1][:300] if lines else ""
    if returncode == FAULT:
        return last.removeprefix("grader fault: ")
    if returncode < 0:
        name = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else str(-returncode)
        return f"the grading job was killed ({name}; the host out of memory?)"
    return f"the grading job failed (exit {returncode})" + (f": {last}" if last else "")


def job_env() -> dict[str, str]:
    return {**os.environ, **JOB_ENV, "PATH": job_path()}


def job_path() -> str:
    "PATH for a job: the tools of the grader's own Python first (nbgrader and jupyter start some by name)."
    return os.pathsep.join([os.path.dirname(os.path.abspath(sys.executable)), os.environ.get("PATH", "/usr/bin:/bin")])


def load_result(path: Path | str) -> dict | None:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None  # absent, or left by a grader that was killed: grade again
