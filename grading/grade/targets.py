"""What of a notebook the student writes and the worker runs: the exercises, the targets of grading.grade.verdict.

An exercise is a function or method whose body holds a `### BEGIN SOLUTION` region; those of the exported cells are
called in the student's module, those of the notebook's own cells (not exported) run in its namespace. A solution
region outside any function body is refused: the grader can only call functions.
"""

import ast

from ..common.errors import GradingError


def is_export(source):
    return any(line.strip().replace(" ", "").startswith("#|export") for line in source.splitlines()[:3])


def exported_sources(nb):
    "The code of every exported cell, in order: what nbdev puts in the module."
    return [cell.source for cell in nb.cells if cell.cell_type == "code" and is_export(cell.source)]


def solution_lines(source):
    "The line numbers (1-based) inside `### BEGIN SOLUTION` ... `### END SOLUTION`."
    lines, inside = set(), False
    for number, line in enumerate(source.splitlines(), 1):
        if "### BEGIN SOLUTION" in line:
            inside = True
        elif "### END SOLUTION" in line:
            inside = False
        elif inside:
            lines.add(number)
    return lines


def exercise_targets(instructor_nb, exported=True):
    """[(qualname, kind)] of the functions and methods the student writes: those whose body holds a solution region.
    kind is 'function', 'method' or 'property'. `exported`: those of the module (else: of the notebook only)."""
    return [
        t
        for cell in instructor_nb.cells
        if cell.cell_type == "code"
        and cell.get("metadata", {}).get("nbgrader", {}).get("solution")
        and is_export(cell.source) == exported
        for t in cell_targets(cell)
    ]


def cell_targets(cell):
    "The exercises of one solution cell."
    meta = cell.get("metadata", {}).get("nbgrader", {})
    inside, targets, covered = solution_lines(cell.source), [], set()
    for node in ast.parse(cell.source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _spans(node) & inside:
            targets.append((node.name, "function"))
            covered |= _spans(node)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and _spans(item) & inside:
                    is_property = any(getattr(d, "id", None) == "property" for d in item.decorator_list)
                    targets.append((f"{node.name}.{item.name}", "property" if is_property else "method"))
                    covered |= _spans(item)
    if inside - covered:
        raise GradingError(
            f"{meta.get('grade_id')}: a solution region outside any function or method body "
            f"(line {min(inside - covered)}); the grader can only call functions the student writes"
        )
    return targets


def _spans(node):
    return set(range(node.lineno, node.end_lineno + 1))


def notebook_exercises(nb):
    "The student's exercises that are not exported: the worker runs them in the module's namespace after importing it."
    return [
        c.source
        for c in nb.cells
        if c.cell_type == "code"
        and not is_export(c.source)
        and c.get("metadata", {}).get("nbgrader", {}).get("solution")
    ]
