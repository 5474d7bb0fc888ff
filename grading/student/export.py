"""`python -m grading export`: nbdev_export a repository or student kit into its tinytorch/ (the kit has this too).

nbdev_export rewrites every module, and tinytorch/__init__.py, in place: two exports of one checkout at once (two
terminals, `make -j`) left __init__.py cut to its first line, and a grading run that copied it meanwhile graded with
the plain Tensor. So the export runs in a copy of the checkout's sources, and each file that changed is swapped into
tinytorch/ whole (os.replace); and it holds the checkout's lock (package_lock), which whatever reads the package
(copy_package_skeleton, the Gradescope zip) holds shared, so that exports and readers take turns.
"""

import configparser
import contextlib
import filecmp
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..common.errors import GradingError
from ..common.notebooks import DEFINITION, REPO, package_lock, write_atomic

REFERENCES = "references"  # where a kit keeps the reference modules its instructor handed out (release --reference)


def export_package(root: str | Path, mine: bool = False) -> None:
    """Run nbdev_export for `root` (a folder with settings.ini) and fail with its message; see the module docstring.
    In a kit with reference modules (REFERENCES), those go into tinytorch/ and their notebooks are not exported, unless
    `mine`."""
    root = Path(root)
    with package_lock(root):
        notebooks = exported_notebooks(root)
        refuse_two_sources(root, notebooks)
        with tempfile.TemporaryDirectory(prefix="tinytorch-export-") as copy:
            copy_sources(root, Path(copy), notebooks)
            kept = [] if mine else put_references(root, notebooks, Path(copy) / "tinytorch")
            skip = "^[_.]" + "".join(f"|^{re.escape(path.name)}$" for path in kept)  # nbdev's own default, and those
            result = subprocess.run(
                [sys.executable, "-c", f"from nbdev.doclinks import nbdev_export; nbdev_export(skip_file_re={skip!r})"],
                cwd=copy,
                capture_output=True,
                text=True,
            )
            if result.returncode:
                detail = (result.stderr or result.stdout).strip().splitlines()
                where = first_syntax_error(root, notebooks)
                raise GradingError(
                    f"nbdev_export failed in {root}: " + (where or (detail[-1] if detail else "no detail"))
                )
            swap_in(Path(copy) / "tinytorch", root / "tinytorch")


def copy_sources(root: Path, copy: Path, notebooks: dict[Path, list[str]]) -> None:
    "What nbdev_export reads of `root`, into `copy`: settings.ini, the notebooks it exports, tinytorch/'s .py files."
    shutil.copyfile(root / "settings.ini", copy / "settings.ini")
    for path in notebooks:
        (copy / path.relative_to(root)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy / path.relative_to(root))
    for path in python_files(root / "tinytorch"):
        target = copy / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


def python_files(package: str | Path) -> list[Path]:
    return sorted(p for p in Path(package).rglob("*.py") if "__pycache__" not in p.parts)


def swap_in(exported: Path, package: Path) -> None:
    "Put each .py file nbdev wrote in `exported` that differs into `package`, whole: a reader sees the old or the new."
    for path in python_files(exported):
        target = package / path.relative_to(exported)
        if not (target.is_file() and filecmp.cmp(path, target, shallow=False)):
            write_atomic(target, path.read_bytes())


def exported_notebooks(root: str | Path) -> dict[Path, list[str]]:
    """{path: its cells} of the notebooks nbdev_export reads in `root`, as nbdev finds them (settings.ini's nbs_path,
    into subfolders if `recursive`, skipping names that start with _ or .); a notebook that cannot be read has no
    cells here (nbdev's own message and `check` report it)."""
    settings = configparser.ConfigParser()
    settings.read(Path(root) / "settings.ini")
    folder = Path(root) / settings.get("DEFAULT", "nbs_path", fallback="notebooks")
    recursive = settings.getboolean("DEFAULT", "recursive", fallback=True)
    found = {}
    for path in sorted(folder.rglob("*.ipynb") if recursive else folder.glob("*.ipynb")):
        if any(part.startswith(("_", ".")) for part in path.relative_to(folder).parts):
            continue
        try:
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        except (OSError, ValueError, KeyError, TypeError):
            cells = []
        found[path] = [cell_source(c) for c in cells if isinstance(c, dict) and c.get("cell_type") == "code"]
    return found


def cell_source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source if isinstance(source, str) else ""


def default_module(sources: list[str]) -> str | None:
    "The module (`core.tensor`) a notebook's cells export to, or None."
    return next((match[1] for source in sources for match in [DEFAULT_EXP.search(source)] if match), None)


def module_file(module: str) -> Path:
    "The file of a module (`core.tensor`) inside tinytorch/."
    return Path(*module.split(".")).with_suffix(".py")


