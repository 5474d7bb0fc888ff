"""grading/grade/analytic.py: a gradient from a formula agrees with the reference to rounding, a numerical one does not."""

import numpy as np
import pytest

from grading.grade.analytic import message, numerical_gaps
from tinytorch.core.tensor import Tensor

rng = np.random.default_rng(5)
x = rng.normal(size=(3, 4))
g = rng.normal(size=(3, 4))


def central(f, h):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_central_differences_are_found_for_every_step():
    exact = g * np.exp(x)
    for h in [1e-4, 1e-5, 6e-6, 1e-6, 1e-7]:
        gaps = numerical_gaps((g * central(np.exp, h),), (exact,), g)
        assert [index for index, _ in gaps] == [0], h


def test_formulas_written_differently_agree():
    s = 1 / (1 + np.exp(-x))
    assert numerical_gaps((g * s * (1 - s),), (g * np.exp(-x) / (1 + np.exp(-x)) ** 2,), g) == []
    jacobian = s[..., :, None] * (np.eye(4) - s[..., None, :])
    assert (
        numerical_gaps((np.einsum("...ij,...i->...j", jacobian, g),), (s * (g - (g * s).sum(-1, keepdims=True)),), g)
        == []
    )


def test_tensors_are_compared_by_their_data_and_only_the_numerical_input_is_named():
    exact = g * np.exp(x)
    gaps = numerical_gaps((Tensor(exact), Tensor(g * central(np.exp, 1e-6))), (Tensor(exact), Tensor(exact)), Tensor(g))
    assert [index for index, _ in gaps] == [1]
    assert "input 1" in message("ExpBackward", gaps) and "finite differences" in message("ExpBackward", gaps)


def test_a_numerical_gradient_is_judged_whatever_its_type():
    """A red-team finding: finite differences handed back as a complex array or a list of numbers were not judged (the
    verdict read float64 arrays only), and the tests read both as float64. They are read the same way here."""
    exact, numeric = g * np.exp(x), g * central(np.exp, 1e-6)
    as_float32_numbers = np.vectorize(np.float32, otypes=[object])(numeric).tolist()  # round 2: not a float32 array
    for sent in (
        numeric.astype(np.complex128),
        numeric.tolist(),
        Tensor(numeric.tolist()),
        numeric.astype(np.int64),
        as_float32_numbers,
    ):
        found = numerical_gaps((sent,), (exact,), g)
        if isinstance(sent, np.ndarray) and sent.dtype == np.int64:
            assert found == []  # truncated to integers: far off, the test's to say
        else:
            assert [index for index, _ in found] == [0], type(sent)
    assert numerical_gaps((exact.astype(np.complex128), exact.tolist()), (exact, exact), g) == []
    assert numerical_gaps(([[1.0, 2.0], [3.0]],), (exact,), g) == []  # ragged: holds no array, the test says so


def test_wrong_gradients_are_left_to_the_test():
    assert numerical_gaps((2 * g,), (g,), g) == []  # far off: the test's message diagnoses it


def test_float32_zero_and_negligible_gradients_are_not_judged():
    exact = g * np.exp(x)
    numeric = g * central(np.exp, 1e-6)
    assert numerical_gaps((numeric.astype(np.float32),), (exact.astype(np.float32),), g) == []
    assert numerical_gaps((np.zeros(3),), (np.zeros(3),), np.ones(3)) == []
    assert numerical_gaps((np.full(3, 1e-20),), (np.full(3, 1.0001e-20),), np.ones(3)) == []


def test_a_float32_array_computed_in_another_order_than_the_reference_is_not_judged():
    """A float32 gradient returned as a bare array was read through its .data, a memoryview, and judged as float64: an
    einsum where the reference multiplies matrices differs by float32's rounding, 1e-8, and a correct rule returning
    arrays (chapter 18's attention by einsum) lost its points as "numerical". Float32 is left to its dtype check."""
    a, b = rng.normal(size=(3, 50)).astype(np.float32), rng.normal(size=(50, 4)).astype(np.float32)
    scale = 3**-0.5  # not a power of 2: scaling before or after the product rounds differently
    by_matmul, by_einsum = a @ b * scale, np.einsum("ij,jk->ik", a * scale, b)
    assert by_einsum.dtype == np.float32 and not np.array_equal(by_matmul, by_einsum)  # float32's rounding apart
    assert numerical_gaps((by_einsum,), (by_matmul,), np.ones((3, 4), dtype=np.float32)) == []


