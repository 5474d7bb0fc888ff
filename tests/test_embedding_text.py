"""Notebook 13's text against its code (issue 23, point 5: every number stated is computed): the worked examples of
the three exercises, the claims about NumPy's buffered writes and about tied tables, and the measurement's table."""

import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest

from grading.common.notebooks import read_notebook
from tinytorch.core import embedding as M
from tinytorch.core.autograd import enable_autograd
from tinytorch.core.nn import Linear
from tinytorch.core.tensor import Tensor

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "13_embedding.ipynb"
IDS = np.array([[2, 0], [2, 2]])
GRAD_ROWS = np.array([[[1.0, 0.0], [0.0, 1.0]], [[2.0, 2.0], [1.0, -1.0]]])


def cell(cell_id):
    return next(c.source for c in read_notebook(NOTEBOOK).cells if c.get("id") == cell_id)


def test_the_lookup_example_and_its_gradient_are_the_ones_the_text_states():
    enable_autograd()
    table = Tensor(np.arange(8.0).reshape(4, 2), requires_grad=True)
    out = M.embedding(table, IDS)
    assert out.data.tolist() == [[[4, 5], [0, 1]], [[4, 5], [4, 5]]] and out.shape == (2, 2, 2)
    assert np.array_equal(np.eye(4)[IDS.reshape(-1)] @ table.data, table.data[IDS.reshape(-1)]), "E = H W"
    out.backward(Tensor(GRAD_ROWS))
    assert table.grad.data.tolist() == [[0, 1], [0, 0], [4, 1], [0, 0]]
    assert "$[[0, 1], [0, 0], [4, 1], [0, 0]]$" in cell("c13-005")


def test_the_buffered_writes_keep_one_use_as_the_text_says():
    out = np.zeros((4, 2))
    out[IDS] += GRAD_ROWS
    assert out[2].tolist() == [1, -1], "row 2 would come out [1, -1] instead of [4, 1]"
    w = np.zeros((3, 1))
    w[[2, 2]] -= [[1.0], [1.0]]
    assert w[2, 0] == -1, "w[[2, 2]] -= [[1], [1]] lowers w[2] by 1, not by 2"


def test_the_sparse_and_tied_examples_and_the_counts_in_the_text():
    rows, values = M.sparse_rows(IDS, GRAD_ROWS)
    assert rows.tolist() == [0, 2] and values.tolist() == [[0, 1], [4, 1]]
    got = M.tied_weight_grad(np.array([[1.0], [2.0], [3.0]]), np.array([1]), np.array([[1.0, 0.0, -1.0]]))
    assert got.ravel().tolist() == [2, -2, -2]
    assert round(50_000 * (1 - (1 - 1 / 50_000) ** 640), 1) == 635.9
    assert round(8 * 1024 * 50_257 * 4 / 1e9, 1) == 1.6 and 50_257 * 768 == 38_597_376
    with pytest.raises(ValueError, match="distinct rows"):
        M.sparse_sgd_step(Tensor(np.zeros((3, 1))), [2, 2], [[1.0], [1.0]], 0.1)


def test_a_tied_table_has_one_parameter_and_a_dense_gradient():
    enable_autograd()
    table = M.Embedding(6, 3, seed=0)
    logits = Linear(table.weight)(table(np.array([[1, 4, 1], [0, 1, 2]])))
    logits.backward(Tensor(np.random.default_rng(1).normal(size=logits.shape)))
    assert np.all(np.any(table.weight.grad.data != 0, axis=1)), "every row, tokens 3 and 5 included"


def test_the_measurement_prints_the_rows_and_bytes_of_the_texts_table():
    enable_autograd()
    namespace = dict(vars(M))
    namespace.update(time=__import__("time"), np=np)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(cell("c13-019"), namespace)
    measured = [line.split()[:4] for line in printed.getvalue().splitlines()[1:]]
    assert measured == [
        ["1,000", "237", "0.26", "62.6"],
        ["10,000", "358", "2.56", "94.5"],
        ["100,000", "391", "25.60", "103.2"],
    ]
    text = cell("c13-018")
    for vocab, touched, dense, sparse in [("1,000", 237, "0.26", "62.6"), ("100,000", 391, "25.6", "103.2")]:
        assert re.search(rf"\| {vocab} \| {touched} \| {dense} MB \| {sparse} kB \|", text), vocab


class CutGraphBackward(M.EmbeddingBackward):
    "The right gradient, made from arrays: a constant that notebook 14 cannot differentiate again."

    def apply(self, grad_output):
        (weight,) = self.saved_tensors
        out = np.zeros(weight.shape, dtype=grad_output.dtype)
        np.add.at(out, self.ids, grad_output.data)
        return (Tensor(out),)


@pytest.mark.parametrize("rule, noted", [(M.EmbeddingBackward, False), (CutGraphBackward, True)])
def test_the_visible_test_keeps_a_constant_gradients_points_and_says_what_the_hidden_test_checks(rule, noted):
    enable_autograd()
    namespace = {**vars(M), "EmbeddingBackward": rule}
    namespace["embedding"] = lambda weight, ids: M.attach(Tensor(weight.data[ids]), rule, weight, ids=ids)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(cell("c13-007"), namespace)  # passes: the values are right
    assert ("a hidden test checks that (1 point)" in printed.getvalue()) == noted, printed.getvalue()
