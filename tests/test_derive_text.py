"""Notebooks 04, 05, 07, 08, 10 and 12 ask the student to derive their rules (issue 23, point 2): one rule of each family
is derived in the text (12: the 1-D convolution; 10: the sums that define the velocity and Adam's averages), the
docstrings say what a rule computes, not its gradient, and the text and the summaries give numbers to check against
instead of the formula. Those numbers are checked here against the reference rules, the mistakes the text names
against the numbers it says they give, and no released cell may state what an exercise asks for."""

import ast
import inspect
import re

import numpy as np
import pytest

from conftest import REPO
from grading.common.notebooks import read_notebook
from tinytorch.core import activations, conv, elementwise, losses, reductions
from tinytorch.core.tensor import Tensor

EXERCISES = ["AddBackward", "SubBackward", "MulBackward", "DivBackward", "NegBackward", "PowBackward", "ExpBackward"]
EXERCISES += ["LogBackward"]


REDUCTIONS = ["MatmulBackward", "SumBackward", "MeanBackward", "ReshapeBackward", "TransposeBackward", "IndexBackward"]
LOSSES = ["MSEBackward", "BCEBackward", "CrossEntropyBackward"]
ACTIVATIONS = ["ReLUBackward", "SigmoidBackward", "TanhBackward", "SoftmaxBackward", "LogSoftmaxBackward"]


def text_of(cell_id, notebook="04_elementwise"):
    return next(c.source for c in read_notebook(REPO / "notebooks" / f"{notebook}.ipynb").cells if c.id == cell_id)


def test_the_conv_docstring_says_what_the_rule_returns_not_how():
    doc = conv.Conv2dBackward.__doc__
    assert all(s not in doc for s in ["@", "rows", "col2im", "sum", "Σ", "transpose", "g_"]), doc


@pytest.mark.parametrize(
    "module, name",
    [(elementwise, n) for n in EXERCISES]
    + [(reductions, n) for n in REDUCTIONS]
    + [(activations, n) for n in ACTIVATIONS]
    + [(losses, n) for n in LOSSES],
)
def test_the_docstring_says_what_the_rule_computes_not_its_gradient(module, name):
    doc = getattr(module, name).__doc__
    assert doc.startswith("The gradient") and "grad_" not in doc and "g *" not in doc, doc


def gradients(rule, *inputs, g=None, **extras):
    tensors = [Tensor(np.asarray(x, dtype=float), requires_grad=True) for x in inputs]
    out_shape = np.broadcast_shapes(*(t.shape for t in tensors))
    g = Tensor(np.ones(out_shape) if g is None else np.asarray(g, dtype=float))
    return [grad.data for grad in rule(*tensors, **extras).apply(g)]


def test_the_worked_examples_hold_for_the_reference_rules():
    g = [[1, 2, 3], [4, 5, 6]]
    a, b = np.ones((2, 3)), np.ones(3)
    assert np.allclose(gradients(elementwise.SubBackward, a, b, g=g)[1], [-5, -7, -9])
    assert "(-5, -7, -9)" in text_of("c04-033")
    a, b = [[1, 2, 3], [4, 5, 6]], [[10], [20]]
    grad_a, grad_b = gradients(elementwise.MulBackward, a, b)
    assert np.allclose(grad_a, [[10, 10, 10], [20, 20, 20]]) and np.allclose(grad_b, [[6], [15]])
    assert np.allclose(np.sum(np.multiply(np.ones((2, 3)), b), axis=1, keepdims=True), [[30], [60]])  # the mistake
    assert "(30, 60)" in text_of("c04-034")
    assert np.allclose(gradients(elementwise.DivBackward, 6.0, 2.0), [0.5, -1.5])
    assert np.isclose(gradients(elementwise.DivBackward, 6.0, 3.0)[1], -6 / 9)
    for base, p, slope in [(3.0, 2, 6), (4.0, 0.5, 0.25), (2.0, -1, -0.25)]:
        (found,) = gradients(elementwise.PowBackward, base, exponent=p)
        assert np.isclose(found, slope), (base, p, found)
    a = np.array([0.0, np.log(2)])
    (found,) = elementwise.ExpBackward(Tensor(a), output=Tensor(np.exp(a))).apply(Tensor([3.0, 3.0]))
    assert np.allclose(found.data, [3, 6])
    assert np.allclose(gradients(elementwise.LogBackward, [1, 2, 4]), [1, 0.5, 0.25])
    assert "(1, 0.25, 0.0625)" in text_of("c04-039") and np.allclose(1 / np.array([1, 2, 4]) ** 2, [1, 0.25, 0.0625])


