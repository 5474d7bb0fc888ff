"""The pictures of notebooks 03 and 06: what they draw, read back from the matplotlib figures."""

import matplotlib

matplotlib.use("Agg")
import numpy as np
import pytest

from tinytorch.core.function import Function
from tinytorch.core.gradcheck import GradcheckError
from tinytorch.core.tensor import Tensor
from tinytorch.core.viz import draw_graph, graph_edges, plot_gradient_check


def texts(figure):
    return [t.get_text() for ax in figure.axes for t in ax.texts]


def arrows(figure):
    return [t for ax in figure.axes for t in ax.texts if getattr(t, "arrow_patch", None) is not None]


def test_draw_graph_names_each_node_after_its_rule_and_labels_edges_with_shapes():
    W = Tensor(np.ones((3, 2)), requires_grad=True)
    b = Tensor(np.zeros(2), requires_grad=True)
    loss = ((Tensor(np.ones((4, 3))) @ W + b) ** 2).mean()
    figure = draw_graph(loss)
    labels = texts(figure)
    for rule in ["MatmulBackward", "AddBackward", "PowBackward", "MeanBackward"]:
        assert rule in labels, labels
    assert "leaf\n(3, 2)" in labels and "leaf\n(2,)" in labels
    assert labels.count("(4, 2)") == 3, "Matmul→Add, Add→Pow and Pow→Mean each carry a (4, 2) tensor"
    assert "(3, 2)" in labels and "(2,)" in labels and "output ()" in labels
    _, edges = graph_edges(loss)
    assert len(arrows(figure)) == len(edges) == 5


def test_draw_graph_of_the_seed_example_draws_the_shared_input_once():
    x, y = Tensor(2.0, requires_grad=True), Tensor(3.0, requires_grad=True)
    figure = draw_graph(x * y + x)
    labels = texts(figure)
    assert labels.count("leaf\n()") == 2 and "MulBackward" in labels and "AddBackward" in labels
    assert len(arrows(figure)) == 4, "x feeds both * and +: two arrows from one box"


def test_no_arrows_shape_sits_on_a_box():
    "x's arrow to + passes the column of *: its label sat on the MulBackward box (a student's report on 15)."
    x, y = Tensor(2.0, requires_grad=True), Tensor(3.0, requires_grad=True)
    shapes = [t.get_position()[0] for t in draw_graph(x * y + x).axes[0].texts if t.get_text() == "()"]
    assert len(shapes) == 4 and all(abs(at - round(at)) >= 0.4 for at in shapes), shapes  # boxes: at whole columns


def test_draw_graph_after_backward_shows_only_the_freed_root():
    x = Tensor([1.0, 2.0], requires_grad=True)
    out = (x * x).sum()
    out.backward()
    assert len(arrows(draw_graph(out))) == 0


class Square(Function):
    def apply(self, grad_output):
        return (grad_output * 2 * self.saved_tensors[0],)


class HalfSquare(Function):
    def apply(self, grad_output):
        return (grad_output * self.saved_tensors[0],)


@pytest.mark.parametrize("rule, on_diagonal", [(Square, True), (HalfSquare, False)])
def test_plot_gradient_check_puts_a_correct_rule_on_the_diagonal(rule, on_diagonal):
    figure = plot_gradient_check(rule, np.square, [np.random.default_rng(0).normal(size=(3, 4))])
    (ax,) = figure.axes
    numeric, analytic = ax.collections[0].get_offsets().T
    assert len(numeric) == 12
    assert np.allclose(analytic, numeric, atol=1e-5) == on_diagonal
    assert ax.get_title() == rule.__name__ and "numerical" in ax.get_xlabel()


def test_plot_gradient_check_reports_a_wrongly_shaped_gradient():
    class Unreduced(Function):
        def apply(self, grad_output):
            return grad_output * self.saved_tensors[1], grad_output * self.saved_tensors[0]

    with pytest.raises(GradcheckError, match="broadcast"):
        plot_gradient_check(Unreduced, np.multiply, [np.ones((2, 3)), np.ones(3)])


def test_progress_bars_are_silent_when_not_in_a_terminal(monkeypatch, capsys):
    from tinytorch.core.training import progress

    monkeypatch.delenv("TINYTORCH_QUIET", raising=False)
    assert list(progress(range(3), desc="training")) == [0, 1, 2]
    assert "training" not in capsys.readouterr().err, "stderr is not a terminal here: no bar"
    monkeypatch.setenv("TINYTORCH_QUIET", "1")
    assert progress(range(3)).disable
