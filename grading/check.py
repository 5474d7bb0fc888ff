"""Run the visible tests of one notebook, as a student would before handing it in."""

from pathlib import Path

from .defaults import CHECK_TIMEOUT
from .environment import kernel_environment
from .errors import GradingError
from .notebooks import REPO, nbgrader_meta, read_notebook

HIDDEN = "hidden"  # the status of a test cell whose tests were stripped from the release


def package_root(start):
    "The kit (or repository) at or above the folder `start`: the one holding settings.ini and tinytorch/."
    for folder in [Path(start).resolve(), *Path(start).resolve().parents]:
        if (folder / "settings.ini").exists() and (folder / "tinytorch").is_dir():
            return folder
    return REPO


def execute(notebook, pythonpath, timeout, allow_errors=True, failure="{notebook}: could not run the notebook"):
    """Run every cell of the notebook file in a fresh kernel that imports tinytorch from `pythonpath`, in the
    notebook's folder; return the notebook with its outputs. `failure` starts the error's message."""
    from nbclient import NotebookClient

    notebook = Path(notebook)
    nb = read_notebook(notebook)
    try:
        with kernel_environment(pythonpath):
            client = NotebookClient(
                nb,
                timeout=timeout,
                kernel_name="python3",
                allow_errors=allow_errors,
                resources={"metadata": {"path": str(notebook.resolve().parent)}},
            )
            client.execute()
    except Exception as error:
        where = failure.format(notebook=notebook, name=notebook.name)
        raise GradingError(f"{where} ({type(error).__name__}: {error}).") from None
    return nb


def run_tests(notebook, timeout=CHECK_TIMEOUT):
    "Execute the notebook; return [(test name, points, passed, message)] for its test cells."
    notebook = Path(notebook)
    nb = execute(notebook, package_root(notebook.parent), timeout)
    results = []
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if cell.cell_type != "code" or not meta.get("grade"):
            continue
        code = [line for line in cell.source.splitlines() if line.strip() and not line.strip().startswith("#")]
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if not code:
            results.append((meta["grade_id"], meta.get("points", 0), HIDDEN, "hidden tests: they run when graded"))
            continue
        message = f"{errors[0].get('ename')}: {errors[0].get('evalue')}" if errors else ""
        results.append((meta["grade_id"], meta.get("points", 0), not errors, message))
    return results
