"""`tinytorch.optim`: the optimizers, by the names a PyTorch user looks for (`tt.optim.SGD`).

Written by hand, not exported: it only gathers names; they are defined in tinytorch/core/optimizers.py by notebook 10.
grading/student/export.py (SKELETON) copies it into every kit and grading folder.
"""

from .core.optimizers import SGD, Adam, AdamW, Optimizer

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]
