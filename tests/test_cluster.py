"""Grading on a Dask cluster (grading.grade.cluster): a real `dask scheduler` and two `dask worker` processes on loopback
grade a small class (alice solved, bob the untouched release, mallory a hostile 04) into the same grades.csv and
gradebook.json as the local runner, also when a worker is killed in the middle of the run; then the whole demo class
and the red team's class, each graded on the cluster and locally at the same time, with a worker killed in each."""

import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, cli, run_cli
from grading.common.errors import GradingError
from grading.common.notebooks import read_notebook, write_notebook
from grading.examples.classroom import ELEMENTWISE
from grading.examples.edits import only
from grading.examples.edits import submission as solved_submission

NOTEBOOKS = ["01_tensor", ELEMENTWISE]
OPTIONS = ["--cell-timeout", "20", "--notebook-timeout", "300"]
# The red team's students graded on the cluster too: broken code, a flood of output and a cheat, and every attack
# whose target is another on a Dask worker than on this machine (the grader's files and processes, the network, the
# other students, the worker's memory). Good, partial and no work are the demo's (DEMO_ON_DASK); the attacks on the
# checks inside the sandbox (bea, cole, dora) meet the same job there. tests/test_redteam.py grades the whole red
# team locally, as root and as an ordinary user.
RED_TEAM_ON_DASK = {
    *("erin", "kim", "vic"),  # broken code, a flood, a cheat
    *("axel", "fay", "gus", "hal", "iris", "nadia"),  # on the grading machinery itself
    *("fern", "gwen", "hugo", "ivan", "kate", "lena"),  # on the other students and the grader's own process
}
# The demo's notebooks graded on Dask: a plain one, carol's (one wrong rule), the first with figures drawn in the job,
# the largest, the capstone (a training in the sandbox), the newest. The others are not: a task travels the same way
# for every notebook, and the whole class took two thirds of this module's time.
DEMO_ON_DASK = {"01_tensor", ELEMENTWISE, "09_nn", "12_conv", "16_capstone", "19_strides"}
MARK = "TINYTORCH_DASK_WORKER_MARK"  # in the Dask workers' environment: the hostile submission looks for it
HOSTILE = """
import glob as _glob, os as _os, socket as _socket
_found = [_k for _k in _os.environ if _k == {mark!r}]
for _path in _glob.glob("/proc/[0-9]*/environ"):
    try:
        if {mark!r}.encode() in open(_path, "rb").read():
            _found.append(_path)
    except Exception:
        pass
try:
    _socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
    _found.append("the scheduler")
except Exception:
    pass
for _path in {outside!r}:
    try:
        open(_path, "w").write(repr(_found))
    except Exception:
        pass
if _found:
    print("LE" + "AKED", _found)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dask_env():
    return dict(os.environ, PYTHONPATH=str(REPO), **{MARK: "1"})


class Cluster:
    "A `dask scheduler` and `dask worker` processes on 127.0.0.1, each in a process group of its own."

    def __init__(self, folder, workers=2):
        self.port, self.folder, self.logs = free_port(), Path(folder), []
        self.folder.mkdir(parents=True, exist_ok=True)
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.scheduler = self.start(["scheduler", "--host", "127.0.0.1", "--port", str(self.port)], "scheduler")
        self.workers = [self.start(self.worker_args(i), f"worker{i}") for i in range(workers)]
        self.wait_for(workers)

    def worker_args(self, i):
        return ["worker", self.address, "--nthreads", "1", "--no-dashboard", "--local-directory", str(self.folder)]

    def start(self, args, name):
        log = open(self.folder / f"{name}.log", "w")
        self.logs.append(log)
        extra = ["--no-dashboard"] if args[0] == "scheduler" else []
        return subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_" + args[0], *args[1:], *extra],
            cwd=self.folder,
            env=dask_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_for(self, count):
        from distributed import Client

        with Client(self.address, timeout=60) as client:
            client.wait_for_workers(count, timeout=120)

    def kill(self, process):
        "SIGKILL a process and its children (a worker's nanny and its worker process)."
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()

    def kill_a_busy_worker(self):
        "SIGKILL a worker that is grading a submission now; the task it was running, or None if none was."
        from distributed import Client

        with Client(self.address, timeout=60) as client:
            for _ in range(100):
                busy = {w: k for w, keys in client.processing().items() for k in keys if str(k).startswith("grade-")}
                if busy:
                    worker, key = next(iter(busy.items()))
                    pid = client.run(os.getpid, workers=[worker])[worker]
                    os.killpg(os.getpgid(pid), signal.SIGKILL)  # the worker and its nanny
                    return key
                time.sleep(0.1)
        return None

    def close(self):
        for process in [*self.workers, self.scheduler]:
            self.kill(process)
        for log in self.logs:
            log.close()


def make_class(kit, out, port, outside):
    "alice: 01 and 04 solved; bob: both as released; mallory: 04 left undone, with code that attacks the worker."
    for stem in NOTEBOOKS:
        release = read_notebook(Path(kit) / stem / f"{stem}.ipynb")
        write_notebook(solved_submission(kit, stem), out / "alice" / stem / f"{stem}.ipynb")
        write_notebook(release, out / "bob" / stem / f"{stem}.ipynb")
    hostile = solved_submission(kit, ELEMENTWISE, only(set(), HOSTILE.format(mark=MARK, outside=outside, port=port)))
    write_notebook(hostile, out / "mallory" / ELEMENTWISE / f"{ELEMENTWISE}.ipynb")


def table(out):
    with open(Path(out) / "grades.csv") as f:
        return list(csv.DictReader(f))


def gradebook(out):
    return json.loads((Path(out) / "gradebook.json").read_text())


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    cluster = Cluster(tmp_path_factory.mktemp("dask"))
    yield cluster
    cluster.close()


@pytest.fixture(scope="module")
def small_class(kit, tmp_path_factory, dask_cluster):
    root = tmp_path_factory.mktemp("small-class")
    outside = [str(root / "grades-local" / "pwned"), str(root / "pwned"), str(dask_cluster.folder / "pwned")]
    make_class(kit, root / "submissions", dask_cluster.port, outside)
    local = run_cli("autograde", root / "submissions", "--out", root / "grades-local", "--workers", "2", *secret(root))
    assert local.returncode == 0, local.stderr[-3000:]
    return {"root": root, "outside": outside}


def secret(root):
    "One course secret for every run: the hidden tests draw the same inputs in each."
    return [*OPTIONS, "--secret-file", str(root / "secret")]


@pytest.mark.slow
def test_a_dask_cluster_grades_the_class_as_the_local_runner_does(small_class, dask_cluster):
    root = small_class["root"]
    result = run_cli(
        "autograde",
        root / "submissions",
        "--out",
        root / "grades-dask",
        "--cluster",
        dask_cluster.address,
        *secret(root),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert table(root / "grades-dask") == table(root / "grades-local")
    assert gradebook(root / "grades-dask") == gradebook(root / "grades-local")
    assert len(table(root / "grades-dask")) == 5
    page = root / "grades-dask" / "feedback" / "alice" / f"{ELEMENTWISE}.html"
    assert "mul_backward" in page.read_text()
    servers = [pid for worker in dask_cluster.workers for pid in descendants(worker.pid) if is_forkserver(pid)]
    assert servers, "the Dask workers started their jobs without a fork server (grading.grade.forkserver)"


def descendants(pid):
    "The processes below `pid` (children, grandchildren, ...), from /proc."
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            pass
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def is_forkserver(pid):
    try:
        return b"grading.grade.forkserver" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


@pytest.mark.slow
def test_a_hostile_submission_scores_as_locally_and_reaches_nothing_outside_its_sandbox(small_class, dask_cluster):
    root = small_class["root"]
    if not (root / "grades-dask" / "grades.csv").exists():
        pytest.skip("needs the cluster run of the test before")
    rows = {(r["student"], r["assignment"]): r for r in table(root / "grades-dask")}
    assert rows[("mallory", ELEMENTWISE)]["score"] == "0"
    assert (
        rows[("mallory", ELEMENTWISE)]
        == {(r["student"], r["assignment"]): r for r in table(root / "grades-local")}[("mallory", ELEMENTWISE)]
    )
    assert not [p for p in small_class["outside"] if Path(p).exists()]
    page = root / "grades-dask" / "feedback" / "mallory" / f"{ELEMENTWISE}.html"
    assert "LEAKED" not in page.read_text()
    assert all(p.poll() is None for p in dask_cluster.workers), "a worker died"


def autograde_process(submissions, out, *mode, root):
    "`autograde` started in the background, as an instructor starts it."
    command = [sys.executable, "-m", "grading", "autograde", str(submissions), "--out", str(out), *mode, *secret(root)]
    return subprocess.Popen(
        command, cwd=REPO, env=dask_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def wait_for_a_result(out, process, seconds=900):
    "Until the run writing into `out` has its first result (or has ended, or `seconds` passed)."
    deadline = time.time() + seconds
    while not list((Path(out) / "results").glob("*/*.json")) and time.time() < deadline and process.poll() is None:
        time.sleep(0.1)


@pytest.mark.slow
def test_a_worker_killed_mid_run_loses_no_grade_and_counts_none_twice(small_class, tmp_path):
    root = small_class["root"]
    cluster = Cluster(tmp_path / "dask")
    out = tmp_path / "grades"
    try:
        process = autograde_process(root / "submissions", out, "--cluster", cluster.address, root=root)
        wait_for_a_result(out, process)
        killed = cluster.kill_a_busy_worker()
        stdout, stderr = process.communicate(timeout=900)
    finally:
        cluster.close()
    assert process.returncode == 0, stderr[-3000:]
    assert killed, "no worker was grading when the first result came in"
    assert table(out) == table(root / "grades-local")
    assert gradebook(out) == gradebook(root / "grades-local")


@pytest.mark.slow
def test_the_demo_and_red_team_classes_grade_as_locally_with_a_worker_killed_in_each(kit, graded_demo, tmp_path):
    """The demo class on DEMO_ON_DASK's notebooks (solved and as released, and carol's one wrong rule) and the red team
    (RED_TEAM_ON_DASK) graded on the cluster, a busy worker killed in each run (and a new one joins). The demo must
    give the bytes of the same submissions graded locally with the same course secret (`graded_demo`, shared with
    other tests); each red-team score must be the one `compare` expects (exact, as tests/test_redteam.py checks
    locally)."""
    from grading.examples.classroom import compare
    from grading.examples.classroom import make_class as make_red_team
    from grading.grade.gradebook import Row

    expected = make_red_team(kit, tmp_path / "red-team", grades=tmp_path / "red-team-dask")
    assert RED_TEAM_ON_DASK <= set(expected), "a student of RED_TEAM_ON_DASK left the red team"
    for student in set(expected) - RED_TEAM_ON_DASK:
        shutil.rmtree(tmp_path / "red-team" / student)
        del expected[student]
    demo = tmp_path / "demo"
    for notebook in graded_demo["submissions"].glob("*/*"):
        if notebook.name in DEMO_ON_DASK:
            shutil.copytree(notebook, demo / notebook.parent.name / notebook.name)
    local = [r for r in table(graded_demo["grades"]) if r["assignment"] in DEMO_ON_DASK]
    local_book = {
        student: {a: entry for a, entry in assignments.items() if a in DEMO_ON_DASK}
        for student, assignments in gradebook(graded_demo["grades"]).items()
    }
    cluster = Cluster(tmp_path / "dask")
    runs = {
        "demo": (demo, ["--secret-file", str(graded_demo["secret"])]),
        "red-team": (tmp_path / "red-team", secret(tmp_path)),
    }
    try:
        for name, (submissions, options) in runs.items():
            dask = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "grading",
                    "autograde",
                    str(submissions),
                    "--out",
                    str(tmp_path / f"{name}-dask"),
                ]
                + ["--cluster", cluster.address, *options],
                cwd=REPO,
                env=dask_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            wait_for_a_result(tmp_path / f"{name}-dask", dask)
            killed = cluster.kill_a_busy_worker()
            cluster.workers.append(cluster.start(cluster.worker_args(len(cluster.workers)), f"worker-{name}"))
            _, dask_err = dask.communicate(timeout=1800)
            assert killed, f"{name}: no worker was grading when the first result came in"
            if name == "demo":
                assert (graded_demo["result"].returncode, dask.returncode) == (0, 0), dask_err[-3000:]
                assert len(local) == 2 * len(DEMO_ON_DASK) + 1 and table(tmp_path / "demo-dask") == local
                assert gradebook(tmp_path / "demo-dask") == local_book
            else:  # a note may name its own run's folder or time: every score as expected
                assert dask.returncode in (0, 1), dask_err[-3000:]  # 1: the red team has rows that are not graded
                rows = [
                    Row(
                        r["student"],
                        r["assignment"],
                        r["notebook"],
                        float(r["score"] or 0),
                        float(r["max_score"]),
                        r["note"],
                    )
                    for r in table(tmp_path / "red-team-dask")
                ]
                assert not compare(rows, expected), compare(rows, expected)
    finally:
        cluster.close()


@pytest.mark.slow
def test_a_scheduler_lost_mid_run_keeps_what_was_graded_and_the_next_run_grades_the_rest(small_class, tmp_path):
    root = small_class["root"]
    out = tmp_path / "grades"
    cluster = Cluster(tmp_path / "dask")
    try:
        run = autograde_process(root / "submissions", out, "--cluster", cluster.address, root=root)
        wait_for_a_result(out, run)
        cluster.kill(cluster.scheduler)
        _, stderr = run.communicate(timeout=900)
    finally:
        cluster.close()
    assert run.returncode == 1, stderr[-3000:]  # not every row graded, through no fault of the students
    rows = table(out)
    # Every row is graded as locally or not graded with the grader's reason: most say the scheduler was lost; on a
    # busy machine a task that was being sent as it died may end otherwise (a CI run under load saw one such row).
    lost = [r for r in rows if r["score"] == ""]
    assert all("not graded" in r["note"] for r in lost), lost
    assert any("connection to the Dask scheduler" in r["note"] for r in lost), rows
    assert "connection to the Dask scheduler" in stderr
    graded = [r for r in rows if r not in lost]
    assert graded and all(r in table(root / "grades-local") for r in graded)
    again = Cluster(tmp_path / "dask-again")
    try:
        rerun = run_cli("autograde", root / "submissions", "--out", out, "--cluster", again.address, *secret(root))
    finally:
        again.close()
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert table(out) == table(root / "grades-local")


def processes_below_fork_servers(cluster):
    "{pid: command line} of the grading jobs (and their sandboxes) the workers' fork servers are running now."
    servers = [pid for worker in cluster.workers for pid in descendants(worker.pid) if is_forkserver(pid)]
    found = {}
    for pid in (p for server in servers for p in descendants(server)):
        try:
            found[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            pass
    return found


@pytest.mark.slow
def test_a_stopped_run_stops_the_jobs_running_on_the_workers(kit, tmp_path):
    "Ctrl-C at the client: a task already running kills its job and sandbox, instead of grading on for nobody."
    sleepy = solved_submission(kit, ELEMENTWISE, only(set(), "import time\ntime.sleep(300)"))
    write_notebook(sleepy, tmp_path / "submissions" / "sam" / ELEMENTWISE / f"{ELEMENTWISE}.ipynb")
    cluster = Cluster(tmp_path / "dask")
    try:
        run = autograde_process(
            tmp_path / "submissions", tmp_path / "grades", "--cluster", cluster.address, root=tmp_path
        )
        deadline = time.time() + 600
        while time.time() < deadline and run.poll() is None:
            if any("bwrap" in command for command in processes_below_fork_servers(cluster).values()):
                break
            time.sleep(0.2)
        assert run.poll() is None, run.communicate()[1][-3000:]
        assert processes_below_fork_servers(cluster), "no job was running on a worker"
        time.sleep(1)
        run.send_signal(signal.SIGINT)
        run.communicate(timeout=120)
        stopped = time.time()
        while processes_below_fork_servers(cluster) and time.time() < stopped + 20:
            time.sleep(0.2)
        assert not processes_below_fork_servers(cluster), processes_below_fork_servers(cluster)
        assert all(worker.poll() is None for worker in cluster.workers), "a worker died"
    finally:
        cluster.close()


@pytest.mark.parametrize("address", ["local:0", "local:x", "local:2 ", "tcp://scheduler host:8786"])
def test_a_malformed_cluster_is_refused_before_anything_is_written(tmp_path, address):
    "An instructor's finding: `--cluster local:x` was refused only after the run had made OUT and its course secret."
    (tmp_path / "subs" / "ada").mkdir(parents=True)
    result = cli("autograde", tmp_path / "subs", "--out", tmp_path / "out", "--cluster", address)
    assert result.returncode == 2 and f"--cluster {address}" in result.stderr.replace("'", ""), result.stderr
    assert "expected local:N" in result.stderr and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_an_unreachable_scheduler_is_named_and_the_table_is_left_as_it_was(small_class, tmp_path, monkeypatch):
    "In this process, with a short wait for the scheduler: the run's 20 s of retries would be the test's whole time."
    from grading.grade import cluster

    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 2)
    root = small_class["root"]
    out = tmp_path / "grades"
    shutil.copytree(root / "grades-local", out)
    changed = root / "submissions" / "bob" / "01_tensor" / "01_tensor.ipynb"
    submissions = tmp_path / "submissions"
    shutil.copytree(root / "submissions", submissions)
    (submissions / "bob" / "01_tensor" / "01_tensor.ipynb").write_text(
        changed.read_text().replace("Tensor", "Tensor ", 1)
    )
    before = (out / "grades.csv").read_text(), (out / "gradebook.json").read_text()
    result = cli("autograde", submissions, "--out", out, "--cluster", f"tcp://127.0.0.1:{free_port()}", *secret(root))
    assert result.returncode == 2
    assert "cannot reach a Dask scheduler" in result.stderr
    assert ((out / "grades.csv").read_text(), (out / "gradebook.json").read_text()) == before


def test_without_dask_the_message_says_how_to_install_it(monkeypatch):
    from grading.grade.cluster import start_client

    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(GradingError, match=r'pip install "dask\[distributed\]"'):
        start_client("tcp://127.0.0.1:8786")


def test_a_worker_with_another_grader_grades_nothing_and_says_why():
    from grading.grade.cluster import grade_task

    reply = grade_task({"grader": "another"}, b"")
    assert reply["result"] is None and "another version of the grader" in reply["failure"]


def test_a_task_is_data_and_every_path_of_the_workers_spec_is_in_its_own_folder(tmp_path):
    from dataclasses import asdict, fields

    from grading.grade.cluster import make_task, worker_spec
    from grading.grade.spec import Spec

    state = tmp_path / "grader" / ".grading"
    for name in ["submitted.ipynb", "instructor.ipynb"]:
        (tmp_path / name).write_text("{}")
    values = {f.name: str(tmp_path / "grader" / f.name) for f in fields(Spec) if f.type is str}
    values.update(
        submitted=str(tmp_path / "submitted.ipynb"),
        instructor=str(tmp_path / "instructor.ipynb"),
        reference=str(state / "reference"),
        released=str(state / "master" / "release" / "01_tensor" / "01_tensor.ipynb"),
        earlier_modules=[],
        variant="0123",
    )
    spec = Spec(**values)
    task = make_task(spec, 60)
    assert task["submitted"] == b"{}" and task["released"] == "master/release/01_tensor/01_tensor.ipynb"
    assert "secret" not in json.dumps({k: v for k, v in task.items() if not isinstance(v, bytes)})
    remote = worker_spec(task, tmp_path / "task")
    moved = {"submitted", "instructor", "released", "master", "reference", "scratch", "result", "feedback", "page"}
    moved.add("held_out_digits")  # the instructor's held-out digits: the task writes their bytes into its folder
    for name in moved:
        assert Path(getattr(remote, name)).is_relative_to(tmp_path / "task"), name
    assert remote.page_cache == ""  # the grader's folder of rendered cells is not on the worker
    assert {k: v for k, v in asdict(remote).items() if k not in {*moved, "page_cache"}} == {
        k: v for k, v in asdict(spec).items() if k not in {*moved, "page_cache"}
    }
