"""The sandbox every process that runs a student's code starts in: bubblewrap (`bwrap`), one per process.

bubblewrap (Debian package `bubblewrap`) makes new user, PID, mount, network, IPC, UTS and cgroup namespaces
without root. Inside, the student's code sees:

* a read-only view of the system's libraries (/usr), of Python and its packages, of the student's own package and of
  the grader's two worker files, and nothing else of the machine: no grading folder, no submissions, no instructor
  notebooks, no home folders;
* a private, empty /tmp and home (tmpfs, gone with the sandbox), no network (only its own loopback), its own PID 1;
* a scrubbed environment, closed standard input, rlimits on memory, CPU time, file size and core dumps.

`--die-with-parent` and the PID namespace make the end of the sandbox total: when the grader kills bwrap (or dies),
every process inside is killed by the kernel, however many times it forked. Nothing is written outside, so nothing
is left behind; results come back only through the pipes the grader passed in.

Where bwrap is missing or user namespaces are not allowed, `check()` says why and the grader refuses to grade
unless it is told `--unsafe-no-sandbox` (then the same command runs without isolation, with the limits only).
"""

import functools
import os
import resource
import shutil
import subprocess
import sys

from .defaults import MEMORY_MB
from .errors import GradingError

HOME = "/home/student"
SANDBOX_UID = 65534  # the student's user id inside (nobody); it maps to the grader's own id outside
SYSTEM_DIRS = ["/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin"]
SYSTEM_FILES = ["/etc/ld.so.cache", "/etc/localtime"]
SYSTEM_SHARED = ["/etc/fonts", "/etc/alternatives"]
BASE_ENV = {
    "HOME": HOME,
    "TMPDIR": "/tmp",
    "MPLCONFIGDIR": "/tmp",
    "MPLBACKEND": "Agg",
    "IPYTHONDIR": "/tmp/.ipython",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONHASHSEED": "0",
    "TINYTORCH_QUIET": "1",
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
}
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) on a host that allows unprivileged "
    "user namespaces, or grade in the container of grading/Dockerfile; --unsafe-no-sandbox grades without "
    "isolation (only for code you trust)"
)


@functools.cache
def problem():
    "None when bwrap can make a sandbox here; else one line saying why not."
    if not sys.platform.startswith("linux"):
        return "the sandbox needs Linux (bubblewrap)"
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    probe = subprocess.run(
        command([os.path.realpath(sys.executable), "-c", "pass"], binds=[]), capture_output=True, text=True, timeout=60
    )
    if probe.returncode != 0:
        return f"bwrap cannot make a sandbox here: {(probe.stderr.strip().splitlines() or ['?'])[-1]}"
    return None


def check(unsafe=False):
    "Raise GradingError unless grading can be sandboxed (or the caller accepted the risk)."
    why = problem()
    if why is not None and not unsafe:
        raise GradingError(f"cannot grade safely: {why}. To fix: {INSTALL_HINT}.")
    return why is None


def python_dirs():
    "Python and its packages (a venv's and its base's): what the sandbox must see to run Python at all."
    import site

    dirs = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    dirs |= {os.path.realpath(p) for p in site.getsitepackages() if os.path.isdir(p)}
    dirs.add(os.path.dirname(os.path.realpath(sys.executable)))
    return sorted(d for d in dirs if not any(d != o and d.startswith(o + os.sep) for o in dirs))


def command(argv, binds, env=None, cwd="/tmp"):
    """The bwrap command line that runs `argv` in a fresh sandbox. `binds` is [(path outside, path inside)], all
    read-only; `env` is added to a clean environment."""
    args = [
        "bwrap",
        "--unshare-all",
        "--unshare-user",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--cap-drop",
        "ALL",
    ]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in SYSTEM_FILES + SYSTEM_SHARED:
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    for path in python_dirs():
        args += ["--ro-bind", path, path]
    for outside, inside in binds:
        args += ["--ro-bind", str(outside), str(inside)]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--dir", HOME, "--chdir", cwd]
    for name, value in {**BASE_ENV, **(env or {})}.items():
        args += ["--setenv", name, str(value)]
    return args + ["--", *argv]


def limiter(memory_mb, cpu_seconds, file_mb=256):
    "A preexec_fn that caps what the sandboxed process may use (inherited through bwrap)."

    def apply():
        for which, value in [
            (resource.RLIMIT_AS, memory_mb * 2**20),
            (resource.RLIMIT_CPU, cpu_seconds),
            (resource.RLIMIT_FSIZE, file_mb * 2**20),
            (resource.RLIMIT_CORE, 0),
        ]:
            _, hard = resource.getrlimit(which)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            try:
                resource.setrlimit(which, (value, value))
            except (ValueError, OSError):
                pass

    return apply


def start(
    argv,
    binds,
    env=None,
    memory_mb=MEMORY_MB,
    cpu_seconds=1800,
    sandboxed=True,
    pass_fds=(),
    stdout=None,
    cwd="/tmp",
    stderr=None,
):
    """Start `argv` in a fresh sandbox (or, unsandboxed, with the limits only, in an empty temporary folder).
    The caller must end it with `stop()`, which kills everything inside."""
    if sandboxed:
        full = command(argv, binds, env, cwd=cwd)
        workdir = None
    else:
        import tempfile

        workdir = tempfile.mkdtemp(prefix="tinytorch-unsafe-")
        full, env = (
            argv,
            {**os.environ, **BASE_ENV, "HOME": workdir, "TMPDIR": workdir, "MPLCONFIGDIR": workdir, **(env or {})},
        )
    process = subprocess.Popen(
        full,
        stdin=subprocess.DEVNULL,
        stdout=stdout or subprocess.DEVNULL,
        stderr=None if os.environ.get("TINYTORCH_DEBUG_SANDBOX") else stderr or subprocess.DEVNULL,
        pass_fds=pass_fds,
        preexec_fn=limiter(memory_mb, cpu_seconds),
        start_new_session=True,
        env=None if sandboxed else env,
        cwd=workdir,
    )
    process.unsafe_workdir = workdir
    return process


def stop(process):
    "Kill the sandbox: bwrap, and with it (PID namespace, --die-with-parent) every process inside."
    import signal

    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        raise GradingError(f"the sandbox (pid {process.pid}) did not end after SIGKILL") from None
    if getattr(process, "unsafe_workdir", None):
        shutil.rmtree(process.unsafe_workdir, ignore_errors=True)
