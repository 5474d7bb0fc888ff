__version__ = "0.1.0"

# The package always gives the recording Tensor; notebooks 01-05 define their own plain one.
from .core.autograd import enable_autograd
enable_autograd(quiet=True)