def test_mismatched_results_are_not_judged():
    assert numerical_gaps((g, g), (g,), g) == []
    assert numerical_gaps((g,), (g.T,), g) == []
    assert numerical_gaps((None,), (g,), g) == []


def test_gradients_that_record_a_graph_are_judged_by_their_values():
    exact, numeric = g * np.exp(x), g * central(np.exp, 1e-6)
    mine, theirs = Tensor(numeric, requires_grad=True), Tensor(exact, requires_grad=True)
    assert [index for index, _ in numerical_gaps((mine,), (theirs,), g)] == [0]


def test_every_gap_the_tests_would_accept_is_numerical():
    exact = g * np.exp(x)
    for numeric in [g * central(np.exp, 1e-6) * (1 + 1e-4), g * central(np.exp, 3e-2)]:  # 1e-4 and 1.5e-4 off
        assert [index for index, _ in numerical_gaps((numeric,), (exact,), g)] == [0]


# -- The probe of a linear rule: exact on the tests' inputs, it must stay exact when magnitudes mix -------------------


def add_rule(a, b, grad_output, step=None):
    "Add's gradients by a formula (step None) or by central differences of a + b, one element at a time."
    if step is None:
        return grad_output.copy(), grad_output.copy()
    grads = []
    for which in (a, b):
        grad = np.zeros_like(which)
        for index in np.ndindex(which.shape):
            plus, minus = which.copy(), which.copy()
            plus[index] += step
            minus[index] -= step
            (lo, hi) = (a, b) if which is a else (b, a)
            up = (plus + hi) if which is a else (lo + plus)
            down = (minus + hi) if which is a else (lo + minus)
            grad[index] = np.sum((up - down) * grad_output) / (2 * step)
        grads.append(grad)
    return tuple(grads)


def test_a_linear_rule_by_differences_with_a_large_step_is_exact_until_magnitudes_mix():
    from grading.grade.analytic import MAGNITUDE, mixed_magnitudes, probe, probe_gaps
    from tinytorch.core.elementwise import AddBackward

    a, b = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    grad_output = rng.normal(size=(2, 3))
    exact = add_rule(a, b, grad_output)
    assert probe_gaps(add_rule(a, b, grad_output, step=0.5), exact, grad_output) == []  # exact here: undetectable

    rule = AddBackward(Tensor(a), Tensor(b))
    probed = probe(rule, Tensor)
    big_a, big_b = (t.data for t in probed.saved_tensors)
    assert rule.saved_tensors[0].data is a and np.abs(big_a).max() > MAGNITUDE / 100  # the original is untouched
    assert np.array_equal(mixed_magnitudes(Tensor(a)).data.ravel()[1::2], a.ravel()[1::2])
    for step in [1e-6, 0.5, 1e3, 2.0**60]:  # small, a power of two, large, huge
        gaps = probe_gaps(add_rule(big_a, big_b, grad_output, step=step), exact, grad_output)
        assert gaps and {index for index, _ in gaps} <= {0, 1}, step
    assert probe_gaps(add_rule(big_a, big_b, grad_output), exact, grad_output) == []  # the formula stays exact


def relative_step(forward, arrays, k, grad_output):
    "Input k's gradient by central differences of an elementwise forward, every element stepped by its own size."
    with np.errstate(all="ignore"):
        step = np.where(arrays[k] == 0, 1.0, np.abs(arrays[k]))
        plus, minus = list(arrays), list(arrays)
        plus[k], minus[k] = arrays[k] + step, arrays[k] - step
        return grad_output * (forward(*plus) - forward(*minus)) / (2 * step)


