"""Mutation testing: for every backward rule, wrong versions of the solution must lose points in that rule's tests.

Each mutant is the solved notebook with one edit, submitted as its own student; all are graded in one autograde run.
"""
import json

import pytest

from conftest import REPO, run_cli
from grading.demo import solved
from grading.notebooks import read_notebook, write_notebook

OVERWRITE = "out = np.zeros({shape})\n        out[{index}] = grad_output.data\n        return (Tensor(out),)"

# (notebook, tests of the rule, what the mutant gets wrong, solution text, mutated text)
MUTANTS = [
    ("04_elementwise", "add_backward", "broadcast gradient not reduced",
     "return unbroadcast(grad_output, a.shape), unbroadcast(grad_output, b.shape)", "return grad_output, grad_output"),
    ("04_elementwise", "add_backward", "b's gradient dropped",
     "unbroadcast(grad_output, b.shape)", "unbroadcast(grad_output * 0, b.shape)"),
    ("04_elementwise", "sub_backward", "sign of b's gradient", "unbroadcast(-grad_output, b.shape)", "unbroadcast(grad_output, b.shape)"),
    ("04_elementwise", "sub_backward", "broadcast gradient not reduced",
     "return unbroadcast(grad_output, a.shape), unbroadcast(-grad_output, b.shape)", "return grad_output, -grad_output"),
    ("04_elementwise", "mul_backward", "operands swapped",
     "unbroadcast(grad_output * b, a.shape), unbroadcast(grad_output * a, b.shape)",
     "unbroadcast(grad_output * a, a.shape), unbroadcast(grad_output * b, b.shape)"),
    ("04_elementwise", "mul_backward", "broadcast gradient not reduced",
     "return unbroadcast(grad_output * b, a.shape), unbroadcast(grad_output * a, b.shape)", "return grad_output * b, grad_output * a"),
    ("04_elementwise", "div_backward", "b not squared", "-grad_output * a / (b * b)", "-grad_output * a / b"),
    ("04_elementwise", "div_backward", "sign of b's gradient", "-grad_output * a / (b * b)", "grad_output * a / (b * b)"),
    ("04_elementwise", "neg_backward", "sign kept", "return (-grad_output,)", "return (grad_output,)"),
    ("04_elementwise", "neg_backward", "scaled", "return (-grad_output,)", "return (-2 * grad_output,)"),
    ("04_elementwise", "pow_backward", "exponent not lowered", "p * a ** (p - 1)", "p * a ** p"),
    ("04_elementwise", "pow_backward", "factor p missing", "p * a ** (p - 1)", "a ** (p - 1)"),
    ("04_elementwise", "exp_backward", "grad_output ignored", "return (grad_output * self.output,)", "return (self.output,)"),
    ("04_elementwise", "exp_backward", "output squared", "return (grad_output * self.output,)", "return (grad_output * self.output * self.output,)"),
    ("04_elementwise", "log_backward", "multiplied instead of divided", "return (grad_output / a,)", "return (grad_output * a,)"),
    ("04_elementwise", "log_backward", "divided by a squared", "return (grad_output / a,)", "return (grad_output / (a * a),)"),
    ("05_matmul_and_reductions", "matmul_backward", "b not transposed", "g2 @ swap_last(b2)", "g2 @ b2"),
    ("05_matmul_and_reductions", "matmul_backward", "batch axes not reduced",
     "grad_a = unbroadcast(g2 @ swap_last(b2), a2.shape)", "grad_a = g2 @ swap_last(b2)"),
    ("05_matmul_and_reductions", "sum_backward", "not broadcast back",
     "return (grad_output.reshape(kept_shape(x.shape, self.axis)) * np.ones(x.shape),)",
     "return (grad_output.reshape(kept_shape(x.shape, self.axis)),)"),
    ("05_matmul_and_reductions", "sum_backward", "divided like a mean",
     "* np.ones(x.shape),)", "* np.ones(x.shape) / x.size,)"),
    ("05_matmul_and_reductions", "mean_backward", "1/N missing", "* np.ones(x.shape) / count,)", "* np.ones(x.shape),)"),
    ("05_matmul_and_reductions", "mean_backward", "divided by all elements", "* np.ones(x.shape) / count,)", "* np.ones(x.shape) / x.size,)"),
    ("05_matmul_and_reductions", "reshape_backward", "axes reversed", "return (grad_output.reshape(x.shape),)", "return (grad_output.reshape(x.shape[::-1]),)"),
    ("05_matmul_and_reductions", "reshape_backward", "scaled", "return (grad_output.reshape(x.shape),)", "return (2 * grad_output.reshape(x.shape),)"),
    ("05_matmul_and_reductions", "transpose_backward", "permutation not inverted", "tuple(np.argsort(self.axes))", "self.axes"),
    ("05_matmul_and_reductions", "transpose_backward", "all axes reversed", "tuple(np.argsort(self.axes))", "None"),
    ("05_matmul_and_reductions", "index_backward", "repeated indices overwritten",
     "return (scatter_add(grad_output, self.index, x.shape),)", OVERWRITE.format(shape="x.shape", index="self.index")),
    ("05_matmul_and_reductions", "index_backward", "scaled", "return (scatter_add(grad_output, self.index, x.shape),)",
     "return (scatter_add(grad_output * 2, self.index, x.shape),)"),
    ("06_autograd", "accumulate", "gradient overwritten instead of accumulated",
     "grads[key] = grad if key not in grads else grads[key] + grad", "grads[key] = grad"),
    ("06_autograd", "accumulate", "gradients multiplied", "else grads[key] + grad", "else grads[key] * grad"),
    ("07_activations", "relu_backward", "mask >= instead of >", "(x.data > 0)", "(x.data >= 0)"),
    ("07_activations", "relu_backward", "mask inverted", "(x.data > 0)", "(x.data < 0)"),
    ("07_activations", "sigmoid_backward", "from the input instead of the output", "return (grad_output * s * (1 - s),)",
     "return (grad_output * self.saved_tensors[0] * (1 - self.saved_tensors[0]),)"),
    ("07_activations", "sigmoid_backward", "factor s missing", "return (grad_output * s * (1 - s),)", "return (grad_output * (1 - s),)"),
    ("07_activations", "tanh_backward", "not squared", "(1 - t * t)", "(1 - t)"),
    ("07_activations", "tanh_backward", "sign", "(1 - t * t)", "(1 + t * t)"),
    ("07_activations", "softmax_backward", "Jacobian diagonal only",
     "return (s * (grad_output - (grad_output * s).sum(axis=self.axis, keepdims=True)),)", "return (s * (1 - s) * grad_output,)"),
    ("07_activations", "softmax_backward", "summed over every axis", "(grad_output * s).sum(axis=self.axis, keepdims=True)", "(grad_output * s).sum()"),
    ("07_activations", "log_softmax_backward", "log-probabilities instead of probabilities",
     "self.output.exp() * grad_output.sum", "self.output * grad_output.sum"),
    ("07_activations", "log_softmax_backward", "Jacobian diagonal only",
     "grad_output - self.output.exp() * grad_output.sum(axis=self.axis, keepdims=True)", "grad_output - self.output.exp() * grad_output"),
    ("08_losses", "mse_backward", "1/N missing", "(prediction - target) / prediction.size", "(prediction - target)"),
    ("08_losses", "mse_backward", "factor 2 missing", "grad_output * 2 * (prediction - target)", "grad_output * (prediction - target)"),
    ("08_losses", "bce_backward", "1/N missing", "grad_p = grad_output * (p - target) / (p * (1 - p)) / n",
     "grad_p = grad_output * (p - target) / (p * (1 - p))"),
    ("08_losses", "bce_backward", "sign", "grad_output * (p - target)", "grad_output * (target - p)"),
    ("08_losses", "cross_entropy_backward", "1/batch missing", "- one_hot) / logits.shape[0], None", "- one_hot), None"),
    ("08_losses", "cross_entropy_backward", "one-hot not subtracted", "(softmax(logits, axis=1) - one_hot)", "softmax(logits, axis=1)"),
    ("12_conv", "conv2d_backward", "kernel flipped for grad_x", "g_rows @ w.data.reshape(f, -1)", "g_rows @ w.data[:, :, ::-1, ::-1].reshape(f, -1)"),
    ("12_conv", "conv2d_backward", "bias gradient averaged", "grad_b = g.sum(axis=(0, 2, 3))", "grad_b = g.mean(axis=(0, 2, 3))"),
    ("12_conv", "maxpool2d_backward", "gradient to every element",
     "np.put_along_axis(grad_windows, self.argmax[..., None], grad_output.data[..., None], axis=-1)",
     "grad_windows += grad_output.data[..., None]"),
    ("12_conv", "maxpool2d_backward", "average-pool gradient",
     "np.put_along_axis(grad_windows, self.argmax[..., None], grad_output.data[..., None], axis=-1)",
     "grad_windows += grad_output.data[..., None] / (self.k * self.k)"),
    ("13_embedding", "embedding_backward", "repeated ids overwritten",
     "return (scatter_add(grad_output, self.ids, weight.shape),)", OVERWRITE.format(shape="weight.shape", index="self.ids")),
    ("13_embedding", "embedding_backward", "averaged over ids",
     "return (scatter_add(grad_output, self.ids, weight.shape),)",
     "return (scatter_add(grad_output / max(self.ids.size, 1), self.ids, weight.shape),)"),
]


