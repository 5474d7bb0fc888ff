"""A warm process that starts the grading jobs: each job is a fork of it, fresh, with the grader already imported.

A job started as a new Python (`python -c JOB`) spends its first second or two importing what every job imports
(nbformat, NumPy, nbconvert and its templates, nbdev) before it does any grading: for a short notebook that is most
of the job. The fork server is one Python, started once per run, that imports all of that and then does nothing but
fork: each job is a child of it, with its own process, session and memory, and starts where the imports end.

Nothing of one submission can reach another's job: the server never grades, reads a submission or runs anything of
a student's; it only imports the grader's modules and forks. A job's child is exactly what a fresh job would be, less
the import time; the student's code still runs in its own fresh sandbox (grading.sandbox.sandbox), started by the job.

The protocol, one JSON line each way, over the server's stdin and stdout:
  → {"id": N, "spec": SPEC_PATH, "log": LOG_PATH}      start a job (grading.grade.job.main([SPEC_PATH]), output to LOG)
  ← {"id": N, "pid": PID}                              it started, as process PID (its own session: kill -PID)
  ← {"pid": PID, "code": CODE}                         it ended: CODE as subprocess.Popen.returncode gives it
When its stdin closes (the grader ended, or was killed), the server kills every job it started and exits.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import traceback
from pathlib import Path

SERVE = "from grading.grade.forkserver import serve; serve()"
# What every job imports, imported once here (the job's own imports are then found in sys.modules).
PRELOAD = (
    "numpy",
    "nbformat",
    "grading.grade.job",
    "grading.grade.verdict",
    "grading.reports.page",
    "grading.reports.feedback",
    "grading.student.export",
    "nbconvert",
    "nh3",
    "nbdev.export",
    "matplotlib.pyplot",  # the instructor's figures (09-16) are drawn in the job: 0.5 s of import each
)


# -- The server (its own process) ------------------------------------------------------------------------------------


def preload() -> None:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    warm_up()


def warm_up() -> None:
    """Render a page with a cell of each kind: nbconvert's templates, and the regular expressions of nbconvert, the
    Markdown parser, bleach and Pygments, are compiled once here instead of in every job."""
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    from ..reports.page import render

    outputs = [
        new_output("stream", name="stdout", text="ok\n"),
        new_output("execute_result", data={"text/plain": "1", "text/html": "<b>1</b>"}, execution_count=1),
        new_output("error", ename="ValueError", evalue="no", traceback=["ValueError: no"]),
    ]
    cells = [
        new_markdown_cell(
            "# A\n\n*b* `c` [d](https://e.org) $x^2$\n\n| f | g |\n|---|---|\n| 1 | 2 |\n\n```python\nh = 1\n```"
        ),
        new_code_cell("import numpy as np\n\ndef f(x):\n    return np.exp(x)  # i", outputs=outputs, execution_count=1),
    ]
    render(new_notebook(cells=cells), "warm-up", "<p>warm-up</p>")
    draw_figure()


def draw_figure() -> None:
    "Draw a figure with text, as a cell's picture is drawn for the page: Agg, the fonts and the PNG writer load here."
    import matplotlib.pyplot as plt

    from .outputs import png_of

    figure, axes = plt.subplots(figsize=(2, 1))
    axes.plot([0, 1], [1, 0], label="warm-up")
    axes.set_title("warm-up")
    axes.legend()
    png_of(figure)
    plt.close(figure)


def serve() -> None:
    preload()
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # a stray print must not write into the protocol
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children = set()
    requests = b""
    while True:
        ready, _, _ = select.select([0, wake_read], [], [])
        if wake_read in ready:
            os.read(wake_read, 4096)
        for pid, code in reap(children):
            replies.write(json.dumps({"pid": pid, "code": code}) + "\n")
        if 0 not in ready:
            continue
        chunk = os.read(0, 65536)
        if not chunk:  # the grader is gone: so are its jobs
            for pid in children:
                kill_group(pid)
            os._exit(0)
        requests += chunk
        *lines, requests = requests.split(b"\n")
        for line in lines:
            request = json.loads(line)
            server = os.getpid()
            pid = os.fork()
            if pid == 0:
                run_child(request, server, [0, replies.fileno(), wake_read, wake_write])
            children.add(pid)
            replies.write(json.dumps({"id": request["id"], "pid": pid}) + "\n")


def reap(children: set[int]) -> list[tuple[int, int]]:
    "The jobs that ended since the last look: (pid, return code as Popen gives it)."
    ended = []
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        children.discard(pid)
        ended.append((pid, os.waitstatus_to_exitcode(status)))
    return ended


def run_child(request: dict, server: int, server_fds: list[int]) -> None:
    "In the forked child: become a job as `python -c JOB SPEC` would be, run it, and exit with its status."
    code = 1
    try:
        from .limits import die_with_parent

        die_with_parent()
        if os.getppid() != server:  # the server died before that: nobody would kill this job
            os._exit(1)
        os.setsid()  # its own session and process group: killing the group kills the job and its sandboxes
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        for fd in [log, *server_fds[1:]]:
            os.close(fd)
        from .limits import limit_memory

        limit_memory()
        from .job import main

        code = main([request["spec"]])
    except BaseException:  # noqa: BLE001 - whatever happened, the job must end here with a status, never return
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) else 1)


def kill_group(pid: int) -> None:
    "Kill the job `pid` and its process group (its sandboxes); the job alone if it has no group yet."
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:  # a job forked a moment ago may not lead its own process group yet
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


# -- The grader's side -----------------------------------------------------------------------------------------------


class ForkServerGone(Exception):
    "The fork server died (the host killed it?): the jobs it had running have no result."


class Job:
    "A job the fork server started, with the part of subprocess.Popen's interface grading.grade.runner uses."

    def __init__(self, pid: int, ended: threading.Event) -> None:
        self.pid, self.returncode, self._ended = pid, None, ended

    def poll(self) -> int | None:
        if self.returncode is None and self._ended.is_set():
            self.returncode = self._code
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        self._ended.wait(timeout)
        return self.poll()


class ForkServer:
    "The grader's handle on the fork server: started on first use, closed with the run."

    def __init__(self, env: dict[str, str], cwd: Path | str) -> None:
        self.env, self.cwd = env, cwd
        self.lock = threading.Lock()
        self.process = None
        self.started, self.jobs, self.ended_early = {}, {}, {}
        self.count = 0

    def start(self, spec_path: Path | str, log_path: Path | str, timeout: float = 60) -> Job:
        "Start one job; its Job (Popen-like). Raises ForkServerGone if the server is not there or does not answer."
        with self.lock:
            if self.process is None or self.process.poll() is not None:
                self.launch(Path(spec_path).parent)
            self.count += 1
            request, answered = self.count, threading.Event()
            self.started[request] = [answered, None]
            line = json.dumps({"id": request, "spec": str(spec_path), "log": str(log_path)}) + "\n"
            try:
                self.process.stdin.write(line.encode())
                self.process.stdin.flush()
            except OSError as error:
                raise ForkServerGone(f"the fork server is gone ({error})") from error
        if not answered.wait(timeout) or self.started[request][1] is None:
            self.started.pop(request, None)
            raise ForkServerGone("the fork server did not start the job")
        return self.started.pop(request)[1]

    def launch(self, folder: Path | str) -> None:
        "Start the server; `folder` (the run's jobs) is on its command line, and so on its jobs', for ps to show."
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVE, str(folder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=self.cwd,
            env=self.env,
            start_new_session=True,  # Ctrl-C reaches the grader alone, which then kills the jobs itself
        )
        threading.Thread(target=self.listen, args=(self.process,), daemon=True).start()

    def listen(self, process: subprocess.Popen) -> None:
        "Read the server's replies: a job started, a job ended. When the server dies, every job it ran ends."
        for line in process.stdout:
            reply = json.loads(line)
            with self.lock:
                if "id" in reply:
                    ended = threading.Event()
                    job = Job(reply["pid"], ended)
                    self.jobs[reply["pid"]] = job
                    waiting = self.started.get(reply["id"])
                    if waiting is not None:
                        waiting[1] = job
                        waiting[0].set()
                else:
                    job = self.jobs.pop(reply["pid"], None)
                    if job is not None:
                        job._code = reply["code"]
                        job._ended.set()
        process.wait()
        with self.lock:
            for job in self.jobs.values():
                job._code = -signal.SIGKILL  # its children die with the server (grading.grade.job.die_with_parent)
                job._ended.set()
            self.jobs.clear()
            for waiting in self.started.values():
                waiting[0].set()

    def close(self) -> None:
        "Stop the server; it kills the jobs still running."
        with self.lock:
            process, self.process = self.process, None
        if process is not None:
            try:
                process.stdin.close()
            except OSError:
                pass
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
