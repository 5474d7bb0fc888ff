"""The sandbox runs the grader's own Python, as it was started, with the packages it sees: a venv's link is never
resolved to its base interpreter, a venv under /tmp is not hidden by the sandbox's private /tmp, and the project's
own folder (the answer key) never enters."""

import os
import subprocess
import sys

import pytest

from conftest import REPO
from grading.sandbox import sandbox


def test_the_sandbox_starts_the_interpreter_as_it_was_started_not_its_target():
    assert sandbox.interpreter() == os.path.abspath(sys.executable)
    if sys.prefix != sys.base_prefix:  # in a venv, the link is what makes it the venv's Python
        assert os.path.dirname(sandbox.interpreter()).startswith(sys.prefix)


def test_the_python_folders_come_after_the_private_tmp_so_a_venv_there_is_seen():
    argv = sandbox.command(["python"], binds=[])
    tmpfs = argv.index("/tmp", argv.index("--tmpfs"))
    for folder in sandbox.python_dirs():
        position = [i for i, a in enumerate(argv) if a == folder and argv[i - 1] == "--ro-bind"]
        assert position and position[0] > tmpfs, f"{folder} is bound before /tmp is replaced"


def test_the_project_folder_never_enters_the_sandbox_even_when_on_the_path(monkeypatch):
    monkeypatch.setattr(sys, "path", [str(REPO), *sys.path])
    repo = os.path.realpath(REPO)
    assert str(REPO) not in sandbox.search_path()
    for folder in sandbox.python_dirs():
        inside = folder == repo or folder.startswith(repo + os.sep)
        assert not inside or folder.startswith(os.path.realpath(sys.prefix)), folder


def test_a_venv_kept_in_the_project_enters_the_sandbox_and_the_course_never_does(tmp_path, monkeypatch):
    "A venv of copies reads its packages from the project's .venv (tests/test_environments.py): those may enter."
    from grading.common import notebooks

    monkeypatch.setattr(notebooks, "REPO", tmp_path)
    site_packages = tmp_path / ".venv" / "lib" / "python3" / "site-packages"
    site_packages.mkdir(parents=True)
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / "tinytorch").mkdir()
    (tmp_path / "kit").mkdir()
    (tmp_path / "kit" / "settings.ini").write_text("[DEFAULT]\n")
    assert sandbox._outside_repo(str(site_packages))
    assert not sandbox._outside_repo(str(tmp_path))
    assert not sandbox._outside_repo(str(tmp_path / "tinytorch"))
    assert not sandbox._outside_repo(str(tmp_path / "kit"))
    assert sandbox._outside_repo(str(tmp_path.parent))


def test_an_installed_copy_of_the_reference_package_is_hidden(tmp_path):
    (tmp_path / "tinytorch").mkdir()
    assert sandbox.installed_answer_keys([str(tmp_path), "/nonexistent"]) == [str(tmp_path / "tinytorch")]


@pytest.mark.skipif(sandbox.problem() is not None, reason="bubblewrap cannot make a sandbox here")
def test_the_grader_s_own_packages_import_inside_the_sandbox():
    code = "import nbformat, numpy, nbconvert, nbgrader, sys; print(sys.prefix)"
    argv = sandbox.command([sandbox.interpreter(), "-I", "-c", code], binds=[])
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == sys.prefix


def test_a_folder_the_grader_puts_on_its_path_later_never_enters_the_sandbox(tmp_path, monkeypatch):
    "The job puts the reference package (its nbs/ holds the instructor's notebooks) on sys.path before the worker starts."
    reference = tmp_path / "reference"
    (reference / "nbs").mkdir(parents=True)
    (reference / "settings.ini").write_text("[DEFAULT]\n")
    monkeypatch.setattr(sys, "path", [str(reference), *sys.path])
    assert str(reference) not in sandbox.search_path() and str(reference) not in sandbox.python_dirs()
    monkeypatch.setattr(sandbox, "STARTUP_PATH", (str(reference), *sandbox.STARTUP_PATH))
    assert str(reference) not in sandbox.search_path(), "a folder holding a course is refused wherever it comes from"
    argv = sandbox.command(["python"], binds=[])
    assert not any(str(tmp_path) in a for a in argv)