def test_the_activations_worked_examples_hold_for_the_reference_rules():
    (found,) = activations.ReLUBackward(Tensor([-2.0, 0.0, 3.0])).apply(Tensor([0.5, 2.0, -1.0]))
    assert np.allclose(found.data, [0, 0, -1])
    x = np.array([0.0, np.log(2)])
    t = np.tanh(x)
    (found,) = activations.TanhBackward(Tensor(x), output=Tensor(t)).apply(Tensor([1.0, 1.0]))
    assert np.allclose(t, [0, 0.6]) and np.allclose(found.data, [1, 0.64])
    assert np.allclose([(1 - 0.6) ** 2, 1 - 0.6], [0.16, 0.4])  # the mistakes the text names
    x = np.array([0.0, np.log(3)])
    out = x - np.log(np.exp(x).sum())
    rule = activations.LogSoftmaxBackward(Tensor(x), output=Tensor(out), axis=-1)
    assert np.allclose(rule.apply(Tensor([1.0, 0.0]))[0].data, [0.75, -0.75])
    assert np.allclose(rule.apply(Tensor([1.0, 1.0]))[0].data, [0.5, -0.5])
    diagonal_only = np.ones(2) - np.exp(out) * np.ones(2)
    assert np.allclose(diagonal_only, [0.75, 0.25])
    text = text_of("c07-027", "07_activations")
    assert "[1/2, -1/2]" in text and "[3/4, 1/4]" in text and "g_j - s_j" not in text


def test_the_losses_worked_examples_hold_for_the_reference_rules():
    grad_p, grad_t = gradients(losses.MSEBackward, [1, 2, 3], [1, 0, 1], g=1.0)
    assert np.allclose(grad_p, [0, 4 / 3, 4 / 3]) and np.allclose(grad_t, -grad_p)
    difference = np.array([0, 2, 2])
    assert np.allclose(difference / 3, [0, 2 / 3, 2 / 3]) and np.allclose(2 * difference, [0, 4, 4])  # the mistakes
    assert np.isclose(losses.mse_loss(Tensor([1.0, 2.0, 3.0]), Tensor([1.0, 0.0, 1.0])).item(), 8 / 3)
    text = text_of("c08-006", "08_losses")
    assert all(s in text for s in ["[0, 4/3, 4/3]", "[0, -4/3, -4/3]", "[0, 2/3, 2/3]", "[0, 4, 4]", "4.0401"])

    grad_p, grad_t = gradients(losses.BCEBackward, [0.5, 0.8], [1, 1], g=1.0)
    assert np.allclose(grad_p, [-1, -0.625]) and np.allclose(grad_t, [0, -np.log(2)])
    assert np.allclose(-grad_p, [1, 0.625]) and np.allclose(2 * grad_p, [-2, -1.25])  # the sign, the 1/N
    assert np.allclose(-np.log([0.8, 0.801]), [0.22314, 0.22189], atol=5e-6)
    assert np.isclose((np.log(0.8) - np.log(0.801)) / 0.001, -1.25, atol=0.005)
    at_zero = gradients(losses.BCEBackward, [0.0], [1.0], g=1.0)[0]
    assert np.isclose(at_zero[0], -1e12, rtol=1e-6), "with N = 1 the clipped gradient is about -10^12"
    text = text_of("c08-010", "08_losses")
    assert all(s in text for s in ["[-1, -0.625]", "[0, -\\ln 2]", "-0.693", "[1, 0.625]", "[-2, -1.25]", "-10^{12}/N"])
    assert "0.22314" in text and "0.22189" in text and "-1.25" in text

    z, labels = np.array([[0.0, np.log(3)], [0.0, 0.0]]), np.array([0, 1])
    (found, none) = losses.CrossEntropyBackward(Tensor(z), Tensor(labels)).apply(Tensor(1.0))
    assert none is None and np.allclose(found.data, [[-3 / 8, 3 / 8], [1 / 4, -1 / 4]])
    assert np.isclose(losses.cross_entropy(Tensor(z), labels).item(), 1.040, atol=5e-4)
    s = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    assert np.allclose(s, [[1 / 4, 3 / 4], [1 / 2, 1 / 2]])
    assert np.allclose(found.data / 2, [[-3 / 16, 3 / 16], [1 / 8, -1 / 8]])  # divided by B * C
    assert np.allclose(s / 2, [[1 / 8, 3 / 8], [1 / 4, 1 / 4]])  # the true class's term left out
    sample = lambda row: -row[0] + np.log(np.exp(row).sum())  # noqa: E731
    assert np.isclose(sample(z[0] + [0, 0.01]), 1.39380, atol=5e-6) and np.isclose(sample(z[0]), 1.38629, atol=5e-6)
    text = text_of("c08-014", "08_losses")
    assert all(s in text for s in ["[[-3/8, 3/8], [1/4, -1/4]]", "[[-3/16, 3/16], [1/8, -1/8]]", "1.040"])
    assert "[[1/8, 3/8], [1/4, 1/4]]" in text and "1.39380" in text


