"""benchmarks/what_if.py compares like with like: each of its contenders (the NumPy calls alone, and the
change it measures) makes the same update of the same weights as tinytorch's own step, so that its timings say
what that change would cost or save, and nothing else."""

from pathlib import Path

import numpy as np
import pytest

import tinytorch  # noqa: F401  (enables autograd)
from conftest import load_script
from tinytorch.core.tensor import Tensor

PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "what_if.py"


@pytest.fixture(scope="module")
def what_if():
    return load_script(PATH)


def arrays(step):
    return [p.data if isinstance(p, Tensor) else p for p in step.parameters]


def test_every_contender_makes_tinytorchs_update(what_if):
    found = what_if.contenders()
    reference = found.pop("tinytorch")
    found.pop("hand-written NumPy")  # its own weights: run.py's, not comparable number for number
    before = [a.copy() for a in arrays(reference)]
    for _ in range(3):
        reference()
    expected = arrays(reference)
    assert max(np.abs(e - b).max() for e, b in zip(expected, before)) > 1e-4  # the steps moved the weights
    for name, step in found.items():
        assert all(np.array_equal(a, b) for a, b in zip(arrays(step), before)), f"{name}: other weights"
        for _ in range(3):
            step()
        for got, want in zip(arrays(step), expected):
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=name)
