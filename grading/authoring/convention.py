"""The authoring convention: nbgrader metadata is derived from what the author writes in each cell.

* A code cell containing `### BEGIN SOLUTION` is an exercise. Its grade id is `solution-` and the name of the
  top-level class or function the first solution marker is in (`class AddBackward` -> `solution-AddBackward`).
* A code cell whose first line is `# test: <name> (<n> points)` is a graded, read-only test cell worth n points.
  Hidden tests go inside it between `### BEGIN HIDDEN TESTS` and `### END HIDDEN TESTS`.
* A markdown cell whose first line is `<!-- answer: <name> (<n> points) -->` is a written answer, marked by hand
  (nbgrader's manually graded answer): the rest of the cell is the model answer, which the release replaces by
  "YOUR ANSWER HERE". Its points are not autograded.
* A code cell whose first line is `# hours spent (optional, not graded)` is where the student may write how long the
  notebook took (`hours_spent = 2.5`): editable, never graded, never run by the grader, read as text by autograde
  (grading.grade.timespent).
* A code cell whose first line is `# demo: <what it shows>` is a demonstration (a timing, a training run, a plot):
  read-only, run in the student's notebook, never by the grader. No later cell may use a name it sets.
* Every other cell is read-only.
"""

import ast
import re
from pathlib import Path

from ..common.errors import GradingError
from ..common.notebooks import (
    DEFINITION,
    HIDDEN_BEGIN,
    HOURS_SPENT,
    SOLUTION_BEGIN,
    NotebookNode,
    is_demo,
    is_manual_answer,
    read_notebook,
    write_notebook,
)

TEST_HEADER = re.compile(r"^#\s*test:\s*(?P<name>[A-Za-z_][\w-]*)\s*\((?P<points>\d+(?:\.\d+)?)\s*points?\)\s*$")
ANSWER_HEADER = re.compile(
    r"^<!--\s*answer:\s*(?P<name>[A-Za-z_][\w-]*)\s*\((?P<points>\d+(?:\.\d+)?)\s*points?\)\s*-->\s*$"
)
ANSWER_START = re.compile(
    r"^<!--\s*answer\b", re.IGNORECASE
)  # what an author meant as an answer header, well formed or not
HOURS_HEADER = re.compile(r"^#\s*hours spent\b", re.IGNORECASE)
SOLUTION_PREFIX = "solution-"


def _meta(grade_id: str, grade: bool = False, solution: bool = False, points: float | None = None) -> dict:
    meta = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": not solution,
        "schema_version": 3,
        "solution": solution,
        "task": False,
    }
    if points is not None:
        meta["points"] = points
    return meta


def _points(text: str) -> float:
    points = float(text)
    return int(points) if points.is_integer() else points


def manual_answers(nb: NotebookNode) -> dict[str, float]:
    "{grade id: points} of the answers marked by hand, in notebook order."
    return {
        c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"].get("points", 0)
        for c in nb.cells
        if is_manual_answer(c)
    }


def model_answer(source: str) -> str:
    "The model answer of an answer cell: its text after the header line."
    return "\n".join(source.lstrip().splitlines()[1:]).strip()


def derive_answer_cell(source: str, first: str, where: str) -> dict:
    match = ANSWER_HEADER.match(first)
    if not match:
        raise GradingError(
            f"{where}: malformed answer header {first!r}; write it as '<!-- answer: name (2 points) -->'."
        )
    if not model_answer(source):
        raise GradingError(
            f"{where}: the answer cell {match['name']!r} has no model answer; write it below the header "
            "(the release replaces it by 'YOUR ANSWER HERE')."
        )
    return _meta(match["name"], grade=True, solution=True, points=_points(match["points"]))


def derive_cell(cell: NotebookNode, where: str) -> dict:
    "The nbgrader metadata this cell's content asks for; `where` names the cell in error messages."
    source = cell.source
    first = source.lstrip().splitlines()[0] if source.strip() else ""
    if is_demo(cell) and (SOLUTION_BEGIN in source or HIDDEN_BEGIN in source):
        raise GradingError(f"{where}: a demonstration ('# demo:') is not graded; it holds no exercise or test.")
    if cell.cell_type == "code" and SOLUTION_BEGIN in source:
        names = DEFINITION.findall(source[: source.index(SOLUTION_BEGIN)])
        if not names:
            raise GradingError(
                f"{where}: a solution cell must define a class or function (its name is the "
                "exercise's id); put the solution markers inside its body."
            )
        return _meta(SOLUTION_PREFIX + names[-1], solution=True)
    if cell.cell_type == "code" and first.startswith("#") and re.match(r"#\s*test\b", first):
        match = TEST_HEADER.match(first)
        if not match:
            raise GradingError(f"{where}: malformed test header {first!r}; write it as '# test: name (2 points)'.")
        return _meta(match["name"], grade=True, points=_points(match["points"]))
    if cell.cell_type == "code" and HOURS_HEADER.match(first):
        return _meta(HOURS_SPENT, solution=True)  # editable, like an answer; nothing in it is graded
    if ANSWER_START.match(first):
        if cell.cell_type != "markdown":
            raise GradingError(f"{where}: an answer header {first!r} must start a markdown cell, not a code cell.")
        return derive_answer_cell(source, first, where)
    if HIDDEN_BEGIN in source:
        raise GradingError(f"{where}: hidden tests must be in a test cell (first line '# test: name (n points)').")
    magic = next((line for line in source.splitlines() if line.lstrip().startswith(("%", "!"))), None)
    if cell.cell_type == "code" and magic is not None:
        raise GradingError(
            f"{where}: {magic.strip()!r} is IPython syntax; the grader also runs every cell as plain "
            "Python (the clean room, docs/design.md). Use Python instead (e.g. subprocess, not !)."
        )
    return _meta(f"cell-{cell.get('id') or where}")


