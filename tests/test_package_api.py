"""Issue 41, point 9: `import tinytorch as tt` gives what a PyTorch user reaches for: tt.Tensor, tt.nn (the layers and
losses as modules), tt.optim (the optimizers) and tt.functional (the operations as functions). The modules that gather
these names are written by hand (nbdev_export leaves them alone), hold imports only, and reach every kit; they load on
first use, so a later notebook's module that does not import yet never stops `import tinytorch`."""

import ast
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tinytorch as tt
from conftest import REPO
from grading.student.export import SKELETON


def test_a_pytorch_users_training_step_runs_on_tt_alone():
    np.random.seed(0)
    model = tt.nn.Sequential(tt.nn.Linear(4, 8), tt.nn.ReLU(), tt.nn.Linear(8, 3))
    optimizer = tt.optim.SGD(model.parameters(), lr=0.1)
    x, y = tt.Tensor(np.random.randn(16, 4)), tt.Tensor(np.random.randint(0, 3, size=16))
    losses = []
    for _ in range(20):
        optimizer.zero_grad()
        loss = tt.nn.CrossEntropy()(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.data))
    assert losses[-1] < losses[0]
    assert np.isclose(
        float(tt.functional.cross_entropy(model(x), y).data), float(tt.nn.CrossEntropy()(model(x), y).data)
    )


def test_the_functional_forms_compute_what_their_modules_do():
    F = tt.functional
    x = tt.Tensor(np.linspace(-2, 2, 10).reshape(2, 5), requires_grad=True)
    assert np.allclose(F.relu(x).data, np.maximum(x.data, 0))
    assert np.allclose(F.sigmoid(x).data, 1 / (1 + np.exp(-x.data)))
    assert np.allclose(F.softmax(x).data.sum(axis=-1), 1)
    assert np.allclose(F.mse_loss(x, tt.Tensor(np.zeros((2, 5)))).data, np.mean(x.data**2))
    F.relu(x).sum().backward()
    assert np.array_equal(x.grad.data, (x.data > 0).astype(float))
    with tt.no_grad():
        assert not F.relu(x).requires_grad


def test_the_api_modules_import_as_pytorch_users_write_it():
    import tinytorch.functional as F
    import tinytorch.nn as nn
    from tinytorch import optim

    assert nn.Conv2d is tt.nn.Conv2d and F.conv2d is tt.functional.conv2d and optim.Adam is tt.optim.Adam
    assert {"Tensor", "nn", "optim", "functional"} <= set(dir(tt)) and set(tt.__all__) <= set(dir(tt))
    for module in (nn, optim, F):
        assert module.__all__ and all(hasattr(module, name) for name in module.__all__), module.__name__
    with pytest.raises(AttributeError, match="no attribute 'torch'"):
        tt.torch  # noqa: B018 - the attribute access is the test


@pytest.mark.parametrize("name", [name for name in SKELETON if name != "__init__.py"])
def test_a_hand_written_module_holds_imports_only_so_the_notebooks_stay_the_only_source(name):
    tree = ast.parse((REPO / "tinytorch" / name).read_text())
    docstring, *rest = tree.body
    assert isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant)
    for node in rest:
        is_all = isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["__all__"]
        assert isinstance(node, ast.ImportFrom) or is_all, f"{name}, line {node.lineno}: only imports and __all__"


def test_a_later_module_that_does_not_import_leaves_import_tinytorch_working(tmp_path):
    shutil.copytree(REPO / "tinytorch", tmp_path / "tinytorch", ignore=shutil.ignore_patterns("__pycache__"))
    with open(tmp_path / "tinytorch" / "core" / "conv.py", "a") as module:
        module.write("\nraise NameError(\"name 'half_written' is not defined\")\n")  # a student's exported cell
    code = (
        "import numpy as np, tinytorch as tt\n"
        "print((tt.Tensor(np.ones(2), requires_grad=True) * 2).sum().data)\n"
        "try:\n    tt.nn\nexcept NameError as error:\n    print('tt.nn:', error)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["4.0", "tt.nn: name 'half_written' is not defined"]


@pytest.mark.slow
def test_the_kits_package_imports_tt_nn_optim_and_functional_before_any_exercise_is_done(kit):
    code = "import tinytorch as tt\nprint(tt.Tensor.__name__, tt.nn.Linear.__name__, tt.optim.SGD.__name__, tt.functional.relu.__name__)"
    env = dict(os.environ, PYTHONPATH=str(kit))
    result = subprocess.run([sys.executable, "-c", code], cwd=kit, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["Tensor", "Linear", "SGD", "relu"]
    assert all((kit / "tinytorch" / name).is_file() for name in SKELETON)