def test_the_summaries_check_against_the_numbers_the_exercises_give():
    summary = text_of("c04-046")
    assert all(s in summary for s in ["(-5, -7, -9)", "(6, 15)", "(0.5, -1.5)", "slope 6", "(1, 0.5, 0.25)"])
    summary = text_of("c07-037", "07_activations")
    for example in ["[0, 0, -1]", "[0.25, 0.1875]", "[1, 0.64]", "[3/16, -3/16]", "[1/2, -1/2]"]:
        assert example in summary, example
    x = np.array([0.0, np.log(3)])
    (found,) = activations.SigmoidBackward(Tensor(x), output=Tensor([0.5, 0.75])).apply(Tensor([1.0, 1.0]))
    assert np.allclose(found.data, [0.25, 0.1875])
    s = np.exp(x) / np.exp(x).sum()
    (found,) = activations.SoftmaxBackward(Tensor(x), output=Tensor(s)).apply(Tensor([1.0, 0.0]))
    assert np.allclose(found.data, [3 / 16, -3 / 16])
    summary = text_of("c05-038", "05_matmul_and_reductions")
    assert "(1, 1, 1)" in summary and "(2, 2, 2)" in summary and "(3, 6)" in summary and "(3 here)" in summary
    (found,) = gradients(reductions.MeanBackward, np.ones((2, 3)), g=[3.0, 6.0], axis=1)
    assert np.allclose(found, [[1, 1, 1], [2, 2, 2]])
    assert "(3, 0, 3)" in summary and "(2, 0, 3)" in summary and "`(1, 2, 0)`" in summary
    (found,) = gradients(reductions.IndexBackward, np.zeros(3), g=[1.0, 2.0, 3.0], index=np.array([0, 0, 2]))
    assert np.allclose(found, [3, 0, 3])
    written = np.zeros(3)
    written[[0, 0, 2]] = [1, 2, 3]
    assert np.allclose(written, [2, 0, 3])  # the mistake: a write keeps the last of the repeated positions
    summary = text_of("c08-032", "08_losses")
    for example in ["[0, 4/3, 4/3]", "[-1, -0.625]", "[[-3/8, 3/8], [1/4, -1/4]]"]:
        assert example in summary, example


