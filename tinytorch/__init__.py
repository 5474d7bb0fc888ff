__version__ = "0.1.0"

# Written by hand, not exported (nbdev_export only rewrites the version line above): `import tinytorch as tt` gives
# tt.Tensor, tt.no_grad, the dtypes (tt.float32, tt.set_default_dtype), and tt.nn, tt.optim and tt.functional
# (tinytorch/nn.py, optim.py, functional.py).
import ctypes
import importlib
import os
import sys

from numpy import float32, float64

# The package always gives the recording Tensor (notebook 01 builds a plain one of its own, before autograd exists).
from .core.autograd import enable_autograd
from .core.function import no_grad
from .core.tensor import Tensor, get_default_dtype, set_default_dtype

enable_autograd(quiet=True)


# glibc's settings that keep freed memory for reuse, by the names of its environment variables:
# (mallopt's number for it, the bytes). The numbers are M_MMAP_THRESHOLD and M_TRIM_THRESHOLD.
KEPT_MEMORY = {"MALLOC_MMAP_THRESHOLD_": (-3, 32 << 20), "MALLOC_TRIM_THRESHOLD_": (-1, 128 << 20)}


def _keep_freed_memory():
    """Ask glibc to keep the memory of freed arrays for the next ones. By default it hands blocks back to the system
    as soon as the top of its heap holds twice the largest block it was asked for, so a training step that frees its
    activations and gradients and makes new ones the next step pays page faults for fresh memory every step (about a
    quarter of a float64 CNN step of benchmarks/engines.py). Blocks up to 32 MiB then come from the heap (as glibc's
    own adaptation would allow) and up to 128 MiB stay free at its top. Nothing changes where the user set glibc's
    MALLOC_ variables or its glibc.malloc tunables, or where the C library is not glibc."""
    chosen = any(name.startswith("MALLOC_") for name in os.environ) or "glibc.malloc." in os.environ.get(
        "GLIBC_TUNABLES", ""
    )
    if not sys.platform.startswith("linux") or chosen:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    for number, value in KEPT_MEMORY.values():
        mallopt(number, value)
    return True


KEEPS_FREED_MEMORY = _keep_freed_memory()  # False where the user chose glibc's settings, or it is not glibc

# Imported on first use, not here: a module of a later notebook that does not import yet (a student's half-written
# exported cell) must not stop `import tinytorch` in the notebooks before it.
SUBMODULES = ("nn", "optim", "functional")
__all__ = ["Tensor", "no_grad", "float32", "float64", "set_default_dtype", "get_default_dtype", *SUBMODULES]


def __getattr__(name):
    if name in SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'tinytorch' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *SUBMODULES])
