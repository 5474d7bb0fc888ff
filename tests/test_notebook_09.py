"""Notebook 09's claims about initialisation, held against the code, and its test cells held against the wrong
versions of its exercises that readers found passing them (issue 23, point 5; issue 24): a `parameters()` that looks
only one level deep, and a `LinearBackward` that averages the bias's gradient or takes one sample as it is."""

import numpy as np
import pytest
from test_notebook_errors import cell_source, notebook_text, with_solution

from conftest import REPO
from grading.common.notebooks import nbgrader_meta, read_notebook
from tinytorch.core.nn import Linear

GIVEN = ["c09-002", "c09-003", "c09-005", "c09-linear-rule", "c09-007", "c09-009", "c09-init"]


def rms_through_relu_layers(init, depth, width=512, batch=256):
    "Root mean square of each layer's output for unit-normal inputs, NumPy only, the biases left out."
    h = np.random.default_rng(0).normal(size=(batch, width))
    found = []
    for i in range(depth):
        h = np.maximum(h @ Linear(width, width, seed=i, init=init).weight.data.T, 0)
        found.append(np.sqrt(np.mean(h**2)))
    return np.array(found)


def test_the_default_initialisation_shrinks_relu_activations_by_root_six_per_layer_and_he_keeps_them():
    text = cell_source("09_nn", "c09-init-md")
    assert "does not grow with the width" not in notebook_text("09_nn"), "the default shrinks the scale"
    assert "\\sqrt 6" in text
    default = rms_through_relu_layers("default", 4)
    assert np.allclose(default[1:] / default[:-1], 1 / np.sqrt(6), rtol=0.1), default
    assert np.isclose(default[0], 1 / np.sqrt(6), rtol=0.1), default
    he = rms_through_relu_layers("he", 10)
    assert np.all((he > 0.8) & (he < 1.25)), he


def notebook_09_with(cell_id, solution):
    "The given cells of notebook 09 run in a fresh namespace, with `solution` as the student's part of `cell_id`."
    namespace = {}
    for given in GIVEN:
        source = cell_source("09_nn", given)
        exec(with_solution(source, solution) if given == cell_id and solution else source, namespace)
    return namespace


def failing_tests(namespace, tests):
    "The names of the notebook's test cells (visible and hidden) that raise in `namespace`."
    failed = []
    for name in tests:
        cell = next(c for c in ("c09-011", "c09-012", "c09-013", "c09-014") if name in cell_source("09_nn", c))
        try:
            exec(cell_source("09_nn", cell), dict(namespace))
        except Exception:  # noqa: BLE001 - any failure of a test cell counts as caught
            failed.append(name)
    return failed


ONE_LEVEL = """if isinstance(value, Tensor) and value.requires_grad:
    found.append(value)
elif isinstance(value, Module):
    found.extend(v for v in vars(value).values() if isinstance(v, Tensor) and v.requires_grad)
elif isinstance(value, (list, tuple)):
    for item in value:
        visit(item)"""

LINEAR_RULE = """g = grad_output
grad_x = g @ weight if self.needs_grad(0) else None
if x.ndim != 2:
    g, x = g.reshape(-1, g.shape[-1]), x.reshape(-1, x.shape[-1])
grads = (grad_x, g.T @ x)
return grads + (g.sum(axis=0),) if len(self.saved_tensors) == 3 else grads"""
MEAN_BIAS = LINEAR_RULE.replace("g.sum(axis=0)", "g.mean(axis=0)")
ONE_SAMPLE_AS_IT_IS = LINEAR_RULE.replace("if x.ndim != 2:", "if x.ndim > 2:")


@pytest.mark.parametrize(
    "cell_id, solution, tests",
    [
        ("c09-005", ONE_LEVEL, ["parameters", "parameters_hidden"]),
        ("c09-linear-rule", MEAN_BIAS, ["linear_seed_example", "linear_hidden"]),
        ("c09-linear-rule", ONE_SAMPLE_AS_IT_IS, ["linear_seed_example", "linear_hidden"]),
    ],
    ids=["parameters one level deep", "bias's gradient averaged", "one sample not made a row"],
)
def test_the_visible_and_the_hidden_test_of_notebook_09_each_catch_a_wrong_version(cell_id, solution, tests):
    assert failing_tests(notebook_09_with(cell_id, None), tests) == [], "the reference solution passes"
    assert failing_tests(notebook_09_with(cell_id, solution), tests) == tests


def test_the_reference_linear_rule_is_the_one_these_tests_edit():
    source = cell_source("09_nn", "c09-linear-rule")
    assert all(line.strip() in source for line in LINEAR_RULE.splitlines())


