__version__ = "0.1.0"

# Written by hand, not exported (nbdev_export only rewrites the version line above): `import tinytorch as tt` gives
# tt.Tensor, tt.no_grad, the dtypes (tt.float32, tt.set_default_dtype), and tt.nn, tt.optim and tt.functional
# (tinytorch/nn.py, optim.py, functional.py).
import importlib

from numpy import float32, float64

# The package always gives the recording Tensor (notebook 01 builds a plain one of its own, before autograd exists).
from .core.autograd import enable_autograd
from .core.function import no_grad
from .core.tensor import Tensor, get_default_dtype, set_default_dtype

enable_autograd(quiet=True)

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
