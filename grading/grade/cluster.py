"""Grading on a Dask cluster: `autograde SUBMISSIONS --out DIR --cluster tcp://scheduler:8786` (or `local:N`).

Dask (`dask.distributed`) is a well-kept library for exactly this: a scheduler that hands tasks to workers on other
machines, watches them, and gives the task of a worker that died to another one. Here one task is one submission, and
the task does on the worker what the local runner does here (grading.grade.runner.Runner.run): it starts the grading job
(grading.grade.job) in a process of its own (a fork of the worker's fork server, grading.grade.forkserver, as locally), whose
student code runs in its own sandbox, and reads back what the job wrote.
So the Dask worker's process gets only plain data from the job (the result as JSON, the feedback page and the kept
notebook as text), and gives back only that: this process writes the results, the table, the gradebook and the pages
with the same code as a local run (grading.grade.autograde).

Nothing is assumed shared: a task carries the submission and the instructor's notebook as bytes and the run's limits;
the prepared course (the reference and released packages, the release notebooks; grading.grade.autograde.prepare) travels
once per worker as one archive. The course secret stays here: a task has only its variant id, as a local job has.
The workers need the course installed (the same checkout of the grader: `check_workers` compares it) and bubblewrap.

A worker that dies mid-task: the scheduler gives its task to another worker (`allowed-failures` times, then the task
fails with KilledWorker and its row is not graded). A task's only effect is its reply, which this process writes
once, so a task run twice is counted once. A run stopped here (Ctrl-C, a crash) keeps every result written so far,
and the next run grades what is missing, as locally. When the client stops (Ctrl-C) or goes away, Dask cancels its
tasks; one already running notices within CANCEL_CHECK seconds and kills its job and sandbox (stop_when_cancelled).
"""

import functools
import hashlib
import io
import json
import os
import re
import sys
import tarfile
import tempfile
import threading
from dataclasses import asdict, replace
from pathlib import Path

from ..common.errors import GradingError
from ..common.notebooks import REPO, write_atomic
from ..sandbox.sandbox import problem
from .forkserver import ForkServer
from .heldout import FILE_NAME
from .runner import Interrupted, Runner, job_env, not_graded
from .spec import Spec

INSTALL = 'pip install "dask[distributed]"'
CONNECT_TIMEOUT = 20  # seconds to reach the scheduler before the run stops with an error
WORKER_WAIT = 120  # seconds to wait for the cluster's first worker (a batch system may take a while to start one)
LOST_SCHEDULER = "scheduler-connection-lost"  # why Dask cancels a client's futures when its scheduler is gone
CANCEL_CHECK = 0.5  # seconds between a running task's looks at whether it was cancelled
IN_FLIGHT = 256  # tasks this process keeps submitted at once, at least (the scheduler queues them for its workers)
RETRIES = 1  # a task that raised on its worker (not a grading failure: a worker's own error) is tried once more
COURSE_FOLDERS = ["reference", "released", "master/release"]  # of OUT/.grading: what a job reads there
SKIPPED = {"__pycache__", ".ipynb_checkpoints"}  # not sent: each worker's Python writes its own
OTHER_GRADER = (
    "this Dask worker runs another version of the grader: install the same checkout of the course on every worker"
)


def check_address(address: str) -> None:
    """GradingError for a --cluster that is neither local:N nor a scheduler's address (tcp://HOST:8786): said before
    anything is written, as an unreachable scheduler is said before anything is graded."""
    if address.startswith("local:"):
        count = address.removeprefix("local:")
        if not count.isdigit() or int(count) < 1:
            raise GradingError(f"--cluster {address}: expected local:N with N the number of workers, e.g. local:2")
    elif not re.fullmatch(r"([a-z]+://)?[\w.-]+(:\d+)?|[a-z]+://\[[0-9a-fA-F:]+\](:\d+)?", address):
        raise GradingError(
            f"--cluster {address!r}: expected local:N or the address of a Dask scheduler, tcp://HOST:8786"
        )