def derive_notebook(nb: NotebookNode, name: str) -> list[dict]:
    "Metadata for every cell of a notebook; grade ids must be unique."
    metas, seen = [], {}
    for index, cell in enumerate(nb.cells):
        meta = derive_cell(cell, f"{name}, cell {index + 1}")
        if meta["grade_id"] in seen:
            raise GradingError(
                f"{name}: cells {seen[meta['grade_id']] + 1} and {index + 1} both have the id "
                f"{meta['grade_id']!r}; give each exercise and test its own name."
            )
        seen[meta["grade_id"]] = index
        metas.append(meta)
    check_demonstrations(nb, name)
    return metas


def check_demonstrations(nb: NotebookNode, name: str) -> None:
    """The grader skips a demonstration, so no later cell may read a name it sets before setting it again: that cell
    would run without it when graded (a NameError, or an earlier value of the name). Read statement by statement."""
    code = [(index, cell) for index, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    for position, (index, cell) in enumerate(code):
        if not is_demo(cell):
            continue
        alive = set().union(*map(names_set, statements(cell.source, f"{name}, cell {index + 1}")))
        for later_index, later in code[position + 1 :]:
            for statement in statements(later.source) if not is_demo(later) else []:
                used = sorted(alive & names_read(statement))
                if used:
                    raise GradingError(
                        f"{name}, cell {index + 1}: this demonstration ('# demo:') sets {', '.join(used)}, which "
                        f"cell {later_index + 1} uses; the grader does not run demonstrations, so that cell would "
                        "not find it. Set the name in a cell of its own, or remove the '# demo:' line."
                    )
                alive -= names_set(statement)


def statements(source: str, where: str | None = None) -> list[ast.stmt]:
    "A cell's top-level statements; a cell that does not parse has none (derive_cell refuses IPython syntax)."
    try:
        return ast.parse(source).body
    except SyntaxError as error:
        if where is None:
            return []
        raise GradingError(
            f"{where}: a demonstration must be plain Python ({error.msg}, line {error.lineno})."
        ) from None


def names_set(statement: ast.stmt) -> set[str]:
    "The names a top-level statement sets: assignments, loop targets, imports, functions and classes."
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in statement.names}
    return {n.id for n in own_scope(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp, ast.DictComp)
SCOPES += (ast.GeneratorExp,)


def own_scope(node: ast.AST) -> list[ast.AST]:
    "`node` and what it holds, down to the functions, classes and comprehensions in it (scopes of their own)."
    found, stack = [], [node]
    while stack:
        item = stack.pop()
        found.append(item)
        if item is node or not isinstance(item, SCOPES):
            stack.extend(ast.iter_child_nodes(item))
    return found


def names_read(node: ast.AST) -> set[str]:
    """The names `node` (a statement) reads from outside, in the scopes it holds too: a function's parameters and
    assignments, and a comprehension's variables, are their own. At least what it needs, never less."""
    nodes = own_scope(node)
    own = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        arguments = node.args
        own = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
        own |= {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    elif isinstance(node, SCOPES) and not isinstance(node, ast.ClassDef):
        own = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
    elif isinstance(node, (ast.For, ast.AsyncFor)):  # the loop sets its variables before its body reads them
        own = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)} - names_read_in(node.iter)
    read = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    for inner in nodes[1:]:
        if isinstance(inner, SCOPES):
            read |= names_read(inner)
    return read - own


def names_read_in(expression: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(expression) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def mismatches(path: Path) -> list[int]:
    "Cells whose stored nbgrader metadata differs from what the convention derives."
    nb = read_notebook(path)
    return [
        index + 1
        for index, (cell, meta) in enumerate(zip(nb.cells, derive_notebook(nb, path.name)))
        if cell.metadata.get("nbgrader") != meta
    ]


def apply_convention(path: Path) -> int:
    "Write the derived metadata into the notebook; return how many cells changed."
    nb = read_notebook(path)
    changed = 0
    for cell, meta in zip(nb.cells, derive_notebook(nb, path.name)):
        if cell.metadata.get("nbgrader") != meta:
            cell.metadata["nbgrader"] = meta
            changed += 1
    if changed:
        write_notebook(nb, path)
    return changed
