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


def kernel_environment(pythonpath):
    "Kernels started inside import tinytorch from `pythonpath` and show no progress bars."
    return patched_environ({"PYTHONPATH": str(pythonpath), "TINYTORCH_QUIET": "1"})
