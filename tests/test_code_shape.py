"""The grader's code stays in pieces a reader can hold: no module of grading/ over 500 lines, no function over 60
lines (the command line's argparse declarations aside) or with more than 6 positional parameters (issue 42)."""

import ast

from conftest import REPO

MODULE_LINES, FUNCTION_LINES, POSITIONAL = 500, 60, 6
ARGPARSE = {"grading/cli/grading_commands.py:add_autograde"}


def modules():
    return {str(p.relative_to(REPO)): p for p in sorted((REPO / "grading").rglob("*.py"))}


def functions():
    "{'path:name': (lines, positional parameters)}, the largest of that name in the module."
    found = {}
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                key = f"{name}:{node.name}"
                size = (node.end_lineno - node.lineno + 1, len(node.args.posonlyargs) + len(node.args.args))
                found[key] = max(found.get(key, (0, 0)), size)
    return found


def over(measured, bound):
    return {k: v for k, v in measured.items() if v > bound}


def test_no_module_is_over_500_lines():
    lines = {name: len(path.read_text().splitlines()) for name, path in modules().items()}
    assert not over(lines, MODULE_LINES), "split the module along the seams it marks"


def test_no_function_is_over_60_lines_or_6_positional_parameters():
    found = functions()
    lines = {k: n for k, (n, _) in found.items() if k not in ARGPARSE}
    assert not over(lines, FUNCTION_LINES), "cut the function into steps with names"
    positional = {k: p for k, (_, p) in found.items()}
    assert not over(positional, POSITIONAL), "make the parameters keyword-only, or a dataclass"
