"""The feedback page reads well, and a student's error reads in the student's words: why a hidden test hides a
message is said once on the page, a visible test that passed says so, a failed visible `assert` says what came back
beside what was expected, and no class of the grader's (StudentError, WireError, CellTimeout) names an error. Cheap:
made-up results and single cells, no grading run (tests/test_student_errors.py grades real submissions)."""

import types

import nbformat
import numpy as np
import pytest

from grading.grade.outputs import PASSED, Shown
from grading.grade.student_errors import describe, describe_hidden, exception_of
from grading.grade.verdict import run_cell
from grading.reports.feedback import NOT_SHOWN, WHY_NOT_SHOWN, publish
from grading.reports.page import ran_notebook
from grading.sandbox import wire, worker

HIDDEN = "### BEGIN HIDDEN TESTS\nrule()\n### END HIDDEN TESTS"
GRADER_TYPES = ("StudentError", "WireError", "CellTimeout", "CallTimeout", "GraderFault")


def hidden_failure(kind="ValueError", qualname="Conv2dBackward.apply"):
    "The message of a hidden test in which the student's rule raised."

    def rule():
        raise exception_of({"type": kind, "raised": kind, "message": "secret"}, qualname)

    return run_cell({"id": "h", "kind": "test", "source": HIDDEN}, {"rule": rule}, 10, hidden=True)[1]


def result(**tests):
    rows = {
        name: {"score": s, "max_score": m, "message": msg, "hidden": name.endswith("_hidden")}
        for name, (s, m, msg) in tests.items()
    }
    total = sum(r["score"] for r in rows.values())
    return {"tests": rows, "score": total, "max_score": sum(r["max_score"] for r in rows.values()), "note": ""}


def test_why_a_hidden_test_hides_a_message_is_said_once_on_a_page_with_three(tmp_path):
    "Seven copies of one 35-word sentence on one page (issue 41): each test now says it briefly, the page says why."
    graded = result(
        conv_input_hidden=(0, 2, hidden_failure()),
        conv_weight_hidden=(0, 1, hidden_failure()),
        conv_bias_hidden=(0, 1, hidden_failure("TypeError")),
        conv=(2, 2, ""),
    )
    publish(tmp_path / "p.html", nbformat.v4.new_notebook(), "12_conv", graded, "full")
    page = (tmp_path / "p.html").read_text()
    assert page.count("could write them into") == 1 and WHY_NOT_SHOWN.split(":")[0] in page
    assert page.count(f"ValueError from your Conv2dBackward.apply in a hidden test ({NOT_SHOWN})") == 2
    assert "secret" not in page


def test_a_page_without_a_hidden_message_does_not_explain_one(tmp_path):
    graded = result(conv_input_hidden=(0, 2, "AssertionError: the shapes differ"), conv=(0, 2, "ValueError: x"))
    publish(tmp_path / "p.html", nbformat.v4.new_notebook(), "12_conv", graded, "full")
    assert "could write them into" not in (tmp_path / "p.html").read_text()


def test_a_visible_test_that_passed_shows_that_it_passed():
    cell = nbformat.v4.new_code_cell("assert True", id="conv")
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": "conv", "points": 2, "solution": False}
    shown = Shown()
    shown.passed = True
    nb = ran_notebook(nbformat.v4.new_notebook(cells=[cell]), nbformat.v4.new_notebook(cells=[cell]), {})
    assert not nb.cells[0].outputs, "a cell with no outputs of its own"
    nb = ran_notebook(
        nbformat.v4.new_notebook(cells=[cell]), nbformat.v4.new_notebook(cells=[cell]), {"conv": shown.outputs()}
    )
    assert [o.get("text") for o in nb.cells[0].outputs] == [PASSED + "\n"]
    assert PASSED not in "".join(o.get("text", "") for o in Shown().outputs()), "only when it passed"


@pytest.mark.parametrize(
    "source, says",
    [
        (
            "x = np.arange(3)\nassert np.allclose(x, [1, 2, 3]), 'should be [1, 2, 3]'",
            "(got [0, 1, 2], expected [1, 2, 3])",
        ),
        (
            "def check():\n    assert (2, 3) == (2, 1), 'keep the axis'\ncheck()",
            "keep the axis (got (2, 3), expected (2, 1))",
        ),
        ("assert isinstance([1.0], tuple), 'apply returns a tuple'", "apply returns a tuple (got a list)"),
        ("assert np.array_equal(np.zeros(2), np.ones(2))", "(got [0., 0.], expected [1., 1.])"),
    ],
)
def test_a_failed_visible_assert_says_what_came_back_beside_what_was_expected(source, says):
    passed, message = run_cell({"id": "t", "kind": "test", "source": source}, {"np": np}, 10)
    assert not passed and message.startswith("AssertionError: ") and message.endswith(says)


def test_a_hidden_assert_does_not_say_what_came_back():
    "What a hidden test got came from the student's code on the hidden inputs."
    cell = {
        "id": "h",
        "kind": "test",
        "source": "### BEGIN HIDDEN TESTS\nassert 7165 == 2, 'wrong'\n### END HIDDEN TESTS",
    }
    assert run_cell(cell, {}, 10, hidden=True) == (False, "AssertionError: wrong")


