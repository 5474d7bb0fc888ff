"""Run the visible tests of one notebook, as a student would before handing it in."""

import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..common.defaults import CHECK_TIMEOUT
from ..common.environment import kernel_environment
from ..common.errors import GradingError
from ..common.notebooks import REPO, NotebookNode, given_cell_name, nbgrader_meta, read_notebook

HIDDEN = "hidden"  # the status of a test cell whose tests were stripped from the release
# ipykernel logs this on every start of a kernel that listens on localhost TCP, as nbclient starts it; the kernel and
# this process are on one machine and the message would be the first line a student reads, so it is left out.
TCP_WARNING = "Kernel is running over TCP without encryption"
TestResult = tuple[str, float, bool | str, str]  # (test name, points, passed or HIDDEN, message)
BrokenCell = tuple[str, str, bool]  # (exercise or given cell, its error, whether it is a given cell)


def package_root(start: str | Path) -> Path:
    "The kit (or repository) at or above the folder `start`: the one holding settings.ini and tinytorch/."
    for folder in [Path(start).resolve(), *Path(start).resolve().parents]:
        if (folder / "settings.ini").exists() and (folder / "tinytorch").is_dir():
            return folder
    return REPO


def execute(
    notebook: str | Path,
    pythonpath: str | Path,
    timeout: float,
    allow_errors: bool = True,
    failure: str = "{notebook}: could not run the notebook",
) -> NotebookNode:
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
            with kernel_stderr() as stderr:
                client.execute(stderr=stderr)  # passed on to the kernel's Popen
    except Exception as error:
        where = failure.format(notebook=notebook, name=notebook.name)
        raise GradingError(f"{where} ({type(error).__name__}: {error}).") from None
    return nb


@contextmanager
def kernel_stderr() -> Iterator[int]:
    """A pipe for the kernel's stderr that copies every line to ours but ipykernel's TCP_WARNING: the kernel is
    another process, so a warnings filter here cannot see its log; every other line, warnings included, still shows."""
    read_end, write_end = os.pipe()

    def copy() -> None:
        with open(read_end, "rb") as lines:
            for line in lines:
                if TCP_WARNING.encode() not in line:
                    sys.stderr.write(line.decode("utf-8", "replace"))
                    sys.stderr.flush()

    thread = threading.Thread(target=copy, daemon=True)
    thread.start()
    try:
        yield write_end
    finally:
        os.close(write_end)  # the copy ends when the kernel, the other writer, has ended too
        thread.join(timeout=5)  # a process the notebook started may hold the pipe open; it is a daemon thread


def run_tests(notebook: str | Path, timeout: float = CHECK_TIMEOUT) -> tuple[list[TestResult], list[BrokenCell]]:
    """Execute the notebook; return ([(test name, points, passed, message)] for its test cells, [(name, error, given)]
    for the exercise cells that raised (a syntax error there shows in the tests only as a NameError) and for the given
    cells that raised (`given`, named by given_cell_name: they use the student's code above them, as 07's GELU demo
    uses TanhBackward)."""
    notebook = Path(notebook)
    nb = execute(notebook, package_root(notebook.parent), timeout)
    results, broken = [], []
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        message = f"{errors[0].get('ename')}: {errors[0].get('evalue')}" if errors else ""
        if meta.get("solution") and errors:
            broken.append((str(meta.get("grade_id", "")).removeprefix("solution-"), message, False))
        elif errors and not meta.get("grade") and errors[0].get("ename") != "NotImplementedError":
            broken.append((given_cell_name(cell.source), message, True))  # (an exercise not done yet is no news)
        if not meta.get("grade"):
            continue
        code = [line for line in cell.source.splitlines() if line.strip() and not line.strip().startswith("#")]
        if not code:
            results.append((meta["grade_id"], meta.get("points", 0), HIDDEN, "hidden tests: they run when graded"))
            continue
        message = went_through(message, notebook.stem)
        results.append((meta["grade_id"], meta.get("points", 0), not errors, message or notes(cell)))
    return results, broken


# The stub of an exercise not done yet (grading.authoring.release.stub_message), as a failed test reports it, and the
# start of what it says to a later notebook's test that went through it
FROM_LATER = "Met in a later notebook?"
STUB_RAISED = re.compile(
    r"NotImplementedError: Exercise (?P<exercise>\w+) in (?P<notebook>[\w.-]+)\.ipynb is not done yet"
)
WENT_THROUGH = re.compile(
    r"this test went through (?P<exercise>\w+) of (?P<notebook>[\w.-]+)\.ipynb, which is not done yet$"
)


def went_through(message: str, stem: str) -> str:
    """A test's error message, or, for the stub of an earlier notebook's exercise, that the test went through that
    exercise (a later notebook runs the student's own earlier modules): the student's work here is not the cause."""
    stub = STUB_RAISED.match(message)
    if not stub:
        return message
    if stub["notebook"] == stem:  # (what it says of a later notebook does not concern this one)
        return message.partition(f" {FROM_LATER}")[0]
    return f"this test went through {stub['exercise']} of {stub['notebook']}.ipynb, which is not done yet"


def unfinished_earlier(results: list[TestResult], stem: str) -> list[str]:
    "What to do, once per earlier exercise that failed tests went through (went_through), in the order met."
    advice = {}
    for _, _, _, message in results:
        met = WENT_THROUGH.match(message or "")
        if met:
            exercise, earlier = met["exercise"], met["notebook"]
            advice[exercise, earlier] = (
                f"{exercise} of {earlier}.ipynb is not done yet: finish it there and run python -m grading export, "
                f"or ask your instructor for the reference module of {earlier} (graded, {stem} runs on the reference "
                "of the notebooks before it)."
            )
    return list(advice.values())


def notes(cell: NotebookNode) -> str:
    "The lines a test cell printed that start with 'Note:' (a passing test's word on what a hidden test will check)."
    printed = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
    return " ".join(line.strip() for line in printed.splitlines() if line.startswith("Note:"))
