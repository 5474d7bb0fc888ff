"""What a student can learn from a hidden test. Its code had the hidden inputs while the test ran, and could write
them into whatever the page shows: so an error it raised is named by its kind and the function only (not its message,
whose numbers could be spelled in letters), what it sent back and the grader cannot check is not quoted (a class
named after the inputs), and the test's own message is shown with quoted text blanked (a check quotes what a rule
returned: a string of the inputs). A visible test's messages stay whole: their inputs are the student's to see."""

import sys

import pytest

from grading.grade.student_errors import StudentError, describe_hidden, exception_of, students
from grading.grade.verdict import run_cell
from grading.sandbox import wire

HIDDEN = "### BEGIN HIDDEN TESTS\nrule()\n### END HIDDEN TESTS"


def raising(message, kind="ValueError", qualname="MulBackward.apply"):
    def function():
        raise exception_of({"type": kind, "message": message}, qualname)

    return function


@pytest.mark.parametrize(
    "message",
    [
        "inputs were [[0.123, -4.5e-3], [7.0, 8.25]]",
        "LEAK optigs_ipeqgb",  # 0.7165 and 1.3968, spelled in letters
    ],
)
def test_a_student_error_in_a_hidden_test_shows_its_kind_and_function_not_its_message(message):
    passed, shown = run_cell({"id": "mul_hidden", "source": HIDDEN}, {"rule": raising(message)}, 10, hidden=True)
    assert not passed and shown.startswith(
        "ValueError from your MulBackward.apply in a hidden test (its message is not shown)"
    )
    assert "LEAK" not in shown and "inputs were" not in shown and "0.123" not in shown


def test_an_error_type_of_the_students_own_is_not_named_either():
    error = exception_of({"type": "LeakOf0_7165", "raised": "LeakOf0_7165", "message": "x"}, "NegBackward.apply")
    assert isinstance(error, StudentError)
    text = describe_hidden(error)
    assert text.startswith(
        "an error of its own class from your NegBackward.apply in a hidden test (its message is not shown)"
    )
    assert "7165" not in text


def test_a_call_that_used_up_its_cpu_time_in_a_hidden_test_says_so():
    "An instructor's finding: an endless loop in a rule was 'an error of its own class' in a hidden test."
    error = exception_of({"type": "Error", "raised": "CallTimeout", "message": wire.CALL_TIMEOUT}, "ExpBackward.apply")
    text = describe_hidden(error)
    assert text == (  # the grader's own words, all of them shown: nothing is 'not shown' (an instructor's finding)
        "your ExpBackward.apply used up the CPU time allowed for one call (an endless loop, or much too slow) in a "
        "hidden test"
    )
    chosen = exception_of({"type": "Error", "raised": "CallTimeout", "message": "LEAK 0.7165"}, "ExpBackward.apply")
    assert "LEAK" not in describe_hidden(chosen) and "its own class" in describe_hidden(chosen)  # its own words: hidden


def test_an_exercise_whose_cell_did_not_run_is_named_as_not_defined():
    """An instructor's finding: with a syntax error in DivBackward's cell, its tests said "AttributeError: module
    'tinytorch.core.elementwise' has no attribute 'DivBackward'"; the worker's words now say why, and a hidden test
    shows them (they are the worker's, checked word for word: a message the student's code wrote stays hidden)."""
    import types

    from grading.sandbox import worker

    module = types.ModuleType("tinytorch.core.fake_elementwise")
    sys.modules[module.__name__] = module
    try:
        with pytest.raises(AttributeError, match="DivBackward is not defined: the cell that defines it did not run"):
            worker.target_of(module.__name__, "DivBackward.apply")
    finally:
        del sys.modules[module.__name__]
    reply = {"type": "AttributeError", "raised": "AttributeError", "message": wire.not_defined("DivBackward")}
    text = describe_hidden(exception_of(reply, "DivBackward.apply"))
    assert text.startswith(
        "DivBackward is not defined in your module: its cell did not run, or named it otherwise in a"
    )
    forged = dict(reply, message=wire.not_defined("LEAK_0_7165"))
    assert "LEAK" not in describe_hidden(exception_of(forged, "DivBackward.apply"))


def test_a_recursion_error_in_a_hidden_test_names_its_likely_cause():
    "A recursive topological order passes the small visible tests and fails the hidden deep chain: say why."
    namespace = {
        "walk": lambda: exception_of({"type": "RecursionError", "message": "maximum recursion depth exceeded"})
    }
    namespace["rule"] = lambda: (_ for _ in ()).throw(namespace["walk"]())
    passed, message = run_cell({"id": "order_hidden", "source": HIDDEN}, namespace, 10, hidden=True)
    assert not passed and message.startswith(
        "RecursionError from your code in a hidden test (its message is not shown)"
    )
    assert "explicit stack" in message
    _, plain = run_cell({"id": "h", "source": HIDDEN}, {"rule": raising("the shapes differ")}, 10, hidden=True)
    assert "explicit stack" not in plain