def put_references(root: str | Path, notebooks: dict[Path, list[str]], package: str | Path) -> list[Path]:
    """Copy the kit's reference modules into `package` (the tinytorch/ being exported); return the notebooks they stand
    for, which are not exported."""
    folder = Path(root) / REFERENCES / "tinytorch"
    kept = []
    for path, sources in notebooks.items():
        module = default_module(sources)
        if module and (folder / module_file(module)).is_file():
            target = Path(package) / module_file(module)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(folder / module_file(module), target)
            kept.append(path)
    return kept


def refuse_two_sources(root: Path, notebooks: dict[Path, list[str]]) -> None:
    """Two notebooks that export the same module (a copy saved beside the kit's own, an executed copy): nbdev would
    keep the one it reads last and drop the other without a word, so the student's edits could silently not count."""
    by_module = {}
    for path, sources in notebooks.items():
        module = default_module(sources)
        if module is not None:
            by_module.setdefault(module, []).append(path.relative_to(root))
    for module, paths in by_module.items():
        if len(paths) > 1:
            listed = " and ".join(str(p) for p in paths)
            raise GradingError(
                f"{listed} both export tinytorch's module {module}: nbdev would keep the one it reads last and drop "
                f"the other without a word. Keep one of them in {root}: move the other out of this folder (or give "
                "it a name starting with _, which export skips), then export again."
            )


def first_syntax_error(root: Path, notebooks: dict[Path, list[str]]) -> str | None:
    """Where the first exported cell that Python cannot parse is: notebook, cell, line and the line itself, and what
    to do; None if every exported cell parses (nbdev's own message names none of it)."""
    for path, sources in notebooks.items():
        for number, source in enumerate(sources, 1):
            if not EXPORT.search(source):
                continue
            try:
                compile(source, "<cell>", "exec")
            except SyntaxError as error:
                lines = source.splitlines()
                line = lines[error.lineno - 1].strip() if error.lineno and 0 < error.lineno <= len(lines) else ""
                name = DEFINITION.search(source)
                cell_name = f"the exported cell of {name[1]} (code cell {number})" if name else f"code cell {number}"
                return (
                    f"{path.relative_to(root)}, {cell_name}, line {error.lineno}: "
                    f"{error.msg}" + (f": {line}" if line else "") + ". Fix that line in the notebook, save it, "
                    "and export again."
                )
    return None


EXPORT = re.compile(r"^#\|\s*export\b", re.MULTILINE)
DEFAULT_EXP = re.compile(r"^#\|\s*default_exp\s+(\S+)", re.MULTILINE)


def export_here(root: str | Path) -> None:
    """`export_package`, in this process and for the notebooks alone: for a grading job (one per process, forked with
    nbdev imported), where a new Python for nbdev, and nbdev_export's index of every module, would take longer than
    exporting the one notebook. nbdev reads the settings of the working folder, and keeps them: they are read afresh."""
    from nbdev.config import get_config
    from nbdev.export import nb_export

    here = os.getcwd()
    os.chdir(root)
    try:
        get_config.cache_clear()
        config = get_config()
        with contextlib.redirect_stdout(io.StringIO()):
            for notebook in sorted(Path(config.nbs_path).glob("*.ipynb")):
                nb_export(notebook, config.lib_path, mod_maker=module_maker_inside(config.lib_path))
    except GradingError:
        raise
    except Exception as error:  # noqa: BLE001 - nbdev raises plain exceptions for a notebook it cannot parse
        raise GradingError(f"nbdev_export failed in {root}: {type(error).__name__}: {error}") from error
    finally:
        os.chdir(here)


def module_maker_inside(lib_path: str | Path) -> Callable[..., object]:
    """nbdev's ModuleMaker, for module names whose file is inside `lib_path` only: nbdev writes a `#| default_exp`
    or `#| export` module NAME to lib_path/NAME.py, and an absolute NAME drops lib_path (grading.common.answers)."""
    from nbdev.maker import ModuleMaker

    def make(dest: str | Path, name: str, **options: object) -> ModuleMaker:
        if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", name) or Path(dest).resolve() != Path(lib_path).resolve():
            raise GradingError(
                f"a cell exports to {name!r}, which is not a module of the package in {lib_path}: nothing was "
                "written. A module's name is dotted, as in #| default_exp core.tensor."
            )
        return ModuleMaker(dest=dest, name=name, **options)

    return make


# The files of tinytorch/ written by hand, not exported: the package's __init__ and the modules that gather the names a
# PyTorch user looks for (tt.nn, tt.optim, tt.functional). They hold imports only (tests/test_api_modules.py).
SKELETON = ("__init__.py", "nn.py", "optim.py", "functional.py")


def copy_package_skeleton(target: Path) -> None:
    "What tinytorch/ holds besides exported modules: the SKELETON files and the shipped data."
    (target / "tinytorch").mkdir(parents=True, exist_ok=True)
    with package_lock(REPO, shared=True):  # not while an export of this checkout rewrites its files
        for name in SKELETON:
            shutil.copyfile(REPO / "tinytorch" / name, target / "tinytorch" / name)
        shutil.copytree(REPO / "tinytorch" / "data", target / "tinytorch" / "data", dirs_exist_ok=True)
