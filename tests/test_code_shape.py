"""The grader's code stays in pieces a reader can hold: no module of grading/ over 500 lines, no function over 60
lines (the command line's argparse declarations aside) or with more than 6 positional parameters (issue 42).

What is over those bounds today is listed below with its size now: a ratchet. A listed piece may shrink (then lower
its number, or drop it once it fits), never grow, and nothing new may join the lists."""

import ast

from conftest import REPO

MODULE_LINES, FUNCTION_LINES, POSITIONAL = 500, 60, 6
ARGPARSE = {"grading/cli.py:add_instructor_commands", "grading/cli.py:add_kit_commands"}

LONG_MODULES = {
    "grading/authoring/release.py": 512,
    "grading/lms/collect.py": 523,
    "grading/lms/lms.py": 544,
    "grading/sandbox/wire.py": 594,
    "grading/cli.py": 748,
    "grading/examples/classroom.py": 1018,
}
LONG_FUNCTIONS = {
    "grading/examples/classroom.py:make_class": 300,
    "grading/grade/verdict.py:grade_pass": 101,
    "grading/grade/autograde.py:_autograde": 92,
    "grading/grade/remote.py:call": 75,
    "grading/grade/job.py:grade": 69,
    "grading/lms/gradescope.py:build": 67,
    "grading/lms/lms.py:export_grades": 61,
}
MANY_POSITIONAL = {
    "grading/grade/verdict.py:grade_pass": 11,
    "grading/sandbox/sandbox.py:start": 10,
    "grading/grade/verdict.py:grade_cells": 9,
    "grading/lms/lms.py:write_gradescope_export": 8,
    "grading/grade/run.py:spec": 8,
    "grading/reports/marking.py:update": 7,
    "grading/reports/feedback.py:publish": 7,
    "grading/lms/lms.py:write_csv_export": 7,
    "grading/grade/remote.py:call": 7,
    "grading/grade/remote.py:accept_changes": 7,
    "grading/grade/remote.py:__init__": 7,
    "grading/grade/ownership.py:check_changes": 7,
}


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


def over(measured, bound, allowed):
    "The pieces over `bound` that the ratchet does not allow at their size now."
    return {k: v for k, v in measured.items() if v > bound and v > allowed.get(k, bound)}


def test_no_module_grows_past_500_lines():
    lines = {name: len(path.read_text().splitlines()) for name, path in modules().items()}
    assert not over(lines, MODULE_LINES, LONG_MODULES), "split the module along the seams it marks"


def test_no_function_grows_past_60_lines_or_6_positional_parameters():
    found = functions()
    lines = {k: n for k, (n, _) in found.items() if k not in ARGPARSE}
    assert not over(lines, FUNCTION_LINES, LONG_FUNCTIONS), "cut the function into steps with names"
    positional = {k: p for k, (_, p) in found.items()}
    assert not over(positional, POSITIONAL, MANY_POSITIONAL), "make the parameters keyword-only, or a dataclass"


def test_the_ratchet_names_only_pieces_that_are_still_over():
    found, lines = functions(), {name: len(path.read_text().splitlines()) for name, path in modules().items()}
    stale = [k for k in LONG_MODULES if lines.get(k, 0) <= MODULE_LINES]
    stale += [k for k in LONG_FUNCTIONS if found.get(k, (0, 0))[0] <= FUNCTION_LINES]
    stale += [k for k in MANY_POSITIONAL if found.get(k, (0, 0))[1] <= POSITIONAL]
    assert not stale, f"these fit now: drop them from the lists of tests/test_code_shape.py: {stale}"