def test_what_a_rule_sent_back_and_the_grader_cannot_check_is_not_quoted():
    "noa's attack: a class named after the inputs, which the grader refuses and used to quote."
    error = students(
        StudentError("AddBackward.apply sent back ...: the class name 'LEAK -1.6949'"), "AddBackward.apply"
    )
    text = describe_hidden(error)
    assert "LEAK" not in text and "1.6949" not in text and "AddBackward.apply" in text


@pytest.mark.parametrize(
    "message, shown",
    [
        ("expected 2.5 for a (3, 4) input", "expected 2.5 for a (3, 4) input"),  # no quotes: whole
        # mia's attack: the check quotes 80 characters of a returned string, cut short before its closing quote
        (
            "MulBackward.apply must return a tuple with one gradient per input (2), but it returned str 'LEAK -0.7406 1.0",
            "MulBackward.apply must return a tuple with one gradient per input (2), but it returned str '…'",
        ),
        ("got \"LEAK 1.5\" and 'x', the rule's gradient", "got '…' and '…', the rule's gradient"),
        ("returned str 'a\\'b \"c' instead", "returned str '…' instead"),
        # a red-team finding: a string of 78 characters and a newline, cut at 80, ends on the escape's backslash
        ("it returned str 'LEAK -0.1778 -8.0329 ####\\", "it returned str '…'"),
    ],
)
def test_a_hidden_tests_own_message_is_shown_with_quoted_text_blanked(message, shown):
    "The message is made while the test runs (as an f-string with what the rule returned): its quotes are not the test's."
    cell = {"id": "h", "source": "### BEGIN HIDDEN TESTS\nraise AssertionError(made())\n### END HIDDEN TESTS"}
    assert run_cell(cell, {"made": lambda: message}, 10, hidden=True) == (False, f"AssertionError: {shown}")


def test_a_quote_from_the_cells_every_student_has_is_shown():
    """A student solver's finding: 12's hidden conv tests said padding='…' and (section 3, '…'), since the quotes come
    from the given cell that draws the cases, not from the hidden cell. Quotes of given code and visible tests are
    kept (every release holds them); those of the other hidden cells and of the solutions are not."""
    source = "### BEGIN HIDDEN TESTS\nraise AssertionError(f'case: padding={made()!r}')\n### END HIDDEN TESTS"
    given = 'def conv_cases(rng):\n    return [(1, "same")]'
    for made, public, shown in [("same", given, "'same'"), ("same", "", "'…'"), ("LEAK", given, "'…'")]:
        passed, message = run_cell({"id": "h", "source": source}, {"made": lambda m=made: m}, 10, True, None, public)
        assert (passed, message) == (False, f"AssertionError: case: padding={shown}")


def test_the_public_source_holds_given_cells_and_visible_tests_only():
    import nbformat

    from grading.grade.verdict import public_source

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("GIVEN = 'public'"),
        nbformat.v4.new_code_cell("ANSWER = 'solution'", metadata={"nbgrader": {"solution": True}}),
        nbformat.v4.new_code_cell("### BEGIN HIDDEN TESTS\nSECRET = 'hidden'\n### END HIDDEN TESTS"),
        nbformat.v4.new_markdown_cell("'prose'"),
    ]
    assert public_source(nb) == "GIVEN = 'public'"


def test_a_quote_the_hidden_tests_source_holds_is_shown():
    """A section's name the instructor quoted ('The step') is the test's own text, and a student's string that spells
    it says nothing new; a quote only the student's code wrote stays blanked beside it."""
    source = (
        "### BEGIN HIDDEN TESTS\n"
        "raise AssertionError(f\"got {made()}: reread Exercise 2's 'The step', and padding='same'\")\n"
        "### END HIDDEN TESTS"
    )
    passed, message = run_cell({"id": "h", "source": source}, {"made": lambda: "'LEAK 0.5'"}, 10, hidden=True)
    assert not passed
    assert message == "AssertionError: got '…': reread Exercise 2's 'The step', and padding='same'"
    source = '### BEGIN HIDDEN TESTS\nfor scheme in ["he"]:\n    raise AssertionError(f"init_bound({scheme!r}, 3)")\n'
    assert run_cell({"id": "h", "source": source}, {}, 10, hidden=True) == (
        False,
        "AssertionError: init_bound('he', 3)",
    )


