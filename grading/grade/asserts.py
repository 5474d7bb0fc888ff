"""A visible test's failed `assert` says what came back as well as what was expected.

The instructor's `assert np.allclose(x.sum(axis=0).data, [3, 5, 7]), "... should be [3, 5, 7]"` says what was
expected; the student also needs what their code gave. Before a visible test cell runs (grading.grade.outputs.run),
each `assert` of the form `a == b`, `np.allclose(a, b)` (isclose, array_equal) or `isinstance(a, T)` is rewritten to
keep `a` and `b` as it computes them, and its message gains "(got ..., expected ...)". A hidden test's cells are not
rewritten: what its code got came from the student's code on the hidden inputs.
"""

from __future__ import annotations

import ast
from collections.abc import Collection

import numpy as np

HELPER = "_tinytorch_came_back"  # the name the rewritten asserts call (put in the cell's namespace)
GOT, WANT = "_tinytorch_got", "_tinytorch_want"
COMPARERS = {"allclose", "isclose", "array_equal", "array_equiv"}
SHOWN = 200  # characters of each value


def explained(tree: ast.Module) -> ast.Module:
    "`tree` (a cell's ast.Module) with its asserts rewritten to say what came back."
    return ast.fix_missing_locations(_Explain().visit(tree))


class _Explain(ast.NodeTransformer):
    def visit_Assert(self, node: ast.Assert) -> ast.Assert:
        test = node.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
            test.left, test.comparators[0] = _kept(GOT, test.left), _kept(WANT, test.comparators[0])
            kind = "value"
        elif _is_call(test, COMPARERS) and len(test.args) >= 2:
            test.args[0], test.args[1] = _kept(GOT, test.args[0]), _kept(WANT, test.args[1])
            kind = "value"
        elif _is_call(test, {"isinstance"}) and len(test.args) == 2:
            test.args[0] = _kept(GOT, test.args[0])
            kind = "type"
        else:
            return node
        call = ast.Call(
            ast.Name(HELPER, ast.Load()),
            [node.msg or ast.Constant(""), ast.Name(GOT, ast.Load()), ast.Constant(kind)]
            + ([ast.Name(WANT, ast.Load())] if kind == "value" else []),
            [],
        )
        return ast.copy_location(ast.Assert(test, call), node)


def _kept(name: str, expression: ast.expr) -> ast.NamedExpr:
    return ast.NamedExpr(ast.Name(name, ast.Store()), expression)


def _is_call(node: ast.expr, names: Collection[str]) -> bool:
    if not isinstance(node, ast.Call):
        return False
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
    return name in names


def came_back(message: object, got: object, kind: str, want: object = None) -> str:
    "The assert's message and what came back: '... (got [1, 2], expected [3, 5])' or '... (got a list)'."
    if kind == "type":
        return f"{message} (got a {type(got).__name__})".lstrip()
    return f"{message} (got {shown(got)}, expected {shown(want)})".lstrip()


def shown(value: object) -> str:
    "A value as a test's message shows it: arrays (and Tensors, by their data) short, anything else by its repr."
    data = getattr(value, "data", None) if type(value).__name__ == "Tensor" else value
    try:
        if isinstance(data, np.ndarray):
            text = np.array2string(data, precision=4, threshold=20, separator=", ").replace("\n", "")
            text = f"Tensor({text})" if data is not value else text
        else:
            text = repr(value)
    except Exception:  # noqa: BLE001  (a value that cannot be shown: the message still says what was expected)
        text = f"a {type(value).__name__}"
    return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."
