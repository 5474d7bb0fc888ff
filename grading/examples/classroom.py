"""The generated red-team class: good, partial, broken and cheating notebooks, each with the score it earns.

    python -m grading class --out DIR        # release, generate, autograde, and compare with the expected scores

`CASES` is the class as a table: each student's notebook, what is changed in it (an answer() of edits.py that writes
its exercises, with a cheat of cheats.py or an attack of attacks.py, and a change to the notebook itself), and what
it earns: what each submission earns when graded as if the cheat were absent. `make_class` writes them, with
`broken_files`, the submissions that cannot be graded. The red-team tests (tests/test_redteam.py) grade this class.
"""

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat

from ..common.defaults import MAX_NOTEBOOK_CONTAINERS
from ..common.notebooks import REPO, nbgrader_meta, read_notebook, write_notebook
from . import attacks as a
from . import cheats as c
from . import corners as k
from .edits import (
    Answer,
    between,
    body_replaced,
    chained,
    inside,
    inside_wrong_mul,
    method_of_stub,
    only,
    only_all_with,
    replace_in,
    submission,
    tampered_tests,
    with_cell,
    with_markdown,
    wrong_add_and_mul,
)

ELEMENTWISE, ACTIVATIONS, HIGHER_ORDER = "04_elementwise", "07_activations", "14_higher_order"
FUNCTION, AUTOGRAD, OPTIMIZERS = "02_function", "06_autograd", "10_optimizers"
TENSOR, TRAINING, EMBEDDING = "01_tensor", "11_training", "13_embedding"
LOSSES, GRADCHECK, CONV = "08_losses", "03_gradcheck", "12_conv"
NEEDS_SANDBOX = {"ivan", "judy", "kate", "fay", "gus", "hal", "iris"}  # stopped by the sandbox (bubblewrap) only


def points_of(notebook: str, rules: set | None = None) -> float:
    "Points of the tests of `rules` (test names without '_hidden'), or of every test."
    total = 0.0
    for cell in read_notebook(REPO / "notebooks" / f"{notebook}.ipynb").cells:
        meta = nbgrader_meta(cell)
        if (
            meta.get("grade")
            and cell.cell_type == "code"
            and (rules is None or meta["grade_id"].removesuffix("_hidden") in rules)
        ):
            total += float(meta["points"])
    return total


def points_of_tests(notebook: str, names: set) -> float:
    "Points of the tests named exactly (a hidden one not included with its visible one)."
    cells = read_notebook(REPO / "notebooks" / f"{notebook}.ipynb").cells
    return sum(float(nbgrader_meta(c)["points"]) for c in cells if nbgrader_meta(c).get("grade_id") in names)


@dataclass(frozen=True)
class Earns:
    """What a submission earns of its notebook's points: every test but those of the rules `lost`, or only those of
    the rules `kept`; with `exact`, the names are tests' own (a hidden test not counted with its visible one)."""

    lost: frozenset = frozenset()
    kept: frozenset | None = None
    exact: bool = False

    def score(self, notebook: str) -> float:
        def measure(names: frozenset) -> float:
            return points_of_tests(notebook, names) if self.exact else points_of(notebook, names)

        if self.kept is not None:
            return measure(self.kept)
        return points_of(notebook) - measure(self.lost) if self.lost else points_of(notebook)


EVERYTHING, NOTHING = Earns(), Earns(kept=frozenset())


def losing(*rules: str, exact: bool = False) -> Earns:
    return Earns(lost=frozenset(rules), exact=exact)


def keeping(*rules: str, exact: bool = False) -> Earns:
    return Earns(kept=frozenset(rules), exact=exact)


