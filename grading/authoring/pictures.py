"""`python -m grading pictures`: the solution notebooks keep the pictures a reader on the web wants to see.

The cells listed here are run (the whole notebook, in order) and their images stored in the committed notebook; every
other output stays empty. The student release clears all outputs (nbgrader), so the kit is unchanged.
"""

from pathlib import Path

import nbformat

from ..common.errors import GradingError
from ..common.notebooks import REPO, NotebookNode, read_notebook, write_notebook
from ..student.check import execute

PICTURES = {
    "03_gradcheck": ["c03-018"],  # a correct and a wrong rule against the diagonal
    "06_autograd": ["c06-026", "c06-027"],  # the graphs of the worked examples
    "09_nn": ["c09-depth"],  # activations and weight gradients through ten layers, by initialisation
    "10_optimizers": ["c10-paths"],  # SGD, momentum and Adam on a 2-D valley
    "11_training": ["c11-013"],  # loss and accuracy curves
    "12_conv": ["c12-filters"],  # learned kernels and the feature maps of one digit
    "14_higher_order": ["c14-035"],  # tanh and three derivatives, each by differentiating the one before
    "15_viz": ["c15-009", "c15-010"],
    "16_capstone": ["c16-curves"],  # training, validation and test curves of the reference solution
}


def images(outputs: list[NotebookNode]) -> list[NotebookNode]:
    "The outputs that are pictures, without the execution counts."
    kept = []
    for output in outputs:
        if output.get("output_type") in ("display_data", "execute_result") and "image/png" in output.get("data", {}):
            kept.append(
                nbformat.from_dict({"output_type": "display_data", "data": dict(output["data"]), "metadata": {}})
            )
    return kept


def run(path: Path, timeout: float) -> dict[str, NotebookNode]:
    "Run the notebook; {cell id: cell with its outputs}."
    nb = execute(path, REPO, timeout, allow_errors=False, failure="{name}: could not run it to draw its pictures")
    return {cell.get("id"): cell for cell in nb.cells}


def keep_pictures(notebooks_dir: str | Path | None = None, timeout: float = 600) -> dict[str, int]:
    "Store the pictures of PICTURES in the notebooks of `notebooks_dir`; return {stem: number of images}."
    notebooks_dir = Path(notebooks_dir or REPO / "notebooks")
    counts = {}
    for stem, ids in PICTURES.items():
        path = notebooks_dir / f"{stem}.ipynb"
        ran = run(path, timeout)
        missing = [i for i in ids if i not in ran]
        if missing:
            raise GradingError(
                f"{path.name}: no cell with id {', '.join(missing)}; update grading/authoring/pictures.py"
            )
        nb = read_notebook(path)
        counts[stem] = 0
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = images(ran[cell.get("id")].outputs) if cell.get("id") in ids else []
                cell.execution_count = None
                counts[stem] += len(cell.outputs)
            if cell.get("id") in ids and not cell.outputs:
                raise GradingError(f"{path.name}: cell {cell.get('id')} drew no picture")
        write_notebook(nb, path)
    return counts