def test_an_elementwise_rule_by_differences_with_each_elements_own_step_is_caught_by_infinite_values():
    """Red team, round 3: a step relative to each element is exact for mul, add, sub and neg elementwise, mixed
    magnitudes and all (no element is added to another); at an infinite saved value the forward is not finite."""
    from grading.grade.analytic import infinite_probe, probe, probe_gaps, probe_message
    from tinytorch.core.elementwise import AddBackward, MulBackward, NegBackward, SubBackward

    a, b, grad_output = rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    cases = [
        (MulBackward, lambda p, q: p * q, (a, b), lambda p, q: (grad_output * q, grad_output * p)),
        (AddBackward, lambda p, q: p + q, (a, b), lambda p, q: (grad_output, grad_output)),
        (SubBackward, lambda p, q: p - q, (a, b), lambda p, q: (grad_output, -grad_output)),
        (NegBackward, lambda p: -p, (a,), lambda p: (-grad_output,)),
    ]
    for rule_class, forward, arrays, formula in cases:

        def numerical(*xs, forward=forward):
            return tuple(relative_step(forward, xs, k, grad_output) for k in range(len(xs)))

        rule = rule_class(*map(Tensor, arrays))
        assert probe_gaps(numerical(*arrays), formula(*arrays), grad_output) == []  # exact on the tests' inputs
        mixed = [t.data for t in probe(rule, Tensor).saved_tensors]
        assert probe_gaps(numerical(*mixed), formula(*mixed), grad_output) == [], rule_class  # and there
        infinite = [t.data for t in infinite_probe(rule, Tensor).saved_tensors]
        assert all(np.isinf(x).sum() == 4 for x in infinite) and not np.isinf(infinite[0] * infinite[-1]).all()
        with np.errstate(all="ignore"):
            exact = formula(*infinite)
        gaps = probe_gaps(numerical(*infinite), exact, grad_output)
        assert gaps and all(gap == np.inf for _, gap in gaps), rule_class
        assert probe_gaps(exact, exact, grad_output) == []  # the formula stays exact
        assert "when some saved values are infinite" in probe_message(rule_class.__name__, gaps, "infinite")


def test_formulas_of_every_linear_rule_written_another_way_stay_exact_on_both_probes():
    """Each linear rule's gradient written as a student might (not as the reference does): on both probes it stays
    finite wherever the reference's is, and exact (the mutation suite grades more of these through the verdict)."""
    from grading.grade.analytic import LINEAR_RULES, probe_gaps, probes
    from tinytorch.core.elementwise import unbroadcast
    from tinytorch.core.losses import mse_loss

    x, y = Tensor(rng.normal(size=(3, 4)), requires_grad=True), Tensor(rng.normal(size=(4,)), requires_grad=True)
    students = {  # rule: (its result, the student's gradients of (saved arrays, g))
        "AddBackward": (x + y, lambda a, b, g: (g * np.ones_like(a), unbroadcast(np.ones_like(g) * g, b.shape))),
        "SubBackward": (x - y, lambda a, b, g: (g + np.zeros_like(a), unbroadcast(g * -1.0, b.shape))),
        "MulBackward": (x * y, lambda a, b, g: (b * g, unbroadcast(a * g, b.shape))),
        "DivBackward": (x / y, lambda a, b, g: (g * (1 / b), unbroadcast(-(g / b) * a / b, b.shape))),
        "NegBackward": (-x, lambda a, g: (0.0 - g,)),
        "MatmulBackward": (x @ y, lambda a, b, g: (np.outer(g, b), np.einsum("ij,i->j", a, g))),
        "SumBackward": (x.sum(axis=0), lambda a, g: (g[None, :] + np.zeros(a.shape),)),
        "MeanBackward": (x.mean(), lambda a, g: (g * np.ones(a.shape) * (1.0 / a.size),)),
        "MSEBackward": (mse_loss(x, x * 2.0), lambda p, t, g: (2 * (p - t) * g / p.size, 2 * (t - p) * g / p.size)),
    }
    assert set(students) == LINEAR_RULES
    for name, (result, student) in students.items():
        grad_output = rng.normal(size=result.shape)
        for what, copied in probes(result._grad_fn, Tensor):
            with np.errstate(all="ignore"):
                exact = copied.apply(Tensor(grad_output))
                mine = student(*(t.data for t in copied.saved_tensors), grad_output)
            assert probe_gaps(mine, exact, grad_output) == [], (name, what)