@dataclass(frozen=True)
class Aimed:
    """An attack on the grader's files, its paths those of the folders graded from and into: code at the end of an
    undone notebook, or ((grade_id, first line), ...) put first in those exercises of a solved one."""

    code: str | tuple[tuple[str, str], ...]  # with the placeholders of attacks.aimed_at

    def answer(self, grades: str, submissions: str) -> Answer:
        paths = a.aimed_at(grades, submissions)
        if isinstance(self.code, str):
            return only(set(), self.code.format(**paths))
        firsts = {grade_id: line.format(**paths) for grade_id, line in self.code}
        return lambda grade_id, solution, stub: firsts.get(grade_id, "") + solution


@dataclass(frozen=True)
class Case:
    """One student of the class: the notebook handed in, how its exercises are written (`answer`; None: every one
    solved), a change to the notebook after that (`edit`), files beside it, and what the row must say."""

    student: str
    notebook: str
    answer: Answer | Aimed | None = None
    earns: Earns = EVERYTHING
    note: str = ""  # the row's note contains this
    edit: Callable[[nbformat.NotebookNode], nbformat.NotebookNode] | None = None
    files: tuple = ()  # (name, text) of other files in the submission's folder
    raw: tuple = ()  # (old, new): replaced in the notebook file's JSON text, after it is written


E = ELEMENTWISE
UNDONE = only(set())
WRONG_MUL = ("solution-MulBackward", "grad_output * b, a.shape", "grad_output * a, a.shape")
SIGNALS_IGNORED = "import signal\n" + "".join(
    f"signal.signal(signal.{name}, signal.SIG_IGN)\n" for name in ("SIGINT", "SIGALRM", "SIGPROF")
)
BACKWARD_REPLACED = "from tinytorch.core.tensor import Tensor as _T\n_T.backward = lambda self, *a, **k: None"
TIMED_OUT = "your NegBackward.apply used up the CPU time allowed for one call (an endless loop, or much too slow)"

