"""MLSysBook's TinyTorch, importable from a checkout, for benchmarks/engines.py.

A checkout holds the package its course exports (`tinytorch/`) and the modules it is exported from (`src/NN_name/
NN_name.py`, Jupytext's percent format, with nbdev's `#| default_exp` and `#| export`). At its newest commit the
package's `__init__.py` imports modules the commit does not hold (`core.activations`, only in `src/02_activations`),
so the package does not import as it stands. `prepare` copies the package into a folder of ours (never into this
project) and exports there each module the package lacks from `src/`, as nbdev would: the cells marked `#| export`,
in order. The modules the package holds stay as committed: they are what its users import.

    python benchmarks/mlsys_package.py CHECKOUT FOLDER   # FOLDER/tinytorch, then: run.py engines --mlsys FOLDER
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

CELL = re.compile(r"^# %%.*$", re.M)  # a cell's first line in the percent format
TARGET = re.compile(r"^#\|\s*default_exp\s+(\S+)", re.M)
EXPORT = re.compile(r"^#\|\s*export[is]?(?:\s+(\S+))?\s*$")  # nbdev's export, exporti, exports; or to another module


def exported_modules(src: Path) -> dict[str, str]:
    "{module (core.activations): its code} from every `src/*/*.py` that names one with `#| default_exp`."
    modules, sources = {}, {}
    for path in sorted(src.glob("*/*.py")):
        text = path.read_text(encoding="utf-8")
        default = TARGET.search(text)
        if default is None:
            continue
        for cell in (cell.splitlines() for cell in CELL.split(text)):
            marks = [mark for line in cell if (mark := EXPORT.match(line))]
            if marks:
                name = marks[0].group(1) or default.group(1)
                modules.setdefault(name, []).append("\n".join(line for line in cell if not line.startswith("#|")))
                sources.setdefault(name, set()).add(path.relative_to(src.parent).as_posix())
    return {
        name: f"# exported from {', '.join(sorted(sources[name]))} by benchmarks/mlsys_package.py\n"
        + "\n\n".join(code)
        + "\n"
        for name, code in modules.items()
    }


def prepare(checkout: Path, folder: Path) -> list[str]:
    """Put the checkout's package, completed from its `src/`, in `folder/tinytorch`; return the modules exported. A
    folder that holds only a package (no `src/`) is copied as it is."""
    package, src = Path(checkout) / "tinytorch", Path(checkout) / "src"
    if not (package / "__init__.py").is_file():
        raise FileNotFoundError(f"{checkout} holds no tinytorch/ package: give a checkout of MLSysBook's TinyTorch")
    target = Path(folder) / "tinytorch"
    if target.resolve() == package.resolve() or package.resolve() in target.resolve().parents:
        raise ValueError(f"{folder} is the checkout itself: give a folder of its own for the prepared package")
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(package, target, ignore=shutil.ignore_patterns("__pycache__"))
    made = []
    for name, code in (exported_modules(src) if src.is_dir() else {}).items():
        path = target / (name.replace(".", "/") + ".py")
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(code, encoding="utf-8")
            made.append(name)
    return made


# What benchmarks/engines.py's mlsys_engine imports (a test keeps the two the same)
ENGINE_IMPORTS = {
    "tinytorch.core.activations": ("ReLU",),
    "tinytorch.core.autograd": ("enable_autograd",),
    "tinytorch.core.layers": ("Linear",),
    "tinytorch.core.losses": ("CrossEntropyLoss",),
    "tinytorch.core.optimizers": ("SGD",),
    "tinytorch.core.spatial": ("Conv2d", "MaxPool2d"),
    "tinytorch.core.tensor": ("Tensor",),
}


def import_problem(folder: Path) -> str | None:
    "Why `folder`'s tinytorch does not give what the benchmark's engine imports, in a fresh Python; None when it does."
    imports = "; ".join(f"from {module} import {', '.join(names)}" for module, names in ENGINE_IMPORTS.items())
    code = f"import sys; sys.path.insert(0, {str(folder)!r}); {imports}"
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=folder)
    if ran.returncode == 0:
        return None
    lines = ran.stderr.strip().splitlines()
    return lines[-1] if lines else f"exit status {ran.returncode}"


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python benchmarks/mlsys_package.py CHECKOUT FOLDER  (FOLDER: not the checkout)")
    made = prepare(Path(sys.argv[1]), Path(sys.argv[2]))
    print(f"{sys.argv[2]}/tinytorch: exported from src/: {', '.join(made) or 'nothing'}")
    problem = import_problem(Path(sys.argv[2]))
    print("it imports" if problem is None else f"it does not import: {problem}")