def hidden_init_test(variant, linear=Linear):
    "Notebook 09's hidden init_bound test as one student's variant draws it, with `linear` as the student's Linear."
    from grading.grade import variant as variants
    from tinytorch.core.nn import init_bound
    from tinytorch.core.tensor import Tensor

    source = next(
        cell.source
        for cell in read_notebook(REPO / "notebooks" / "09_nn.ipynb").cells
        if nbgrader_meta(cell).get("grade_id") == "init_bound_hidden"
    )
    variants.use(variant)
    try:
        exec(source, {"np": np, "Linear": linear, "init_bound": init_bound, "Tensor": Tensor})
    finally:
        variants.use(None)


def test_the_reference_passes_the_hidden_he_depth_check_for_every_student_s_draw():
    "Each student draws a width and inputs; the reference must pass for all of them (it failed 1 draw in 17 at 0.5)."
    for number in range(60):
        hidden_init_test(f"student{number}")


def test_the_hidden_he_depth_check_catches_a_gain_of_one():
    def half_variance(fan_in, fan_out, init="default", seed=None):
        layer = Linear(fan_in, fan_out, init=init, seed=seed)
        if init == "he":
            layer.weight.data = layer.weight.data / np.sqrt(2)  # variance 1 / fan_in: the ReLU's half forgotten
        return layer

    with pytest.raises(AssertionError, match="He layers of width"):
        hidden_init_test("student0", linear=half_variance)


NO_MODULE_BRANCH = """if isinstance(value, Tensor) and value.requires_grad:
    found.append(value)
elif isinstance(value, (list, tuple)):
    for item in value:
        visit(item)"""

NO_LIST_BRANCH = """if isinstance(value, Tensor) and value.requires_grad:
    found.append(value)
elif isinstance(value, Module):
    found.extend(value.parameters())"""

STANDARD_DEVIATION = """variance = 2 / fan_in if scheme == "he" else 2 / (fan_in + fan_out)
return float(np.sqrt(variance))"""

FANS_SWAPPED = """variance = 2 / fan_out if scheme == "he" else 2 / (fan_in + fan_out)
return float(np.sqrt(3 * variance))"""

XAVIER_FORWARD_ONLY = """variance = 2 / fan_in if scheme == "he" else 1 / fan_in
return float(np.sqrt(3 * variance))"""

XAVIER_BACKWARD_ONLY = """variance = 2 / fan_in if scheme == "he" else 1 / fan_out
return float(np.sqrt(3 * variance))"""


def visible_message(cell_id, solution, test_cell):
    "The message of notebook 09's visible test `test_cell` for `solution` as the student's part of `cell_id`."
    with pytest.raises(AssertionError) as failure:
        exec(cell_source("09_nn", test_cell), dict(notebook_09_with(cell_id, solution)))
    return str(failure.value)


@pytest.mark.parametrize(
    "cell_id, solution, test_cell, cause, not_cause",
    [
        ("c09-005", NO_MODULE_BRANCH, "c09-013", "its own parameters()", "search lists"),
        ("c09-005", NO_LIST_BRANCH, "c09-013", "search lists and tuples", "its own parameters()"),
        ("c09-init", STANDARD_DEVIATION, "c09-init-test", "the standard deviation", "variance the condition"),
        ("c09-init", FANS_SWAPPED, "c09-init-test", "fan_in and fan_out swapped", "standard deviation"),
        ("c09-init", XAVIER_FORWARD_ONLY, "c09-init-test", "forward pass's scale alone", "backward"),
        ("c09-init", XAVIER_BACKWARD_ONLY, "c09-init-test", "backward pass's scale alone", "forward"),
    ],
    ids=[
        "no Module branch",
        "lists not searched",
        "init_bound returns the std",
        "init_bound swaps the fans",
        "xavier from the forward pass alone",
        "xavier from the backward pass alone",
    ],
)
def test_a_visible_test_of_notebook_09_names_the_mistake_a_wrong_answer_identifies(
    cell_id, solution, test_cell, cause, not_cause
):
    message = visible_message(cell_id, solution, test_cell)
    assert cause in message and not_cause not in message, message


def test_a_layer_is_called_with_options_by_name_as_in_pytorch():
    "attention(x, mask=mask) inside a block (18) reached Module.__call__ as a TypeError before: 2 points lost."
    from tinytorch.core.attention import MultiHeadAttention, causal_mask
    from tinytorch.core.tensor import Tensor

    attention = MultiHeadAttention(4, 2, seed=0)
    x, mask = Tensor(np.random.default_rng(0).normal(size=(2, 3, 4))), causal_mask(3)
    assert np.array_equal(attention(x, mask=mask).data, attention(x, mask).data)