CASES = [
    # good, partial and wrong work
    Case("alice", E),
    Case("bob", E, UNDONE, NOTHING),
    Case("carol", E, replace_in(*WRONG_MUL), losing("mul_backward")),
    Case(
        "dan",
        E,
        only({"solution-unbroadcast", "solution-AddBackward", "solution-SubBackward", "solution-MulBackward"}),
        keeping("unbroadcast", "add_backward", "sub_backward", "mul_backward"),
    ),
    Case("rosa", E, files=(("notes.txt", "my notes: the extra file must not bother the grader\n"),)),
    Case("tara", E, edit=functools.partial(tampered_tests, delete=True)),
    Case("uma", E, UNDONE, NOTHING, edit=functools.partial(tampered_tests, delete=False)),
    # broken code
    Case(
        "erin",
        E,
        replace_in("solution-DivBackward", "(b * b), b.shape)", "(b * b), b.shape))"),
        losing("div_backward"),
        "each of your exercise cells was run on its own",
    ),
    Case(
        "frank",
        E,
        inside("solution-NegBackward", "while True:\n    pass"),
        losing("neg_backward"),
        f"{TIMED_OUT}: its later calls were not made",
    ),
    Case(
        "gina",
        E,
        inside("solution-PowBackward", SIGNALS_IGNORED + "while True:\n    pass"),
        losing("pow_backward"),
        "s of CPU, and on after the interrupt that ends a call",
    ),
    Case(
        "hank", E, inside("solution-ExpBackward", "import os\nos._exit(3)"), losing("exp_backward"), "the process ended"
    ),
    Case(
        "ivy",
        E,
        inside("solution-LogBackward", "import ctypes\nctypes.string_at(0)"),
        losing("log_backward"),
        "the process ended",
    ),
    Case(
        "jack",
        E,
        inside("solution-DivBackward", "blocks = [bytearray(2**27) for _ in range(1000)]"),
        losing("div_backward"),
    ),
    Case("kim", E, inside("solution-AddBackward", "print('x' * 20_000_000)")),
    Case("liam", E, inside("solution-SubBackward", "import sys\nsys.exit(1)"), losing("sub_backward")),
    Case("maya", E, inside("solution-MulBackward", "input('the answer? ')"), losing("mul_backward")),
    # cheating
    Case("vic", E, UNDONE, NOTHING, edit=functools.partial(with_cell, code=c.SCRATCH_CHEAT)),
    Case("wes", E, wrong_add_and_mul(extra=c.PATCH_CHECKERS), losing("add_backward", "mul_backward")),
    Case("xena", E, inside_wrong_mul(c.PATCH_CHECKERS), losing("mul_backward")),
    Case("yuri", E, only_all_with("import builtins\nbuiltins.isinstance = lambda obj, cls: False")),
    # attacks on the grading machinery itself (issue 11): each on a notebook left undone, so honest work is 0
    Case("axel", E, only(set(), a.FORGE_CHANNEL), NOTHING),
    Case("bea", E, only(set(), a.NUMPY_INTERNALS), NOTHING),
    Case("cole", E, only(set(), a.SWAP_CHECKER), NOTHING),
    Case("dora", E, only(set(), a.FRAME_WALKER), NOTHING),
    Case("fay", E, only(set(), a.TAMPER_RUNNER), NOTHING),
    Case("gus", E, only(set(), a.PLANT_SYMLINKS), NOTHING),
    Case("hal", E, only(set(), a.DAEMON.format(mark=a.DAEMON_MARK)), NOTHING),
    Case("iris", E, only(set(), a.SNOOP.format(port=a.REDTEAM_PORT)), NOTHING),
    # on the other students: limits are the sandbox's as a whole (grading.sandbox.cgroup), so nobody else pays
    Case("fern", E, only(set(), a.FORK_BOMB), NOTHING),
    Case("gwen", E, only(set(), a.FILL_MEMORY), NOTHING),
    # on the grader's own process: a callback past its limit (64 MB) is refused, so the honest rest earns full
    Case("hugo", GRADCHECK, replace_in(*a.HUGE_CALLBACK)),
    Case("ivan", E, Aimed(a.IMPORT_REFERENCE), NOTHING),
    Case("judy", E, Aimed(a.READ_INSTRUCTOR_FILES), NOTHING),
    Case("kate", E, Aimed(a.WRITE_GRADES), NOTHING),
    Case("lena", E, only(set(), a.READ_LATER_ANSWERS), NOTHING),
    Case("nadia", E, Aimed(a.EXPORT_ELSEWHERE), files=(a.EXPORT_TARGET,)),  # nbdev told to write a grader's file
    Case("mallory", E, only(set(), a.FORGE_READY), NOTHING, "did not finish importing"),
    Case(  # a lone surrogate in an exercise cell and in a cell of notes: UTF-8 cannot hold it
        "suri",
        E,
        only_all_with("# " + a.SURROGATE[0], where="solution-AddBackward"),
        edit=lambda nb: with_markdown(nb, "my notes " + a.SURROGATE[0]),
        raw=a.SURROGATE,
    ),
    Case(  # the class is made before the raise: nothing of hers fails but the import, named with U+FFFD
        "ines",
        E,
        only_all_with(a.RAISE_A_SURROGATE, where="solution-LogBackward"),
        note="your module could not be imported (ValueError: half-written \ufffd",
    ),
    # on the hidden tests' inputs: written into an error, a returned string, a class's name (LEAKS)
    *[Case(student, E, inside(grade_id, code), losing(rule)) for student, (rule, grade_id, code, _) in c.LEAKS.items()],
    # 07: Tensor.backward replaced on import (sealed from notebook 07 on), and a good submission to compare
    Case("zoe", ACTIVATIONS, only_all_with(BACKWARD_REPLACED, where="solution-ReLUBackward")),
    Case("ned", ACTIVATIONS),
    # 14: a change of the test's data carried by a callback (checked as the reply is): the honest work is none
    Case("rex", HIGHER_ORDER, between(*c.THROUGH_A_CALLBACK), NOTHING, "changed vectors[0] in place"),
    # empty arrays where a test compares with np.allclose: a gradient of a rule (sol), one inside a Tensor's data
    # (uli), the parameters an optimizer moves (tom), the leaves' gradients (vera)
    *[
        Case(student, FUNCTION, replace_in("solution-SquareBackward", *empty), losing("square_backward"))
        for student, empty in (("sol", c.EMPTY_GRADIENT), ("uli", c.EMPTY_IN_A_TENSOR))
    ],
    Case(
        "tom",
        OPTIMIZERS,
        method_of_stub({"solution-SGD", "solution-Adam"}, *c.UPDATE),
        NOTHING,
        "was given an array of shape",
    ),
    # only topological_order's visible test needs no run_backward
    Case(
        "vera",
        AUTOGRAD,
        between(*c.RUN_BACKWARD_LOOP, c.EMPTY_LEAF_GRADIENTS),
        keeping("topological_order", exact=True),
    ),
    Case("otto", AUTOGRAD, between(*c.RUN_BACKWARD_LOOP, c.ZERO_THE_DATA), keeping("topological_order", exact=True)),
    Case("pat", E, inside("solution-LogBackward", c.NUMERICAL_AS_FLOAT32_NUMBERS), losing("log_backward")),
    Case(  # hidden inputs in the digits of a returned number and dict, which the check quoted
        "quin",
        E,
        chained(inside("solution-NegBackward", c.LEAK_AS_A_NUMBER), inside("solution-MulBackward", c.LEAK_AS_A_DICT)),
        losing("neg_backward", "mul_backward"),
    ),
    Case(
        "rhea",
        E,
        chained(
            inside("solution-MulBackward", c.NUMERICAL_MUL_BY_RELATIVE_STEPS),
            inside("solution-NegBackward", c.NUMERICAL_NEG_BY_RELATIVE_STEPS),
        ),
        losing("mul_backward", "neg_backward"),
    ),
    Case(  # finite differences as a complex array and as a list
        "ola",
        ACTIVATIONS,
        chained(
            inside("solution-SigmoidBackward", c.NUMERICAL_AS_COMPLEX),
            inside("solution-TanhBackward", c.NUMERICAL_AS_A_LIST),
        ),
        losing("sigmoid_backward", "tanh_backward"),
    ),
    Case(
        "pia",
        ACTIVATIONS,
        chained(
            inside("solution-ReLUBackward", c.LEAK_INTO_A_FLAG), inside("solution-SigmoidBackward", c.PRINT_THE_FLAG)
        ),
    ),
    Case("yara", E, inside("solution-NegBackward", c.LEAK_IN_A_FORGED_SHAPE), losing("neg_backward")),
    Case(
        "wren",
        FUNCTION,
        inside("solution-SquareBackward", c.CRASH_THE_GRADER_ON_THE_HIDDEN_SHAPE),
        losing("square_backward_hidden", exact=True),
    ),
    Case(
        "sage",
        LOSSES,
        inside("solution-BCEBackward", c.NUMERICAL_BCE_WITH_EPS_CHANGED),
        losing("bce_backward", "bce_backward_twice"),
    ),
    # given code that did an exercise's work: 01's comparisons (elementwise's body), 16's measure (11's accuracy),
    # and 13's visible test's finite differences (tied_weight_grad: refused as a numerical rule is)
    Case("yan", TENSOR, body_replaced(*c.ELEMENTWISE_BY_COMPARE), losing("tensor_elementwise")),
    Case("abe", TRAINING, body_replaced(*c.ACCURACY_BY_MEASURE), losing("accuracy"), "RecursionError"),
    Case("xia", EMBEDDING, body_replaced(*c.TIED_BY_DIFFERENCES), losing("tied_gradient")),
    # issue 44: a hidden input spelled in locks on shared files, a float32 conv rule, 14's central differences pasted
    Case("lou", E, k.locks_on_shared_files),
    Case("flo", CONV, k.float32_rows, losing(*k.FLOAT32_LOSES)),
    Case("paz", HIGHER_ORDER, k.hvp_by_differences, NOTHING),
]


