"""Limits for a sandbox as a whole: one cgroup per sandbox.

rlimits hold per process (RLIMIT_AS, RLIMIT_CPU) or per user (RLIMIT_NPROC, across every sandbox of that user), so
six processes of 600 MB pass a 1 GB limit and one student's fork bomb takes the process slots of the next. A cgroup
holds for every process of the sandbox together: its memory (tmpfs pages included: they are charged to the writer),
its number of processes, its share of the CPU. The grader makes one per sandbox, puts the sandbox's first process in
it before that process runs anything (in the child, between fork and exec), kills whatever is left in it when the
sandbox ends, and removes it.

Where the cgroups come from, in order:

* `TINYTORCH_CGROUP`: a folder delegated to the grading user (cgroup v2: a cgroup whose `cgroup.subtree_control`
  enables pids, memory and cpu; v1: a path that exists under each controller's mount), as an administrator or
  systemd (`Delegate=yes`, `systemd-run --scope -p Delegate=yes`) sets it up;
* else the grader's own cgroup, where it may create children (root, or a delegated user session): v2 when the host
  has a unified hierarchy with those controllers, else the v1 controllers pids, memory and cpu;
* else none: the rlimits alone, which `autograde` says once (docs/design.md, "The sandbox").
"""

import os
import re
import secrets
import signal
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("pids", "memory", "cpu")
PIDS_MAX = 256  # processes and threads of one sandbox: a kernel, its threads and a few helpers use about 40
CPU_PERIOD = 100_000  # microseconds
NAME = re.compile(r"tinytorch-(\d{1,9})-[0-9a-f]+")  # a sandbox's cgroup, named after the process that made it
STALE = 60  # seconds an empty cgroup of an ended process is left alone (its maker may be in another PID namespace)


def own_paths(proc_cgroup: str | Path = "/proc/self/cgroup") -> dict:
    "{controller: path} of this process's cgroups; the v2 path under the key ''."
    paths = {}
    for line in Path(proc_cgroup).read_text().splitlines():
        _, names, path = line.split(":", 2)
        for name in names.split(",") if names else [""]:
            paths[name] = path
    return paths


def places(
    root: str | Path = ROOT, proc_cgroup: str | Path = "/proc/self/cgroup", delegated: str | None = None
) -> tuple[str | None, list]:
    """('v2', [parent]) or ('v1', [parent per controller]) where this process can make a sandbox's cgroups, or
    (None, []) where it cannot. `delegated`: TINYTORCH_CGROUP."""
    delegated = delegated if delegated is not None else os.environ.get("TINYTORCH_CGROUP", "")
    root = Path(root)
    own = own_paths(proc_cgroup)
    controllers = root / "cgroup.controllers"
    if controllers.exists() and set(CONTROLLERS) <= set(controllers.read_text().split()):
        parent = Path(delegated) if delegated.startswith("/") else root / (delegated or own.get("", "/")).lstrip("/")
        return ("v2", [parent]) if writable(parent) else (None, [])
    parents = []
    for name in CONTROLLERS:
        mount = root / name
        path = delegated or own.get(name)
        if path is None or not (mount / "cgroup.procs").exists():
            return None, []
        parents.append(mount / path.lstrip("/"))
    return ("v1", parents) if all(writable(p) for p in parents) else (None, [])


def writable(folder: Path) -> bool:
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)


class Cgroups:
    "The cgroup(s) of one sandbox (v2: one folder; v1: one per controller)."

    def __init__(self, version: str, folders: list) -> None:
        self.version, self.folders = version, folders

    @classmethod
    def make(
        cls, memory_mb: int, cpus: float = 1.0, pids: int = PIDS_MAX, where: tuple | None = None
    ) -> "Cgroups | None":
        "New cgroups with these limits, or None where the host gives none (`where`: what places() returned)."
        version, parents = where or places()
        if version is None:
            return None
        sweep(parents)
        name = f"tinytorch-{os.getpid()}-{secrets.token_hex(6)}"
        folders = [parent / name for parent in parents]
        made = []
        try:
            if version == "v2":
                enable_controllers(parents[0])
            for folder in folders:
                folder.mkdir()
                made.append(folder)
            group = cls(version, folders)
            group.limit(memory_mb, cpus, pids)
            return group
        except OSError:
            for folder in made:
                remove(folder)
            return None

    def limit(self, memory_mb: int, cpus: float, pids: int) -> None:
        memory, quota = str(memory_mb * 2**20), str(int(cpus * CPU_PERIOD))
        if self.version == "v2":
            folder = self.folders[0]
            write(folder / "pids.max", str(pids))
            write(folder / "memory.max", memory)
            if (folder / "memory.swap.max").exists():
                write(folder / "memory.swap.max", "0")
            write(folder / "cpu.max", f"{quota} {CPU_PERIOD}")
            return
        pids_dir, memory_dir, cpu_dir = self.folders
        write(pids_dir / "pids.max", str(pids))
        write(memory_dir / "memory.limit_in_bytes", memory)
        if (memory_dir / "memory.memsw.limit_in_bytes").exists():
            write(memory_dir / "memory.memsw.limit_in_bytes", memory)  # no escape into swap
        write(cpu_dir / "cpu.cfs_period_us", str(CPU_PERIOD))
        write(cpu_dir / "cpu.cfs_quota_us", quota)

    def enter(self) -> None:
        "Put the calling process in the cgroups (called in the child, before exec: nothing runs outside them)."
        for folder in self.folders:
            write(folder / "cgroup.procs", str(os.getpid()))

    def members(self) -> list:
        procs = self.folders[0] / "cgroup.procs"
        try:
            return [int(pid) for pid in procs.read_text().split()]
        except (OSError, ValueError):
            return []

    def close(self) -> None:
        "Kill every process left in the cgroups, then remove them."
        kill = self.folders[0] / "cgroup.kill"
        for _ in range(500):
            pids = self.members()
            if not pids:
                break
            if kill.exists():
                write(kill, "1")
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.002)  # killed processes leave within milliseconds: each job stops two sandboxes
        for folder in self.folders:
            remove(folder)


def sweep(parents: list) -> None:
    """Remove the cgroups that sandboxes of ended processes left in `parents`. A job killed from outside (a grading run
    or a Dask worker SIGKILLed, a job past its time) never stops its sandboxes: their processes end with it, but their
    cgroups stay. One whose maker has ended, that holds no process and is more than STALE seconds old goes."""
    for parent in parents:
        try:
            entries = list(parent.iterdir())
        except OSError:
            continue
        for folder in entries:
            made_by = NAME.fullmatch(folder.name)
            if made_by is None or alive(int(made_by.group(1))):
                continue
            try:
                if time.time() - folder.stat().st_mtime < STALE or (folder / "cgroup.procs").read_text().strip():
                    continue
                folder.rmdir()
            except OSError:
                continue  # removed meanwhile by another run's sweep, or not this user's to remove


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: alive
        pass
    return True


def enable_controllers(parent: Path) -> None:
    "cgroup v2: let the children of `parent` have the pids, memory and cpu controllers."
    enabled = set((parent / "cgroup.subtree_control").read_text().split())
    missing = [name for name in CONTROLLERS if name not in enabled]
    if missing:
        write(parent / "cgroup.subtree_control", " ".join(f"+{name}" for name in missing))


def write(path: str | Path, text: str) -> None:
    with open(path, "w") as file:
        file.write(text)


def remove(folder: Path) -> None:
    for _ in range(500):  # a cgroup is removable once its last process has been reaped
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.002)
