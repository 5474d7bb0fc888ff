"""The sandbox every process that runs a student's code starts in: bubblewrap (`bwrap`), one per process.

bubblewrap (Debian package `bubblewrap`) makes new user, PID, mount, network, IPC, UTS and cgroup namespaces
without root. Inside, the student's code sees:

* a read-only view of the system's libraries (/usr) and of Python and its packages, and read-only copies of the
  student's own package (without the course's data: grading.grade.job.build_package) and of the grader's worker files (copied into the sandbox's own root through file
  descriptors, so not even their paths outside show, in /proc/self/mountinfo or elsewhere), and nothing else of the
  machine: no grading folder, no submissions, no instructor notebooks, no home folders;
* a read-only root: only /tmp and home can be written, each a tmpfs of bounded size;
* a private, empty /tmp and home (tmpfs, gone with the sandbox), no network (only its own loopback), its own PID 1;
* a scrubbed environment, closed standard input, rlimits on memory, CPU time, file size and core dumps.

`--die-with-parent` and the PID namespace make the end of the sandbox total: when the grader kills bwrap (or dies),
every process inside is killed by the kernel, however many times it forked. Nothing is written outside, so nothing
is left behind; results come back only through the pipes the grader passed in.

Where bwrap is missing or user namespaces are not allowed (a Docker container such as Gradescope's), `check()` says
why and the grader refuses to grade, unless it is given a student user (`--student-user NAME`: the fallback below) or
told `--unsafe-no-sandbox` (then the same command runs without isolation, with the limits only).

The student-user fallback (`isolation()` returns "user"): a grader running as root starts each process of the
student's as that unprivileged user instead of in bwrap, with a clean environment, the same rlimits plus a cap on its
processes, and an empty home of its own. What it cannot reach is what file permissions keep from it: the grader's
folders are mode 0700 and root's (the job's package and worker files alone are opened to it, in a folder under /tmp
whose name it cannot list); it cannot signal or trace the grader's processes; and when a sandbox ends, every process
of that user is killed, so nothing it started outlives it. It has no private /tmp or network namespace, so it needs a
machine that grades one submission at a time and holds no other secrets readable by every user (Gradescope's
container, one per submission); the grader then runs one job at a time. Set `TINYTORCH_NO_BWRAP=1` to grade as
where bwrap cannot run (the fallback's test does).
"""

import functools
import os
import pwd
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from ..common.defaults import MEMORY_MB
from ..common.environment import ONE_BLAS_THREAD
from ..common.errors import GradingError
from . import cgroup, seccomp

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
    **ONE_BLAS_THREAD,
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONHASHSEED": "0",
    "TINYTORCH_QUIET": "1",
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
}
# The grader's Python must find its packages inside, or nothing can be graded: NumPy is the one the worker imports
# (nbformat, also probed once, took a second of every run to import in the sandbox)
PROBE = "import numpy"
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) on a host that allows unprivileged "
    "user namespaces, or grade in the container of grading/Dockerfile; --unsafe-no-sandbox grades without "
    "isolation (only for code you trust)"
)


WORKER_FILES = ["worker.py", "wire"]  # the student's side: run inside the sandbox, beside each other


def copy_worker_files(folder: str | Path) -> None:
    "Copy the worker and the one package it imports (wire; both in this folder) into `folder`, for the sandbox."
    for name in WORKER_FILES:
        source, target = Path(__file__).with_name(name), Path(folder) / name
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
        else:
            shutil.copyfile(source, target)


@functools.cache
def problem() -> str | None:
    "None when bwrap can make a sandbox here and the grader's Python runs in it; else one line saying why not."
    if not sys.platform.startswith("linux"):
        return "the sandbox needs Linux (bubblewrap)"
    if os.environ.get("TINYTORCH_NO_BWRAP"):
        return "bubblewrap is turned off here (TINYTORCH_NO_BWRAP is set)"
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    why = diagnose()
    if why is None or why.startswith("bwrap"):
        return why and f"bwrap cannot make a sandbox here: {why}"
    return f"{why}. This is a fault of the grading environment, not of any submission"


