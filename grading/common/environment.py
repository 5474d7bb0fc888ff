"""The environment of the kernels the course starts: where they import tinytorch from."""

import contextlib
import os


@contextlib.contextmanager
def patched_environ(values):
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


def kernel_environment(pythonpath):
    """Kernels started inside import tinytorch from `pythonpath`, show no progress bars and use one BLAS thread
    unless the user chose otherwise."""
    threads = {name: value for name, value in ONE_BLAS_THREAD.items() if name not in os.environ}  # the user's kept
    return patched_environ({"PYTHONPATH": str(pythonpath), "TINYTORCH_QUIET": "1", **threads})