def make_class(kit: str | Path, out: str | Path, grades: str | Path | None = None) -> dict:
    """Write every case of CASES and of broken_files into `out`; return {student: expectation}, also written to
    expected.json beside `out`. `grades` is the folder the class will be graded into (the attacks on the grader's
    files aim there)."""
    out, grades = Path(out), str(Path(grades or Path(out).parent / "grades").resolve())
    expected = {case.student: write_case(case, kit, out, grades) for case in CASES}
    expected.update(broken_files(kit, out))
    (out.parent / "expected.json").write_text(json.dumps(expected, indent=1))
    return expected


def write_case(case: Case, kit: str | Path, out: Path, grades: str) -> dict:
    "Write one case's submission into `out`; return what its row must say."
    answer = case.answer.answer(grades, str(out.resolve())) if isinstance(case.answer, Aimed) else case.answer
    nb = submission(kit, case.notebook, answer)
    nb = case.edit(nb) if case.edit else nb
    folder = out / case.student / case.notebook
    path = folder / f"{case.notebook}.ipynb"
    write_notebook(nb, path)
    if case.raw:
        path.write_text(path.read_text().replace(*case.raw))
    for name, text in case.files:
        (folder / name).write_text(text)
    score = case.earns.score(case.notebook)
    return {"assignment": case.notebook, "score": score, "max_score": points_of(case.notebook), "note": case.note}


