"""benchmarks/mlsys_package.py makes MLSysBook's TinyTorch importable from a checkout whose package lacks modules its
__init__ imports, by exporting those from the checkout's src/ as nbdev would, and leaves the committed ones alone."""

import ast
from pathlib import Path

import pytest

from conftest import load_script

PACKAGE = load_script(Path(__file__).resolve().parent.parent / "benchmarks" / "mlsys_package.py")

SOURCE = """# %% [markdown]
# # Activations

# %% nbgrader={"grade": false, "grade_id": "setup", "solution": true}
#| default_exp core.activations
#| export
import numpy as np

# %%
raise RuntimeError("a test cell: not exported")

# %% nbgrader={"grade": false, "grade_id": "relu", "solution": true}
#| exports
class ReLU:
    def __call__(self, x):
        return np.maximum(x, 0)

# %%
#| export core.helpers
HELPED = True
"""


def checkout(root: Path, autograd="VERSION = 'committed'\n", lacking=()) -> Path:
    """A checkout of the shape of MLSysBook's: tinytorch/ without core/activations.py, which only src/ has, and
    every other module the benchmark's engine imports (except those `lacking`), with stand-ins of its names."""
    (root / "tinytorch" / "core").mkdir(parents=True)
    (root / "tinytorch" / "__init__.py").write_text("from .core.activations import ReLU\n")
    (root / "tinytorch" / "core" / "__init__.py").write_text("")
    for module, names in PACKAGE.ENGINE_IMPORTS.items():
        if module not in ("tinytorch.core.activations", *lacking):
            stand_ins = "".join(f"{name} = None\n" for name in names)
            (root / f"{module.replace('.', '/')}.py").write_text(stand_ins)
    (root / "tinytorch" / "core" / "autograd.py").write_text(autograd + "enable_autograd = None\n")
    (root / "src" / "02_activations").mkdir(parents=True)
    (root / "src" / "02_activations" / "02_activations.py").write_text(SOURCE)
    (root / "src" / "05_autograd").mkdir(parents=True)
    (root / "src" / "05_autograd" / "05_autograd.py").write_text(
        "#| default_exp core.autograd\n#| export\nVERSION = 'src'\n"
    )
    return root


def test_a_checkout_missing_a_module_is_completed_from_its_source_and_imports(tmp_path):
    made = PACKAGE.prepare(checkout(tmp_path / "checkout"), tmp_path / "ready")
    assert made == ["core.activations", "core.helpers"]  # core.autograd is committed: it stays as it is
    assert PACKAGE.import_problem(tmp_path / "ready") is None
    exported = (tmp_path / "ready" / "tinytorch" / "core" / "activations.py").read_text()
    assert "class ReLU" in exported and "import numpy" in exported and "not exported" not in exported
    assert (
        "#|" not in exported and "HELPED" not in exported and exported.startswith("# exported from src/02_activations/")
    )
    assert "HELPED = True" in (tmp_path / "ready" / "tinytorch" / "core" / "helpers.py").read_text()
    assert (tmp_path / "ready" / "tinytorch" / "core" / "autograd.py").read_text().startswith("VERSION = 'committed'")
    assert not (tmp_path / "checkout" / "tinytorch" / "core" / "activations.py").exists()  # the checkout is untouched


def test_a_package_that_does_not_import_is_named_with_the_reason(tmp_path):
    checkout(tmp_path / "checkout", autograd="import no_such_module\n")
    PACKAGE.prepare(tmp_path / "checkout", tmp_path / "ready")
    assert "No module named 'no_such_module'" in PACKAGE.import_problem(tmp_path / "ready")


def test_a_package_without_a_module_the_engine_imports_is_named(tmp_path):
    checkout(tmp_path / "checkout", lacking=("tinytorch.core.layers",))
    PACKAGE.prepare(tmp_path / "checkout", tmp_path / "ready")
    assert "No module named 'tinytorch.core.layers'" in PACKAGE.import_problem(tmp_path / "ready")


def test_the_import_check_names_what_the_engine_imports():
    engines = Path(__file__).resolve().parent.parent / "benchmarks" / "engines.py"
    function = next(
        node
        for node in ast.walk(ast.parse(engines.read_text()))
        if isinstance(node, ast.FunctionDef) and node.name == "mlsys_engine"
    )
    imported = {}
    for node in ast.walk(function):
        if isinstance(node, ast.ImportFrom):
            imported.setdefault(node.module, ())
            imported[node.module] += tuple(alias.name for alias in node.names)
    assert imported == PACKAGE.ENGINE_IMPORTS


def test_a_folder_without_a_package_is_refused_with_what_to_give(tmp_path):
    with pytest.raises(FileNotFoundError, match="give a checkout of MLSysBook's TinyTorch"):
        PACKAGE.prepare(tmp_path, tmp_path / "ready")


def test_the_checkout_itself_is_refused_as_the_folder_to_prepare_in(tmp_path):
    checkout(tmp_path / "checkout")
    with pytest.raises(ValueError, match="a folder of its own"):
        PACKAGE.prepare(tmp_path / "checkout", tmp_path / "checkout")
    assert (tmp_path / "checkout" / "tinytorch" / "core" / "autograd.py").exists()  # nothing of it was removed
