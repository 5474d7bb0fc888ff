"""`python -m grading export`: nbdev_export a repository or student kit into its tinytorch/ (the kit has this too)."""

import shutil
import subprocess
import sys

from .errors import GradingError
from .notebooks import REPO


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


def copy_package_skeleton(target):
    "What tinytorch/ holds besides exported modules: the package __init__ and the shipped data."
    (target / "tinytorch").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REPO / "tinytorch" / "__init__.py", target / "tinytorch" / "__init__.py")
    shutil.copytree(REPO / "tinytorch" / "data", target / "tinytorch" / "data", dirs_exist_ok=True)