# What each notebook asks the student to derive, as its solution writes it and as a text might state it. Notebook
# 07's given GELU (after the exercises) needs tanh's derivative and is left out of the check.
STATED = {
    # 01's "looking ahead" poses the question that 01's question 1 and 04's unbroadcast answer
    "01_tensor": [
        "\\sum_i g_{ij}",
        "summed over axis 0",
        "`[2, 2, 2]`",
        "summing over the leading axes",
        "broadcasting becomes a sum",
        "(Exercise 1) is a sum",
    ],
    "04_elementwise": ["g \\cdot b", "a / b^2", "a/b^2", "\\frac{a}{b^2}", "p\\,a^{p-1}", "p a^{p-1}", "g / a", "g/a"],
    "07_activations": [
        "1 - t^2",
        "1 - t * t",
        "g - s \\sum",
        "g_j - s_j",
        "I - \\mathbf{1} s^\\top",
        "1 - t²",
        # sigmoid's derivative in s, and softmax's vector-Jacobian product once the delta has collapsed the sum
        "\\bigl(1 - \\sigma(x)\\bigr)",
        "s_i (1 - s_i)",
        "s(1 - s)",
        "\\tfrac12 \\cdot \\tfrac12",
        "x(1 - x)",
        "g_j s_j - s_j",
        "\\Bigl(g_j - \\sum",
        "\\tfrac14(1 - \\tfrac14)",
    ],
    "08_losses": [
        "2\\,(p_i - t_i)",
        "2(p - t)",
        "(p - t)/(p(1 - p)",
        "\\frac{t - p}{p(1 - p)}",
        "\\log(1 - p_i) - \\log p_i",
        "s_j - \\delta",
        "one\\_hot}(y)",
        "softmax minus one-hot",
        "softmax - one_hot",
        "-1/(pN)",
    ],
    "05_matmul_and_reductions": [
        # the matrix product's two gradients, as matrix products
        "g\\, b^\\top",
        "g b^\\top",
        "a^\\top g",
        "b^\\top g",
        "(g^\\top a)^\\top",
        "g2 @ b2",
        "divides by the number of elements averaged",
        "grad_output / count",
        "/ count",
        "g / N",
        "g/N",
        "\\frac{g}{N}",
        "\\frac{g_i}{N}",
        "\\frac{1}{N} g",
        # the rules that only move numbers: the method is the text's, the expressions are the exercises'
        "reshaping to the input's shape",
        "np.argsort(axes)",
        "inverse permutation `np.argsort",
        "sorted(range(len(",
        "one call to `scatter_add`",
        "scatter_add(grad_output",
        "inside `scatter_add`",
        "grad_output.reshape(x.shape)",
        "transpose(tuple(inverse))",
    ],
    # 09: the text derives one sample's three gradients and says a batch sums them; the products are the student's
    "09_nn": [
        "g.T @",
        "grad_output.T @",
        "x.T @ g",
        "G^\\top X",
        "X^\\top G",
        "g @ weight",
        "g @ W",
        "G W",
        "sum(axis=0)",
    ],
    # 10: the recurrences the student derives from the sums that define the velocity and the running averages
    "10_optimizers": [
        "\\mu\\, v_{t-1}",
        "\\mu v_{t-1}",
        "v_{t-1} + g",
        "\\beta_1 m_{t-1}",
        "\\beta_1\\, m_{t-1}",
        "\\beta_2 u_{t-1}",
        "\\beta_2\\, u_{t-1}",
        "beta1 * m",
        "beta1 * self.m",
        "momentum * v",
        "momentum * self.velocity",
        "(1 - self.beta1) * grad",
        "self.m[i] / (1",
    ],
    # 12: the 2-D backward through im2col (the 1-D sums are derived in the text)
    "12_conv": [
        "g_rows.T",
        "rows.T",
        "g_rows @",
        "@ rows",
        "w_flat.T @",
        "G^\\top",
        "axis=(0, 2, 3)",
        "sum(axis=0)",
        "transpose(0, 2, 3, 1)",
        "moveaxis(g",
        "col2im(g_rows",
        # and max pooling's routing: the method and the hint are the text's, the code is the student's
        "put_along_axis(grad_windows",
        "self.argmax[..., None]",
        "== self.argmax",
        "np.add.at(grad_x",
    ],
    # 17: the text leads through the three paths to the gradient of x; the combination and dropout's scale are the student's
    "17_norm": [
        "g.mean(",
        "(g * x_hat)",
        "mean(d_j",
        "\\frac{1}{N}\\Big(",
        "mask / (1 - p)",
        "1/(1-p)",
        "1/(1 - p)",
        "\\frac{1}{1 - p}",
    ],
    # 18: the text names the three rules to chain and the order; the gradients themselves are the student's
    "18_attention": [
        "P^\\top G",
        "G V^\\top",
        "swapaxes(p",
        "(grad_p * p)",
        "p * (grad_p",
        "S^\\top Q",
        "@ k.data",
        "@ q.data",
        "reshape(batch, length, heads",
        "transpose(0, 2, 1, 3)",
    ],
    # 19: the text derives each view's strides in words; the code, and im2col's four strides, are the student's
    "19_strides": [
        "block *= n",
        "strides.append(0)",
        "[0] * extra",
        "s_h * stride",
        "\\cdot \\text{stride}, s_W",
        "view.strides[a] for a in axes",
        "n != 1 and s != block",
    ],
}