def diagnose(sandboxed: bool = True) -> str | None:
    "Why the grader's Python does not start in a fresh sandbox right now (None when it does); asked, not remembered."
    argv = [interpreter(), "-I", "-c", PROBE]
    try:
        probe = subprocess.run(
            command(argv, binds=[]) if sandboxed else argv, capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{type(error).__name__}: {error}"
    if probe.returncode == 0:
        return None
    last = (probe.stderr.strip().splitlines() or [f"exit status {probe.returncode}"])[-1]
    return last if last.startswith("bwrap") else f"the grader's Python ({interpreter()}) fails in the sandbox: {last}"


def check(unsafe: bool = False) -> bool:
    "Raise GradingError unless grading can be sandboxed (or the caller accepted the risk)."
    why = problem()
    if why is not None and not unsafe:
        raise GradingError(f"cannot grade safely: {why}. To fix: {INSTALL_HINT}.")
    return why is None


def isolation(unsafe: bool = False, student_user: str | None = None) -> str:
    """How the students' code runs here: "bwrap"; "user" (bwrap cannot run, and `student_user` can be used: see the
    module's docstring); "none" (bwrap cannot run and the caller accepted the risk). Else raise GradingError."""
    why = problem()
    if why is None:
        return "bwrap"
    if student_user:
        student_id(student_user)  # raises GradingError when it cannot be used
        return "user"
    check(unsafe)
    return "none"


def student_id(name: str) -> tuple[int, int]:
    """(uid, gid) of the student user of the fallback; GradingError unless the grader is root, the user exists, is
    not root, and no copy of the course's answers sits in the Python's folders, which every user can read."""
    if os.geteuid() != 0:
        raise GradingError(f"cannot run students' code as {name!r}: the grader must run as root to change user")
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise GradingError(f"no user {name!r} to run students' code as (create it: useradd --system {name})") from None
    if entry.pw_uid == 0 or entry.pw_gid == 0:
        raise GradingError(f"user {name!r} is root or in root's group: students' code must run unprivileged")
    keys = installed_answer_keys(python_dirs())
    if keys:
        raise GradingError(
            f"{', '.join(keys)} holds the course's solutions and every user can read it: install the course "
            'editable (pip install -e ".[dev]") to grade as a student user'
        )
    return entry.pw_uid, entry.pw_gid


STUDENT_USER = {
    "name": None
}  # the fallback's user; set once by the job (one submission per process: grading.grade.job)


def use_student_user(name: str | None) -> None:
    "From now on, a process started unsandboxed runs as the user `name` (None: as the grader, --unsafe-no-sandbox)."
    STUDENT_USER["name"] = name or None


def interpreter() -> str:
    """The Python the grader runs with, as it was started. A venv's `python` is a link to the base interpreter, and
    only when started through the link does it read the venv's pyvenv.cfg and see the venv's packages: never
    resolve it (os.path.realpath would give the base Python, without nbconvert, nbgrader or the course)."""
    if not sys.executable:
        raise GradingError("the grader cannot tell which Python runs it (sys.executable is empty)")
    return os.path.abspath(sys.executable)


STARTUP_PATH = tuple(sys.path)  # as the grader's Python started: the grader adds the reference package later


def _outside_repo(path: str) -> bool:
    """A folder of a course's source (the answer key) never enters the sandbox: the project's folder (except the
    grader's environment or another venv kept inside it, such as the .venv a venv of copies reads its packages from),
    and any folder that holds a course (its settings.ini: a kit, the grader's reference export)."""
    from ..common.notebooks import REPO

    real, repo, prefix = (Path(os.path.realpath(p)) for p in (path, REPO, sys.prefix))
    if (real / "settings.ini").exists():
        return False
    if real != repo and repo not in real.parents:
        return True
    return any(
        folder == prefix or (repo in folder.parents and (folder / "pyvenv.cfg").exists())
        for folder in [real, *real.parents]
    )


def search_path() -> list:
    """The folders on the grader's sys.path, as its Python started, that its Python would not find by itself in the
    sandbox (`-I` ignores PYTHONPATH and the user's site-packages): the sandbox's Python puts them on its path
    (grading.sandbox.worker). Never what the grader put on its path since (the reference package it grades with)."""
    return [p for p in STARTUP_PATH if p and os.path.isabs(p) and os.path.isdir(p) and _outside_repo(p)]


def python_dirs() -> list:
    """Python and its packages: the venv (pyvenv.cfg included) and its base, a conda env, the user's site-packages,
    every folder of the grader's sys.path, each as it is named and as it resolves (links inside must work)."""
    import site

    named = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, os.path.dirname(interpreter())}
    named |= set(site.getsitepackages()) | set(search_path())
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if user_site:
        named.add(user_site)
    dirs = {os.path.abspath(p) for p in named if os.path.isdir(p)} | {
        os.path.realpath(p) for p in named if os.path.isdir(p)
    }
    system = tuple(d + os.sep for d in SYSTEM_DIRS)
    dirs = {d for d in dirs if _outside_repo(d) and not d.startswith(system) and d not in SYSTEM_DIRS}
    return sorted(d for d in dirs if not any(d != o and d.startswith(o + os.sep) for o in dirs))