def mutate(old, new):
    "An edit for demo.solved(): replace `old` by `new` in the solution cell that holds it."
    def edit(grade_id, code):
        return code.replace(old, new) if old in code else code
    return edit


@pytest.fixture(scope="module")
def graded_mutants(kit, tmp_path_factory):
    root = tmp_path_factory.mktemp("mutants")
    for number, (notebook, _, _, old, new) in enumerate(MUTANTS):
        source = read_notebook(REPO / "notebooks" / f"{notebook}.ipynb")
        answers = [c.source for c in source.cells if c.metadata.get("nbgrader", {}).get("solution")]
        assert sum(a.count(old) for a in answers) == 1, f"mutant {number}: {old!r} must occur once in the solutions"
        nb = solved(read_notebook(kit / notebook / f"{notebook}.ipynb"), source, edit=mutate(old, new))
        write_notebook(nb, root / "submissions" / f"mutant{number:02d}" / notebook / f"{notebook}.ipynb")
    result = run_cli("autograde", root / "submissions", "--out", root / "grades")
    assert result.returncode == 0, result.stderr
    return json.loads((root / "grades" / "gradebook.json").read_text())


def test_every_mutant_loses_points_in_its_rules_tests(graded_mutants, capsys):
    caught, survivors = {}, []
    for number, (notebook, rule, what, _, _) in enumerate(MUTANTS):
        tests = graded_mutants[f"mutant{number:02d}"][notebook]["tests"]
        own = {name: (t["score"], t["max_score"]) for name, t in tests.items() if name in (rule, rule + "_hidden")}
        assert own, f"no tests named {rule} in {notebook}"
        lost = sum(maximum - score for score, maximum in own.values())
        total = caught.setdefault(notebook, [0, 0])
        total[1] += 1
        if lost > 0:
            total[0] += 1
        else:
            survivors.append(f"{notebook} {rule}: {what}")
    with capsys.disabled():
        print("\nmutation score (caught / total):")
        for notebook, (hit, total) in caught.items():
            print(f"  {notebook:<26} {hit}/{total}  {100 * hit / total:.0f}%")
    assert not survivors, f"mutants not caught: {survivors}"


def test_at_least_two_mutants_per_rule():
    from collections import Counter
    counts = Counter(rule for _, rule, *_ in MUTANTS)
    assert min(counts.values()) >= 2 and len(counts) >= 25, counts
