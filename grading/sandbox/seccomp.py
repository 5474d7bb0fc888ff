"""What a sandbox may not do to the files it shares with the others: lock them, lease them, watch them, or evict them.

Every sandbox binds the same read-only files (Python, the venv's packages). A `flock` lock on such a file is seen from
every mount namespace, so two sandboxes that run at once (two students under `--workers 2`) could pass bits through
locks on NumPy's files, one per file (issue 44); so could a watch (inotify sees another sandbox open a file) and
page-cache eviction (posix_fadvise). This seccomp filter, handed to bwrap (`--seccomp FD`), makes those calls fail
with EPERM: `flock`, fcntl's record and open-file-description locks, leases and directory notices, inotify,
fanotify and fadvise. None of them is needed by the worker, NumPy or a course exercise.

It is written for x86-64 and AArch64 (their own system call numbers); elsewhere `program()` is None and the sandbox
runs without it, which docs/design.md says. On x86-64, the x32 and 32-bit system call tables are refused whole.
"""

import os
import platform
import struct
from collections.abc import Iterator

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
DENIED_CALLS = {  # the calls refused outright, by name: their numbers on each machine
    "x86_64": {
        "flock": 73,
        "inotify_init": 253,
        "inotify_add_watch": 254,
        "inotify_init1": 294,
        "fanotify_init": 300,
        "fadvise64": 221,
    },  # fmt: skip
    "aarch64": {"flock": 32, "inotify_add_watch": 27, "inotify_init1": 26, "fanotify_init": 262, "fadvise64": 223},
}
FCNTL = {"x86_64": 72, "aarch64": 25}
DENIED_FCNTL = {  # fcntl commands that lock, lease or watch a file (F_GETLK tells whether another holds a lock)
    "F_GETLK": 5, "F_SETLK": 6, "F_SETLKW": 7, "F_OFD_GETLK": 36, "F_OFD_SETLK": 37, "F_OFD_SETLKW": 38,
    "F_SETLEASE": 1024, "F_GETLEASE": 1025, "F_NOTIFY": 1026,
}  # fmt: skip
X32_FIRST = 0x40000000  # x86-64's x32 system calls are numbered from here

LOAD, JEQ, JGE, RETURN = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_RET|K
ALLOW, DENY = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
NR, ARCH, ARG1 = 0, 4, 24  # offsets in struct seccomp_data (ARG1: the low half of args[1], little-endian)


def program(machine: str | None = None) -> bytes | None:
    "The filter as bytes (struct sock_filter entries) for this machine, or None where it has no table here."
    machine = machine or platform.machine()
    if machine not in AUDIT_ARCH:
        return None
    calls, commands = list(DENIED_CALLS[machine].values()), list(DENIED_FCNTL.values())
    code = [("load", ARCH), ("jeq", AUDIT_ARCH[machine], 0, "deny"), ("load", NR)]
    code += [("jge", X32_FIRST, "deny", 0)] if machine == "x86_64" else []
    code += [("jeq", number, "deny", 0) for number in calls]
    code += [("jeq", FCNTL[machine], 0, "allow"), ("load", ARG1)]
    code += [("jeq", command, "deny", 0) for command in commands]
    code += [("allow",), ("deny",)]
    return b"".join(_encode(code))


def _encode(code: list[tuple]) -> Iterator[bytes]:
    "Each instruction as a sock_filter; a jump's target 'allow' or 'deny' is the last but one or the last."
    where = {"allow": len(code) - 2, "deny": len(code) - 1}
    for at, (op, *rest) in enumerate(code):
        if op == "load":
            yield struct.pack("=HBBI", LOAD, 0, 0, rest[0])
        elif op in ("jeq", "jge"):
            value, yes, no = rest
            yes, no = (where[t] - at - 1 if isinstance(t, str) else t for t in (yes, no))
            yield struct.pack("=HBBI", JEQ if op == "jeq" else JGE, yes, no, value)
        else:
            yield struct.pack("=HBBI", RETURN, 0, 0, ALLOW if op == "allow" else DENY)


def program_fd() -> int | None:
    "A file descriptor bwrap reads the filter from (`--seccomp FD`), or None where there is no filter here."
    code = program()
    if code is None:
        return None
    fd = os.memfd_create("tinytorch-seccomp", 0)
    os.write(fd, code)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