def installed_answer_keys(dirs: list) -> list:
    """A `pip install .` of the course puts the reference package (every solution) into site-packages: those folders
    are hidden in the sandbox under an empty tmpfs."""
    return sorted({os.path.join(d, "tinytorch") for d in dirs if os.path.isdir(os.path.join(d, "tinytorch"))})


def copy_in(outside: str | Path, inside: str, fds: list) -> list:
    """bwrap arguments that copy a file or a folder tree into the sandbox's own root (`--dir`, `--file FD`), and the
    descriptors they read (appended to `fds`; the caller passes and closes them). A copy, not a bind mount: a bind
    mount shows its source path (the job's folder, the instructor's paths) in /proc/self/mountinfo."""
    outside, args = Path(outside), []
    if not outside.is_dir():
        fds.append(os.open(outside, os.O_RDONLY))
        return ["--file", str(fds[-1]), str(inside)]
    for folder, subfolders, files in os.walk(outside, followlinks=True):
        subfolders.sort()
        target = PurePosixPath(inside) / Path(folder).relative_to(outside).as_posix()
        args += ["--dir", str(target)]
        for name in sorted(files):
            fds.append(os.open(Path(folder) / name, os.O_RDONLY))
            args += ["--file", str(fds[-1]), str(target / name)]
    return args


def command(
    argv: list,
    binds: list,
    env: dict | None = None,
    cwd: str = "/tmp",
    tmpfs_mb: int = MEMORY_MB,
    fds: list | None = None,
) -> list:
    """The bwrap command line that runs `argv` in a fresh sandbox. `binds` is [(path outside, path inside)]: each is
    copied into the sandbox's root, which is then made read-only; `fds` collects the descriptors the copies read
    (needed when there are binds), and the seccomp filter's (grading.sandbox.seccomp): without a list, as for the
    grader's own check that bwrap runs, there is none. `env` is added to a clean environment."""
    if binds and fds is None:
        raise ValueError("command(): binds are copied in through file descriptors; pass a list as fds")
    args = [
        "bwrap",
        "--unshare-all",
        "--unshare-user",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--hostname",
        "localhost",  # a name many machines have: nothing that tells a graded run from a student's own
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--cap-drop",
        "ALL",
    ]
    filter_fd = seccomp.program_fd() if fds is not None else None
    if filter_fd is not None:  # no locks, leases or watches on the files every sandbox shares
        fds.append(filter_fd)
        args += ["--seccomp", str(filter_fd)]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in SYSTEM_FILES + SYSTEM_SHARED:
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    # /tmp first: a venv kept under /tmp is bound on top of the sandbox's own empty /tmp, not hidden by it
    size = str(tmpfs_mb * 2**20)  # a full /tmp or home ends there (and in the sandbox's memory cgroup)
    args += ["--proc", "/proc", "--dev", "/dev", "--size", size, "--tmpfs", "/tmp", "--size", size, "--tmpfs", HOME]
    python = python_dirs()
    for path in python:
        args += ["--ro-bind", path, path]
    for path in installed_answer_keys(python):
        args += ["--tmpfs", path]
    for outside, inside in binds:
        args += copy_in(outside, inside, fds)
    args += ["--remount-ro", "/"]  # the root tmpfs has no size limit: nothing may be written outside /tmp and home
    args += ["--chdir", cwd]
    for name, value in {**BASE_ENV, **python_env(), **(env or {})}.items():
        args += ["--setenv", name, str(value)]
    return args + ["--", *argv]