def test_a_probe_says_nothing_about_negligible_or_misshapen_gradients():
    from grading.grade.analytic import probe_gaps

    assert probe_gaps((np.zeros(3),), (np.zeros(3),), np.ones(3)) is None
    assert probe_gaps((g,), (g.T,), g) is None
    assert probe_gaps((np.full(3, np.nan),), (np.ones(3),), np.ones(3)) == [(0, np.inf)]


def test_an_empty_gradient_is_named_where_the_reference_has_one():
    "np.allclose(np.zeros((0, 1, 1, 1, 1)), anything) is True: sol's SquareBackward (red team) returned one."
    from grading.grade.analytic import emptied

    reference = (np.ones((3, 2)), None, np.ones(4))
    assert emptied((np.zeros((0, 1, 1, 1, 1)), None, np.ones(4)), reference) == [(0, (3, 2))]
    assert emptied((np.zeros((0, 1), dtype=np.float32), np.ones(2), np.zeros(0)), reference) == [(0, (3, 2)), (2, (4,))]
    assert emptied((np.ones((1, 2)), None, np.ones(4)), reference) == []  # other shapes: the test's own message
    assert emptied((np.zeros((0, 3)),), (np.zeros((0, 3)),)) == []  # an empty batch's gradient is empty


def test_while_graded_an_empty_array_is_close_only_to_an_empty_one():
    "np.allclose broadcasts np.zeros((0, 1, 1, 1, 1)) against anything to nothing, and all of nothing is True."
    from grading.grade.verdict import strict_allclose

    empty = np.zeros((0, 1, 1, 1, 1))
    assert np.allclose(empty, [0.46, -0.92]) and np.allclose(empty, 1.0)  # the hole, in NumPy itself
    assert not strict_allclose(empty, [0.46, -0.92]) and not strict_allclose(Tensor(empty), np.ones((3, 2)))
    assert not strict_allclose(np.ones(3), np.zeros((0, 3)))
    assert strict_allclose(np.zeros((0, 3)), np.zeros((0, 3))) and strict_allclose(np.ones(3), 1.0)
    assert not strict_allclose(np.ones(3), 2.0)


def test_a_function_that_returns_a_gradient_is_judged_as_a_rule_is():
    """13's tied_weight_grad returns a gradient; the verdict compares it with the reference's (EXACT_FUNCTIONS): the
    visible test's numerical_grad line, copied into the exercise, is refused, and the reference itself is not."""
    import pytest

    from grading.common.errors import Refusal
    from grading.grade.stand_ins import EXACT_FUNCTIONS, refuse_numerical_rule
    from tinytorch.core.embedding import tied_weight_grad
    from tinytorch.core.gradcheck import numerical_grad

    weight, ids, grad_logits = rng.normal(size=(5, 3)), np.array([4, 0, 4]), rng.normal(size=(3, 5))
    (by_differences,) = numerical_grad(lambda w: np.sum(grad_logits * (w[ids] @ w.T)), [weight])
    args = (weight, ids, grad_logits)
    assert "tied_weight_grad" in EXACT_FUNCTIONS
    assert refuse_numerical_rule("tied_weight_grad", tied_weight_grad(*args), tied_weight_grad, args, {}) is False
    with pytest.raises(Refusal, match="tied_weight_grad: the gradient it returned agrees with the exact one only"):
        refuse_numerical_rule("tied_weight_grad", by_differences, tied_weight_grad, args, {})


