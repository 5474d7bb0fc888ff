"""What one of the instructor's cells showed when the verdict ran it: the outputs of the feedback page's notebook.

The grader runs each setup and test cell once (grading.grade.verdict.run_cell), here, with the student's exercises called in
the sandboxed worker. A `Shown` collects what the cell would show in a notebook, as notebook outputs: what was printed
(here, and by the student's code over there: the worker sends it back with each reply, as plain text, at most
wire.OUTPUT_LIMIT characters), the value of its last expression as text, the matplotlib figures it drew as PNG, and
its error as one line. The feedback page is made from these (grading.reports.page.ran_notebook), so the student's notebook is
executed once, by the verdict; nothing here decides a score. A hidden test's cell gets no `Shown`: nothing it or the
student's code printed while it ran is kept.
"""

from __future__ import annotations

import ast
import base64
import contextlib
import io
import sys
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING

import nbformat

from ..sandbox import wire
from . import asserts

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from nbformat import NotebookNode

VALUE_LIMIT = 10_000  # characters of a cell's value shown
PASSED = "✔ passed"  # under a visible test that passed (one that failed shows its error)


class Shown:
    "The outputs of one cell as it runs: see the module's docstring."

    def __init__(self) -> None:
        self.printed = wire.Printed()
        self.value, self.figures, self.error, self.passed = None, [], None, False

    def outputs(self) -> list[NotebookNode]:
        "The cell's outputs, as nbformat outputs of the types grading.reports.page.plain_output keeps."
        made = [nbformat.v4.new_output("stream", name=name, text=text) for name, text in self.printed.parts()]
        if self.value is not None:
            made.append(nbformat.v4.new_output("execute_result", data={"text/plain": self.value}, execution_count=None))
        made += [nbformat.v4.new_output("display_data", data={"image/png": png}) for png in self.figures]
        if self.error is not None:
            name, message = self.error
            made.append(nbformat.v4.new_output("error", ename=name, evalue=message, traceback=[f"{name}: {message}"]))
        if self.passed:
            made.append(nbformat.v4.new_output("stream", name="stdout", text=PASSED + "\n"))
        return made


DEMO_NOT_RUN = "(a demonstration: it runs in your notebook; the grader does not run it)\n"


def not_run_demo() -> list[NotebookNode]:
    "What the page shows under a demonstration (grading.common.notebooks.is_demo), which the grader skips."
    return [nbformat.v4.new_output("stream", name="stdout", text=DEMO_NOT_RUN)]


@contextlib.contextmanager
def captured(shown: Shown | None) -> Iterator[None]:
    "sys.stdout and sys.stderr go into `shown` (None: nowhere) while the cell runs; warnings too, as Jupyter shows them."
    sink = shown.printed if shown is not None else wire.Printed(0)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = sink.stream("stdout"), sink.stream("stderr")
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*non-interactive.*")  # plt.show() on Agg: the figure is kept
            yield
    finally:
        sys.stdout, sys.stderr = saved


def run(source: str, name: str, namespace: dict[str, object], explain: bool = False) -> object:
    """exec the cell's `source` in `namespace`, as a notebook does: return the value of its last expression (or None).
    `explain`: its asserts say what came back (grading.grade.asserts; a visible test's cell)."""
    tree = ast.parse(source, name)
    if explain:
        tree = asserts.explained(tree)
        namespace[asserts.HELPER] = asserts.came_back
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, name, "exec"), namespace)
    if last is None:
        return None
    value = eval(compile(ast.Expression(last.value), name, "eval"), namespace)
    return None if source.rstrip().endswith(";") else value  # a trailing ';' hides the value, as in Jupyter


def show_value(shown: Shown | None, value: object) -> None:
    "The cell's value: a figure as PNG, anything else as its repr (cut to VALUE_LIMIT characters)."
    if shown is None or value is None:
        return
    if hasattr(value, "savefig") and hasattr(value, "get_axes"):  # a matplotlib Figure
        shown.figures.append(png_of(value))
        return
    try:
        text = repr(value)
    except Exception as error:  # noqa: BLE001  (a repr that fails shows the failure, as Jupyter does)
        text = f"(its repr failed: {type(error).__name__})"
    shown.value = text if len(text) <= VALUE_LIMIT else text[:VALUE_LIMIT] + " ..."


def take_figures(shown: Shown | None) -> None:
    "The figures the cell left open, as PNG (Jupyter's inline backend shows them after the cell), then closed."
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    try:
        for number in pyplot.get_fignums():
            if shown is not None:
                shown.figures.append(png_of(pyplot.figure(number)))
    except Exception:  # noqa: BLE001  (a figure matplotlib cannot draw is left off the page; the cell's result stands)
        pass
    finally:
        pyplot.close("all")


def png_of(figure: Figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode()
