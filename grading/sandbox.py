"""Run a student's code with limits: `python -m grading.sandbox -- COMMAND...`.

The grader starts every process that runs submitted code (the nbgrader kernel, the clean-room check) through this
launcher. Its settings come as JSON in the environment variable TINYTORCH_SANDBOX (see `Limits`). It always:

* caps memory (address space), CPU seconds, the size of any file written, and core dumps (setrlimit);
* gives the process a private, empty home and temporary folder, and one BLAS thread;
* closes standard input, so input() fails at once instead of waiting.

Run as root with a user id to run as (the grader gives one when `isolation()` is 'full'), it also:

* hides folders and files in a private mount namespace: the grading output (gradebook, grade table, other students'
  results), the submissions folder, the instructor's notebooks, the reference package and the course files holding
  hidden tests appear empty;
* drops to an unprivileged user id of its own (one per grading slot), so the student's code cannot write anything
  the grader owns, nor signal another student's process.

Otherwise the first list still applies; `isolation()` says which mode is in force.
"""
import ctypes
import functools
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field

ENV = "TINYTORCH_SANDBOX"
CLONE_NEWNS, MS_RDONLY, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 0x00020000, 1, 4096, 8192, 16384, 1 << 18


@dataclass
class Limits:
    memory_mb: int = 4096          # address space of the process; numpy raises MemoryError beyond it
    cpu_seconds: int = 1800        # CPU time; the kernel is killed (SIGXCPU) beyond it
    file_mb: int = 64              # largest file the process may write
    uid: int | None = None         # run as this user id (root only)
    home: str | None = None        # the private home to use (made if missing; default: a new temporary folder)
    hide: list = field(default_factory=list)   # paths to hide (root only)

    def to_env(self):
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls):
        return cls(**json.loads(os.environ.get(ENV, "{}")))


@functools.lru_cache(maxsize=None)
def isolation():
    """'full' when the grader can hide files and drop privileges (root on Linux, allowed to make a mount namespace:
    a container without CAP_SYS_ADMIN is not), else 'limits only'."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return "limits only"
    probe = subprocess.run([sys.executable, "-c", "from grading.sandbox import private_mounts; private_mounts()"],
                           cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))), capture_output=True)
    return "full" if probe.returncode == 0 else "limits only"


def _libc_call(name, *args):
    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*args) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{name}: {os.strerror(error)}")


def private_mounts():
    "A mount namespace of our own: what we mount from here on is seen by this process and its children only."
    _libc_call("unshare", CLONE_NEWNS)
    _libc_call("mount", b"none", b"/", None, MS_REC | MS_PRIVATE, None)


def blocked_at(path):
    "The first folder above `path` that other users may not enter (e.g. /root, mode 0700), and its child on the way."
    parts = os.path.abspath(path).split(os.sep)[1:]
    for i in range(len(parts) - 1):
        folder = os.sep + os.sep.join(parts[:i]) if i else os.sep
        if not os.stat(folder).st_mode & 0o001:
            return folder, os.path.join(folder, parts[i])
    return None


def expose(paths):
    """Let the unprivileged user reach Python itself. When Python lives in a folder only root may enter (pyenv under
    /root), cover that folder with an empty one holding just the way to Python; the rest of it stays out of reach."""
    for path in paths:
        blocked = blocked_at(path)
        if blocked is None:
            continue
        folder, child = blocked
        hold = tempfile.mkdtemp(prefix="tinytorch-expose-")
        _libc_call("mount", os.fsencode(child), os.fsencode(hold), None, MS_BIND | MS_REC, None)
        _libc_call("mount", b"tmpfs", os.fsencode(folder), b"tmpfs", 0, b"size=4k,mode=0755")
        os.mkdir(child)
        _libc_call("mount", os.fsencode(hold), os.fsencode(child), None, MS_MOVE, None)
        os.rmdir(hold)


def python_paths():
    import site
    return {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)),
            *site.getsitepackages()}


def hide_paths(paths):
    "Cover each folder with an empty read-only tmpfs and each file with /dev/null."
    for path in sorted(set(paths), key=len):
        if os.path.isdir(path):
            _libc_call("mount", b"tmpfs", os.fsencode(path), b"tmpfs", MS_RDONLY, b"size=4k,mode=0555")
        elif os.path.isfile(path):
            _libc_call("mount", b"/dev/null", os.fsencode(path), None, MS_BIND, None)


def set_limits(limits):
    for which, value in [(resource.RLIMIT_AS, limits.memory_mb * 2**20), (resource.RLIMIT_CPU, limits.cpu_seconds),
                         (resource.RLIMIT_FSIZE, limits.file_mb * 2**20), (resource.RLIMIT_CORE, 0)]:
        soft, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):       # e.g. macOS refuses an address-space limit: that one is skipped
            pass


def private_home(uid, home=None):
    "An empty home for the student's process (matplotlib, IPython and pip caches go there)."
    if home:
        os.makedirs(home, mode=0o700, exist_ok=True)
    else:
        home = tempfile.mkdtemp(prefix="tinytorch-sandbox-")
    if uid is not None:
        os.chown(home, uid, uid)
    return home


def copy_connection_file(argv, home, uid):
    "The kernel's connection file is readable by root only: give the kernel its own copy."
    if "-f" not in argv:
        return argv
    at = argv.index("-f") + 1
    copy = os.path.join(home, "connection.json")
    shutil.copyfile(argv[at], copy)
    if uid is not None:
        os.chown(copy, uid, uid)
    return argv[:at] + [copy] + argv[at + 1:]


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("usage: python -m grading.sandbox -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    limits = Limits.from_env()
    # The grader gives a user id only when isolation() is 'full'; then hiding must work, or nothing runs.
    uid = limits.uid if os.geteuid() == 0 else None
    home = private_home(uid, limits.home)
    argv = copy_connection_file(argv, home, uid)
    if uid is not None:
        private_mounts()
        expose(python_paths())
        hide_paths(limits.hide)
        os.chdir(os.getcwd())     # a working folder under a hidden path now shows the empty cover
    env = {k: v for k, v in os.environ.items() if k != ENV}
    env.update(HOME=home, TMPDIR=home, MPLCONFIGDIR=home, IPYTHONDIR=os.path.join(home, ".ipython"),
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    set_limits(limits)
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    os.execvpe(argv[0], argv, env)


if __name__ == "__main__":
    sys.exit(main())
