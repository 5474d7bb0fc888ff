import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    # A suite started in the background of a script inherits Ctrl-C ignored, and so would every run it starts (an
    # ignored signal stays ignored through exec): the tests that press Ctrl-C on a run need it back.
    signal.signal(signal.SIGINT, signal.default_int_handler)
os.environ.setdefault("TINYTORCH_QUIET", "1")
# What the tests make once and share, for this test session and every pytest-xdist worker of it: the kit, and the
# courses the grader makes from the notebooks (grading/authoring/course.py: made_course), not in the user's
# ~/.cache. The controller (or a run without xdist) makes the folder; the workers it starts inherit the variable.
SHARED_VARIABLE = "TINYTORCH_TEST_SHARED"
OWN_SHARED = SHARED_VARIABLE not in os.environ
if OWN_SHARED:
    os.environ[SHARED_VARIABLE] = tempfile.mkdtemp(prefix="tinytorch-tests-")
SHARED = Path(os.environ[SHARED_VARIABLE])
os.environ.setdefault("TINYTORCH_GRADING_CACHE", str(SHARED / "courses"))  # tests of that cache set their own


def pytest_sessionfinish(session, exitstatus):
    if OWN_SHARED and not hasattr(session.config, "workerinput"):
        shutil.rmtree(SHARED, ignore_errors=True)


