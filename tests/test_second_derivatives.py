"""Issue 23, item 5: every backward rule marked `twice_differentiable` really differentiates twice.

Notebook 14 tells the student that `create_graph=True` works through every rule written with Tensor operations. A rule
that computes part of its gradient from `.data` (a constant) still passes every first-derivative check, but its second
derivative silently comes out wrong: BCE's did, and gave a Hessian-vector product of [0, 0] instead of [5.56, 3.125].
So each such rule is checked here the way notebook 14 uses it: the Hessian-vector product of a loss built on the rule,
computed by differentiating the gradient, against central differences of the gradient along the same direction. The
loss is sum(c · y²) of the rule's output y, so the check also fails when a rule cuts the graph of its grad_output.
Rules marked otherwise (convolution and pooling, raw NumPy) must refuse `create_graph=True` with a clear error. Every
rule of the engine needs a case in CASES, so a new rule, or a rule whose flag changes, is checked the right way."""

import sys

import numpy as np
import pytest

from grading.examples.corners import HVP_BY_DIFFERENCES, HVP_SOLUTION
from tinytorch.core import activations as A
from tinytorch.core import attention as T
from tinytorch.core import conv as C
from tinytorch.core import elementwise as E
from tinytorch.core import embedding as M
from tinytorch.core import losses as L
from tinytorch.core import nn as NN
from tinytorch.core import norm as N
from tinytorch.core import reductions as R
from tinytorch.core.autograd import enable_autograd, grad, topological_order
from tinytorch.core.function import Function
from tinytorch.core.tensor import Tensor

enable_autograd(quiet=True)

STEP = 1e-5


def normal(*shape):
    return lambda rng: rng.normal(size=shape)


def positive(*shape):
    return lambda rng: rng.uniform(0.5, 2.0, size=shape)


def away_from_zero(*shape):
    return lambda rng: rng.uniform(0.5, 2.0, size=shape) * rng.choice([-1, 1], size=shape)


def probabilities(*shape):
    return lambda rng: rng.uniform(0.1, 0.9, size=shape)


def away_from_kink(*shape):
    return lambda rng: np.where(rng.random(size=shape) < 0.5, -1, 1) * rng.uniform(0.2, 1.5, size=shape)


INDEX = np.array([0, 2, 2, 1])
MASK = np.array([[True, False, True], [False, False, True]])
LABELS = np.array([0, 2, 1, 2])