def test_a_formula_that_loses_digits_at_a_few_elements_is_not_called_numerical():
    """A student's BCE target gradient log(1/p - 1) is log((1 - p)/p), but at the clipped p = 1 - 1e-12 it keeps only
    a few digits; at the other elements it is exact. Finite differences miss every element."""
    p = np.array([1e-12, 1 - 1e-12, 1e-12, 1 - 1e-12, 0.5, 0.3, 0.8])
    reference = np.log(1 - p) - np.log(p)
    student = np.log(1 / p - 1)
    assert np.max(np.abs(student - reference)) / np.max(np.abs(reference)) > 1e-7  # what the old test called numerical
    assert numerical_gaps((student,), (reference,), np.ones(7)) == []
    numeric = np.array([(np.log(1 - (q + 1e-14)) - np.log(1 - (q - 1e-14))) / 2e-14 for q in p[4:]])
    exact = -1 / (1 - p[4:])
    assert [index for index, _ in numerical_gaps((numeric,), (exact,), np.ones(3))] == [0]


def test_finite_differences_are_found_where_most_elements_are_exact_zeros():
    "ReLU's rule by differences: the masked elements are exactly 0 either way and are not counted."
    mask = x > 0.8
    exact = np.where(mask, g, 0.0)
    numeric = np.where(mask, g * central(lambda v: v, 1e-6), 0.0)
    assert mask.mean() < 0.5 and [index for index, _ in numerical_gaps((numeric,), (exact,), g)] == [0]


def test_a_formula_is_not_refused_where_the_inputs_make_every_formulas_rounding_large():
    """Batch norm over a batch of two: the normalised output is ±1 whatever x is, so the exact gradient of x is a
    cancellation of terms ~1e5 times larger, and the textbook path-by-path formula (the variance's, the mean's, then
    the direct term) met the reference only to 1e-11, which once read as finite differences (a correct alternative
    lost 3 points in 3 of 5 variants). Measured against the reference's own rounding there (long double), it is a
    formula; a gradient off by 1e-8 on a well-conditioned batch is still refused."""
    from grading.common.errors import Refusal
    from grading.grade.stand_ins import refuse_numerical_rule
    from tinytorch.core import norm

    def path_by_path(function, grad_output):
        x, gamma, _ = function.saved_tensors
        x, gamma, g = x.data, gamma.data, grad_output.data
        n, mu, var = x.shape[0], x.mean(axis=0), x.var(axis=0)
        inv_std = 1 / np.sqrt(var + 1e-5)
        g_hat = g * gamma
        g_var = (g_hat * (x - mu)).sum(axis=0) * -0.5 * inv_std**3
        g_mu = -(g_hat * inv_std).sum(axis=0) + g_var * (-2 * (x - mu)).mean(axis=0)
        grad_x = g_hat * inv_std + g_var * 2 * (x - mu) / n + g_mu / n
        return (Tensor(grad_x), None, None)

    rng = np.random.default_rng(3)
    refused = 0
    for shape in [(2, 1), (2, 3)] * 10:
        params = [Tensor(rng.normal(size=shape[1]), requires_grad=True) for _ in range(2)]
        out = norm.batch_norm(Tensor(rng.normal(size=shape), requires_grad=True), *params)
        args = (out._grad_fn, Tensor(rng.normal(size=shape)))
        refuse_numerical_rule("BatchNormBackward.apply", path_by_path(*args), norm.BatchNormBackward.apply, args, {})
        exact = norm.BatchNormBackward.apply(*args)
        try:
            off = (Tensor(exact[0].data * (1 + 1e-8 * rng.normal(size=shape))), *exact[1:])
            refuse_numerical_rule("BatchNormBackward.apply", off, norm.BatchNormBackward.apply, args, {})
        except Refusal:
            refused += 1
    out = norm.batch_norm(Tensor(rng.normal(size=(5, 3)), requires_grad=True), *params)
    args = (out._grad_fn, Tensor(rng.normal(size=(5, 3))))
    exact = norm.BatchNormBackward.apply(*args)
    with pytest.raises(Refusal, match="as finite differences"):
        off = (Tensor(exact[0].data * (1 + 1e-8 * rng.normal(size=(5, 3)))), *exact[1:])
        refuse_numerical_rule("BatchNormBackward.apply", off, norm.BatchNormBackward.apply, args, {})
    assert refused >= 10, "a gradient off by 1e-8 is still refused on most batches of two"