def released_text(notebook):
    "The markdown and visible test code a student gets: no solution cells, no hidden tests."
    for cell in read_notebook(REPO / "notebooks" / f"{notebook}.ipynb").cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") or cell.id.startswith("c07-gelu"):
            continue
        source = cell.source
        if "### BEGIN HIDDEN TESTS" in source:
            source = source.split("### BEGIN HIDDEN TESTS")[0] + source.split("### END HIDDEN TESTS")[-1]
        yield cell.id, source


@pytest.mark.parametrize("notebook", sorted(STATED))
def test_no_released_cell_states_a_rule_the_student_derives(notebook):
    found = [(cell_id, s) for cell_id, text in released_text(notebook) for s in STATED[notebook] if s in text]
    assert not found, f"{notebook}: these cells state a rule the exercises ask for: {found}"


# A formula in a message, as code or as maths: an update (p -= lr * v, v = momentum * v + g), a power with a symbol
# for exponent (beta1**t; a case's sum(p ** 3) is no rule), a square root, a bias correction's or a derivative's
# (1 - ...). A hidden test's message says which quantity is wrong, at which step or in which situation, expected
# against got, and which section to reread; never the rule itself.
FORMULA = re.compile(
    r"[\w\])]\s*[-+*/]=\s*[\w(.][^,;:?]*?[-+*/@]\s*[\w(]"
    r"|\*\*\s*\(?[a-zA-Z_]|sqrt\(|√\(|\(1 - \w|\b[a-z_]\w* = [a-z_]\w* \* [a-z_]\w*"
)


def hidden_strings(notebook):
    """(cell id, text) of every string in the hidden tests of `notebook` that a failure can show: assertion messages,
    likely causes, case names. An f-string is read whole, its fields as {…}; docstrings are left out."""
    for cell in read_notebook(REPO / "notebooks" / f"{notebook}.ipynb").cells:
        if "### BEGIN HIDDEN TESTS" not in cell.source:
            continue
        hidden = cell.source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
        tree = ast.parse(hidden)
        docstrings = {
            id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
        }
        parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                yield cell.id, "".join(v.value if isinstance(v, ast.Constant) else "{…}" for v in node.values)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if id(node) not in docstrings and id(node) not in parts:
                    yield cell.id, node.value