@pytest.mark.parametrize(
    "raised, message, visible, hidden",
    [
        ("SystemExit", "3", "your NegBackward.apply called sys.exit(3)", "your NegBackward.apply called sys.exit()"),
        ("KeyboardInterrupt", "", "your NegBackward.apply raised KeyboardInterrupt", "raised KeyboardInterrupt"),
        ("NameError", "name 'grad_outptu' is not defined", "NameError: name 'grad_outptu' is not defined", "NameError"),
        ("CallTimeout", wire.CALL_TIMEOUT, "your NegBackward.apply used up the CPU time", "used up the CPU time"),
    ],
)
def test_what_the_students_code_did_is_named_in_its_words_never_a_grader_class(raised, message, visible, hidden):
    "Before: 'StudentError: SystemExit: 3', 'StudentError: CallTimeout: ...', 'an error of its own class'."
    reply = {"type": "Error", "raised": raised, "message": message}
    shown, secret = (
        describe(exception_of(reply, "NegBackward.apply")),
        describe_hidden(exception_of(reply, "NegBackward.apply")),
    )
    assert visible in shown and hidden in secret and "its own class" not in secret
    assert not [word for word in GRADER_TYPES if word in shown + secret]


def test_memory_runs_out_in_the_students_words():
    reply = {"type": "MemoryError", "raised": "MemoryError", "message": "Unable to allocate 20.0 GiB"}
    error = exception_of(reply, "NegBackward.apply")
    assert describe(error) == "MemoryError: your NegBackward.apply ran out of memory (Unable to allocate 20.0 GiB)"
    assert describe_hidden(error).startswith("your NegBackward.apply ran out of memory in a hidden test")


def test_a_test_that_runs_out_of_time_names_no_grader_class():
    shown = Shown()
    passed, message = run_cell({"id": "t", "kind": "test", "source": "while True:\n    pass"}, {}, 0.2, shown=shown)
    assert not passed and message == "the test ran out of time: it took longer than 0.2 s"
    assert shown.error[0] == "Timeout"


def test_a_class_the_students_module_lacks_is_not_a_malformed_message():
    """The col2im case: a syntax error in Conv2dBackward's cell, and the grader sends a Conv2dBackward. The worker's
    reading of it failed as 'WireError: a message the receiver cannot read (AttributeError)' on every test."""
    module = types.ModuleType("tinytorch.core.fake_conv")
    sys_modules = worker.sys.modules
    sys_modules[module.__name__] = module
    try:
        grader = wire.Session(lambda m, q: type(q, (), {"__module__": m, "__qualname__": q}))
        rule = grader.resolve_class(module.__name__, "Conv2dBackward")()
        header, arrays = wire.unpack(_reader(grader.message({"op": "call"}, {"args": (rule,), "kwargs": {}})))
        side = wire.Session(worker.resolve_class, first_number=1 << 40, accept_new_classes=True, make_callable=id)
        with pytest.raises(AttributeError, match="Conv2dBackward is not defined: the cell that defines it did not run"):
            side.receive(header, arrays)
    finally:
        del sys_modules[module.__name__]


def test_a_cell_that_fails_is_named_by_its_first_line_and_the_line_in_it():
    "Before: '(conv.py, line 69)', a file and a line the student never sees."
    source = "#| export\ndef col2im(grad_rows, x_shape:\n    pass\n"
    try:
        compile(source, worker.CELL, "exec")
    except SyntaxError as error:
        said = worker.cell_error(error, source)
    assert said == "SyntaxError: '(' was never closed (line 2 of the cell 'def col2im(grad_rows, x_shape:')"
    try:
        exec(compile("#| export\nx = 1\nraise ValueError('half-written')\n", worker.CELL, "exec"), {})
    except ValueError as error:
        said = worker.cell_error(error, "#| export\nx = 1\nraise ValueError('half-written')\n")
    assert said == "ValueError: half-written (line 3 of the cell 'x = 1')"


def _reader(data):
    view = memoryview(data)

    def read(n):
        nonlocal view
        chunk, view = bytes(view[:n]), view[n:]
        return chunk

    return read


def test_on_gradescope_a_hidden_test_says_why_in_its_own_box_and_the_submissions_output_does_not():
    "Gradescope shows each test in a box, and the submission's output before hidden tests are published."
    from grading.lms.lms import gradescope_results
    from grading.lms.lms_input import Person

    entry = result(neg_hidden=(0, 1, hidden_failure(qualname="NegBackward.apply")), neg=(0, 1, "ValueError: x"))
    made = gradescope_results(Person("ada"), "04_elementwise", entry, {"neg_hidden": True, "neg": False}, "hidden")
    outputs = {test["name"]: test["output"] for test in made["tests"]}
    assert outputs["neg_hidden"].endswith(WHY_NOT_SHOWN) and outputs["neg"] == "ValueError: x"
    assert WHY_NOT_SHOWN not in made["output"]
