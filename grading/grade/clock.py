"""Time limits that hold on a busy machine.

A student's code is limited in CPU seconds (the worker's ITIMER_PROF, RLIMIT_CPU): what it costs, not how long the
machine made it wait. The grader still needs wall-clock limits, for code that sleeps or blocks, but those are only a
backstop and they stretch with the machine's load: a `Budget` of 60 s lasts 60 s on a quiet machine and 240 s while
four processes compete for each core. The load is read from /proc/loadavg: the larger of the 1-minute average and the
processes runnable right now (the average lags a minute behind a load that just started).

A `Stopwatch` adds up where a job's time went (the sandbox's start, the imports, the student's code, the verdict, the
page), for `benchmarks/run.py grading`; it decides nothing.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

SLICE = 1.0  # seconds: a wait is cut into slices this long, and the load is read again after each
FRESH = 0.1  # seconds a reading of the load is used for (a job makes thousands of short waits, one per call)
_last_reading = [-FRESH, 1.0]  # [when, load factor]


def load_factor() -> float:
    "How many times slower than a quiet machine a process runs now: max(1, runnable processes per core)."
    now = time.monotonic()
    if now - _last_reading[0] < FRESH:
        return _last_reading[1]
    cores = os.cpu_count() or 1
    try:
        with open("/proc/loadavg") as file:
            fields = file.read().split()
        average, running = float(fields[0]), int(fields[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        factor = 1.0
    else:
        factor = max(1.0, max(average, running - 1) / cores)  # `running` counts the reader itself
    _last_reading[:] = [now, factor]
    return factor


class Budget:
    "`seconds` of a quiet machine's time, spent more slowly while the machine is busy."

    def __init__(self, seconds: float) -> None:
        self.seconds, self.left, self.last = seconds, float(seconds), time.monotonic()

    def remaining(self) -> float:
        "Quiet-machine seconds left (negative when spent); call it at least once a SLICE while waiting."
        now = time.monotonic()
        self.left -= (now - self.last) / load_factor()
        self.last = now
        return self.left

    def expired(self) -> bool:
        return self.remaining() <= 0

    def next_wait(self) -> float:
        "How long to wait before looking again: a slice, or less when the budget is nearly spent."
        return max(0.0, min(SLICE, self.remaining()))


class Stopwatch:
    """Seconds spent in each part of a job, {part: seconds}: `with stopwatch('page'): ...` or `stopwatch.add(part, s)`;
    and how each call that ran out of time was ended, [ending, CPU seconds used, extensions, load] (`endings`)."""

    def __init__(self) -> None:
        self.seconds, self.endings = {}, []

    def add(self, part: str, seconds: float) -> None:
        self.seconds[part] = self.seconds.get(part, 0.0) + seconds

    @contextlib.contextmanager
    def __call__(self, part: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(part, time.perf_counter() - start)


def process_age() -> float:
    "Seconds since this process started (Linux: /proc), or 0 where that cannot be read."
    try:
        ticks = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19])
        return float(open("/proc/uptime").read().split()[0]) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0
