"""`python -m grading export`: nbdev_export a repository or student kit into its tinytorch/ (the kit has this too)."""

import contextlib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..common.errors import GradingError
from ..common.notebooks import REPO


def export_package(root):
    "Run nbdev_export in `root` (a folder with settings.ini) and fail with its message."
    result = subprocess.run(
        [sys.executable, "-c", "from nbdev.doclinks import nbdev_export; nbdev_export()"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    if result.returncode:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise GradingError(f"nbdev_export failed in {root}: {detail[-1] if detail else 'no detail'}")


def export_here(root):
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
                nb_export(notebook, config.lib_path)
    except Exception as error:  # noqa: BLE001 - nbdev raises plain exceptions for a notebook it cannot parse
        raise GradingError(f"nbdev_export failed in {root}: {type(error).__name__}: {error}") from error
    finally:
        os.chdir(here)


def copy_package_skeleton(target):
    "What tinytorch/ holds besides exported modules: the package __init__ and the shipped data."
    (target / "tinytorch").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REPO / "tinytorch" / "__init__.py", target / "tinytorch" / "__init__.py")
    shutil.copytree(REPO / "tinytorch" / "data", target / "tinytorch" / "data", dirs_exist_ok=True)