# rule: [(inputs (one maker per input, all differentiated), forward of those tensors)]; a rule may have several cases
CASES = {
    E.AddBackward: [([normal(2, 3), normal(3)], lambda a, b: a + b)],
    E.SubBackward: [([normal(2, 3), normal(2, 1)], lambda a, b: a - b)],
    E.MulBackward: [([normal(2, 3), normal(3)], lambda a, b: a * b), ([normal(3)], lambda a: a * a)],
    E.DivBackward: [([normal(2, 3), away_from_zero(3)], lambda a, b: a / b)],
    E.NegBackward: [([normal(2, 3)], lambda a: -a)],
    E.PowBackward: [([positive(2, 3)], lambda a: a**2.5), ([normal(4)], lambda a: a**3)],
    E.ExpBackward: [([normal(2, 3)], lambda a: a.exp())],
    E.LogBackward: [([positive(2, 3)], lambda a: a.log())],
    E.MaskedFillBackward: [([normal(2, 3)], lambda a: a.masked_fill(MASK, 0.5))],
    # a Python number next to a tensor has rules of its own; a cast (to a dtype that holds float64 exactly) too
    E.AddNumberBackward: [([normal(2, 3)], lambda a: (a + 1.5) * a), ([normal(3)], lambda a: (a - 0.5) * a)],
    E.MulNumberBackward: [([normal(2, 3)], lambda a: (a * 0.5) * a), ([normal(3)], lambda a: (2.0 * a) * a)],
    E.DivNumberBackward: [([normal(2, 3)], lambda a: (a / 4.0) * a)],
    E.CastBackward: [([normal(2, 3)], lambda a: a.to(np.longdouble).to(np.float64) * a)],
    R.ScatterAddBackward: [([normal(4, 2)], lambda v: R.scatter_add(v, INDEX, (3, 2)))],
    R.MatmulBackward: [
        ([normal(2, 3), normal(3, 4)], lambda a, b: a @ b),
        ([normal(2, 2, 3), normal(3)], lambda a, b: a @ b),
    ],
    R.SumBackward: [([normal(2, 3, 2)], lambda a: a.sum(axis=1)), ([normal(2, 3)], lambda a: a.sum())],
    R.MeanBackward: [([normal(2, 3, 2)], lambda a: a.mean(axis=(0, 2), keepdims=True))],
    R.ReshapeBackward: [([normal(2, 3)], lambda a: a.reshape(3, 2))],
    R.TransposeBackward: [([normal(2, 3, 4)], lambda a: a.transpose(2, 0, 1))],
    R.IndexBackward: [([normal(3, 2)], lambda a: a[INDEX]), ([normal(3, 4)], lambda a: a[1:, ::2])],
    A.ReLUBackward: [([away_from_kink(2, 3)], A.relu)],
    A.SigmoidBackward: [([normal(2, 3)], A.sigmoid)],
    A.TanhBackward: [([normal(2, 3)], A.tanh)],
    A.SoftmaxBackward: [([normal(2, 4)], lambda a: A.softmax(a, axis=-1))],
    A.LogSoftmaxBackward: [([normal(2, 4)], lambda a: A.log_softmax(a, axis=-1))],
    A.GELUBackward: [([normal(2, 3)], A.gelu)],
    L.MSEBackward: [([normal(2, 3), normal(2, 3)], L.mse_loss)],
    L.BCEBackward: [([probabilities(2, 3), probabilities(2, 3)], L.bce_loss)],
    L.CrossEntropyBackward: [([normal(4, 3)], lambda z: L.cross_entropy(z, LABELS))],
    M.EmbeddingBackward: [([normal(3, 2)], lambda w: M.embedding(w, INDEX.reshape(2, 2)))],
    C.Conv2dBackward: [([normal(1, 1, 4, 4), normal(2, 1, 3, 3)], C.conv2d)],
    NN.LinearBackward: [
        ([normal(4, 3), normal(2, 3), normal(2)], NN.linear),  # a batch
        ([normal(3), normal(2, 3)], NN.linear),  # one sample, no bias
        ([normal(2, 2, 3), normal(2, 3), normal(2)], NN.linear),  # a batch of sequences
    ],
    C.MaxPool2dBackward: [([normal(1, 1, 4, 4)], lambda x: C.max_pool2d(x, 2))],
    C.AvgPool2dBackward: [([normal(1, 1, 4, 4)], lambda x: C.avg_pool2d(x, 2))],
    N.BatchNormBackward: [([normal(4, 3), normal(3), normal(3)], N.batch_norm)],
    N.LayerNormBackward: [([normal(2, 4), normal(4), normal(4)], N.layer_norm)],
    # the same mask at every call (the loss is evaluated again and again): a generator seeded alike each time
    N.DropoutBackward: [([normal(3, 4)], lambda x: N.dropout(x, 0.5, rng=np.random.default_rng(0)))],
    T.AttentionBackward: [
        (
            [normal(3, 2), normal(3, 2), normal(3, 2)],
            lambda q, k, v: T.scaled_dot_product_attention(q, k, v, T.causal_mask(3)),
        )
    ],
}
TWICE = {rule: cases for rule, cases in CASES.items() if rule.twice_differentiable}
ONCE = {rule: cases for rule, cases in CASES.items() if not rule.twice_differentiable}