NOTEBOOKS = sorted(p.stem for p in (REPO / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_no_hidden_test_message_states_a_formula(notebook):
    found = [
        (cell_id, text)
        for cell_id, text in hidden_strings(notebook)
        if FORMULA.search(text) or any(s in text for s in STATED.get(notebook, []))
    ]
    assert not found, f"{notebook}: these hidden-test messages state a formula: {found}"


def test_02s_question_on_no_grad_describes_the_update_notebook_10_makes():
    "Issue 43: question 2 said optimizers update with a Tensor computation inside no_grad(); notebook 10's do not."
    from tinytorch.core import optimizers

    question = text_of("c02-017", "02_function")
    source = inspect.getsource(optimizers)
    assert "p.data -=" in source and "no_grad" not in source  # what notebook 10's optimizers do
    assert "p.data -=" in question and "An optimizer updates each parameter with a Tensor" not in question, question


def conv_checker(rule):
    "12's given check_conv_gradient, run against `rule` as the student's Conv2dBackward."
    namespace = {**vars(conv), "Conv2dBackward": rule}
    exec(text_of("c12-conv-check", "12_conv"), namespace)
    return namespace["check_conv_gradient"]


class BiasAveraged(conv.Conv2dBackward):
    def apply(self, grad_output):
        grads = super().apply(grad_output)
        n, _, height, width = grad_output.shape
        return grads[:2] + (grads[2] / (n * height * width),)


class KernelNotReshaped(conv.Conv2dBackward):
    def apply(self, grad_output):
        grads = super().apply(grad_output)
        return (grads[0], grads[1].reshape(grads[1].shape[0], -1)) + tuple(grads[2:])


class FirstSampleOnly(conv.Conv2dBackward):
    def apply(self, grad_output):
        g = grad_output.data.copy()
        g[1:] = 0
        grad_x, grad_w, grad_b = super().apply(Tensor(g))
        return super().apply(grad_output)[0], grad_w, grad_b


# What 12's checker said before issue 43: the kernel's and the bias's rule, in words
CONV_RULES = [
    "window it read",
    "g_rows and rows",
    "a sum over every axis",
    "it is their sum",
    "not a mean",
    "is a mean",
]


@pytest.mark.parametrize(
    "rule, piece, says",
    [
        (BiasAveraged, "b", "every entry of it is 1/18 of the expected one, and 18 is the number of samples times"),
        (KernelNotReshaped, "w", "it holds as many numbers as w (24), in another shape"),
        (FirstSampleOnly, "w", "the kernels' gradient has w's shape and other numbers"),
        (FirstSampleOnly, "b", "the bias's gradient has b's shape and other numbers"),
    ],
)
def test_12s_checker_names_what_is_wrong_with_the_numbers_not_the_rule(rule, piece, says):
    rng = np.random.default_rng(3)
    x, w, b = rng.normal(size=(2, 2, 4, 4)), rng.normal(size=(3, 2, 2, 2)), rng.normal(size=3)  # 2 samples of 3×3
    with pytest.raises(AssertionError) as failed:
        conv_checker(rule)(piece, x, w, b, 1, 0)
    message = str(failed.value)
    assert says in message and not [s for s in CONV_RULES if s in message], message
    assert conv_checker(conv.Conv2dBackward)(piece, x, w, b, 1, 0)


def released_markdown(notebook):
    "The markdown a student gets (answer cells, which are solutions, left out)."
    cells = read_notebook(REPO / "notebooks" / f"{notebook}.ipynb").cells
    return "\n".join(c.source for c in cells if c.cell_type == "markdown" and not c.metadata["nbgrader"]["solution"])


def test_14_has_no_changelog_and_no_range_measured_on_one_machine():
    "Issue 43: 'Binary cross-entropy had this bug … now', and ranges a quiet machine undercut (2.7 gradients, 4.8 s)."
    text = released_markdown("14_higher_order")
    assert not re.search(r"had this bug|\bnow clips\b|\bby the author and by readers\b", text)
    ranges = re.findall(r"\d[\d.,]*\s*(?:–|to)\s*\d[\d.,]*\s*(?:ms|s|gradients)\b", text)
    assert not ranges, ranges


def test_14s_hint_points_at_the_tools_without_dictating_the_code():
    hint = text_of("c14-006", "14_higher_order").split("**Hint.**")[1].split("**Common mistakes.**")[0]
    assert "Two calls" not in hint and "Wrap each vector" not in hint and "?" in hint, hint


def test_16s_time_says_what_takes_the_time_and_counts_the_lines_it_names():
    intro = text_of("c16-000", "16_capstone")
    assert not re.search(r"\b(?:one|two|three|\d+)\s*(?:to|–)\s*(?:two|three|four|\d+)\s*hours\b", intro), intro
    (claimed,) = re.findall(r"`build_and_train` is (\d+) lines", intro)
    solution = text_of("c16-exercise", "16_capstone").split("### BEGIN SOLUTION\n")[1].split("### END SOLUTION")[0]
    assert int(claimed) == len([line for line in solution.splitlines() if line.strip()])