@contextlib.contextmanager
def made_once(name):
    """Yield (folder, made): SHARED/name, and whether another worker already made it whole. Workers take turns: the
    first makes it while the others wait. It counts as made once the block ends without an error."""
    folder = SHARED / name
    SHARED.mkdir(parents=True, exist_ok=True)
    with open(SHARED / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield folder, (SHARED / f"{name}.done").exists()
        (SHARED / f"{name}.done").touch()


def run_cli(*args, cwd=REPO, env=None):
    "Run `python -m grading ARGS` as a user would (with `env` added to the environment); return the CompletedProcess."
    env = dict(os.environ, PYTHONPATH=str(REPO), **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "grading", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )


def cli(*args, cwd=None):
    """Run `python -m grading ARGS` in this process (`grading.cli.main`), for a command whose exit status and output
    are the point, not a signal or a sandbox; return a CompletedProcess as run_cli does, in a fraction of its time."""
    import io
    import signal

    from grading.cli import main

    out, err = io.StringIO(), io.StringIO()
    sigterm = signal.getsignal(signal.SIGTERM)  # main() makes SIGTERM stop a run; this process keeps its own
    with contextlib.chdir(cwd or os.getcwd()), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as stop:  # argparse's refusals and --help
            code = stop.code if isinstance(stop.code, int) else 1
        finally:
            signal.signal(signal.SIGTERM, sigterm)
    return subprocess.CompletedProcess(["grading", *map(str, args)], code, out.getvalue(), err.getvalue())


def load_script(path):
    "A script of benchmarks/ (a folder that is no package) as a module."
    import importlib.util

    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FAKE_WORKER = """import os, signal, struct, sys, threading, time
sys.path.insert(0, {folder!r})
import wire
out = int(sys.argv[2])
"""


def fake_worker(folder, code):
    """A worker script in `folder` that runs `code` (its reply pipe is `out`, the wire package imported) in place of
    grading's worker: for grading.grade.remote.WorkerSetup, to make a worker fail or misbehave on purpose."""
    from grading.sandbox import sandbox

    sandbox.copy_worker_files(folder)
    script = Path(folder) / "fake_worker.py"
    script.write_text(FAKE_WORKER.format(folder=str(folder)) + code)
    return script


SMALL_COURSE = ("02_function", "03_gradcheck")


@pytest.fixture
def course(tmp_path):
    "An instructor's notebooks folder with two of the course's notebooks (fewer to read: the tests stay fast)."
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for stem in SMALL_COURSE:
        shutil.copy(REPO / "notebooks" / f"{stem}.ipynb", folder)
    return folder


@pytest.fixture
def student_user_turn():
    """For a test that grades with the student-user fallback (no bubblewrap: the students' code runs as `nobody`, as in
    Gradescope's container): such a run ends every process of that user (kill(-1) as the user), so two at once on
    two pytest-xdist workers kill each other's; they take turns."""
    SHARED.mkdir(parents=True, exist_ok=True)
    with open(SHARED / "student-user.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: a worker per core, at most 4; each grading run a test starts grades on every core already. (Two per
    core were measured twice and were slower: 4 workers on 2 cores made each grading run wait on the others, and the
    mutation suite took 1,185 s instead of 322.)"""
    return max(1, min(4, len(os.sched_getaffinity(0))))


# The modules that take longest (`python -m pytest --durations=0`), longest first: pytest-xdist hands out whole
# modules (--dist loadscope) in the order of collection, so these start first and the short ones fill in around them.
# The second needs no kit: its worker runs it while the first worker releases the kit (20 s on a fresh machine).
LONGEST_FIRST = [
    "test_cluster.py",
    "test_notebooks_run.py",
    "test_redteam.py",
    "test_mutation.py",
    "test_hidden_messages.py",
    "test_browser.py",
    "test_gradescope.py",
    "test_held_out_digits.py",
]


def pytest_collection_modifyitems(items):
    "A test that needs the released kit is slow: it releases the course and, mostly, autogrades submissions of it."
    for item in items:
        if "kit" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each module keeps its own order


@pytest.fixture(scope="session")
def kit():
    "The student kit, released once for the whole test session, by the first pytest-xdist worker that needs it."
    with made_once("kit") as (out, made):
        if not made:
            shutil.rmtree(out, ignore_errors=True)
            result = run_cli("release", "--out", out)
            assert result.returncode == 0, result.stderr
    return out


MUL_GRADS = (  # 04's MulBackward as its solution computes the two gradients
    "grad_a = unbroadcast(grad_output * b, a.shape)\n        if self.needs_grad(1):\n"
    "            grad_b = unbroadcast(grad_output * a, b.shape)"
)
WRONG_MUL = (  # carol's one mistake: 04's MulBackward returns each input's gradient times itself
    MUL_GRADS,
    "grad_a = unbroadcast(grad_output * a, a.shape)\n        if self.needs_grad(1):\n"
    "            grad_b = unbroadcast(grad_output * b, b.shape)",
)


@pytest.fixture(scope="session")
def graded_demo(kit):
    """The demo class (alice solved every exercise, bob handed in the release) and carol (04 solved but for one wrong
    rule), graded once for the test session with the course secret SHARED/demo/secret; tests that only read its
    results share it. Returns {"submissions", "grades", "secret", "result"}."""
    from grading.common.answers import solved
    from grading.common.notebooks import read_notebook, write_notebook
    from grading.examples.demo import make_submissions

    with made_once("demo") as (root, made):
        paths = {"submissions": root / "submissions", "grades": root / "grades", "secret": root / "secret"}
        if not made:
            shutil.rmtree(root, ignore_errors=True)
            make_submissions(kit, paths["submissions"])
            stem = "04_elementwise"
            release = read_notebook(kit / stem / f"{stem}.ipynb")
            carol = solved(
                release,
                read_notebook(REPO / "notebooks" / f"{stem}.ipynb"),
                edit=lambda _, code: code.replace(*WRONG_MUL),
            )
            write_notebook(carol, paths["submissions"] / "carol" / stem / f"{stem}.ipynb")
            result = run_cli(
                "autograde", paths["submissions"], "--out", paths["grades"], "--secret-file", paths["secret"]
            )
            (root / "result.json").write_text(json.dumps([result.returncode, result.stdout, result.stderr]))
        code, out, err = json.loads((root / "result.json").read_text())
    return dict(paths, result=subprocess.CompletedProcess(["autograde"], code, out, err))
