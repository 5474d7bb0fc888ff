"""What a student can learn from a hidden test: an error their own code raised is shown without its numbers (a rule
that raises its inputs as its message would print the hidden inputs), while the tests' own messages stay whole."""

from grading import wire
from grading.verdict import exception_of, run_cell


def raising(message):
    def function():
        raise exception_of({"type": "ValueError", "message": message})

    return function


def test_a_student_error_in_a_hidden_test_is_shown_without_its_numbers():
    namespace = {"rule": raising("inputs were [[0.123, -4.5e-3], [7.0, 8.25]]")}
    cell = {"id": "mul_hidden", "source": "### BEGIN HIDDEN TESTS\nrule()\n### END HIDDEN TESTS"}
    passed, message = run_cell(cell, namespace, 10, hidden=True)
    assert not passed and message.startswith("ValueError: inputs were [[#, #], [#, #]]")
    assert "0.123" not in message and "hidden test" in message


def test_the_same_error_in_a_visible_test_and_the_tests_own_messages_stay_whole():
    namespace = {"rule": raising("inputs were [0.5]")}
    assert run_cell({"id": "v", "source": "rule()"}, namespace, 10) == (False, "ValueError: inputs were [0.5]")
    hidden = {"id": "h", "source": "assert False, 'expected 2.5 for a (3, 4) input'"}
    assert run_cell(hidden, {}, 10, hidden=True) == (False, "AssertionError: expected 2.5 for a (3, 4) input")
    assert wire.EXCEPTIONS["ValueError"] is ValueError


CHECKERS = {"check_backward", "gradcheck"}  # they raise a GradcheckError that names the rule, input and index
WITH_MESSAGES = [f"{n:02d}" for n in range(1, 17)]  # every notebook


def bare_asserts(source):
    import ast

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assert) and node.msg is None:
            call = node.test if isinstance(node.test, ast.Call) else None
            if call is None or getattr(call.func, "id", getattr(call.func, "attr", "")) not in CHECKERS:
                yield f"line {node.lineno}: assert {ast.unparse(node.test)}"


def test_no_test_cell_fails_with_a_bare_assertion_error():
    "A failing check says what was computed from which input and what was expected, never just 'AssertionError:'."
    from conftest import REPO
    from grading.notebooks import read_notebook

    bare = []
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        if path.name[:2] not in WITH_MESSAGES:
            continue
        for cell in read_notebook(path).cells:
            if cell.cell_type == "code" and cell.source.startswith("# test:"):
                bare += [f"{path.name} {cell.source.splitlines()[0]} {b}" for b in bare_asserts(cell.source)]
    assert not bare, "asserts without a message:\n" + "\n".join(bare)