def rules():
    "Every backward rule of the engine (tinytorch.core), by walking Function's subclasses."
    found, stack = [], list(Function.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        module = sys.modules.get(cls.__module__)  # a module's own rule, not a class a test made under its name
        if cls.__module__.startswith("tinytorch.core.") and getattr(module, cls.__name__, None) is cls:
            found.append(cls)
    return found


def test_every_rule_has_a_case_so_its_second_derivative_or_its_refusal_is_checked():
    unchecked = sorted(cls.__name__ for cls in set(rules()) - set(CASES))
    assert not unchecked, f"rules without a case in CASES: {unchecked}"
    assert ONCE, "convolution and pooling compute with raw NumPy (notebook 14 says so)"


def hessian_times(loss_fn, xs, vs):
    "(H·v by differentiating the gradient, H·v by central differences of the gradient along v), flattened."
    grads = grad(loss_fn(), xs, create_graph=True)
    dot = sum((g * Tensor(v)).sum() for g, v in zip(grads, vs))
    analytic = [np.zeros(x.shape) if h is None else h.data for x, h in zip(xs, grad(dot, xs))]
    saved, moved = [x.data.copy() for x in xs], []
    for sign in (1, -1):
        for x, s, v in zip(xs, saved, vs):
            x.data = s + sign * STEP * v
        moved.append(np.concatenate([g.data.ravel() for g in grad(loss_fn(), xs)]))
    for x, s in zip(xs, saved):
        x.data = s
    return np.concatenate([a.ravel() for a in analytic]), (moved[0] - moved[1]) / (2 * STEP)


@pytest.mark.parametrize(
    "rule, makers, forward",
    [(rule, makers, forward) for rule, cases in TWICE.items() for makers, forward in cases],
    ids=[f"{rule.__name__}-{i}" for rule, cases in TWICE.items() for i in range(len(cases))],
)
def test_the_hessian_vector_product_through_a_rule_matches_differences_of_its_gradient(rule, makers, forward):
    rng = np.random.default_rng(sum(map(ord, rule.__name__)))
    xs = [Tensor(make(rng), requires_grad=True) for make in makers]
    shape = forward(*xs).shape
    weights = Tensor(rng.normal(size=shape))
    loss_fn = lambda: (weights * forward(*xs) ** 2).sum()
    assert any(isinstance(t._grad_fn, rule) for t in topological_order(forward(*xs))), f"{rule.__name__} not used"
    vs = [rng.normal(size=x.shape) for x in xs]
    analytic, numeric = hessian_times(loss_fn, xs, vs)
    assert np.abs(numeric).max() > 1e-3, "the check needs a nonzero second derivative to mean anything"
    assert np.allclose(analytic, numeric, atol=1e-6, rtol=1e-5), (
        f"{rule.__name__}: H·v {analytic.round(6)} by create_graph, {numeric.round(6)} by differences of the gradient"
    )


def test_bce_hessian_vector_product_is_the_one_the_issue_measured():
    p = Tensor([0.3, 0.6], requires_grad=True)
    grads = grad(L.bce_loss(p, Tensor([1.0, 0.0])), [p], create_graph=True)
    (hv,) = grad((grads[0] * Tensor(np.ones(2))).sum(), [p])
    assert np.allclose(hv.data, [1 / (2 * 0.3**2), 1 / (2 * 0.4**2)])  # [5.56, 3.125]


@pytest.mark.parametrize("rule", list(ONCE), ids=lambda r: r.__name__)
def test_a_rule_computed_with_raw_numpy_refuses_create_graph(rule):
    rng = np.random.default_rng(5)
    ((makers, forward),) = ONCE[rule]
    xs = [Tensor(make(rng), requires_grad=True) for make in makers]
    with pytest.raises(RuntimeError, match="cannot be differentiated again"):
        grad(forward(*xs).sum(), xs, create_graph=True)


# 14's exercise with the visible test's central differences pasted in (issue 44, point 4): it moves each p.data
HVP_IN_PLACE = HVP_BY_DIFFERENCES.replace("p.data = p.data + step * v", "p.data += step * v").replace(
    "p.data = original", "p.data[...] = original"
)


@pytest.mark.slow  # runs notebook 14's cells
@pytest.mark.parametrize("test", ["second_derivative", "hvp_mlp"])
@pytest.mark.parametrize("pasted", [HVP_BY_DIFFERENCES, HVP_IN_PLACE], ids=["set", "in place"])
def test_central_differences_pasted_into_the_hvp_fail_at_home_with_the_graders_words(test, pasted):
    """Issue 44, point 4: pasted into the exercise, 14's visible central differences passed both visible tests at home
    and got 0/6 when graded, blamed on create_graph: when graded, the student's writes to p.data stay in its copy and
    loss_fn computes at the unmoved parameters. The visible tests' loss_fn now fails as the grader does, in its words
    (grading.grade.ownership: moved_tensor for a new array, check_changes for a change in place)."""
    import json
    import subprocess
    import sys

    from conftest import REPO
    from grading.grade.ownership import moved_tensor

    script = REPO / "tests" / "failure_messages.py"
    result = subprocess.run(
        [sys.executable, str(script), "14_higher_order", test, HVP_SOLUTION, pasted],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    message = json.loads(result.stdout.splitlines()[-1])
    if pasted == HVP_BY_DIFFERENCES:
        graded = moved_tensor("hessian_vector_product", {1: "params[0]", 2: "loss_fn"}, 1, 2)
    else:
        graded = "your hessian_vector_product changed params[0].data in place; the tests compute the expected answer "
        graded += "from the data they give you, so a function may change only what its exercise says: compute a new "
        graded += "array instead"
    assert message == f"ValueError: {graded}"
