"""Errors that readers found in the notebooks' given code and text (issue 23, point 5; issue 24, point 2), each pinned
by a check that would have caught it: the given code run in the other ways a student may write the exercise, and the
text's claims held against what the code does."""

from pathlib import Path

import numpy as np
import pytest

from grading.common.notebooks import read_notebook
from tinytorch.core import reductions
from tinytorch.core.autograd import enable_autograd
from tinytorch.core.gradcheck import check_backward
from tinytorch.core.nn import Linear
from tinytorch.core.optimizers import Adam
from tinytorch.core.reductions import MeanBackward
from tinytorch.core.tensor import Tensor

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def cell_source(notebook, cell_id):
    "The source of the cell with this id in notebooks/<notebook>.ipynb."
    nb = read_notebook(NOTEBOOKS / f"{notebook}.ipynb")
    return next(cell.source for cell in nb.cells if cell.get("id") == cell_id)


def notebook_text(notebook):
    "All the cells of notebooks/<notebook>.ipynb, one string."
    return "\n".join(cell.source for cell in read_notebook(NOTEBOOKS / f"{notebook}.ipynb").cells)


def with_solution(source, solution):
    "A cell's source with the lines between its solution markers replaced by `solution` (indented like them)."
    lines = source.splitlines()
    begin = next(i for i, line in enumerate(lines) if "### BEGIN SOLUTION" in line)
    end = next(i for i, line in enumerate(lines) if "### END SOLUTION" in line)
    indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
    return "\n".join(lines[:begin] + [indent + line for line in solution.splitlines()] + lines[end + 1 :])


def mean_backward_written_as(solution):
    "Notebook 05's given MeanBackward with `solution` as the student's part."
    namespace = dict(vars(reductions))
    exec(with_solution(cell_source("05_matmul_and_reductions", "c05-024"), solution), namespace)
    return namespace["MeanBackward"]


def test_mean_backward_written_as_a_product_with_one_over_count_is_right_on_every_shape_and_an_empty_batch():
    alternative = mean_backward_written_as(
        "spread = grad_output.reshape(shape) * np.ones(x.shape, dtype=grad_output.dtype)\n"
        "return (spread * (1.0 / count),)"
    )
    rng = np.random.default_rng(5)
    for axis in [None, 0, 2, -2, (0, 1)]:
        for keepdims in [False, True]:
            assert check_backward(alternative, np.mean, [rng.normal(size=(2, 3, 4))], axis=axis, keepdims=keepdims)
    assert check_backward(alternative, np.mean, [np.zeros((0, 3))], axis=1)  # the hidden test's empty batch


def test_mean_backward_on_an_empty_batch_gives_an_empty_gradient_for_every_axis():
    x = Tensor(np.zeros((0, 3)), requires_grad=True)
    for axis, out_shape in [(1, (0,)), (0, (3,)), (None, ())]:
        (grad,) = MeanBackward(x, axis=axis).apply(Tensor(np.ones(out_shape)))
        assert np.asarray(getattr(grad, "data", grad)).shape == (0, 3)


def test_notebook_12_does_not_call_im2col_a_copy_free_view():
    text = notebook_text("12_conv")
    assert "no copy" not in text, "im2col's rows are a copy of about kh·kw times the input; only the windows are a view"
    assert "recomputes" in text, "the text says that the backward recomputes the rows rather than saving them"


def test_notebook_11_gives_the_real_training_time_and_prints_the_training_accuracy_beside_the_test_accuracy():
    text = notebook_text("11_training")
    assert "a few seconds" not in text
    assert "evaluate(model, X_train, y_train)" in cell_source("11_training", "c11-learned")


def test_an_update_in_place_is_harmless_after_backward_and_wrong_between_forward_and_backward_as_10_says():
    enable_autograd()
    assert "between" in cell_source("10_optimizers", "c10-000")
    x, w = Tensor(np.array([2.0]), requires_grad=True), Tensor(np.array([3.0]), requires_grad=True)
    (x * w).sum().backward()
    w.data -= 1.0  # step() after backward(): the gradient computed stays that of the loss
    assert x.grad.data[0] == 3.0
    x.grad = None
    loss = (x * w).sum()
    w.data -= 1.0  # between forward and backward: the rule reads the new value
    loss.backward()
    assert x.grad.data[0] == 1.0, "the text says a rule reads .data when it runs; if not, correct notebook 10"


def test_linear_weights_have_the_standard_deviation_notebook_09_gives_one_over_root_three_fan_in():
    assert "1/(3n)" in cell_source("09_nn", "c09-init-md")
    fan_in = 256
    std = Linear(fan_in, 256, seed=0).weight.data.std()
    assert abs(std / (1 / np.sqrt(3 * fan_in)) - 1) < 0.1, std


def test_notebook_03_lists_no_mistake_that_its_given_code_rules_out():
    # The given code makes `flat` itself (a view), so a student cannot make it with flatten().
    assert "flatten()" not in cell_source("03_gradcheck", "c03-004")


