"""Things students' code really does, each a small edit to a solved notebook: the cases of
tests/test_student_errors.py, which grades them all in one run and pins what the student reads of each."""

from dataclasses import dataclass, field

from grading.common.notebooks import nbgrader_meta, write_notebook
from grading.examples.edits import changing, inside, replace_in, submission

ELEMENTWISE, CONV = "04_elementwise", "12_conv"


@dataclass
class Case:
    "A student (folder name), what the student did, the notebook, the edit, and the words the student must read."

    student: str
    did: str
    notebook: str
    answer: object  # an answer() of grading.examples.edits, or None: the whole notebook solved
    says: list = field(default_factory=list)  # in the note (so on the page and in the LMS comment)
    test_says: dict = field(default_factory=dict)  # {test id: words its message holds}
    delete: str = ""  # a given cell to delete from the notebook: the start of its source


def neg_body(code):
    "An answer() whose NegBackward.apply is `code` (its lines, indented as the method's body)."
    return inside("solution-NegBackward", code)


CASES = [
    Case(
        "syntax-col2im",
        "a syntax error (an unclosed `(`) in col2im's cell",
        CONV,
        replace_in(
            "solution-Conv2dBackward",
            "def col2im(grad_rows, x_shape, kh, kw, out_hw):",
            "def col2im(grad_rows, x_shape, kh, kw, out_hw:",
        ),
        says=[
            "SyntaxError: '(' was never closed (line 2 of the cell 'def col2im(grad_rows, x_shape, kh, kw, out_hw:')"
        ],
        test_says={"conv2d_backward": "Conv2dBackward is not defined"},
    ),
    Case(
        "syntax-mul",
        "a syntax error in one exercise cell",
        ELEMENTWISE,
        replace_in(
            "solution-MulBackward", "grad_a = unbroadcast(grad_output * b", "grad_a = unbroadcast((grad_output * b"
        ),
        says=["SyntaxError: '(' was never closed (line 9 of the cell 'class MulBackward(Function):')"],
        test_says={"mul_backward": "MulBackward is not defined", "add_backward": ""},
    ),
    Case(
        "raises-at-import",
        "an exception at import (module-level code that raises)",
        ELEMENTWISE,
        changing("solution-SubBackward", lambda solution, stub: solution + '\n\nraise ValueError("half-written")\n'),
        says=["ValueError: half-written (line 9 of the cell 'class SubBackward(Function):')"],
        test_says={"add_backward": ""},
    ),
    Case(
        "deleted-given",
        "a given cell deleted (the one that defines `power`, which a test uses)",
        ELEMENTWISE,
        None,
        delete="#| export\ndef power(",
    ),
    Case(
        "name-error",
        "a NameError (a misspelt name)",
        ELEMENTWISE,
        replace_in("solution-NegBackward", "return (-grad_output,)", "return (-grad_outptu,)"),
        test_says={"neg_backward": "NameError: name 'grad_outptu' is not defined"},
    ),
    Case(
        "renamed-class",
        "a renamed class (MulBackward as MultiplyBackward)",
        ELEMENTWISE,
        replace_in("solution-MulBackward", "class MulBackward(", "class MultiplyBackward("),
        says=[
            "ImportError: the course's later modules could not import your module (cannot import name 'MulBackward' "
            "from 'tinytorch.core.elementwise'): keep the names the notebook gives"
        ],
        test_says={"mul_backward": "MulBackward is not defined"},
    ),
    Case(
        "returns-none",
        "a rule that returns None",
        ELEMENTWISE,
        replace_in("solution-NegBackward", "return (-grad_output,)", "return None"),
        test_says={"neg_backward": "but it returned None"},
    ),
    Case(
        "returns-list",
        "a list instead of an array",
        ELEMENTWISE,
        replace_in("solution-NegBackward", "return (-grad_output,)", "return ([-v for v in grad_output.data],)"),
        test_says={"neg_backward_hidden": "TypeError from your NegBackward.apply in a hidden test"},
    ),
    Case(
        "returns-nan",
        "NaN in the gradient",
        ELEMENTWISE,
        replace_in("solution-NegBackward", "return (-grad_output,)", "return (grad_output * np.nan,)"),
        test_says={"neg_backward": "analytic nan, numerical"},
    ),
    Case(
        "endless-loop",
        "an endless loop",
        ELEMENTWISE,
        neg_body("while True:\n    pass"),
        says=["NegBackward.apply used up the CPU time"],
        test_says={"neg_backward": "your NegBackward.apply used up the CPU time allowed for one call"},
    ),
    Case(
        "prints-10mb",
        "10 MB of prints",
        ELEMENTWISE,
        neg_body('print("x" * 10_000_000)'),
    ),
    Case(
        "sys-exit",
        "`sys.exit()` in a rule",
        ELEMENTWISE,
        neg_body("import sys\nsys.exit(3)"),
        test_says={"neg_backward": "your NegBackward.apply called sys.exit(3)"},
    ),
    Case(
        "os-exit",
        "`os._exit()` in a rule",
        ELEMENTWISE,
        neg_body("import os\nos._exit(1)"),
        says=["the process ended while your NegBackward.apply ran"],
        test_says={"neg_backward": "the process ended while your NegBackward.apply ran"},
    ),
    Case(
        "keyboard-interrupt",
        "`raise KeyboardInterrupt`",
        ELEMENTWISE,
        neg_body("raise KeyboardInterrupt"),
        test_says={"neg_backward": "your NegBackward.apply raised KeyboardInterrupt"},
    ),
    Case(
        "recursion",
        "endless recursion (a RecursionError)",
        ELEMENTWISE,
        neg_body("return self.apply(grad_output)"),
        test_says={"neg_backward": "RecursionError: maximum recursion depth exceeded"},
    ),
    Case(
        "allocates-20gb",
        "a 20 GB allocation",
        ELEMENTWISE,
        neg_body("big = np.ones(20 * 2**30 // 8)"),
        test_says={"neg_backward": "your NegBackward.apply ran out of memory"},
    ),
    Case(
        "writes-given-array",
        "writing into a given array (grad_output)",
        ELEMENTWISE,
        neg_body("grad_output.data[...] = 0"),
        test_says={"neg_backward": "your rule changed grad_output in place"},
    ),
    Case(
        "raises-own-error",
        "an exception of the student's own in a rule",
        ELEMENTWISE,
        neg_body('raise ValueError("not sure about the sign")'),
        test_says={"neg_backward": "ValueError: not sure about the sign"},
    ),
]


def write_cases(kit, submissions, cases=CASES):
    "Each case's notebook at SUBMISSIONS/<student>/<notebook>/<notebook>.ipynb."
    for case in cases:
        nb = submission(kit, case.notebook, case.answer)
        if case.delete:
            nb.cells = [c for c in nb.cells if not c.source.startswith(case.delete) or nbgrader_meta(c).get("solution")]
        folder = submissions / case.student / case.notebook
        folder.mkdir(parents=True)
        write_notebook(nb, folder / f"{case.notebook}.ipynb")