def broken_files(kit: str | Path, out: Path) -> dict:
    "Submissions that cannot be graded; each must be named in the table with what to do, costing no one else."
    E = ELEMENTWISE
    (out / "nick" / E).mkdir(parents=True)
    (out / "nick" / E / f"{E}.ipynb").write_text('{"cells": [ {"cell_type": "code", ')
    (out / "olga" / E).mkdir(parents=True)
    (out / "olga" / E / f"{E}.ipynb").write_text("")
    write_notebook(read_notebook(Path(kit) / "02_function" / "02_function.ipynb"), out / "pete" / E / f"{E}.ipynb")
    (out / "quinn" / E).mkdir(parents=True)
    (out / "quinn" / E / "notes.txt").write_text("I forgot to upload the notebook\n")
    (out / "sam").mkdir(parents=True)
    write_notebook(submission(kit, E), out / "sam" / f"{E}.ipynb")
    tim = json.loads(nbformat.writes(submission(kit, E)))  # more JSON objects than a notebook has: 16 million took
    tim["metadata"]["padding"] = [{}] * (MAX_NOTEBOOK_CONTAINERS + 1)  # the grader 8 GB to parse (red team round 8)
    (out / "tim" / E).mkdir(parents=True)
    (out / "tim" / E / f"{E}.ipynb").write_text(json.dumps(tim))
    return {
        "nick": {"assignment": E, "problem": "not valid JSON"},
        "olga": {"assignment": E, "problem": "empty"},
        "pete": {"assignment": E, "problem": "not the 04_elementwise notebook"},
        "quinn": {"assignment": E, "problem": "missing 04_elementwise.ipynb"},
        "sam": {"assignment": E, "problem": "is not inside an assignment folder"},
        "tim": {"assignment": E, "problem": "more than 100,000 JSON objects and lists"},
    }


def compare(rows: list, expected: dict) -> list:
    "[(student, what was expected, what came)] for every row that is not what `expected` says."
    wrong = []
    by_student = {r.student: r for r in rows}
    for student, want in expected.items():
        row = by_student.get(student)
        if row is None:
            wrong.append((student, want, "no row in the grade table"))
        elif "problem" in want:
            if want["problem"] not in row.note or row.score != 0:
                wrong.append((student, want, f"score {row.score:g}, note {row.note!r}"))
        elif (row.score, row.max_score) != (want["score"], want["max_score"]) or want["note"] not in row.note:
            wrong.append((student, want, f"score {row.score:g}/{row.max_score:g}, note {row.note!r}"))
    return wrong