def start_client(address: str) -> object:
    """A dask.distributed Client of the scheduler at `address`, or of a new LocalCluster of N workers for `local:N`;
    GradingError when Dask is not installed or the scheduler cannot be reached."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise GradingError(f"--cluster needs Dask's distributed scheduler, which is not installed: {INSTALL}") from None
    check_address(address)
    if address.startswith("local:"):
        count = address.removeprefix("local:")
        cluster = LocalCluster(n_workers=int(count), threads_per_worker=1, dashboard_address=None)
        return Client(cluster)
    try:
        return Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as error:
        raise GradingError(
            f"--cluster {address}: cannot reach a Dask scheduler there ({str(error)[:300]}); start one with "
            "`dask scheduler` and give its address (tcp://HOST:8786), or use local:N; nothing was graded"
        ) from None


class ClusterRunner(Runner):
    "Runs grading jobs as Dask tasks, with the local Runner's interface (grading.grade.autograde calls it the same way)."

    def __init__(self, address: str, timeout: float, sandboxed: bool) -> None:
        super().__init__(IN_FLIGHT, timeout, warm=False)
        self.address, self.client = address, start_client(address)
        try:
            self.environment, self.worker_count = check_workers(self.client, address, sandboxed)
        except BaseException:
            self.close()
            raise
        self.workers = max(IN_FLIGHT, 4 * self.worker_count)  # a big cluster is never kept waiting for tasks
        self.course, self.course_lock = None, threading.Lock()
        self.held_out = {}  # {the instructor's held-out digits' file: the future of its bytes, sent once per run}

    def run(self, spec: Spec, spec_path: str | Path) -> tuple[dict | None, str | None]:
        """Grade one submission on a worker; (result, None) or (None, why not graded), as Runner.run. Writes the
        feedback page and the kept notebook here."""
        task, course, held_out = make_task(spec, self.timeout), self.course_future(spec), self.held_out_future(spec)
        with self.lock:
            if self.stopping.is_set():
                raise Interrupted()
            future = self.client.submit(
                grade_task, task, course, held_out, pure=False, retries=RETRIES, key=task_key(spec)
            )
            self.running.add(future)
        try:
            reply = future.result()
        except Exception as error:  # noqa: BLE001  (KilledWorker, a lost scheduler, a worker's error: not graded)
            if self.stopping.is_set():
                raise Interrupted() from None
            if LOST_SCHEDULER in str(error):  # every task of the run fails so at once: one short sentence each
                return None, not_graded(
                    f"the connection to the Dask scheduler ({self.address}) was lost before this submission's task "
                    "ended; start the scheduler again (or grade here with --workers N)"
                )
            return None, not_graded(f"the Dask task failed: {type(error).__name__}: {str(error)[:300]}")
        finally:
            with self.lock:
                self.running.discard(future)
        if reply["result"] is not None:
            keep_files(spec, reply)
        return reply["result"], reply["failure"]

    def course_future(self, spec: Spec) -> object:
        "The prepared course as one archive, sent to the cluster once per run (a task of its own: never lost)."
        with self.course_lock:
            if self.course is None:
                data = pack_course(Path(spec.reference).parent)
                digest = hashlib.sha256(data).hexdigest()[:16]
                self.course = self.client.submit(bytes, data, key=f"tinytorch-course-{digest}")
            return self.course

    def held_out_future(self, spec: Spec) -> object:
        """The instructor's held-out digits (grading.grade.heldout) for a task whose hidden tests measure with them, sent
        once per run as a task of its own, as the course is; None for the others."""
        if not spec.held_out_digits:
            return None
        with self.course_lock:
            if spec.held_out_digits not in self.held_out:
                data = Path(spec.held_out_digits).read_bytes()
                digest = hashlib.sha256(data).hexdigest()[:16]
                self.held_out[spec.held_out_digits] = self.client.submit(
                    bytes, data, key=f"tinytorch-held-out-{digest}"
                )
            return self.held_out[spec.held_out_digits]

    def stop(self) -> None:
        "Start no more tasks and cancel the submitted ones (a task already running then kills its job: stop_when_cancelled)."
        with self.lock:
            self.stopping.set()
            futures = list(self.running)
        if futures:
            self.client.cancel(futures)

    def close(self) -> None:
        "Let go of the cluster (and end it, for local:N)."
        cluster = self.client.cluster
        self.client.close()
        if cluster is not None:
            cluster.close()


# -- Here: what a task carries, and what comes back ------------------------------------------------------------------


def task_key(spec: Spec) -> str:
    token = hashlib.sha256(os.urandom(16)).hexdigest()[:8]
    return f"grade-{spec.student}-{spec.assignment}-{token}"


def make_task(spec: Spec, timeout: float) -> dict:
    "One submission as plain data: the spec's options, the notebooks as bytes, where the release is in the course."
    state = Path(spec.reference).parent
    return {
        "spec": asdict(spec),
        "submitted": Path(spec.submitted).read_bytes(),
        "instructor": Path(spec.instructor).read_bytes(),
        "released": str(Path(spec.released).relative_to(state)),
        "timeout": timeout,
        "grader": grader_digest(),
    }


def pack_course(state: Path) -> bytes:
    "The folders of OUT/.grading a job reads, as a gzipped tar archive (bytes)."
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for folder in COURSE_FOLDERS:
            archive.add(
                state / folder,
                arcname=folder,
                filter=lambda info: None if SKIPPED & set(Path(info.name).parts) else info,
            )
    return buffer.getvalue()


def keep_files(spec: Spec, reply: dict) -> None:
    "Write what the worker's job wrote (the page, the kept notebook) where a local job writes them."
    for path, text in [(spec.feedback, reply["feedback"]), (spec.page, reply["page"])]:
        if not path:
            continue
        if text is None:
            Path(path).unlink(missing_ok=True)
        else:
            write_atomic(path, text)


# -- On the worker ---------------------------------------------------------------------------------------------------


def grade_task(task: dict, course: bytes, held_out: bytes | None = None) -> dict:
    """Grade one submission on a Dask worker, in a folder of its own (mode 0700), with the local runner: the job is a
    process of its own and the student's code runs in its sandbox; `held_out`, the bytes of the instructor's held-out
    digits where its hidden tests measure with them, goes into that folder, never into the sandbox. Returns plain data: {"result": the result (a dict
    read from the job's JSON) or None, "failure": why it was not graded or None, "feedback": the page (text) or None,
    "page": the kept notebook (text) or None}."""
    if task["grader"] != grader_digest():  # a worker that joined after check_workers, with another grader
        return {
            "result": None,
            "failure": not_graded(f"{OTHER_GRADER} ({getattr(this_worker(), 'address', 'not on a Dask worker')})"),
            "feedback": None,
            "page": None,
        }
    worker = this_worker()  # the task's folder in its worker's own: Dask removes what a killed worker left there
    with tempfile.TemporaryDirectory(prefix="tinytorch-task-", dir=worker and worker.local_directory) as folder:
        folder = Path(folder)
        with tarfile.open(fileobj=io.BytesIO(course), mode="r:gz") as archive:
            archive.extractall(folder / "course", filter="data")
        spec = worker_spec(task, folder)
        (folder / "scratch").mkdir()
        Path(spec.submitted).write_bytes(task["submitted"])
        Path(spec.instructor).write_bytes(task["instructor"])
        if spec.held_out_digits:
            if held_out is None:  # a task made by another version of the grader: not graded, never graded without them
                raise GradingError("the task needs the instructor's held-out digits and none came with it")
            Path(spec.held_out_digits).write_bytes(held_out)
        runner = Runner(1, task["timeout"], warm=False)
        runner.forkserver = worker_forkserver()
        done = threading.Event()
        stop_when_cancelled(worker, runner, done)
        try:
            result, failure = runner.run(spec, folder / "spec.json")
        except Interrupted:  # cancelled: nobody waits for this reply
            result, failure = None, not_graded("the run was stopped")
        finally:
            done.set()
        return {
            "result": result,
            "failure": failure,
            "feedback": read_text(spec.feedback),
            "page": read_text(spec.page) if spec.page else None,
        }


@functools.cache
def worker_forkserver() -> ForkServer:
    """This Dask worker's fork server (grading.grade.forkserver), started by its first task and kept for the next ones: a job
    is a fork of a Python that has the grader imported, as in a local run. It holds no course and no submission, and
    it ends with the Dask worker (its jobs with it)."""
    return ForkServer(job_env(), REPO)


def stop_when_cancelled(worker: object, runner: Runner, done: threading.Event) -> None:
    """Kill the job (and its sandbox) when the scheduler no longer wants this task: the client cancelled it (Ctrl-C)
    or went away. Dask cannot interrupt a running task, which would otherwise grade on, for nobody, up to its limit."""
    key = worker.get_current_task() if worker is not None else None
    if key is None:
        return

    def watch() -> None:
        while not done.wait(CANCEL_CHECK):
            task = worker.state.tasks.get(key)
            if task is None or task.state == "cancelled":
                runner.stop()
                return

    threading.Thread(target=watch, name="tinytorch-cancel", daemon=True).start()


def worker_spec(task: dict, folder: Path) -> Spec:
    "The task's spec with every path in the task's folder."
    spec = Spec(**task["spec"])
    course = folder / "course"
    paths = {
        "submitted": folder / "submitted.ipynb",
        "instructor": folder / "instructor.ipynb",
        "released": course / task["released"],
        "master": course / "master",
        "reference": course / "reference",
        "scratch": folder / "scratch",
        "result": folder / "result.json",
        "feedback": folder / "feedback" / "page.html",
        "page": folder / "kept" / "notebook.ipynb" if spec.page else "",
        "page_cache": "",  # the client's folder is not here; a task renders its whole page
        "held_out_digits": folder / FILE_NAME if spec.held_out_digits else "",
    }
    return replace(spec, **{name: str(path) for name, path in paths.items()})


def read_text(path: str | Path) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


# -- The workers' environment ----------------------------------------------------------------------------------------


def worker_environment() -> dict:
    """What the reference check depends on, on this worker, and whether it can grade: the grader's source, the
    Python, its packages, and bubblewrap (grading.sandbox.sandbox.problem: None when it runs)."""
    import site

    packages = [os.stat(p).st_mtime_ns for p in site.getsitepackages() if os.path.isdir(p)]
    return {
        "grader": grader_digest(),
        "python": [sys.executable, sys.prefix, packages],
        "sandbox": problem(),
    }


def this_worker() -> object:
    "The Dask worker this task runs on, or None outside one."
    from distributed import get_worker

    try:
        return get_worker()
    except ValueError:
        return None


@functools.cache
def grader_digest() -> str:
    "A digest of the grader's own source (grading/**/*.py): the workers must run the same grader as this process."
    top = REPO / "grading"
    files = sorted(top.rglob("*.py"))
    return hashlib.sha256(b"".join(f.relative_to(top).as_posix().encode() + f.read_bytes() for f in files)).hexdigest()[
        :16
    ]


def check_workers(client: object, address: str, sandboxed: bool) -> tuple[str, int]:
    """Raise GradingError when the cluster has no worker, a worker runs another grader, or cannot start bubblewrap
    (unless `sandboxed` is False: --unsafe-no-sandbox); return a key of the workers' environments and their number."""
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT)
    except TimeoutError:
        raise GradingError(
            f"--cluster {address}: the scheduler has had no worker for {WORKER_WAIT} s: start some with "
            f"`dask worker {address}`; nothing was graded"
        ) from None
    found = client.run(worker_environment)
    ours = grader_digest()
    for worker, env in sorted(found.items()):
        if env["grader"] != ours:
            raise GradingError(
                f"--cluster {address}: worker {worker}: {OTHER_GRADER.removeprefix('this Dask worker ')}"
            )
        if sandboxed and env["sandbox"] is not None:
            raise GradingError(f"--cluster {address}: worker {worker} cannot sandbox students' code: {env['sandbox']}")
    key = hashlib.sha256(json.dumps(sorted(found.values(), key=json.dumps)).encode()).hexdigest()[:16]
    return key, len(found)