def python_env() -> dict:
    "What the sandbox's Python needs of the grader's: its tools first on PATH, the folders of its sys.path."
    bin_dir = os.path.dirname(interpreter())
    return {"PATH": f"{bin_dir}:{BASE_ENV['PATH']}", "TINYTORCH_SEARCH_PATH": os.pathsep.join(search_path())}


STUDENT_PROCESSES = 256  # the student user's processes at once (RLIMIT_NPROC counts per user): a fork bomb ends here


def limiter(
    memory_mb: int,
    cpu_seconds: int,
    group: cgroup.Cgroups | None = None,
    file_mb: int = 256,
    user: tuple[int, int] | None = None,
) -> Callable[[], None]:
    """A preexec_fn that caps what the sandboxed process may use (inherited through bwrap) and, where there is one,
    puts it in its cgroups before it runs anything; `user`: (uid, gid) it then becomes (the student-user fallback)."""

    def apply() -> None:
        if group is not None:
            group.enter()
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
        if user is not None:  # last: entering the cgroup needs root. A failure here stops the start: never as root
            resource.setrlimit(resource.RLIMIT_NPROC, (STUDENT_PROCESSES, STUDENT_PROCESSES))
            os.setgroups([])
            os.setgid(user[1])
            os.setuid(user[0])

    return apply


def unsandboxed(argv: list, env: dict, user: tuple[int, int] | None) -> tuple[list, dict, str]:
    """(argv, environment, working folder) of a start without bwrap: an empty folder of its own as home, /tmp and
    working folder (the student user's own, as that user); as the student user, a clean environment."""
    import tempfile

    workdir = tempfile.mkdtemp(prefix="tinytorch-unsafe-" if user is None else "tinytorch-student-")
    outer = {} if user is not None else os.environ  # the grader's environment is not the student's to read
    env = {**outer, **BASE_ENV, **python_env(), "HOME": workdir, "TMPDIR": workdir, "MPLCONFIGDIR": workdir, **env}
    if user is not None:
        os.chown(workdir, *user)
    return argv, env, workdir


def end_processes_of(user: tuple[int, int]) -> None:
    """Kill every process of the student user: as that user, kill(-1) reaches all of its processes and nothing else
    (what it started and detached, out of the process group, included)."""
    subprocess.run(
        [interpreter(), "-I", "-c", "import os, signal; os.kill(-1, signal.SIGKILL)"],
        user=user[0],
        group=user[1],
        extra_groups=[],
        env={},
        timeout=60,
        capture_output=True,
    )


SHARED_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")  # where every user may write (no private /tmp here)