@pytest.mark.skipif(sandbox.diagnose() is not None, reason="bwrap cannot run here")
def test_the_sandbox_shows_no_path_of_the_grader_and_its_root_is_read_only(tmp_path):
    "What the grader copies in keeps its contents, not its path; outside /tmp and home nothing can be written."
    job = tmp_path / "OUT" / ".grading" / "jobs" / "ada__04"
    (job / "pkg").mkdir(parents=True)
    (job / "pkg" / "answer.py").write_text("x = 42\n")
    code = (
        "import sys; sys.path.insert(0, '/student'); import answer; print(answer.x)\n"
        "print(open('/proc/self/mountinfo').read())\n"
        "open('/tmp/ok', 'w').write('1')\n"
        "for p in ('/x', '/student/answer.py', '/student/new.py'):\n"
        "    try: open(p, 'w').write('1'); print('WROTE', p)\n"
        "    except OSError as e: print('refused', p, e.errno)\n"
    )
    fds = []
    try:
        argv = sandbox.command([sandbox.interpreter(), "-I", "-c", code], [(job / "pkg", "/student")], fds=fds)
        ran = subprocess.run(argv, pass_fds=fds, capture_output=True, text=True, timeout=120)
    finally:
        sandbox.close_all(fds)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("42\n")
    assert str(tmp_path) not in ran.stdout and ".grading" not in ran.stdout
    assert "WROTE" not in ran.stdout and ran.stdout.count("refused") == 3


@pytest.mark.skipif(sandbox.problem() is not None, reason="bubblewrap cannot make a sandbox here")
def test_no_variable_of_the_grader_can_be_read_inside_the_sandbox_not_even_from_pid_1(monkeypatch, tmp_path):
    "bwrap is PID 1 in the sandbox, and its /proc/1/environ is readable there: it must hold nothing of the grader's."
    monkeypatch.setenv("TINYTORCH_GRADER_ONLY", "a token of the grader's")
    code = "import glob; print(b''.join(open(p, 'rb').read() for p in glob.glob('/proc/[0-9]*/environ')))"
    output = tmp_path / "output"
    with open(output, "w") as stdout:
        process = sandbox.start([sandbox.interpreter(), "-I", "-c", code], binds=[], stdout=stdout)
        process.wait(120)
        sandbox.stop(process)
    assert "TINYTORCH_GRADER_ONLY" not in output.read_text()
    assert "PATH" in output.read_text(), "the sandbox's processes were not read"


@pytest.mark.skipif(sandbox.problem() is not None, reason="bubblewrap cannot make a sandbox here")
def test_two_sandboxes_at_once_share_no_file_they_can_lock_or_watch(tmp_path):
    """Issue 44: a flock lock on a read-only file every sandbox binds (NumPy's) is seen from every mount namespace,
    so a hidden tests' worker held 1,024 of them, one bit each, and another sandbox read its inputs from them. Two
    sandboxes run at once: the first tries to lock, watch and evict a NumPy file and holds on; the second probes the
    same file. Each call is refused (EPERM), and the second sees no lock; NumPy itself still works."""
    import numpy

    shared = os.path.join(os.path.dirname(numpy.__file__), "__init__.py")
    code = (
        "import ctypes, fcntl, os, sys, time; import numpy; f = open(sys.argv[1]); libc = ctypes.CDLL(None, use_errno=True)\n"
        "def tried(call):\n"
        "    try: call(); return 'allowed'\n"
        "    except OSError as error: return f'refused {error.errno}'\n"
        "print(tried(lambda: fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)), tried(lambda: fcntl.lockf(f, fcntl.LOCK_SH)),\n"
        "      tried(lambda: os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)),\n"
        "      'refused' if libc.inotify_init1(0) < 0 and ctypes.get_errno() == 1 else 'allowed', numpy.ones(2).sum(),\n"
        "      flush=True)\n"
        "time.sleep(float(sys.argv[2]))\n"
    )
    outputs = [tmp_path / "first", tmp_path / "second"]
    processes = []
    for output, hold in zip(outputs, ["3", "0"]):
        with open(output, "w") as stdout:
            processes.append(
                sandbox.start([sandbox.interpreter(), "-I", "-c", code, shared, hold], binds=[], stdout=stdout)
            )
    for process in reversed(processes):
        process.wait(120)
        sandbox.stop(process)
    for output in outputs:
        assert output.read_text() == "refused 1 refused 1 refused 1 refused 2.0\n"
    import fcntl

    with open(shared) as mine:  # the grader's own process is not filtered: the file is not locked by anyone
        fcntl.flock(mine, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_the_seccomp_filter_refuses_the_calls_it_names_and_allows_the_rest():
    "Read back as BPF: the architecture check, the x32 table, each refused call and fcntl command, then allow."
    import struct

    from grading.sandbox import seccomp

    assert seccomp.program("riscv64") is None  # no table here: the sandbox runs without it (docs/design.md)
    for machine in ("x86_64", "aarch64"):
        code = list(struct.iter_unpack("=HBBI", seccomp.program(machine)))
        last = len(code) - 1
        assert code[-2:] == [(seccomp.RETURN, 0, 0, seccomp.ALLOW), (seccomp.RETURN, 0, 0, seccomp.DENY)]
        assert code[1] == (seccomp.JEQ, 0, last - 2, seccomp.AUDIT_ARCH[machine])  # another table: refused whole
        refused = {k for at, (op, yes, no, k) in enumerate(code) if op == seccomp.JEQ and at + 1 + yes == last}
        assert set(seccomp.DENIED_CALLS[machine].values()) | set(seccomp.DENIED_FCNTL.values()) <= refused
