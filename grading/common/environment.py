"""The environment of the kernels the course starts: where they import tinytorch from."""

import contextlib
import importlib.metadata
import json
import os
from collections.abc import Iterator
from pathlib import Path

COURSE, KIT = "tinytorch", "tinytorch-student"  # the distributions of the course and of its kit (kit/pyproject.toml)


@contextlib.contextmanager
def patched_environ(values: dict[str, str]) -> Iterator[None]:
    "Processes started inside inherit `values`; the environment is restored after."
    before = dict(os.environ)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(before)


# One BLAS thread, for grading jobs, sandboxes and the kernels of `check`. The course's matrices are small: BLAS
# threads only wait for each other on them (the capstone's check took 50 s of wall time on 2 cores with OpenBLAS's
# default threads, 15 s with one), and a grading job per core must not start more.
ONE_BLAS_THREAD = dict.fromkeys(("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"), "1")


def kernel_environment(pythonpath: str | Path) -> contextlib.AbstractContextManager[None]:
    """Kernels started inside import tinytorch from `pythonpath`, show no progress bars and use one BLAS thread
    unless the user chose otherwise."""
    threads = {name: value for name, value in ONE_BLAS_THREAD.items() if name not in os.environ}  # the user's kept
    return patched_environ({"PYTHONPATH": str(pythonpath), "TINYTORCH_QUIET": "1", **threads})


def shared_with_the_kit() -> str | None:
    """The one-line error when the course and the student kit are installed in this one environment (both provide
    `import tinytorch` and `import grading`, so one hides the other), else None."""
    try:
        kit = importlib.metadata.distribution(KIT)
        importlib.metadata.distribution(COURSE)
    except importlib.metadata.PackageNotFoundError:
        return None
    return (
        f"the student kit ({KIT} from {installed_from(kit)}) and the course ({COURSE}) are installed in the same Python environment, and "
        f"both provide tinytorch and grading, so one hides the other; run pip uninstall {KIT} here, and give the kit "
        "a venv of its own (the kit's README.md says how)."
    )


def installed_from(dist: importlib.metadata.Distribution) -> str:
    "Where an installed distribution comes from: the folder of an editable install, else where it is installed."
    url = json.loads(dist.read_text("direct_url.json") or "{}").get("url", "")
    return url.removeprefix("file://") if url.startswith("file://") else str(dist.locate_file(""))
