"""How the example class's notebooks are written: the release notebook with its exercises filled, each by an
answer(grade_id, solution, stub) that returns the cell's code (the solution, the stub, or either changed), and the
changes made to a notebook itself (its tests tampered with, a scratch cell added).
"""

from collections.abc import Callable
from pathlib import Path

import nbformat

from ..common.answers import solved
from ..common.notebooks import REPO, nbgrader_meta, read_notebook

Answer = Callable[[str, str, str], str]  # answer(grade_id, solution, stub) -> the cell's code
Edit = Callable[[str, str], str]  # edit(solution, stub) -> one exercise's code


def submission(kit: str | Path, notebook: str, answer: Answer | None = None) -> nbformat.NotebookNode:
    """The release notebook with exercises filled: answer(grade_id, solution, stub) gives each cell's code
    (default: the instructor's solution)."""
    release = read_notebook(Path(kit) / notebook / f"{notebook}.ipynb")
    stubs = {nbgrader_meta(c)["grade_id"]: c.source for c in release.cells if nbgrader_meta(c).get("solution")}
    edit = (lambda grade_id, solution: answer(grade_id, solution, stubs[grade_id])) if answer else None
    return solved(release, read_notebook(REPO / "notebooks" / f"{notebook}.ipynb"), edit)


def changing(grade_id: str, edit: Edit) -> Answer:
    "An answer() that solves everything, exercise `grade_id` as edit(solution, stub) makes it."

    def answer(gid: str, solution: str, stub: str) -> str:
        return edit(solution, stub) if gid == grade_id else solution

    return answer


def replace_in(grade_id: str, old: str, new: str) -> Answer:
    "An answer() that solves everything, with `old` replaced by `new` in one exercise."

    def edit(solution: str, stub: str) -> str:
        assert old in solution, (grade_id, old)
        return solution.replace(old, new, 1)

    return changing(grade_id, edit)


def inside(grade_id: str, code: str) -> Answer:
    "An answer() that solves everything and runs `code` at the start of the exercise's apply()."

    def edit(solution: str, stub: str) -> str:
        head, body = solution.split("    def apply(self, grad_output):\n", 1)
        lines = "".join(f"        {line}\n" for line in code.splitlines())
        return head + "    def apply(self, grad_output):\n" + lines + body

    return changing(grade_id, edit)


def between(grade_id: str, first: str, last: str, code: str) -> Answer:
    "An answer() that solves everything, one exercise's lines from `first` to the end of `last` replaced by `code`."

    def edit(solution: str, stub: str) -> str:
        start, end = solution.index(first), solution.index(last) + len(last)
        return solution[:start] + code + solution[end:]

    return changing(grade_id, edit)


def method_of_stub(grade_ids: set, signature: str, body: str) -> Answer:
    "An answer() that solves everything but `grade_ids`, each its stub up to the method `signature`, then `body`."

    def answer(gid: str, solution: str, stub: str) -> str:
        if gid not in grade_ids:
            return solution
        head, _ = stub.split(signature, 1)
        return head + signature + body

    return answer


def only(solved_ids: set, extra: str | None = None, extra_in: str = "solution-AddBackward") -> Answer:
    "An answer() that solves only `solved_ids` (stubs elsewhere), optionally with module-level `extra` code."

    def answer(gid: str, solution: str, stub: str) -> str:
        code = solution if gid in solved_ids else stub
        return code + "\n\n" + extra if extra and gid == extra_in else code

    return answer


def body_replaced(grade_id: str, body: str) -> Answer:
    "An answer() that solves everything but one exercise, whose stub (YOUR CODE HERE, raise ...) is `body` instead."

    def edit(solution: str, stub: str) -> str:
        head, rest = stub.split("# YOUR CODE HERE\n", 1)
        after = rest.split("\n", 1)[1] if "\n" in rest else ""  # the lines after the stub's raise
        return head + body + ("\n" + after if after else "")

    return changing(grade_id, edit)


def chained(*answers: Answer) -> Answer:
    "An answer() that applies each of `answers` in turn (several exercises changed)."

    def answer(gid: str, solution: str, stub: str) -> str:
        for each in answers:
            solution = each(gid, solution, stub)
        return solution

    return answer


def only_all_with(extra: str, where: str = "solution-NegBackward") -> Answer:
    "Everything solved, with module-level `extra` code after the exercise `where`."

    def answer(gid: str, solution: str, stub: str) -> str:
        return solution + "\n\n" + extra if gid == where else solution

    return answer


def wrong_add_and_mul(extra: str) -> Answer:
    "AddBackward without unbroadcast and followed by `extra`, MulBackward with a's gradient wrong."

    def answer(gid: str, solution: str, stub: str) -> str:
        if gid == "solution-AddBackward":
            return (
                solution.replace(
                    "return unbroadcast(grad_output, a.shape), unbroadcast(grad_output, b.shape)",
                    "return grad_output, grad_output",
                )
                + "\n\n"
                + extra
            )
        if gid == "solution-MulBackward":
            return solution.replace("grad_output * b, a.shape", "grad_output * a, a.shape")
        return solution

    return answer


def inside_wrong_mul(patch: str) -> Answer:
    "MulBackward with a's gradient wrong, and `patch` run at the start of its apply()."
    wrong = replace_in("solution-MulBackward", "grad_output * b, a.shape", "grad_output * a, a.shape")
    patched = inside("solution-MulBackward", patch.strip())

    def answer(gid: str, solution: str, stub: str) -> str:
        return patched(gid, wrong(gid, solution, stub), stub)

    return answer


# -- Changes to the notebook itself, after its exercises are written -------------------------------------------------


def with_cell(nb: nbformat.NotebookNode, code: str, after: str = "BROADCAST_PAIRS = ") -> nbformat.NotebookNode:
    "A scratch cell the student added after the cell containing `after` (not exported: not part of their module)."
    cell = nbformat.v4.new_code_cell(code)
    cell.id = "scratch"
    at = next(i for i, c in enumerate(nb.cells) if after in c.source)
    nb.cells.insert(at + 1, cell)
    return nb


def with_markdown(nb: nbformat.NotebookNode, text: str) -> nbformat.NotebookNode:
    "A cell of the student's own notes, in Markdown, at the end."
    nb.cells.append(nbformat.v4.new_markdown_cell(text, id="notes"))
    return nb


def tampered_tests(nb: nbformat.NotebookNode, delete: bool) -> nbformat.NotebookNode:
    "Delete every test cell and empty the given setup (delete=True), or replace the tests by `pass`."
    cells = []
    for cell in nb.cells:
        if nbgrader_meta(cell).get("grade"):
            if delete:
                continue
            cell.source = cell.source.splitlines()[0] + "\npass"
        elif "BROADCAST_PAIRS = " in cell.source:
            cell.source = "BROADCAST_PAIRS = []"
        cells.append(cell)
    nb.cells = cells
    return nb