def remove_what_is_left_by(user: tuple[int, int], folders: tuple = SHARED_FOLDERS) -> None:
    """Remove what the student user left where every user may write, and its System V IPC objects: the next process
    of its (the hidden tests' worker after the page's, the next submission) finds nothing of this one's."""
    if shutil.which("ipcrm"):
        subprocess.run(["ipcrm", "--all"], user=user[0], group=user[1], extra_groups=[], env={}, capture_output=True)
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != user[0]:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
            except OSError:
                pass


def start(
    argv: list,
    binds: list,
    *,
    env: dict | None = None,
    memory_mb: int = MEMORY_MB,
    cpu_seconds: int = 1800,
    sandboxed: bool = True,
    pass_fds: tuple = (),
    stdout: object = None,
    cwd: str = "/tmp",
    stderr: object = None,
) -> subprocess.Popen:
    """Start `argv` in a fresh sandbox (or, unsandboxed, with the limits only, in an empty temporary folder, as the
    student user where one is set: use_student_user). The caller must end it with `stop()`, which kills everything
    inside. `binds` and the options are those of `command`; `stdout` and `stderr` go to subprocess.Popen."""
    user, copied = None, []
    if sandboxed:
        try:
            full, workdir = command(argv, binds, env, cwd=cwd, tmpfs_mb=memory_mb, fds=copied), None
        except BaseException:
            close_all(copied)
            raise
    else:
        user = student_id(STUDENT_USER["name"]) if STUDENT_USER["name"] else None
        full, env, workdir = unsandboxed(argv, env or {}, user)
    group = None
    try:
        group = cgroup.Cgroups.make(memory_mb)  # the limits of the sandbox as a whole, where the host has cgroups
        process = subprocess.Popen(
            full,
            stdin=subprocess.DEVNULL,
            stdout=stdout or subprocess.DEVNULL,
            stderr=None if os.environ.get("TINYTORCH_DEBUG_SANDBOX") else stderr or subprocess.DEVNULL,
            pass_fds=(*pass_fds, *copied),
            preexec_fn=limiter(memory_mb, cpu_seconds, group, user=user),
            start_new_session=True,
            env=bwrap_env() if sandboxed else env,
            cwd=workdir,
        )
    except BaseException:
        if group is not None:
            group.close()
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        raise
    finally:
        close_all(copied)  # bwrap has its own copies of them
    process.unsafe_workdir, process.cgroups, process.student_user = workdir, group, user
    return process


def cpu_seconds_used(process: subprocess.Popen) -> float | None:
    """CPU seconds used so far by the sandbox's processes alive now (those of its cgroup; without one, the process
    itself and the children it has reaped), or None where none can be read: whether a late call is computing or
    waiting. Read at every call of the student's code, so it reads a few files, never all of /proc."""
    group = getattr(process, "cgroups", None)
    pids = group.members() if group is not None else [process.pid]
    ticks = []
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks.append(sum(int(f) for f in fields[11:15]))  # utime, stime, and those of its reaped children
        except (OSError, IndexError, ValueError):
            continue  # ended meanwhile
    return sum(ticks) / os.sysconf("SC_CLK_TCK") if ticks else None


def bwrap_env() -> dict:
    """bwrap's own environment: only the PATH it is found by. Its process is PID 1 inside the sandbox, whose
    /proc/1/environ the student's code can read (--clearenv cleans only the command's), so it gets none of the
    grader's variables (a Dask worker's, a token, JUPYTER_PATH)."""
    return {"PATH": os.environ.get("PATH", BASE_ENV["PATH"])}


def close_all(fds: list) -> None:
    for fd in fds:
        os.close(fd)


def stop(process: subprocess.Popen) -> None:
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
    if process.cgroups is not None:
        process.cgroups.close()  # whatever escaped the PID namespace's end (nothing should) dies here
    if process.student_user is not None:
        end_processes_of(process.student_user)  # no PID namespace: what it detached dies here
        remove_what_is_left_by(process.student_user)  # no private /tmp: what it wrote there goes
    if process.unsafe_workdir:
        shutil.rmtree(process.unsafe_workdir, ignore_errors=True)
