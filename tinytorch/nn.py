"""`tinytorch.nn`: the layers and losses as modules, by the names a PyTorch user looks for (`tt.nn.Linear`).

Written by hand, not exported: it only gathers names; each is defined in tinytorch/core by its notebook (the "File to
edit" at the top of that module). grading/student/export.py (SKELETON) copies it into every kit and grading folder.
"""

from .core.attention import MultiHeadAttention, TransformerBlock
from .core.conv import AvgPool2d, Conv2d, MaxPool2d
from .core.embedding import Embedding
from .core.losses import BCE, MSE, CrossEntropy
from .core.nn import GELU, Flatten, Linear, Module, ReLU, Sequential, Sigmoid, Softmax, Tanh
from .core.norm import BatchNorm1d, Dropout, LayerNorm

__all__ = [
    "Module",
    "Linear",
    "ReLU",
    "Sigmoid",
    "Tanh",
    "GELU",
    "Softmax",
    "Flatten",
    "Sequential",
    "Conv2d",
    "MaxPool2d",
    "AvgPool2d",
    "Embedding",
    "BatchNorm1d",
    "LayerNorm",
    "Dropout",
    "MultiHeadAttention",
    "TransformerBlock",
    "MSE",
    "BCE",
    "CrossEntropy",
]
