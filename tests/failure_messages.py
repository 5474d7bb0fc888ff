"""The message one test cell of a notebook fails with when one solution is edited, as a student's mistake would be.

Run as a script in a fresh process (the notebook's cells patch Tensor): it runs the notebook's cells in order, the
solution cells with the edit, every other test cell left out, up to the test cell named; it prints the test's failure
message as JSON (null if it passed). Errors of the cells before it are ignored, as the grader ignores them.
Usage: python tests/failure_messages.py NOTEBOOK TEST OLD NEW
"""

import contextlib
import io
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def failure(notebook, test, old, new):
    "The failure message of test cell `test` of `notebook` when `old` is replaced by `new` in its solutions, or None."
    sys.path.insert(0, str(REPO))
    from grading.common.notebooks import read_notebook

    nb = read_notebook(REPO / "notebooks" / f"{notebook}.ipynb")
    os.chdir(REPO / "notebooks")
    namespace, edited = {"__name__": "__main__"}, False
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        grade_id = meta.get("grade_id")
        if cell.cell_type != "code" or (meta.get("grade") and grade_id != test):
            continue
        source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        if meta.get("solution") and old in source:
            source, edited = source.replace(old, new), True
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(source, f"<{grade_id}>", "exec"), namespace)
        except Exception as error:  # noqa: BLE001  (the test's failure, or an earlier cell's, which the grader ignores)
            if grade_id == test:
                return f"{type(error).__name__}: {error}"
        if grade_id == test:
            assert edited, f"{notebook}: {old!r} is in none of the solution cells before {test}"
            return None
    raise AssertionError(f"{notebook} has no test cell {test}")


if __name__ == "__main__":
    os.environ.setdefault("MPLBACKEND", "Agg")
    print(json.dumps(failure(*sys.argv[1:5])))
