"""Every notebook runs top to bottom, solutions in place, without an error: every code cell runs, and none fails.
Then, in the same kernel, every hidden test is run again for many students' draws (grading.grade.variant): the reference
must pass each student's hidden inputs, or the grader's reference check refuses a whole run (09's He depth check once
failed 1 draw in 17).

NotebookClient stops at the first cell that raises (CellExecutionError); the test turns that into a failure naming the
notebook, the cell (its number, nbgrader id and first line) and the error, instead of a bare traceback."""

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

from conftest import REPO
from grading.common.notebooks import HIDDEN_BEGIN

pytestmark = pytest.mark.slow  # runs every notebook in a kernel

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
DRAWS = 40  # students' variants each hidden test is run for, after the notebook's own run
# but the capstone's: each of its draws trains a model from scratch (a second of CPU; 40 were most of the suite's
# longest notebook run). benchmarks/capstone_designs.py measures its bars' margins over students' draws.
FEWER_DRAWS = {"16_capstone": 10}

ACROSS_VARIANTS = """\
# the instructor's hidden tests again, for {draws} students' draws
from grading.grade import variant as _variant
_failed = []
for _student in range({draws}):
    _variant.use(f"reference-check-{{_student:02d}}")
    for _grade_id, _source in {hidden!r}:
        try:
            exec(_source, globals())
        except Exception as _error:
            _failed.append(f"{{_grade_id}} for draw {{_student}}: {{type(_error).__name__}}: {{_error}}")
_variant.use(None)
assert not _failed, "the reference fails hidden tests for some students' draws: " + "; ".join(_failed[:5])
"""


def with_hidden_tests_across_variants(nb, draws=DRAWS):
    "`nb` with a last cell that runs every hidden test cell again for `draws` students' variants."
    hidden = [
        (c.metadata["nbgrader"]["grade_id"], c.source)
        for c in nb.cells
        if c.cell_type == "code" and HIDDEN_BEGIN in c.source
    ]
    if hidden:
        nb.cells.append(nbformat.v4.new_code_cell(ACROSS_VARIANTS.format(draws=draws, hidden=hidden)))
    return nb


def describe(nb, index):
    "Cell `index` of `nb` as a reader finds it: its number, its nbgrader id and its first line."
    cell = nb.cells[index]
    grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
    first = next((line for line in cell.source.splitlines() if line.strip()), "")
    return f"cell {index}" + (f" ({grade_id})" if grade_id else "") + f": {first[:80]!r}"


def errors_in(nb):
    "[(cell index, 'Name: value')] for every error output, except in cells tagged raises-exception."
    return [
        (i, f"{o.get('ename')}: {o.get('evalue')}")
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code"
        if "raises-exception" not in c.get("metadata", {}).get("tags", [])
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]


def failed_cell(nb):
    "The index of the cell that stopped the run: the one with an error output, else the last one that started."
    found = errors_in(nb)
    if found:
        return found[0][0]
    started = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.get("execution_count") is not None]
    return started[-1] if started else 0


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("TINYTORCH_QUIET", "1")
    # one BLAS thread, as a grading job has: two of them fighting on 2 busy cores ran 16 past 600 s (the limit is now 1200 s per cell)
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, "1")
    nb = with_hidden_tests_across_variants(nbformat.read(path, 4), FEWER_DRAWS.get(path.stem, DRAWS))
    client = NotebookClient(nb, timeout=1200, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    stopped = None
    try:
        client.execute()
    except CellExecutionError as error:
        stopped = f"raised {error.ename}: {error.evalue}"
    except (CellTimeoutError, DeadKernelError) as error:
        stopped = f"{type(error).__name__}: {error}"
    if stopped:  # outside the except block, so the report is this line, not two chained tracebacks
        pytest.fail(f"{path.name}, {describe(nb, failed_cell(nb))} {stopped}", pytrace=False)
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source.strip()]
    not_run = [i for i in code if nb.cells[i].get("execution_count") is None]
    assert code and not not_run, f"{path.name}: cells {not_run} were not run"
    errors = errors_in(nb)
    assert not errors, f"{path.name}: " + "; ".join(f"{describe(nb, i)}: {e}" for i, e in errors)