def test_draw_graph_tells_two_leaves_of_one_shape_apart_by_the_names_given_and_06_gives_them():
    import matplotlib

    matplotlib.use("Agg")
    from tinytorch.core.viz import draw_graph

    enable_autograd()
    x, y = Tensor(2.0, requires_grad=True), Tensor(3.0, requires_grad=True)
    product = x * y
    figure = draw_graph(product + x, names={"x": x, "y": y, "product": product})
    labels = [t.get_text() for ax in figure.axes for t in ax.texts]
    assert "x\n()" in labels and "y\n()" in labels and "product\nMulBackward" in labels, labels
    assert "leaf\n()" not in labels
    assert 'names={"x": x, "y": y}' in cell_source("06_autograd", "c06-026")


def test_an_accuracy_taken_over_the_samples_axis_is_named_by_11s_visible_test():
    def accuracy(logits, labels):  # the common mistake: axis 0 is the samples
        return float(np.mean(np.argmax(logits.data, axis=0) == np.asarray(labels)))

    with pytest.raises(AssertionError, match="the argmax was taken over axis 0, the samples"):
        exec(cell_source("11_training", "c11-010"), {"np": np, "Tensor": Tensor, "accuracy": accuracy})


def test_a_tied_gradient_of_the_wrong_shape_is_told_to_check_its_products_not_a_missing_use():
    def tied_weight_grad(weight, ids, grad_logits):  # both uses, the output's product the other way round
        weight, ids, grad_logits = np.asarray(weight), np.asarray(ids).reshape(-1), np.asarray(grad_logits)
        looked_up = weight[ids]
        input_use = np.zeros_like(weight)
        np.add.at(input_use, ids, grad_logits @ weight)
        return looked_up.T @ grad_logits + input_use.sum()

    namespace = {"np": np, "tied_weight_grad": tied_weight_grad}
    with pytest.raises(AssertionError, match="got shape \\(1, 3\\). Check the shape of each product"):
        exec(cell_source("13_embedding", "c13-025"), namespace)


def test_a_linear_that_computes_on_data_is_told_its_operations_are_not_recorded():
    from tinytorch.core.nn import ReLU

    class OnData(Linear):
        def __init__(self, weight, bias):  # the test cell's way to build one: Linear(W, b)
            self.weight, self.bias = weight, bias

        def forward(self, x):
            return Tensor(x.data @ self.weight.data.T + self.bias.data)

    enable_autograd()
    namespace = {"np": np, "Tensor": Tensor, "Linear": OnData, "ReLU": ReLU}
    with pytest.raises((AssertionError, RuntimeError), match="got no gradient|does not require a gradient"):
        exec(cell_source("09_nn", "c09-011"), namespace)


class CountsLate(Adam):
    "A listed mistake: the step counted after the correction, so 1 - β^0 = 0 divides the first step."

    def update(self, i, p, grad):
        self.m[i] = self.beta1 * self.m[i] + (1 - self.beta1) * grad
        self.u[i] = self.beta2 * self.u[i] + (1 - self.beta2) * grad * grad
        with np.errstate(divide="ignore", invalid="ignore"):
            m_hat = self.m[i] / (1 - self.beta1 ** self.t[i])
            u_hat = self.u[i] / (1 - self.beta2 ** self.t[i])
            p.data -= self.lr * m_hat / (np.sqrt(u_hat) + self.eps)
        self.t[i] += 1


class AveragesG(Adam):
    "u averages g, not g²: it goes negative, and so does what its square root is taken of."

    def update(self, i, p, grad):
        self.t[i] += 1
        self.m[i] = self.beta1 * self.m[i] + (1 - self.beta1) * grad
        self.u[i] = self.beta2 * self.u[i] + (1 - self.beta2) * grad
        m_hat = self.m[i] / (1 - self.beta1 ** self.t[i])
        u_hat = self.u[i] / (1 - self.beta2 ** self.t[i])
        with np.errstate(invalid="ignore"):
            p.data -= self.lr * m_hat / (np.sqrt(u_hat) + self.eps)


@pytest.mark.parametrize(
    "wrong, cause",
    [(CountsLate, "count the step before correcting"), (AveragesG, "the square root of a negative number")],
)
def test_adams_nan_names_both_ways_to_get_one(wrong, cause):
    enable_autograd()
    with pytest.raises(AssertionError, match=cause):
        exec(cell_source("10_optimizers", "c10-011"), {"np": np, "Tensor": Tensor, "Adam": wrong})


def test_an_sgd_that_rebinds_p_is_told_p_did_not_move():
    from tinytorch.core.optimizers import SGD

    class Rebinds(SGD):
        def update(self, i, p, grad):
            p = p - self.lr * grad  # noqa: F841  (the listed mistake)

    enable_autograd()
    with pytest.raises(AssertionError, match="p did not move"):
        exec(cell_source("10_optimizers", "c10-009"), {"np": np, "Tensor": Tensor, "SGD": Rebinds})