def test_the_same_error_in_a_visible_test_and_a_visible_tests_own_message_stay_whole():
    namespace = {"rule": raising("inputs were [0.5]")}
    assert run_cell({"id": "v", "source": "rule()"}, namespace, 10) == (False, "ValueError: inputs were [0.5]")
    visible = {"id": "v", "source": "assert False, \"it returned str 'LEAK 0.5'\""}
    assert run_cell(visible, {}, 10) == (False, "AssertionError: it returned str 'LEAK 0.5'")
    assert wire.EXCEPTIONS["ValueError"] is ValueError


CHECKERS = {"check_backward", "gradcheck", "engine_gradcheck"}  # they raise an error naming the rule, input and index
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
    from grading.common.notebooks import read_notebook

    bare = []
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        if path.name[:2] not in WITH_MESSAGES:
            continue
        for cell in read_notebook(path).cells:
            if cell.cell_type == "code" and cell.source.startswith("# test:"):
                bare += [f"{path.name} {cell.source.splitlines()[0]} {b}" for b in bare_asserts(cell.source)]
    assert not bare, "asserts without a message:\n" + "\n".join(bare)


# (notebook, what the mutant of tests/test_mutation.py gets wrong, the test cell, words its message must hold): each
# message names the failing case (the call, its shapes and options), what came back, and the likely cause.
NAMED_FAILURES = [
    (
        "04_elementwise",
        "negates grad_output in place",
        "sub_backward_hidden",
        ["SubBackward on inputs of shapes", "changed grad_output (shape"],
    ),
    ("04_elementwise", "replaces its saved input by 1/a", "log_backward_hidden", ["changed its saved input 0 (shape"]),
    (
        "07_activations",
        "multiplies the saved output in place",
        "sigmoid_backward_hidden",
        ["SigmoidBackward on inputs of shapes", "changed its saved output (shape"],
    ),
    ("07_activations", "masks grad_output in place", "relu_backward", ["ReLUBackward on inputs of shapes (3, 4)"]),
    (
        "06_autograd",
        "gradient overwritten instead of accumulated",
        "accumulate_hidden",
        ["y = x + x; sum(y * y + x) for x = [1, -1]: expected x.grad = 8x + 1", "got"],
    ),
    (
        "06_autograd",
        "gradient overwritten instead of accumulated",
        "accumulate",
        ["expected x.grad = 2x = [2, 4, 6], got [1. 2. 3.]", "only one use's gradient, x, was kept"],
    ),
    (
        "06_autograd",
        "the first use's gradient added twice",
        "accumulate",
        ["got [ 6. 12. 18.]", "accumulate must add the two gradients, each once"],
    ),
    (
        "08_losses",
        "BCE's gradient of p made from arrays (.data)",
        "bce_backward_twice_hidden",
        ["bce_loss's gradient, computed with create_graph=True, is a constant", ".data, NumPy"],
    ),
    (  # a student solver's finding: the visible test passed an in-place accumulate (x * x shares no gradient)
        "06_autograd",
        "adds in place (grads[key].data += grad.data)",
        "accumulate",
        ["s = a + b; sum(s + a)", "got [2. 2.] and [2. 2.]", "adds in place (+=)", "store a new array"],
    ),
    (  # the rules are the course's: the message names the engine's pieces, not a rule's "constant factor"
        "06_autograd",
        "the first use's gradient added twice",
        "engine_end_to_end",
        ["(a * b - b / (a * a + 1)).exp().sum(axis=0): input 0", "Likely cause: the engine adds or passes"],
    ),
    (
        "06_autograd",
        "gradient overwritten instead of accumulated",
        "engine_end_to_end",
        ["(a * b - b / (a * a + 1)).exp().sum(axis=0): input 0 (a, shape (3, 1))"],
    ),
    (
        "06_autograd",
        "adds in place (grads[key].data += grad.data)",
        "accumulate_hidden",
        ["a + a with inputs of shapes (3,)", "in place"],
    ),
    (
        "10_optimizers",
        "velocity rebound locally, never kept (plain gradient descent)",
        "sgd_momentum_hidden",
        [
            "momentum=",
            "a of shape (3,)",
            "step 2 of 4",
            "expected",
            "got",
            "plain gradient descent",
            "self.velocity[i]",
        ],
    ),
    (
        "10_optimizers",
        "one step count shared by all parameters",
        "adam",
        ["q of shape (1, 3)", "expected [[0.4, 2.9, -1.1]], got", "self.t[i]"],
    ),
    (
        "10_optimizers",
        "one step count shared by all parameters",
        "adam_skip_hidden",
        ["Adam(lr=0.05)", "of shape (2, 3)", "got", "step count"],
    ),
    (
        "10_optimizers",
        "epsilon inside the square root",
        "adam_eps_hidden",
        ["eps=", "step 1 of 3", "got", "where Exercise 2's 'The step' adds eps"],
    ),
    (
        "10_optimizers",
        "velocity dampened by 1 - momentum",
        "sgd_momentum_hidden",
        ["step 1 of 4", "expected", "got", "newest gradient has the weight 1"],
    ),
    (
        "12_conv",
        "every tied maximum gets the gradient",
        "maxpool2d_backward_ties_hidden",
        ["MaxPool2dBackward, kernel_size=", "(tied maxima)", "expected", "got", "only the first gets g"],
    ),
    (
        "12_conv",
        "overlapping windows' gradients written, not added (fancy-index +=)",
        "maxpool2d_backward_stride_hidden",
        ["stride=", "expected", "got", "Likely cause: some windows' g was lost", "sum of their g"],
    ),
    (
        "12_conv",
        "argmax used as a position in the image (the window's start left out)",
        "maxpool2d_backward_hidden",
        ["kernel_size=", "expected", "got", "not to its maximum", "position in the window"],
    ),
    (
        "12_conv",
        "kernel flipped for grad_x",
        "conv2d_backward_input_hidden",
        ["Conv2dBackward on x of shape", "stride=", "expected", "got", "Likely cause: the kernel was flipped"],
    ),
    (
        "12_conv",
        "bias gradient averaged",
        "conv2d_backward_bias_hidden",
        [
            "b of shape",
            "padding=",
            "the gradient of the bias b is wrong",
            "expected",
            "got",
            "of the expected one",
            "samples times output positions",
        ],
    ),
    (
        "12_conv",
        "weight's gradient not reshaped (rows of C·kh·kw, the wrong shape)",
        "conv2d_backward_weight_hidden",
        [
            "w of shape",
            "the gradient of the kernels w has shape",
            "expected (",
            "as many numbers as w",
            "another shape",
        ],
    ),
    (
        "12_conv",
        "im2col at the convolution's stride, g not dilated",
        "conv2d_backward_input_hidden",
        ["stride=2", "the gradient of the input x is wrong", "right at stride 1, wrong at stride 2", "dilate"],
    ),
    (
        "12_conv",
        "each kernel's gradient transposed (kh and kw swapped)",
        "conv2d_backward_weight_hidden",
        ["the gradient of the kernels w", "kh and kw swapped"],
    ),
    (
        "12_conv",
        "the padded image's gradient returned uncropped",
        "conv2d_backward_input_hidden",
        ["padding=", "has shape", "right without padding, wrong with padding=", "crop the border off x's gradient"],
    ),
    (
        "12_conv",
        "g flattened without moving the channels last (right shape, wrong numbers)",
        "conv2d_backward_input_hidden",
        ["the gradient of the input x is wrong", "The gradient of w is wrong too", "g for each window and filter"],
    ),
    ("13_embedding", "the lookup's use only", "tied_gradient", ["expected [[2], [-2], [-2]], got [[0.0], [-2.0]"]),
    (
        "13_embedding",
        "input_use[ids] += (repeats counted once)",
        "tied_gradient_hidden",
        ["ids [1, 3, 1, 1], weight of shape", "expected", "got", "a repeated id must add up its rows"],
    ),
    (
        "13_embedding",
        "grad_logits not flattened (fails on 2-D ids)",
        "tied_gradient_hidden",
        ["a batch of sentences: ids of shape", "grad_logits of shape"],
    ),
    (
        "13_embedding",
        "out[ids] += g (repeats counted once)",
        "embedding_backward",
        [
            "got [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]",
            "Id 1's row got one use's worth",
            "buffered",
        ],
    ),
    ("13_embedding", "averaged over ids", "embedding_backward", ["got [[0.0, 0.0], [0.75, 0.75]"]),
    (  # a student solver's finding: with as many rows as positions, the visible test could not see the shape
        "13_embedding",
        "grad_output's rows returned (one per position, not per table row)",
        "embedding_backward",
        ["EmbeddingBackward returned a gradient of shape (4, 2) for input 0 of shape (5, 2)"],
    ),
    (
        "13_embedding",
        "repeated ids added once (buffered +=)",
        "sparse_rows",
        ["got [[0.0, 1.0], [1.0, -1.0]]", "a buffered values[inverse] += g"],
    ),
    ("13_embedding", "repeated ids averaged", "sparse_rows", ["got [[0.0, 1.0], [1.3333, 0.3333]]", "the mean of"]),
    (
        "13_embedding",
        "the ids flattened, the gradient not (fails on 2-D ids)",
        "sparse_rows",
        ["grad_output of shape (2, 2, 2) raised ValueError", "not flattened to positions"],
    ),
    (
        "13_embedding",
        "grad_logits scattered instead of the gradient of E",
        "tied_gradient",
        ["grad_logits of shape (1, 3)) raised ValueError", "grad_logits itself was scattered"],
    ),
    (
        "13_embedding",
        "input_use[ids] += (repeats counted once)",
        "tied_gradient",
        ["ids [4, 0, 4]", "expected", "got", "one of its two positions only"],
    ),
    ("02_function", "extras dropped", "attach", ["attach(result, Marker, x, scale=2.0)", "nothing was raised"]),
    (
        "02_function",
        "records only when the first input needs a gradient",
        "attach",
        ["attach(result, Marker, constant, x)", "got None"],
    ),
    ("05_matmul_and_reductions", "all axes reversed", "transpose_backward_hidden", ["axes=(1, 2, 0)", "gradient has"]),
    (
        "09_nn",
        "lists and tuples not searched (a Sequential's layers are a list)",
        "parameters_hidden",
        ["got 0 tensors, expected 3", "search lists and tuples"],
    ),
    ("10_optimizers", "velocity dampened by 1 - momentum", "sgd", ["got [ 0.9424 -1.8848]", "the dampened form"]),
    (
        "10_optimizers",
        "the corrected averages stored back into m and u",
        "adam",
        ["got 1.8765848", "stored back into m and u"],
    ),
    ("10_optimizers", "every step corrected with t = 1", "adam", ["got 1.7658398", "corrected with t = 1"]),
    (
        "09_nn",
        "a bias gradient returned without a bias (Linear(W))",
        "linear_seed_example",
        ["backward through Linear(W), a layer without a bias, raised", "one gradient per saved tensor"],
    ),
    (
        "09_nn",
        "tensors that require no gradient counted",
        "parameters",
        ["a tuple of two trained tensors and a constant", "leave out tensors that do not require a gradient"],
    ),
    ("09_nn", "tuples not searched (lists only)", "parameters", ["got shapes []", "search tuples as you search lists"]),
    (
        "09_nn",
        "looks one level deep (a Sequential inside a Sequential gives none)",
        "parameters_hidden",
        ["three levels deep: got shapes [], expected [(5, 2)"],
    ),
    (
        "14_higher_order",
        "a loss whose gradient does not depend on the parameters (H = 0) not handled",
        "hvp_hidden",
        ["sum(w * 3), a loss linear in w of shape", "Likely cause: ", "return zeros"],
    ),
    (
        "14_higher_order",
        "a parameter the loss does not use (its gradient None) not skipped",
        "hvp_hidden",
        ["a second parameter of shape (2,)", "Likely cause: ", "if g is not None"],
    ),
    (
        "14_higher_order",
        "first gradient without create_graph=True",
        "hvp_hidden",
        ["the quadratic ½ wᵀAw, w of shape", "got [0.0", "create_graph=True"],
    ),
    (
        "14_higher_order",
        "backward() for both derivatives, .grad read (it accumulates the first gradient)",
        "second_derivative",
        ["expected d²/dx² x³ = 6x = 12, got 24", ".grad accumulates", "Use grad() (not backward())"],
    ),
    (
        "14_higher_order",
        "backward() for both derivatives, .grad read (it accumulates the first gradient)",
        "hvp_mlp",
        ["H·v plus the first gradient", "Use grad() (not backward())"],
    ),
    (
        "14_higher_order",
        "backward() for both derivatives, .grad read (it accumulates the first gradient)",
        "hvp_hidden",
        ["the quadratic ½ wᵀAw", "Likely cause: w.grad was written", "Use grad() (not backward())"],
    ),
    (
        "14_higher_order",
        "first gradient without create_graph=True",
        "second_derivative",
        ["got 0. A 0 means the first gradient was not recorded"],
    ),
    ("14_higher_order", "first gradient without create_graph=True", "hvp_mlp", ["H·v is zero", "create_graph=True"]),
    (
        "14_higher_order",
        "the dot product of the last parameter's term only",
        "second_derivative",
        ["H·(1.0, 1.0) of x²y + y³ at (1, 2) is (6.0, 14.0), got (2.0, 12.0)", "only y's term of the dot product"],
    ),
    (
        "11_training",
        "train_epoch forgets zero_grad (every batch's gradients add up)",
        "digits_accuracy",
        ["training loss", "optimizer.zero_grad()"],
    ),
    (
        "11_training",
        "train_epoch steps before backward (each step sees no gradient)",
        "digits_accuracy",
        ["step() found every .grad to be None: it ran before this batch's backward()"],
    ),
    (  # the visible tests' batch cases (a student solver's findings): each passed them with ids of one axis
        "13_embedding",
        "grad_output flattened by its axis 1 (right for ids of one axis only)",
        "embedding_backward",
        ["ids of shape (2, 3)", "the gradient rows (6, 2), the last axis kept whole (axis 1 has 3 numbers here"],
    ),
    (
        "13_embedding",
        "the gradient flattened by its axis 1 (right where T = d)",
        "sparse_rows",
        ["ids of shape (1, 3)", "a row has d = 2 numbers, the last axis (axis 1 has 3 numbers here)"],
    ),
    (
        "13_embedding",
        "values float64 whatever the gradient's dtype",
        "sparse_rows",
        ["values should have the dtype of grad_output, float32 here; got float64"],
    ),
    (
        "13_embedding",
        "grad_logits flattened by its axis 1 (right for ids of one axis only)",
        "tied_gradient",
        ["ids of shape (2, 2)", "G is (4, 5), a row of V = 5 numbers per position, the last axis"],
    ),
    (  # 14's visible test named no cause for these, and the hidden one blamed create_graph (a student solver's finding)
        "14_higher_order",
        "the first gradient times v, element by element (no second derivative)",
        "second_derivative",
        ["got (4.0, 13.0). That is the first gradient (4, 13) times v, element by element"],
    ),
    (
        "14_higher_order",
        "the first gradient times v, element by element (no second derivative)",
        "hvp_hidden",
        ["that is the first gradient times v, element by element"],
    ),
    (
        "14_higher_order",
        "one grad() per parameter (no cross terms)",
        "second_derivative",
        ["got (4.0, 12.0). That is each parameter's own second derivative, without the cross terms"],
    ),
    (
        "14_higher_order",
        "no None check in the dot product (a parameter the loss does not use)",
        "second_derivative",
        ["with a second parameter the loss does not use raised TypeError", "grad() gives None for such a parameter"],
    ),
    (  # a second solver's finding: each passed every test of 10, changing p.grad on the way
        "10_optimizers",
        "the velocity built in grad itself (v = grad; v += ...)",
        "sgd",
        ["output array is read-only. update wrote into grad in place", "step() hands over read-only"],
    ),
    ("10_optimizers", "grad rescaled in place", "adam", ["one Adam step: output array is read-only"]),
    (
        "10_optimizers",
        "no bias correction",
        "adam_eps_hidden",
        ["Likely cause: the running averages were used without their bias correction"],
    ),
    (
        "10_optimizers",
        "no bias correction",
        "adam_skip_hidden",
        ["Likely cause: the running averages were used without their bias correction"],
    ),
    (
        "10_optimizers",
        "running averages in local names, never stored",
        "adam_eps_hidden",
        ["Likely cause: the running averages were not kept between steps"],
    ),
    (
        "10_optimizers",
        "running averages in local names, never stored",
        "adam_skip_hidden",
        ["Likely cause: the running averages were not kept between steps"],
    ),
    (  # issue 44: every hidden input was float64, so a float64 gradient for a float32 input earned full marks
        "05_matmul_and_reductions",
        "ones made float64 (a float64 gradient for a float32 input)",
        "sum_backward_hidden",
        ["the input is float32 but its gradient is float64", "np.ones(shape, dtype=x.dtype)"],
    ),
    (  # issue 44: every case had one parameter tensor, so a grad() per parameter earned the test
        "14_higher_order",
        "one grad() per parameter, None and constant terms handled (no cross terms)",
        "hvp_hidden",
        ["½ wᵀAw + wᵀBu for two parameters", "Likely cause: ", "call grad once on it for all the parameters"],
    ),
]


