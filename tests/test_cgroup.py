"""Limits for a sandbox as a whole (grading.sandbox.cgroup): memory, processes and CPU hold for every process of one sandbox
together, a full /tmp ends at its size, and one sandbox's fork bomb leaves the next sandbox its processes."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import fake_worker
from grading.grade import remote
from grading.sandbox import cgroup, sandbox, wire


def fake_v1(root, own="/grader"):
    "A v1 hierarchy with the three controllers, as mounted under /sys/fs/cgroup."
    for name in cgroup.CONTROLLERS:
        (root / name / own.lstrip("/")).mkdir(parents=True)
        (root / name / "cgroup.procs").write_text("")
    proc = root / "self-cgroup"
    proc.write_text("".join(f"{i}:{name}:{own}\n" for i, name in enumerate(cgroup.CONTROLLERS, 1)) + "0::/\n")
    return proc


def test_v1_makes_one_cgroup_per_controller_under_the_grader_s_own_and_writes_the_limits(tmp_path):
    proc = fake_v1(tmp_path)
    where = cgroup.places(tmp_path, proc, delegated="")
    assert where == ("v1", [tmp_path / name / "grader" for name in cgroup.CONTROLLERS])
    group = cgroup.Cgroups.make(512, cpus=1, pids=100, where=where)
    pids, memory, cpu = group.folders
    assert (pids / "pids.max").read_text() == "100"
    assert (memory / "memory.limit_in_bytes").read_text() == str(512 * 2**20)
    assert (cpu / "cpu.cfs_quota_us").read_text() == "100000"
    group.enter()
    assert (pids / "cgroup.procs").read_text() == str(os.getpid())


def test_v2_uses_the_delegated_cgroup_and_enables_its_controllers(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids")
    delegated = tmp_path / "user.slice" / "grading"
    delegated.mkdir(parents=True)
    (delegated / "cgroup.subtree_control").write_text("")
    proc = tmp_path / "self-cgroup"
    proc.write_text("0::/user.slice/other\n")
    where = cgroup.places(tmp_path, proc, delegated=str(delegated))
    assert where == ("v2", [delegated])
    group = cgroup.Cgroups.make(256, cpus=0.5, pids=64, where=where)
    (folder,) = group.folders
    assert (delegated / "cgroup.subtree_control").read_text() == "+pids +memory +cpu"
    assert (folder / "memory.max").read_text() == str(256 * 2**20)
    assert (folder / "cpu.max").read_text() == "50000 100000" and (folder / "pids.max").read_text() == "64"


def test_without_a_place_for_cgroups_there_are_none(tmp_path):
    proc = tmp_path / "self-cgroup"
    proc.write_text("0::/\n")
    assert cgroup.places(tmp_path, proc, delegated="") == (None, [])
    assert cgroup.Cgroups.make(100, where=(None, [])) is None


REAL = sandbox.problem() is None and cgroup.places()[0] is not None
needs_cgroups = pytest.mark.skipif(not REAL, reason="no bubblewrap sandbox with cgroups on this host")


def run_in_sandbox(code, memory_mb, timeout=120):
    "Run Python `code` in a fresh sandbox; (exit status, what it printed)."
    process = sandbox.start(
        [sandbox.interpreter(), "-I", "-c", textwrap.dedent(code)], [], memory_mb=memory_mb, stdout=subprocess.PIPE
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    finally:
        sandbox.stop(process)
    return process.returncode, output.decode()


@needs_cgroups
def test_processes_of_one_sandbox_share_one_memory_limit():
    code = """
        import os, time
        children = []
        for _ in range(4):
            pid = os.fork()
            if pid == 0:
                block = bytearray(150 * 2**20)  # each fits the per-process limit; four do not fit the sandbox's
                for i in range(0, len(block), 4096):
                    block[i] = 1
                time.sleep(2)  # all four hold their memory at once
                os._exit(0)
            children.append(pid)
        print(sum(os.waitpid(pid, 0)[1] == 0 for pid in children))
    """
    status, output = run_in_sandbox(code, memory_mb=400)
    assert status == 0 and int(output) < 4, "four processes of 150 MB held more than the sandbox's 400 MB"


@needs_cgroups
def test_a_full_tmp_ends_at_its_size():
    code = """
        try:
            with open("/tmp/fill", "wb") as f:
                for _ in range(100):
                    f.write(b"x" * 2**20)
            print("written")
        except OSError as error:
            print(error.strerror)
    """
    status, output = run_in_sandbox(code, memory_mb=64)
    assert output.strip() != "written"


@needs_cgroups
def test_a_fork_bomb_in_one_sandbox_leaves_another_its_processes():
    bomb = sandbox.start(
        [
            sandbox.interpreter(),
            "-I",
            "-c",
            "import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.01)",
        ],
        [],
        memory_mb=512,
    )
    try:
        code = """
            import subprocess
            print(sum(subprocess.run(["/bin/true"]).returncode == 0 for _ in range(30)))
        """
        status, output = run_in_sandbox(code, memory_mb=512)
        assert status == 0 and output.strip() == "30", output
        assert len(bomb.cgroups.members()) <= cgroup.PIDS_MAX
    finally:
        sandbox.stop(bomb)
    assert not any(Path(folder).exists() for folder in bomb.cgroups.folders), "the sandbox's cgroups are removed"
    assert sys.platform.startswith("linux")


SAID_HELLO = "os.write(out, wire.pack({'op': 'hello'}, []))\n"


def record_made(monkeypatch):
    "A list of every Cgroups.make's result from now on."
    made, real_make = [], cgroup.Cgroups.make
    monkeypatch.setattr(cgroup.Cgroups, "make", lambda *a, **k: made.append(real_make(*a, **k)) or made[-1])
    return made


def left_behind(made):
    return [folder for group in made if group is not None for folder in group.folders if folder.exists()]


@pytest.mark.parametrize(
    "start, raised",
    [
        ("os._exit(3)", remote.GraderFault),  # ends before its hello: the grader's Python did not start
        (SAID_HELLO + "os._exit(0)", EOFError),  # the student's import ended the worker
        (SAID_HELLO + "os.write(out, wire.pack({'op': 'done'}, []))\ntime.sleep(60)", wire.WireError),  # forged
    ],
    ids=["ends-before-hello", "ends-while-importing", "forges-ready"],
)
def test_a_worker_that_does_not_start_is_stopped_with_its_cgroups(tmp_path, monkeypatch, start, raised):
    script = fake_worker(tmp_path, start)
    started, stopped, made = [], [], record_made(monkeypatch)
    real_start, real_stop = sandbox.start, sandbox.stop
    monkeypatch.setattr(sandbox, "start", lambda *a, **k: started.append(real_start(*a, **k)) or started[-1])
    monkeypatch.setattr(sandbox, "stop", lambda process: stopped.append(process) or real_stop(process))
    setup = remote.WorkerSetup({"op": "plan", "cell_timeout": 2}, [], {"memory_mb": 256}, False, str(script))
    with pytest.raises(raised):
        remote.Worker(setup, remote.Stopwatch())
    assert stopped == started and len(started) == 1, "stopped once, as soon as it failed: not at the job's end"
    assert started[0].poll() is not None
    assert not left_behind(made), f"cgroups left behind: {left_behind(made)}"


@needs_cgroups
def test_the_cgroups_of_a_job_killed_from_outside_are_removed_by_the_next_sandbox(monkeypatch):
    "A job SIGKILLed never stops its sandboxes; the next sandbox made beside them removes their empty cgroups."
    make = "from grading.sandbox import cgroup; cgroup.Cgroups.make(64)"  # a job that ends without removing them
    process = subprocess.Popen([sys.executable, "-c", make], cwd=Path(cgroup.__file__).parents[2])
    assert process.wait(timeout=60) == 0
    job = process.pid
    version, parents = cgroup.places()
    left = [folder for parent in parents for folder in parent.glob(f"tinytorch-{job}-*")]
    assert left, "the job made no cgroups"
    kept = cgroup.Cgroups.make(64)  # made within STALE seconds of the job's: left alone
    try:
        assert all(folder.exists() for folder in left)
        monkeypatch.setattr(cgroup, "STALE", 0)
        mine = cgroup.Cgroups.make(64)
        mine.close()
        assert not [folder for folder in left if folder.exists()]
        assert all(folder.exists() for folder in kept.folders), "a living process's cgroups are kept"
    finally:
        kept.close()


def test_a_sandbox_that_cannot_start_leaves_no_folder_or_cgroup(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the unsandboxed start makes its folder
    made = record_made(monkeypatch)
    with pytest.raises(OSError):
        sandbox.start([str(tmp_path / "no-such-program")], [], sandboxed=False, memory_mb=64)
    assert not list(tmp_path.glob("tinytorch-*")), "its working folder was left"
    assert not left_behind(made)


def test_the_sweep_leaves_what_it_did_not_make(tmp_path):
    "Names of another program's, or a number no process has: kept, and no sandbox's start fails over them."
    for name in ("tinytorch-99999999999999999999-ab", "tinytorch-ci", "tinytorch-1-notours", "other-1-ab"):
        (tmp_path / name).mkdir()
    cgroup.sweep([tmp_path])
    assert len(list(tmp_path.iterdir())) == 4
