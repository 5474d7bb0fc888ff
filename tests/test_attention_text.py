"""Notebook 18's text against its code: the worked example of attention's backward, the numbers each common mistake
is said to give, the heads' example, and the rule itself against central differences on random shapes, dtypes, heads
and the edge cases the text names (one position, a future that is masked out entirely for the first query)."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grading.common.notebooks import read_notebook
from tinytorch.core import attention as M
from tinytorch.core.autograd import enable_autograd
from tinytorch.core.function import no_grad
from tinytorch.core.gradcheck import check_backward
from tinytorch.core.tensor import Tensor

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "18_attention.ipynb"
Q = np.array([[1.0, 0, 1, 0], [0, 2, 0, 0]])
K = np.array([[2.0, 0, 0, 0], [0, 2, 0, 2]])
V = np.array([[1.0, 0], [0, 2]])
G = np.eye(2)
MASK = M.causal_mask(2)


def text():
    return "\n".join(c.source for c in read_notebook(NOTEBOOK).cells if c.cell_type == "markdown")


def stated(numbers):
    "The numbers of a vector as the text writes them: '$(-0.2100, 0.2100, 0, 0.2100)$'."
    return "$(" + ", ".join("0" if v == 0 else f"{v:.4f}" for v in numbers) + ")$"


def matrix(rows):
    "A matrix as the text's LaTeX writes it."
    return " \\\\ ".join(" & ".join("0" if v == 0 else f"{v:.4g}" for v in row) for row in rows)


def mistaken(mask=MASK, scale=0.5, diagonal=False, transpose_k=True, transpose_v=True):
    "The three gradients of the example, computed with one step of the rule done the way a named mistake does it."
    p = M.attention_weights(Q, K, mask)
    grad_v = (p.T if transpose_v else p) @ G
    grad_p = G @ V.T
    grad_s = p * grad_p if diagonal else p * (grad_p - (grad_p * p).sum(axis=-1, keepdims=True))
    grad_s = grad_s * scale
    return grad_s @ K, (grad_s.T if transpose_k else grad_s) @ Q, grad_v


def test_the_worked_example_is_what_the_reference_rule_gives():
    grads = M.AttentionBackward(Tensor(Q), Tensor(K), Tensor(V), mask=MASK).apply(Tensor(G))
    grad_q, grad_k, grad_v = (np.asarray(getattr(g, "data", g)) for g in grads)
    assert np.allclose(M.attention_weights(Q, K, MASK), [[1, 0], [0.1192, 0.8808]], atol=5e-5)
    assert np.allclose(grad_q, [[0, 0, 0, 0], [-0.21, 0.21, 0, 0.21]], atol=5e-5)
    assert np.allclose(grad_k, [[0, -0.21, 0, 0], [0, 0.21, 0, 0]], atol=5e-5)
    assert np.allclose(grad_v, [[1, 0.1192], [0, 0.8808]], atol=5e-5)
    assert np.allclose(grad_k.sum(axis=0), 0), "the text says the rows of the gradient of K sum to zero"
    assert all(np.allclose(a, b, atol=1e-12) for a, b in zip((grad_q, grad_k, grad_v), mistaken()))
    assert "-0.2100 & 0.2100 & 0 & 0.2100" in text() and "1 & 0.1192 \\\\ 0 & 0.8808" in text()


def test_each_common_mistake_gives_the_numbers_the_text_states():
    no_scale, no_mask, diagonal = mistaken(scale=1.0), mistaken(mask=None), mistaken(diagonal=True)
    untransposed_k, untransposed_v = mistaken(transpose_k=False)[1], mistaken(transpose_v=False)[2]
    for said in [
        stated(no_scale[0][1]),  # the 1/sqrt(d) forgotten: query 1's gradient doubled at d = 4
        stated(no_mask[0][0]),  # P without the mask: query 0 gets a gradient
        matrix(no_mask[2]),  # and value 1 a gradient from query 0
        stated(diagonal[0][1]),  # softmax's Jacobian as its diagonal
        stated(untransposed_k[0]) + " and " + stated(untransposed_k[1]),  # the gradient of K without the transpose
        matrix(untransposed_v),  # the gradient of V with P untransposed
    ]:
        assert said in text(), said
    assert np.allclose(no_scale[0], 2 * mistaken()[0]) and np.allclose(no_scale[2], mistaken()[2])
    assert not np.allclose(diagonal[1].sum(axis=0), 0), "the text says these rows no longer sum to zero"
    assert np.allclose(untransposed_v, mistaken()[2].T), "the text says it is the true one's transpose here"


def test_the_heads_example():
    x = Tensor(np.arange(12.0).reshape(1, 3, 4))
    split = M.split_heads(x, 2).data
    assert split[0, 0].tolist() == [[0, 1], [4, 5], [8, 9]] and split[0, 1].tolist() == [[2, 3], [6, 7], [10, 11]]
    assert x.data.reshape(1, 2, 3, 2)[0, 0].tolist() == [[0, 1], [2, 3], [4, 5]], "the text's wrong reshape"
    for numbers in ["0 & 1 \\\\ 4 & 5 \\\\ 8 & 9", "2 & 3 \\\\ 6 & 7 \\\\ 10 & 11", "$(0, 1), (2, 3), (4, 5)$"]:
        assert numbers in text(), numbers


@settings(max_examples=25, deadline=None)
@given(
    leading=st.sampled_from([(), (2,), (2, 3)]),
    length=st.integers(1, 5),
    d=st.integers(1, 4),
    dv=st.integers(1, 3),
    causal=st.booleans(),
    dtype=st.sampled_from([np.float64, np.float32]),
    seed=st.integers(0, 2**16),
)
def test_attention_matches_central_differences(leading, length, d, dv, causal, dtype, seed):
    rng = np.random.default_rng(seed)
    shapes = [(*leading, length, d), (*leading, length, d), (*leading, length, dv)]
    inputs = [rng.normal(size=shape).astype(dtype) for shape in shapes]
    mask = M.causal_mask(length) if causal else None
    atol = 1e-5 if dtype == np.float64 else 1e-3
    assert check_backward(M.AttentionBackward, M.attention_values, inputs, mask=mask, atol=atol, rtol=1e-2)


def test_the_first_query_and_the_masked_future_get_no_gradient():
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(5, 3)) for _ in range(3))
    g = np.zeros((5, 3))
    g[0] = 1.0  # only position 0's output matters, and it reads value 0 alone
    grads = M.AttentionBackward(Tensor(q), Tensor(k), Tensor(v), mask=M.causal_mask(5)).apply(Tensor(g))
    grad_q, grad_k, grad_v = (np.asarray(getattr(a, "data", a)) for a in grads)
    assert np.array_equal(grad_q, np.zeros((5, 3))) and np.array_equal(grad_k, np.zeros((5, 3)))
    assert np.array_equal(grad_v[1:], np.zeros((4, 3))) and np.allclose(grad_v[0], 1.0)


def test_a_mask_that_hides_every_key_from_a_query_is_refused():
    with pytest.raises(ValueError, match="each query must see at least one key"):
        M.attention_values(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 2), dtype=bool))


def test_a_block_with_the_causal_mask_never_reads_the_future():
    enable_autograd(quiet=True)
    block = M.TransformerBlock(8, 2, seed=0)
    x = np.random.default_rng(1).normal(size=(2, 5, 8))
    changed = x.copy()
    changed[:, 3:] += 1.0
    with no_grad():
        before, after = (block(Tensor(a), M.causal_mask(5)).data for a in (x, changed))
    assert np.allclose(before[:, :3], after[:, :3]) and not np.allclose(before[:, 3:], after[:, 3:])


def test_multi_head_attention_refuses_a_width_the_heads_do_not_divide():
    with pytest.raises(ValueError, match="divisible by the heads"):
        M.MultiHeadAttention(10, 3)