def mutant(notebook, what, test):
    "(old, new) of the mutant of tests/test_mutation.py that gets `what` wrong in `notebook` (in `test`'s rule if two)."
    from test_mutation import MUTANTS

    found = [m for m in MUTANTS if m[0] == notebook and m[2] == what]
    if len(found) > 1:
        found = [m for m in found if m[1] == test.removesuffix("_hidden")]
    (found,) = found
    return found[3], found[4]


@pytest.mark.slow  # runs a notebook's cells
@pytest.mark.parametrize(
    "notebook, what, test, words", NAMED_FAILURES, ids=[f"{n[:2]}-{t}" for n, _, t, _ in NAMED_FAILURES]
)
def test_a_failing_test_names_its_case_what_came_back_and_the_likely_cause(notebook, what, test, words):
    import json
    import subprocess
    import sys

    from conftest import REPO

    old, new = mutant(notebook, what, test)
    script = REPO / "tests" / "failure_messages.py"
    result = subprocess.run(
        [sys.executable, str(script), notebook, test, old, new], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    message = json.loads(result.stdout.splitlines()[-1])
    assert message is not None, f"{notebook} {test} passed with the mutant '{what}'"
    missing = [w for w in words if w not in message]
    assert not missing, f"{notebook} {test} with '{what}': {missing} not in the message:\n{message}"


def test_a_crash_in_a_hidden_test_fails_it_and_stays_out_of_the_note():
    """Red team round 6: the note is shown at once (Gradescope's output, before hidden results are published), so an
    os._exit on a hidden value put one bit of it there. A crash in a visible test is still named in the note."""
    from types import SimpleNamespace

    from grading.grade.remote import Remote

    remote = SimpleNamespace(events=[], hidden=True)
    assert isinstance(Remote.event(remote, "the process ended while your elementwise ran"), StudentError)
    assert remote.events == []
    remote.hidden = False
    Remote.event(remote, "the process ended while your elementwise ran")
    assert remote.events == ["the process ended while your elementwise ran"]


def test_a_flag_from_the_students_code_keeps_its_type_and_a_string_or_a_constant_is_never_taken():
    """pia's way in: the flags travel with every call, so a string or a new type would carry anything the code chose;
    and a constant the reference rule reads (BCE_EPS, red team round 4) would change what the grader computes."""
    import types

    from grading.grade.remote import set_flags

    module = types.SimpleNamespace(_grad_enabled=True, _label="x", _count=3, GELU_SCALE=0.5, NOTICE="on", BCE_EPS=1e-12)
    before = dict(vars(module))
    set_flags(module, {"_grad_enabled": False, "_label": "LEAK 1.5", "_count": 4.5, "NOTICE": "LEAK"})
    assert vars(module) == {**before, "_grad_enabled": False}  # no_grad's switch, as the student's code left it
    set_flags(module, {"GELU_SCALE": 0.25, "BCE_EPS": 0.5, "NEW": 1, "_count": 4})
    assert module.GELU_SCALE == 0.5 and module.BCE_EPS == 1e-12 and not hasattr(module, "NEW") and module._count == 4


def test_the_flags_that_travel_are_the_courses_state_and_none_of_its_constants():
    "What crosses from the student's worker into the grader's copy of each module: the two switches, nothing else."
    import importlib
    import pkgutil

    import tinytorch.core
    from grading.sandbox import wire

    travelling = {}
    for info in pkgutil.iter_modules(tinytorch.core.__path__):
        module = importlib.import_module(f"tinytorch.core.{info.name}")
        travelling.update({f"{info.name}.{name}": value for name, value in wire.flags(module).items()})
    assert travelling == {"function._grad_enabled": True, "autograd._keep_retained": True}


def test_the_courses_message_for_data_missing_while_graded_is_named_in_the_graders_words():
    "A capstone that loads the digits itself fails only while graded: say why, without the student's text."
    raised = {"type": "FileNotFoundError", "raised": "FileNotFoundError"}
    error = exception_of({**raised, "message": "The digits data is not at /LEAK/0.7165. While ..."}, "build_and_train")
    text = describe_hidden(error)
    assert "the arrays it is passed" in text and "LEAK" not in text and "0.7165" not in text
    other = exception_of({**raised, "message": "no such file"}, "build_and_train")
    assert "the arrays it is passed" not in describe_hidden(other)


def test_a_hidden_test_names_the_call_a_rule_raised_in_not_its_message():
    """A solver's SumBackward without the reshape raised in sum_backward_hidden, and the page said only 'ValueError
    from your SumBackward.apply': check_backward (the course's code, in the grader's process) notes the call, shapes
    and options, which the page shows; the rule's own message stays hidden."""
    import numpy as np

    from tinytorch.core.function import Function
    from tinytorch.core.gradcheck import check_backward

    class Raises(Function):
        def __init__(self, a, axis):
            super().__init__(a)

        def apply(self, grad_output):
            raise exception_of({"type": "ValueError", "message": "LEAK 0.5"}, "SumBackward.apply")

    namespace = {"rule": lambda: check_backward(Raises, lambda a, axis: a.sum(axis=axis), [np.ones((2, 3))], axis=0)}
    passed, message = run_cell({"id": "sum_hidden", "source": HIDDEN}, namespace, 10, hidden=True)
    assert not passed and "LEAK" not in message
    assert message.endswith("; it was raised while Raises ran on inputs of shapes (2, 3) with axis=0"), message
    _, visible = run_cell({"id": "v", "source": "rule()"}, namespace, 10)
    assert visible == "ValueError: LEAK 0.5 (raised while Raises ran on inputs of shapes (2, 3) with axis=0)"


def test_a_hidden_tests_case_is_named_for_an_error_of_the_students_code_and_once_for_its_own():
    """13's tied_weight_grad that raised on empty ids lost 2 points with 'ValueError from your tied_weight_grad in a
    hidden test' and no word of which case: `with case(label)` (13, 14) notes the case, which the page shows; a
    test's own failure, whose message the case already starts, does not repeat it."""
    import json
    from contextlib import contextmanager

    from conftest import REPO

    cells = json.loads((REPO / "notebooks" / "13_embedding.ipynb").read_text())["cells"]
    given = next("".join(c["source"]) for c in cells if "def case(label" in "".join(c["source"]))
    namespace = {"contextmanager": contextmanager}
    exec(given[given.index("@contextmanager") :], namespace)
    source = "### BEGIN HIDDEN TESTS\nwith case('no ids at all: ids of shape (0,)'):\n    rule()\n### END HIDDEN TESTS"
    student = {"case": namespace["case"], "rule": raising("LEAK 0.5", qualname="tied_weight_grad")}
    passed, message = run_cell({"id": "h", "source": source}, student, 10, hidden=True)
    assert not passed and "LEAK" not in message
    assert message.endswith("; it was in the case no ids at all: ids of shape (0,)"), message
    own = {"case": namespace["case"], "rule": lambda: (_ for _ in ()).throw(AssertionError("wrong row 2"))}
    passed, message = run_cell({"id": "h", "source": source}, own, 10, hidden=True)
    assert message == "AssertionError: no ids at all: ids of shape (0,): wrong row 2", message


RELABELLING = """try:
    rule()
except (ValueError, IndexError) as error:  # (12's checker: a pad or a reshape of the wrong sizes)
    raise AssertionError("Likely cause: a step's result has another shape than the next step needs") from error
"""
SWALLOWING = "try:\n    rule()\nexcept Exception:\n    pass\n"


@pytest.mark.parametrize("hidden", [False, True])
@pytest.mark.parametrize("source", [RELABELLING, SWALLOWING], ids=["relabelled", "swallowed"])
def test_the_graders_refusal_is_never_relabelled_or_swallowed_by_a_tests_except(source, hidden):
    """Issue 44, point 3: 12's checker caught the grader's refusal of a float32 rule (a ValueError then) and said the
    rule had a shape mistake. The refusal is a BaseException: the cell fails with the grader's own words."""
    from grading.common.errors import Refusal

    said = (
        "Conv2dBackward: the gradient of input 1 (the second gradient apply returns) is the exact one computed from "
        "its saved tensors rounded to float32"
    )

    def rule():
        raise Refusal(said)

    cell = {
        "id": "conv_hidden",
        "source": f"### BEGIN HIDDEN TESTS\n{source}### END HIDDEN TESTS" if hidden else source,
    }
    passed, message = run_cell(cell, {"rule": rule}, 10, hidden=hidden)
    assert not passed and message == f"ValueError: {said}"


@pytest.mark.parametrize("sandboxed", [True, False])
def test_the_pages_run_ends_before_the_hidden_tests_run_begins_each_with_a_worker_of_its_own(monkeypatch, sandboxed):
    """Issue 44, point 1: in a sandbox the notebook ran once, the hidden tests' worker alive beside the page's from
    the first hidden call on, and both shared one Remote (a rule found numerical or a call that timed out in a hidden
    test changed a later visible one). Now every notebook with hidden tests runs twice, as the student-user fallback
    did: the page's run whole first (its worker closed at its end), then the hidden tests' run, which shows nothing."""
    import nbformat

    from grading.grade import verdict

    runs = []

    def one_run(grading, hidden_cells=True, shown_cells=True):
        runs.append((grading.sandboxed, hidden_cells, shown_cells))
        return ({"visible": (True, "")} if shown_cells else {"visible": (False, "x"), "h": (True, "")}), "", {}

    monkeypatch.setattr(verdict, "grade_pass", one_run)
    test = nbformat.v4.new_code_cell("### BEGIN HIDDEN TESTS\nassert rule()\n### END HIDDEN TESTS")
    test.metadata["nbgrader"] = {"grade": True, "grade_id": "h", "points": 1}
    nb = nbformat.v4.new_notebook(cells=[test])
    where = dict(package=None, reference=None, runner=None, sandboxed=sandboxed, budget=None)
    results, _, _ = verdict.grade_cells(nb, nb, None, **where)
    assert runs == [(sandboxed, False, True), (sandboxed, True, False)]
    assert results == {"visible": (True, ""), "h": (True, "")}, "a visible test's result is the page's run's"
    runs.clear()
    verdict.grade_cells(nbformat.v4.new_notebook(), nb, None, **where)
    assert runs == [(sandboxed, False, True)], "no hidden tests: one run"
