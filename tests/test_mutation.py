"""Mutation testing: for every backward rule, wrong versions of the solution must lose points in that rule's tests.

Each mutant is the solved notebook with one edit, submitted as its own student. The correct alternative styles of a
notebook go in together, as one student who wrote each exercise their own way, handed in by three students. Everything
is graded in one autograde run with a fixed course secret: each student has a variant of the hidden tests of their own
(grading/grade/variant.py), so each mutant meets one variant and each group of alternatives three.
"""

import functools
import json

import pytest

from conftest import MUL_GRADS, REPO, run_cli
from grading.common.answers import solved
from grading.common.notebooks import read_notebook, strip_markers, write_notebook

MUL_BODY = (
    "grad_a = grad_b = None\n        if self.needs_grad(0):\n            "
    + MUL_GRADS
    + "\n        return grad_a, grad_b"
)
OVERWRITE = "out = np.zeros({shape})\n        out[{index}] = grad_output.data\n        return (Tensor(out),)"
RECURSIVE_ORDER_OLD = """    while stack:
        tensor, expanded = stack.pop()
        if expanded:
            order.append(tensor)
            continue
        if id(tensor) in visited:
            continue
        visited.add(id(tensor))
        stack.append((tensor, True))
        function = tensor._grad_fn  # inputs_of(tensor), written out: this loop runs for every tensor of the graph
        for t in () if function is None else function.saved_tensors or ():
            if getattr(t, "requires_grad", False) and id(t) not in visited:
                stack.append((t, False))"""
RECURSIVE_ORDER_NEW = """    def visit(tensor):
        if id(tensor) not in visited:
            visited.add(id(tensor))
            for t in inputs_of(tensor):
                visit(t)
            order.append(tensor)

    visit(root)"""

# MaxPool2dBackward's whole apply, and the same rule written straight into the image (a correct alternative, and the
# base of two mutants)
MAXPOOL_WHOLE = """(x,) = self.saved_tensors
        g = np.empty_like(self.argmax, dtype=grad_output.dtype)  # g, laid out in memory as argmax (and x) are
        g[...] = grad_output.data
        positions = np.arange(self.k * self.k).reshape(-1, 1, 1, 1, 1)
        winners = self.argmax == positions  # one-hot, one slice per place in the window: (k·k, N, C, H', W')
        grad_windows = np.moveaxis(winners * g, 0, -1)  # (N, C, H', W', k·k), as unwindow takes it
        return (Tensor(unwindow(grad_windows, x.shape, self.k, self.stride)),)"""
MAXPOOL_ROUTING = "grad_windows = np.moveaxis(winners * g, 0, -1)"
MAXPOOL_DIRECT = """(x,) = self.saved_tensors
        n, c, out_h, out_w = self.argmax.shape
        rows = np.arange(out_h)[:, None] * self.stride + self.argmax // self.k
        cols = np.arange(out_w)[None, :] * self.stride + self.argmax % self.k
        grad_x = np.zeros(x.shape, dtype=grad_output.dtype)
        at = (np.arange(n)[:, None, None, None], np.arange(c)[None, :, None, None], rows, cols)
        np.add.at(grad_x, at, grad_output.data)
        return (Tensor(grad_x),)"""

# 17's gradient of x, whole: the batch-norm mutant "constants" replaces it; layer norm's bracket, its axis changed
BN_GRAD_X = "grad_x = (g - g.mean(axis=0, keepdims=True) - x_hat * (g * x_hat).mean(axis=0, keepdims=True)) * inv_std"
LN_GRAD_X = "(g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))"

# 18's gradient of the scores, scaled; and the scale alone, as the solution writes it
ATTENTION_SCORES = "grad_scores = p * (grad_p - (grad_p * p).sum(axis=-1, keepdims=True)) * q.shape[-1] ** -0.5"
SCALE = " * q.shape[-1] ** -0.5"

# (notebook, tests of the rule, what the mutant gets wrong, solution text, mutated text)
MUTANTS = [
    (
        "04_elementwise",
        "add_backward",
        "broadcast gradient not reduced",
        "return unbroadcast(grad_output, a.shape), unbroadcast(grad_output, b.shape)",
        "return grad_output, grad_output",
    ),
    (
        "04_elementwise",
        "add_backward",
        "b's gradient dropped",
        "unbroadcast(grad_output, b.shape)",
        "unbroadcast(grad_output * 0, b.shape)",
    ),
    (
        "04_elementwise",
        "sub_backward",
        "sign of b's gradient",
        "unbroadcast(-grad_output, b.shape)",
        "unbroadcast(grad_output, b.shape)",
    ),
    (
        "04_elementwise",
        "sub_backward",
        "broadcast gradient not reduced",
        "return unbroadcast(grad_output, a.shape), unbroadcast(-grad_output, b.shape)",
        "return grad_output, -grad_output",
    ),
    (
        "04_elementwise",
        "mul_backward",
        "operands swapped",
        MUL_GRADS,
        "grad_a = unbroadcast(grad_output * a, a.shape)\n        if self.needs_grad(1):\n"
        "            grad_b = unbroadcast(grad_output * b, b.shape)",
    ),
    (
        "04_elementwise",
        "mul_backward",
        "broadcast gradient not reduced",
        MUL_GRADS,
        "grad_a = grad_output * b\n        if self.needs_grad(1):\n            grad_b = grad_output * a",
    ),
    ("04_elementwise", "div_backward", "b not squared", "-grad_output * a / (b * b)", "-grad_output * a / b"),
    (
        "04_elementwise",
        "div_backward",
        "sign of b's gradient",
        "-grad_output * a / (b * b)",
        "grad_output * a / (b * b)",
    ),
    ("04_elementwise", "neg_backward", "sign kept", "return (-grad_output,)", "return (grad_output,)"),
    ("04_elementwise", "neg_backward", "scaled", "return (-grad_output,)", "return (-2 * grad_output,)"),
    ("04_elementwise", "pow_backward", "exponent not lowered", "p * a ** (p - 1)", "p * a ** p"),
    ("04_elementwise", "pow_backward", "factor p missing", "p * a ** (p - 1)", "a ** (p - 1)"),
    (
        "04_elementwise",
        "exp_backward",
        "grad_output ignored",
        "return (grad_output * self.output,)",
        "return (self.output,)",
    ),
    (
        "04_elementwise",
        "exp_backward",
        "output squared",
        "return (grad_output * self.output,)",
        "return (grad_output * self.output * self.output,)",
    ),
    (
        "04_elementwise",
        "log_backward",
        "multiplied instead of divided",
        "return (grad_output / a,)",
        "return (grad_output * a,)",
    ),
    (
        "04_elementwise",
        "log_backward",
        "divided by a squared",
        "return (grad_output / a,)",
        "return (grad_output / (a * a),)",
    ),
    ("05_matmul_and_reductions", "matmul_backward", "b not transposed", "g2 @ swap_last(b2)", "g2 @ b2"),
    (
        "05_matmul_and_reductions",
        "matmul_backward",
        "batch axes not reduced",
        "grad_a = unbroadcast(g2 @ swap_last(b2), a2.shape)",
        "grad_a = g2 @ swap_last(b2)",
    ),
    (
        "05_matmul_and_reductions",
        "sum_backward",
        "not broadcast back",
        "return (grad_output.reshape(kept_shape(x.shape, self.axis)) * np.ones(x.shape, dtype=grad_output.dtype),)",
        "return (grad_output.reshape(kept_shape(x.shape, self.axis)),)",
    ),
    (
        "05_matmul_and_reductions",
        "sum_backward",
        "divided like a mean",
        "* np.ones(x.shape, dtype=grad_output.dtype),)",
        "* np.ones(x.shape) / x.size,)",
    ),
    (
        "05_matmul_and_reductions",
        "mean_backward",
        "1/N missing",
        "dtype=grad_output.dtype) / count,)",
        "dtype=grad_output.dtype),)",
    ),
    (
        "05_matmul_and_reductions",
        "mean_backward",
        "divided by all elements",
        "dtype=grad_output.dtype) / count,)",
        "dtype=grad_output.dtype) / x.size,)",
    ),
    (
        "05_matmul_and_reductions",
        "reshape_backward",
        "axes reversed",
        "return (grad_output.reshape(x.shape),)",
        "return (grad_output.reshape(x.shape[::-1]),)",
    ),
    (
        "05_matmul_and_reductions",
        "reshape_backward",
        "scaled",
        "return (grad_output.reshape(x.shape),)",
        "return (2 * grad_output.reshape(x.shape),)",
    ),
    (
        "05_matmul_and_reductions",
        "transpose_backward",
        "permutation not inverted",
        "tuple(inverse)",
        "self.axes",
    ),
    ("05_matmul_and_reductions", "transpose_backward", "all axes reversed", "tuple(inverse)", "None"),
    (
        "05_matmul_and_reductions",
        "index_backward",
        "repeated indices overwritten",
        "return (scatter_add(grad_output, self.index, x.shape),)",
        OVERWRITE.format(shape="x.shape", index="self.index"),
    ),
    (
        "05_matmul_and_reductions",
        "index_backward",
        "scaled",
        "return (scatter_add(grad_output, self.index, x.shape),)",
        "return (scatter_add(grad_output * 2, self.index, x.shape),)",
    ),
    (
        "06_autograd",
        "accumulate",
        "gradient overwritten instead of accumulated",
        "grads[key] = grad if key not in grads else grads[key] + grad",
        "grads[key] = grad",
    ),
    ("06_autograd", "accumulate", "gradients multiplied", "else grads[key] + grad", "else grads[key] * grad"),
    ("07_activations", "relu_backward", "mask >= instead of >", "(x.data > 0)", "(x.data >= 0)"),
    ("07_activations", "relu_backward", "mask inverted", "(x.data > 0)", "(x.data < 0)"),
    (
        "07_activations",
        "sigmoid_backward",
        "from the input instead of the output",
        "return (grad_output * s * (1 - s),)",
        "return (grad_output * self.saved_tensors[0] * (1 - self.saved_tensors[0]),)",
    ),
    (
        "07_activations",
        "sigmoid_backward",
        "factor s missing",
        "return (grad_output * s * (1 - s),)",
        "return (grad_output * (1 - s),)",
    ),
    ("07_activations", "tanh_backward", "not squared", "(1 - t * t)", "(1 - t)"),
    ("07_activations", "tanh_backward", "sign", "(1 - t * t)", "(1 + t * t)"),
    (
        "07_activations",
        "softmax_backward",
        "Jacobian diagonal only",
        "return (s * (grad_output - (grad_output * s).sum(axis=self.axis, keepdims=True)),)",
        "return (s * (1 - s) * grad_output,)",
    ),
    (
        "07_activations",
        "softmax_backward",
        "summed over every axis",
        "(grad_output * s).sum(axis=self.axis, keepdims=True)",
        "(grad_output * s).sum()",
    ),
    (
        "07_activations",
        "log_softmax_backward",
        "log-probabilities instead of probabilities",
        "self.output.exp() * grad_output.sum",
        "self.output * grad_output.sum",
    ),
    (
        "07_activations",
        "log_softmax_backward",
        "Jacobian diagonal only",
        "grad_output - self.output.exp() * grad_output.sum(axis=self.axis, keepdims=True)",
        "grad_output - self.output.exp() * grad_output",
    ),
    ("08_losses", "mse_backward", "1/N missing", "(prediction - target) / prediction.size", "(prediction - target)"),
    (
        "08_losses",
        "mse_backward",
        "factor 2 missing",
        "grad_output * 2 * (prediction - target)",
        "grad_output * (prediction - target)",
    ),
    (
        "08_losses",
        "bce_backward",
        "1/N missing",
        "grad_p = grad_output * (p - target) / (p * (1 - p)) / n",
        "grad_p = grad_output * (p - target) / (p * (1 - p))",
    ),
    ("08_losses", "bce_backward", "sign", "grad_output * (p - target)", "grad_output * (target - p)"),
    (
        "08_losses",
        "cross_entropy_backward",
        "1/batch missing",
        "- one_hot) / logits.shape[0], None",
        "- one_hot), None",
    ),
    (
        "08_losses",
        "cross_entropy_backward",
        "one-hot not subtracted",
        "(self.probabilities() - one_hot)",
        "self.probabilities()",
    ),
    (
        "12_conv",
        "conv2d_backward",
        "kernel flipped for grad_x",
        "g_rows @ w.data.reshape(f, -1)",
        "g_rows @ w.data[:, :, ::-1, ::-1].reshape(f, -1)",
    ),
    (
        "12_conv",
        "conv2d_backward",
        "bias gradient averaged",
        "grad_b = np.ones(len(g_rows), dtype=g.dtype) @ g_rows",
        "grad_b = np.ones(len(g_rows), dtype=g.dtype) @ g_rows / len(g_rows)",
    ),
    (
        "12_conv",
        "maxpool2d_backward",
        "gradient to every element",
        MAXPOOL_ROUTING,
        "grad_windows = np.moveaxis(np.ones_like(winners) * g, 0, -1)",
    ),
    (
        "12_conv",
        "maxpool2d_backward",
        "average-pool gradient",
        MAXPOOL_ROUTING,
        "grad_windows = np.moveaxis(np.ones_like(winners) * g / (self.k * self.k), 0, -1)",
    ),
    (
        "13_embedding",
        "embedding_backward",
        "repeated ids overwritten",
        "return (scatter_add(grad_output, self.ids, weight.shape),)",
        OVERWRITE.format(shape="weight.shape", index="self.ids"),
    ),
    (
        "13_embedding",
        "embedding_backward",
        "averaged over ids",
        "return (scatter_add(grad_output, self.ids, weight.shape),)",
        "return (scatter_add(grad_output / max(self.ids.size, 1), self.ids, weight.shape),)",
    ),
    (
        "02_function",
        "attach",
        "extras dropped",
        "result._grad_fn = function_cls(*inputs, **extras)",
        "result._grad_fn = function_cls(*inputs)",
    ),
    (
        "03_gradcheck",
        "numerical_grad",
        "element not put back before the next is nudged",
        "            flat[j] = original\n            grad[j]",
        "            grad[j]",
    ),
    (
        "13_embedding",
        "sparse_rows",
        "repeated ids added once (buffered +=)",
        "np.add.at(values, inverse, grad.reshape(-1, grad.shape[-1]))",
        "values[inverse] += grad.reshape(-1, grad.shape[-1])",
    ),
    (
        "13_embedding",
        "sparse_rows",
        "values float64 whatever the gradient's dtype",
        "values = np.zeros((len(rows), grad.shape[-1]), dtype=grad.dtype)",
        "values = np.zeros((len(rows), grad.shape[-1]))",
    ),
    (
        "13_embedding",
        "sparse_rows",
        "repeated ids averaged",
        "return rows, values",
        "return rows, values / np.bincount(inverse, minlength=len(rows)).reshape(-1, 1)",
    ),
    (
        "13_embedding",
        "tied_gradient",
        "the output projection's use only",
        "return output_use + input_use",
        "return output_use",
    ),
    (
        "13_embedding",
        "tied_gradient",
        "the lookup's use only",
        "return output_use + input_use",
        "return input_use",
    ),
    (
        "01_tensor",
        "tensor_elementwise",
        "NumPy's broadcast error passed on (it does not name the shapes as the course does)",
        "raise broadcast_error(symbol, a.shape, b.shape) from None",
        "raise",
    ),
    (
        "01_tensor",
        "tensor_reductions",
        "keepdims ignored",
        "return Tensor(x.data.sum(axis=axis, keepdims=keepdims))",
        "return Tensor(x.data.sum(axis=axis))",
    ),
    (
        "09_nn",
        "parameters",
        "lists and tuples not searched (a Sequential's layers are a list)",
        "elif isinstance(value, (list, tuple)):\n                for item in value:\n                    visit(item)",
        "elif isinstance(value, dict):\n                for item in value.values():\n                    visit(item)",
    ),
    (
        "09_nn",
        "linear",
        "the bias's gradient averaged over the batch",
        "return grads + (g.sum(axis=0),) if len(self.saved_tensors) == 3 else grads",
        "return grads + (g.mean(axis=0),) if len(self.saved_tensors) == 3 else grads",
    ),
    ("09_nn", "linear", "the weight's gradient with its axes swapped", "g.T @ x)", "x.T @ g)"),
    ("09_nn", "linear", "a batch of sequences not made rows", "if x.ndim != 2:", "if x.ndim == 1:"),
    ("09_nn", "init_bound", "He's variance from fan_out", "2 / fan_in if", "2 / fan_out if"),
    (
        "11_training",
        "accuracy",
        "the number right, not the fraction",
        "return float(np.mean(np.argmax(logits.data, axis=1) == np.asarray(labels)))",
        "return float(np.sum(np.argmax(logits.data, axis=1) == np.asarray(labels)))",
    ),
    (
        "14_higher_order",
        "hvp",
        "a loss whose gradient does not depend on the parameters (H = 0) not handled",
        "\n    if not isinstance(dot, Tensor) or not dot.requires_grad:\n        return [Tensor(np.zeros(p.shape, dtype=p.dtype)) for p in params]",
        "",
    ),
    (
        "17_norm",
        "batch_norm_backward",
        "unbiased variance (N - 1) in the backward, the forward's is biased",
        "inv_std = 1 / np.sqrt(x.data.var(axis=0, keepdims=True) + self.eps)",
        "inv_std = 1 / np.sqrt(x.data.var(axis=0, ddof=1, keepdims=True) + self.eps)",
    ),
    (
        "17_norm",
        "batch_norm_backward",
        "the path through the mean missing",
        "(g - g.mean(axis=0, keepdims=True) - x_hat",
        "(g - x_hat",
    ),
    ("17_norm", "batch_norm_backward", "mean and variance treated as constants", BN_GRAD_X, "grad_x = g * inv_std"),
    (
        "17_norm",
        "batch_norm_backward",
        "the path through the variance missing",
        " - x_hat * (g * x_hat).mean(axis=0, keepdims=True)",
        "",
    ),
    (
        "17_norm",
        "running_statistics",
        "biased variance in the running average",
        "batch.var(axis=0) * n / (n - 1)",
        "batch.var(axis=0)",
    ),
    (
        "17_norm",
        "running_statistics",
        "evaluation normalises with the batch's statistics",
        "return (x - self.running_mean) / np.sqrt(self.running_var + self.eps) * self.gamma + self.beta",
        "return batch_norm(x, self.gamma, self.beta, self.eps)",
    ),
    (
        "17_norm",
        "layer_norm_backward",
        "the path through the mean missing",
        "(g - g.mean(axis=-1, keepdims=True) - x_hat",
        "(g - x_hat",
    ),
    (
        "17_norm",
        "layer_norm_backward",
        "gamma's gradient summed over axis 0 only",
        "(grad_output * x_hat).sum(axis=leading)",
        "(grad_output * x_hat).sum(axis=0)",
    ),
    ("17_norm", "dropout_forward", "evaluation mode still drops", "if not training or p == 0:", "if p == 0:"),
    (
        "17_norm",
        "dropout_forward",
        "kept entries not scaled",
        "Tensor(x.data * mask / (1 - p))",
        "Tensor(x.data * mask)",
    ),
    (
        "17_norm",
        "dropout_backward",
        "the mask not scaled in the backward",
        "return (grad_output * self.mask / (1 - self.p),)",
        "return (grad_output * self.mask,)",
    ),
    (
        "17_norm",
        "dropout_backward",
        "the gradient passed where entries were dropped",
        "return (grad_output * self.mask / (1 - self.p),)",
        "return (grad_output / (1 - self.p),)",
    ),
    (
        "18_attention",
        "attention_backward",
        "the 1/sqrt(d) left out of the backward",
        ATTENTION_SCORES,
        ATTENTION_SCORES.replace(SCALE, ""),
    ),
    (
        "18_attention",
        "attention_backward",
        "the weights recomputed without the mask (the gradient leaks to the future)",
        "p = attention_weights(q.data, k.data, self.mask)",
        "p = attention_weights(q.data, k.data)",
    ),
    (
        "18_attention",
        "attention_backward",
        "the softmax's Jacobian taken as its diagonal",
        "p * (grad_p - (grad_p * p).sum(axis=-1, keepdims=True))",
        "p * grad_p",
    ),
    (
        "18_attention",
        "attention_backward",
        "the gradient of K without transposing the scores' gradient",
        "grad_k = np.swapaxes(grad_scores, -1, -2) @ q.data",
        "grad_k = grad_scores @ q.data",
    ),
    (
        "18_attention",
        "attention_backward",
        "the gradient of V with the weights untransposed",
        "grad_v = np.swapaxes(p, -1, -2) @ g",
        "grad_v = p @ g",
    ),
    (
        "18_attention",
        "heads",
        "heads split by a reshape alone (positions and features mixed)",
        "return x.reshape(batch, length, heads, width // heads).transpose(0, 2, 1, 3)",
        "return x.reshape(batch, heads, length, width // heads)",
    ),
    (
        "18_attention",
        "heads",
        "heads merged by a reshape alone",
        "return x.transpose(0, 2, 1, 3).reshape(batch, length, heads * width)",
        "return x.reshape(batch, length, heads * width)",
    ),
    (
        "18_attention",
        "transformer_block",
        "the causal mask not passed to the attention",
        "x = x + self.attention(self.norm1(x), mask)",
        "x = x + self.attention(self.norm1(x))",
    ),
    (
        "18_attention",
        "transformer_block",
        "no residual connection around the MLP",
        "return x + self.mlp(self.norm2(x))",
        "return self.mlp(self.norm2(x))",
    ),
]

# Bugs students write (issue 14), not edits of the reference: in-place writes, aliasing, edge values, hand-rolled steps.
STUDENT_BUGS = [
    (
        "04_elementwise",
        "add_backward",
        "hand-rolled reduction over leading axes only",
        "return unbroadcast(grad_output, a.shape), unbroadcast(grad_output, b.shape)",
        "lead = lambda g, shape: g.sum(axis=tuple(range(g.ndim - len(shape)))) if g.ndim > len(shape) else g\n"
        "        return lead(grad_output, a.shape), lead(grad_output, b.shape)",
    ),
    (
        "04_elementwise",
        "sub_backward",
        "negates grad_output in place",
        "return unbroadcast(grad_output, a.shape), unbroadcast(-grad_output, b.shape)",
        "negated = Tensor(grad_output.data)\n        negated.data *= -1\n"
        "        return unbroadcast(grad_output, a.shape), unbroadcast(negated, b.shape)",
    ),
    (
        "04_elementwise",
        "mul_backward",
        "overwrites grad_output's data for a",
        "grad_a = unbroadcast(grad_output * b, a.shape)",
        "ga = grad_output\n            ga.data = ga.data * b.data\n            grad_a = unbroadcast(ga, a.shape)",
    ),
    (
        "04_elementwise",
        "div_backward",
        "grad_b as (a/b)**2 / a: NaN at a = 0",
        "-grad_output * a / (b * b)",
        "-grad_output * (a / b) * (a / b) / a",
    ),
    (
        "04_elementwise",
        "neg_backward",
        "negates grad_output in place",
        "return (-grad_output,)",
        "grad_output.data *= -1\n        return (grad_output,)",
    ),
    ("04_elementwise", "pow_backward", "p * a**p / a: NaN at a = 0", "p * a ** (p - 1)", "p * a ** p / a"),
    (
        "04_elementwise",
        "exp_backward",
        "multiplies the saved output in place",
        "return (grad_output * self.output,)",
        "self.output.data *= grad_output.data\n        return (self.output,)",
    ),
    (
        "04_elementwise",
        "log_backward",
        "replaces its saved input by 1/a",
        "return (grad_output / a,)",
        "a.data = 1 / a.data\n        return (grad_output * a,)",
    ),
    (
        "05_matmul_and_reductions",
        "matmul_backward",
        ".T instead of swapping the last two axes",
        "g2 @ swap_last(b2)",
        "g2 @ b2.T",
    ),
    (
        "05_matmul_and_reductions",
        "sum_backward",
        "summed axes not put back",
        "return (grad_output.reshape(kept_shape(x.shape, self.axis)) * np.ones(x.shape, dtype=grad_output.dtype),)",
        "return (grad_output * np.ones(x.shape),)",
    ),
    (
        "05_matmul_and_reductions",
        "mean_backward",
        "divided by the output's size",
        "dtype=grad_output.dtype) / count,)",
        "dtype=grad_output.dtype) / grad_output.size,)",
    ),
    (
        "05_matmul_and_reductions",
        "reshape_backward",
        "flattened",
        "return (grad_output.reshape(x.shape),)",
        "return (grad_output.reshape(-1),)",
    ),
    (
        "05_matmul_and_reductions",
        "transpose_backward",
        ".T whatever the axes",
        "return (grad_output.transpose(tuple(inverse)),)",
        "return (grad_output.T,)",
    ),
    (
        "05_matmul_and_reductions",
        "index_backward",
        "out[index] += g (repeats counted once)",
        "return (scatter_add(grad_output, self.index, x.shape),)",
        "out = np.zeros(x.shape)\n        out[self.index] += grad_output.data\n        return (Tensor(out),)",
    ),
    (
        "06_autograd",
        "topological_order",
        "a tensor reached twice is listed twice (no visited check when popped)",
        "        if id(tensor) in visited:\n            continue\n        visited.add(id(tensor))",
        "        visited.add(id(tensor))",
    ),
    (
        "06_autograd",
        "topological_order",
        "recursive depth-first search (Python's recursion limit on a long chain)",
        RECURSIVE_ORDER_OLD,
        RECURSIVE_ORDER_NEW,
    ),
    (
        "06_autograd",
        "accumulate",
        "adds in place (grads[key].data += grad.data)",
        "grads[key] = grad if key not in grads else grads[key] + grad",
        "if key in grads:\n        grads[key].data += grad.data\n    else:\n        grads[key] = grad",
    ),
    (
        "07_activations",
        "relu_backward",
        "masks grad_output in place",
        "return (grad_output * (x.data > 0),)",
        "g = grad_output.data\n        g[x.data <= 0] = 0\n        return (grad_output,)",
    ),
    (
        "07_activations",
        "sigmoid_backward",
        "multiplies the saved output in place",
        "return (grad_output * s * (1 - s),)",
        "s.data *= 1 - s.data\n        return (grad_output * s,)",
    ),
    ("07_activations", "tanh_backward", "(1 - t)**2 instead of 1 - t**2", "(1 - t * t)", "((1 - t) ** 2)"),
    (
        "07_activations",
        "softmax_backward",
        "always sums over the last axis",
        "(grad_output * s).sum(axis=self.axis, keepdims=True)",
        "(grad_output * s).sum(axis=-1, keepdims=True)",
    ),
    (
        "07_activations",
        "log_softmax_backward",
        "sum without keepdims",
        "grad_output.sum(axis=self.axis, keepdims=True)",
        "grad_output.sum(axis=self.axis)",
    ),
    ("08_losses", "mse_backward", "target's gradient not negated", "return grad, -grad", "return grad, grad"),
    (
        "08_losses",
        "bce_backward",
        "without the clipping (infinite at p = 0 or 1)",
        "grad_p = grad_output * (p - target) / (p * (1 - p)) / n",
        "grad_p = grad_output * (probabilities - target) / (probabilities * (1 - probabilities)) / n",
    ),
    (
        "08_losses",
        "cross_entropy_backward",
        "softmax by plain exp (overflows for large logits)",
        "(self.probabilities() - one_hot)",
        "(Tensor(np.exp(logits.data) / np.exp(logits.data).sum(axis=1, keepdims=True)) - one_hot)",
    ),
    (
        "10_optimizers",
        "sgd",
        "velocity rebound locally, never kept (plain gradient descent)",
        "velocity *= self.momentum  # in place: no new array per step\n            velocity += grad\n            grad = velocity",
        "grad = self.momentum * velocity + grad",
    ),
    (
        "10_optimizers",
        "sgd",
        "velocity dampened by 1 - momentum",
        "velocity += grad",
        "velocity += (1 - self.momentum) * grad",
    ),
    (
        "10_optimizers",
        "adam",
        "one step count shared by all parameters",
        "self.t[i] += 1",
        "self.t[0] += 1\n        self.t[i] = self.t[0]",
    ),
    (
        "10_optimizers",
        "adam",
        "epsilon inside the square root",
        "(np.sqrt(u_hat) + self.eps)",
        "np.sqrt(u_hat + self.eps)",
    ),
    (
        "12_conv",
        "conv2d_backward",
        "bias gradient of the first sample only",
        "grad_b = np.ones(len(g_rows), dtype=g.dtype) @ g_rows",
        "grad_b = g[0].sum(axis=(1, 2))",
    ),
    (
        "12_conv",
        "conv2d_backward",
        "weight's gradient not reshaped (rows of C·kh·kw, the wrong shape)",
        "grad_w = (g_rows.T @ rows).reshape(w.shape)",
        "grad_w = g_rows.T @ rows",
    ),
    (
        "12_conv",
        "maxpool2d_backward",
        "every tied maximum gets the gradient",
        MAXPOOL_ROUTING,
        "windows = window(x.data, self.k)\n"
        "        grad_windows = (windows == windows.max(axis=-1, keepdims=True)) * grad_output.data[..., None]",
    ),
    (
        "12_conv",
        "maxpool2d_backward",
        "overlapping windows' gradients written, not added (fancy-index +=)",
        MAXPOOL_WHOLE,
        MAXPOOL_DIRECT.replace("np.add.at(grad_x, at, grad_output.data)", "grad_x[at] += grad_output.data"),
    ),
    (
        "12_conv",
        "maxpool2d_backward",
        "windows placed kernel_size apart whatever the stride",
        "unwindow(grad_windows, x.shape, self.k, self.stride)",
        "unwindow(grad_windows, x.shape, self.k)",
    ),
    (
        "12_conv",
        "maxpool2d_backward",
        "argmax used as a position in the image (the window's start left out)",
        MAXPOOL_WHOLE,
        MAXPOOL_DIRECT.replace("np.arange(out_h)[:, None] * self.stride + ", "").replace(
            "np.arange(out_w)[None, :] * self.stride + ", ""
        ),
    ),
    (
        "13_embedding",
        "embedding_backward",
        "out[ids] += g (repeats counted once)",
        "return (scatter_add(grad_output, self.ids, weight.shape),)",
        "out = np.zeros(weight.shape)\n        out[self.ids] += grad_output.data\n        return (Tensor(out),)",
    ),
    (
        "02_function",
        "attach",
        "records only when the first input needs a gradient",
        "for tensor in inputs:",
        "for tensor in inputs[:1]:",
    ),
    (
        "03_gradcheck",
        "numerical_grad",
        "forward differences",
        "flat[j] = original - eps\n            minus = value()\n            flat[j] = original\n"
        "            grad[j] = (plus - minus) / (2 * eps)",
        "flat[j] = original\n            minus = value()\n            grad[j] = (plus - minus) / eps",
    ),
    (
        "13_embedding",
        "sparse_rows",
        "one entry per position (rows repeat)",
        "return rows, values",
        "return ids.reshape(-1), grad.reshape(-1, grad.shape[-1])",
    ),
    (
        "13_embedding",
        "tied_gradient",
        "grad_logits not flattened (fails on 2-D ids)",
        "grad = grad_logits.reshape(-1, weight.shape[0])  # (N, V)",
        "grad = grad_logits",
    ),
    (
        "13_embedding",
        "tied_gradient",
        "input_use[ids] += (repeats counted once)",
        "np.add.at(input_use, flat_ids, grad @ weight)",
        "input_use[flat_ids] += grad @ weight",
    ),
    (
        "01_tensor",
        "tensor_elementwise",
        "arrays converted to float64 (float32 * 2 gives float64)",
        "return Tensor(numpy_op(a.data, b.data))",
        "return Tensor(numpy_op(np.asarray(a.data, dtype=float), np.asarray(b.data, dtype=float)))",
    ),
    (
        "01_tensor",
        "tensor_matmul",
        "operands swapped",
        "return Tensor(np.matmul(a.data, b.data))",
        "return Tensor(np.matmul(b.data, a.data))",
    ),
    (
        "01_tensor",
        "tensor_matmul",
        "np.dot instead of np.matmul (batches multiplied with every batch)",
        "return Tensor(np.matmul(a.data, b.data))",
        "return Tensor(np.dot(a.data, b.data))",
    ),
    (
        "01_tensor",
        "tensor_reductions",
        "summed in float64 whatever the dtype",
        "return Tensor(x.data.sum(axis=axis, keepdims=keepdims))",
        "return Tensor(np.sum(x.data, axis=axis, keepdims=keepdims, dtype=float))",
    ),
    (
        "09_nn",
        "parameters",
        "looks one level deep (a Sequential inside a Sequential gives none)",
        "elif isinstance(value, Module):\n                found.extend(value.parameters())",
        "elif isinstance(value, Module):\n"
        "                found.extend(v for v in vars(value).values() if isinstance(v, Tensor) and v.requires_grad)",
    ),
    (
        "09_nn",
        "linear",
        "one sample taken as it is (a vector's .T is itself)",
        "if x.ndim != 2:",
        "if x.ndim > 2:",
    ),
    (
        "09_nn",
        "init_bound",
        "the standard deviation returned, not the bound (no factor 3)",
        "return float(np.sqrt(3 * variance))",
        "return float(np.sqrt(variance))",
    ),
    (
        "11_training",
        "accuracy",
        "argmax over the wrong axis (axis 0, the batch)",
        "np.argmax(logits.data, axis=1)",
        "np.argmax(logits.data, axis=0)",
    ),
    (
        "11_training",
        "digits_accuracy",
        "train_epoch forgets zero_grad (every batch's gradients add up)",
        "optimizer.zero_grad()\n        loss = loss_fn(model(inputs), labels)",
        "loss = loss_fn(model(inputs), labels)",
    ),
    (
        "11_training",
        "digits_accuracy",
        "train_epoch steps before backward (each step sees no gradient)",
        "loss.backward()\n        optimizer.step()",
        "optimizer.step()\n        loss.backward()",
    ),
    (
        "14_higher_order",
        "hvp",
        "first gradient without create_graph=True",
        "grads = grad(loss_fn(), params, create_graph=True)",
        "grads = grad(loss_fn(), params)",
    ),
    (
        "12_conv",
        "conv2d_backward",
        "g flattened without moving the channels last (right shape, wrong numbers)",
        "g_rows = g.transpose(0, 2, 3, 1).reshape(-1, f)",
        "g_rows = g.reshape(-1, f)",
    ),
    (
        "12_conv",
        "conv2d_backward",
        "the padded image's gradient returned uncropped",
        "grad_x = Tensor(_crop(grad_padded, widths))",
        "grad_x = Tensor(grad_padded)",
    ),
    (
        "12_conv",
        "conv2d_backward",
        "im2col at the convolution's stride, g not dilated",
        "rows, out_hw = im2col(padded, kh, kw)  # stride 1: a strided output is the stride-1 one read sparsely\n"
        "        g = dilate(grad_output.data, out_hw, self.stride)",
        "rows, out_hw = im2col(padded, kh, kw, self.stride)\n        g = grad_output.data",
    ),
    (
        "14_higher_order",
        "hvp",
        "v dotted with the gradient's array (the product is not recorded)",
        "dot = sum((g * Tensor(v)).sum() for g, v in zip(grads, vectors) if g is not None)",
        "dot = sum((Tensor(g.data) * Tensor(v)).sum() for g, v in zip(grads, vectors) if g is not None)",
    ),
    (
        "14_higher_order",
        "hvp",
        "a parameter the loss does not use (its gradient None) not skipped",
        "for g, v in zip(grads, vectors) if g is not None)",
        "for g, v in zip(grads, vectors))",
    ),
    (
        "14_higher_order",
        "hvp",
        "backward() for both derivatives, .grad read (it accumulates the first gradient)",
        "grads = grad(loss_fn(), params, create_graph=True)\n    dot = sum((g * Tensor(v)).sum() for g, v in zip(grads, vectors) "
        "if g is not None)\n    if not isinstance(dot, Tensor) or not dot.requires_grad:\n"
        "        return [Tensor(np.zeros(p.shape, dtype=p.dtype)) for p in params]\n    products = grad(dot, params)",
        "loss_fn().backward(create_graph=True)\n    grads = [p.grad for p in params]\n"
        "    dot = sum((g * Tensor(v)).sum() for g, v in zip(grads, vectors) if g is not None)\n"
        "    if not isinstance(dot, Tensor) or not dot.requires_grad:\n"
        "        return [Tensor(np.zeros(p.shape, dtype=p.dtype)) for p in params]\n"
        "    dot.backward()\n    products = [p.grad for p in params]",
    ),
    (
        "13_embedding",
        "sparse_rows",
        "the ids flattened, the gradient not (fails on 2-D ids)",
        "np.add.at(values, inverse, grad.reshape(-1, grad.shape[-1]))",
        "np.add.at(values, inverse, grad)",
    ),
    (
        "13_embedding",
        "tied_gradient",
        "grad_logits scattered instead of the gradient of E",
        "np.add.at(input_use, flat_ids, grad @ weight)",
        "np.add.at(input_use, flat_ids, grad)",
    ),
    (
        "17_norm",
        "batch_norm_backward",
        "eps left out of the backward (off by about eps relative; nan on a constant feature)",
        "inv_std = 1 / np.sqrt(x.data.var(axis=0, keepdims=True) + self.eps)",
        "inv_std = 1 / np.sqrt(x.data.var(axis=0, keepdims=True))",
    ),
    (
        "17_norm",
        "batch_norm_backward",
        "gamma's and beta's gradients not summed over the batch",
        "return grad_x, (grad_output * x_hat).sum(axis=0), grad_output.sum(axis=0)",
        "return grad_x, grad_output * x_hat, grad_output",
    ),
    (
        "17_norm",
        "running_statistics",
        "the running statistics replaced by the batch's (no momentum)",
        "mean = (1 - momentum) * running_mean + momentum * batch.mean(axis=0)",
        "mean = batch.mean(axis=0)",
    ),
    (
        "17_norm",
        "layer_norm_backward",
        "means over the batch axis, as in batch normalisation",
        LN_GRAD_X,
        LN_GRAD_X.replace("axis=-1", "axis=0"),
    ),
    (
        "17_norm",
        "layer_norm_backward",
        "a float64 variance makes a float32 input's gradient float64",
        "inv_std = 1 / np.sqrt(x.data.var(axis=-1, keepdims=True) + self.eps)",
        "inv_std = 1 / np.sqrt(x.data.var(axis=-1, keepdims=True).astype(np.float64) + self.eps)",
    ),
    (
        "17_norm",
        "dropout_forward",
        "keeps each entry with probability p instead of 1 - p",
        "mask = rng.random(x.shape) >= p",
        "mask = rng.random(x.shape) < p",
    ),
    (
        "17_norm",
        "dropout_backward",
        "a new mask drawn in the backward",
        "return (grad_output * self.mask / (1 - self.p),)",
        "return (grad_output * (np.random.random(self.mask.shape) >= self.p) / (1 - self.p),)",
    ),
    (
        "18_attention",
        "attention_backward",
        "the scale as 1 / np.sqrt(d), a float64 number (a float32 input's gradients float64)",
        SCALE,
        " / np.sqrt(q.shape[-1])",
    ),
    (
        "18_attention",
        "attention_backward",
        "the softmax's sum over the queries' axis instead of the keys'",
        "(grad_p * p).sum(axis=-1, keepdims=True)",
        "(grad_p * p).sum(axis=-2, keepdims=True)",
    ),
    (
        "18_attention",
        "heads",
        "features dealt to the heads in turn (head h gets h, h + H, ...), not in blocks",
        "return x.reshape(batch, length, heads, width // heads).transpose(0, 2, 1, 3)",
        "return x.reshape(batch, length, width // heads, heads).transpose(0, 3, 1, 2)",
    ),
    (
        "18_attention",
        "transformer_block",
        "the MLP's sublayer reads the block's input instead of the attention's sum",
        "x = x + self.attention(self.norm1(x), mask)\n        return x + self.mlp(self.norm2(x))",
        "h = x + self.attention(self.norm1(x), mask)\n        return h + self.mlp(self.norm2(x))",
    ),
]
MUTANTS += STUDENT_BUGS

# Rules that differentiate their own copy of the forward by central differences (grading/grade/analytic.py): they pass the
# tests' tolerance, so only the grader's comparison with the reference rule catches them.
NUMERICAL_RULES = [
    (
        "04_elementwise",
        "exp_backward",
        "numerical: central differences of exp",
        "return (grad_output * self.output,)",
        "(a,) = self.saved_tensors\n        h = 1e-6\n"
        "        slope = (np.exp(a.data + h) - np.exp(a.data - h)) / (2 * h)\n        return (grad_output * Tensor(slope),)",
    ),
    (
        "04_elementwise",
        "log_backward",
        "numerical: central differences of log, an optimal step",
        "return (grad_output / a,)",
        "h = 6e-6\n        slope = (np.log(a.data + h) - np.log(a.data - h)) / (2 * h)\n"
        "        return (grad_output * Tensor(slope),)",
    ),
    (
        "07_activations",
        "tanh_backward",
        "numerical: central differences of tanh",
        "return (grad_output * (1 - t * t),)",
        "(x,) = self.saved_tensors\n        h = 1e-5\n"
        "        slope = (np.tanh(x.data + h) - np.tanh(x.data - h)) / (2 * h)\n        return (grad_output * Tensor(slope),)",
    ),
]
# The attacks of issue 21: within the tests' tolerance but above the old band, 03's own numerical_grad, and linear
# rules differentiated with a step large enough to be exact on the tests' inputs (caught by the probe).
NUMERICAL_RULES += [
    (
        "04_elementwise",
        "exp_backward",
        "numerical: central differences of exp, scaled by 1 + 1e-4",
        "return (grad_output * self.output,)",
        "(a,) = self.saved_tensors\n        h = 1e-6\n"
        "        slope = (np.exp(a.data + h) - np.exp(a.data - h)) / (2 * h) * (1 + 1e-4)\n"
        "        return (grad_output * Tensor(slope),)",
    ),
    (
        "04_elementwise",
        "log_backward",
        "numerical: central differences of log, a large step",
        "return (grad_output / a,)",
        "h = 3e-3\n        slope = (np.log(a.data + h) - np.log(a.data - h)) / (2 * h)\n"
        "        return (grad_output * Tensor(slope),)",
    ),
    (
        "04_elementwise",
        "mul_backward",
        "numerical: 03's numerical_grad",
        MUL_BODY,
        "from tinytorch.core.gradcheck import numerical_grad\n\n        g = grad_output.data\n"
        "        grads = numerical_grad(lambda x, y: np.sum(x * y * g), [a.data, b.data])\n"
        "        return Tensor(grads[0]), Tensor(grads[1])",
    ),
    (
        "04_elementwise",
        "add_backward",
        "numerical: 03's numerical_grad with a step of 0.5, exact for a linear rule",
        "return unbroadcast(grad_output, a.shape), unbroadcast(grad_output, b.shape)",
        "from tinytorch.core.gradcheck import numerical_grad\n\n        g = grad_output.data\n"
        "        grads = numerical_grad(lambda x, y: np.sum((x + y) * g), [a.data, b.data], eps=0.5)\n"
        "        return Tensor(grads[0]), Tensor(grads[1])",
    ),
    (
        "05_matmul_and_reductions",
        "matmul_backward",
        "numerical: central differences with a step of 1, exact for a linear rule",
        "grad_a = unbroadcast(g2 @ swap_last(b2), a2.shape)",
        "from tinytorch.core.gradcheck import numerical_grad\n\n"
        "            (numeric,) = numerical_grad(lambda x: np.sum((x @ b2.data) * g2.data), [a2.data], eps=1.0)\n"
        "            grad_a = Tensor(numeric)",
    ),
]
MUTANTS += NUMERICAL_RULES

# Rules whose first derivative is right but whose gradient is a constant, made from arrays: notebook 14 cannot
# differentiate through them. Appended last, so that the mutants above keep their numbers, and so their students' variants.
CUT_GRAPH = [
    (
        "13_embedding",
        "embedding_backward",
        "raw NumPy scatter: the right gradient, as a constant (no second derivative)",
        "return (scatter_add(grad_output, self.ids, weight.shape),)",
        "out = np.zeros(weight.shape, dtype=grad_output.dtype)\n        np.add.at(out, self.ids, grad_output.data)\n"
        "        return (Tensor(out),)",
    ),
]
MUTANTS += CUT_GRAPH

# Appended after the lists above for the same reason.
LATER = [
    (
        "10_optimizers",
        "sgd",
        "learning rate inside the velocity (v = μv + ηg): right while η is fixed, not after a change of lr",
        "velocity += grad\n            grad = velocity\n",
        "velocity += self.lr * grad\n            p.data -= velocity\n            return\n",
    ),
    (
        "14_higher_order",
        "hvp",
        "the dot product of the last parameter's term only",
        "dot = sum((g * Tensor(v)).sum() for g, v in zip(grads, vectors) if g is not None)",
        "dot = (grads[-1] * Tensor(vectors[-1])).sum()",
    ),
    # from the fifteenth session's student solvers
    (
        "06_autograd",
        "accumulate",
        "the first use's gradient added twice",
        "grads[key] = grad if key not in grads else grads[key] + grad",
        "grads[key] = grads.get(key, grad) + grad",
    ),
    (  # right first derivatives, a constant for the second (a student solver's finding: 12/12 before)
        "08_losses",
        "bce_backward",
        "BCE's gradient of p made from arrays (.data)",
        "grad_p = grad_output * (p - target) / (p * (1 - p)) / n",
        "grad_p = grad_output * Tensor((p.data - target.data) / (p.data * (1 - p.data))) / n",
    ),
    (
        "08_losses",
        "cross_entropy_backward",
        "cross-entropy's gradient made from arrays (.data)",
        "return grad_output * (self.probabilities() - one_hot) / logits.shape[0], None",
        "return grad_output * Tensor(self.probabilities().data - one_hot) / logits.shape[0], None",
    ),
    (
        "12_conv",
        "conv2d_backward",
        "each kernel's gradient transposed (kh and kw swapped)",
        "grad_w = (g_rows.T @ rows).reshape(w.shape)",
        "grad_w = (g_rows.T @ rows).reshape(w.shape).swapaxes(2, 3)",
    ),
    (
        "13_embedding",
        "embedding_backward",
        "grad_output's rows returned (one per position, not per table row)",
        "return (scatter_add(grad_output, self.ids, weight.shape),)",
        "return (grad_output.reshape(-1, weight.shape[1]),)",
    ),
    # from the sixteenth session's student solver: each passed 09's visible tests
    (
        "09_nn",
        "linear",
        "a bias gradient returned without a bias (Linear(W))",
        "return grads + (g.sum(axis=0),) if len(self.saved_tensors) == 3 else grads",
        "return grads + (g.sum(axis=0),)",
    ),
    (
        "09_nn",
        "parameters",
        "tensors that require no gradient counted",
        "if isinstance(value, Tensor) and value.requires_grad:",
        "if isinstance(value, Tensor):",
    ),
    (
        "09_nn",
        "parameters",
        "tuples not searched (lists only)",
        "elif isinstance(value, (list, tuple)):",
        "elif isinstance(value, list):",
    ),
    (
        "10_optimizers",
        "adam",
        "the corrected averages stored back into m and u",
        "m_hat = self.m[i] / (1 - self.beta1 ** self.t[i])\n        u_hat = self.u[i] / (1 - self.beta2 ** self.t[i])",
        "m_hat = self.m[i] = self.m[i] / (1 - self.beta1 ** self.t[i])\n"
        "        u_hat = self.u[i] = self.u[i] / (1 - self.beta2 ** self.t[i])",
    ),
    ("10_optimizers", "adam", "every step corrected with t = 1", "self.t[i] += 1", "self.t[i] = 1"),
    # from the seventeenth session's student solver: each passed 13's visible tests, whose ids had one axis (or T = d)
    (
        "13_embedding",
        "embedding_backward",
        "grad_output flattened by its axis 1 (right for ids of one axis only)",
        "return (scatter_add(grad_output, self.ids, weight.shape),)",
        "return (scatter_add(grad_output.reshape(-1, grad_output.shape[1]), np.reshape(self.ids, -1), weight.shape),)",
    ),
    (
        "13_embedding",
        "sparse_rows",
        "the gradient flattened by its axis 1 (right where T = d)",
        "np.add.at(values, inverse, grad.reshape(-1, grad.shape[-1]))",
        "np.add.at(values, inverse, grad.reshape(-1, grad.shape[1]))",
    ),
    (
        "13_embedding",
        "tied_gradient",
        "grad_logits flattened by its axis 1 (right for ids of one axis only)",
        "grad = grad_logits.reshape(-1, weight.shape[0])  # (N, V)",
        "grad = grad_logits.reshape(-1, grad_logits.shape[1])  # (N, V)",
    ),
    (
        "14_higher_order",
        "hvp",
        "the first gradient times v, element by element (no second derivative)",
        "products = grad(dot, params)",
        "products = [Tensor(g.data * v) for g, v in zip(grads, vectors)]",
    ),
    (
        "14_higher_order",
        "hvp",
        "one grad() per parameter (no cross terms)",
        "products = grad(dot, params)",
        "products = [grad((g * Tensor(v)).sum(), [p])[0] for g, v, p in zip(grads, vectors, params)]",
    ),
    (
        "14_higher_order",
        "hvp",
        "no None check in the dot product (a parameter the loss does not use)",
        "dot = sum((g * Tensor(v)).sum() for g, v in zip(grads, vectors) if g is not None)",
        "dot = sum((g * Tensor(v)).sum() for g, v in zip(grads, vectors))",
    ),
    # from the seventeenth session's second solver: writes into grad, which is p.grad.data, passed every test (9/9)
    (
        "10_optimizers",
        "sgd",
        "the velocity built in grad itself (v = grad; v += ...)",
        "            velocity = self.velocity[i]\n            velocity *= self.momentum  # in place: no new array per step\n"
        "            velocity += grad\n            grad = velocity",
        "            velocity = grad\n            velocity += self.momentum * self.velocity[i]\n"
        "            self.velocity[i] = velocity",
    ),
    (
        "10_optimizers",
        "adam",
        "grad rescaled in place",
        "        self.t[i] += 1",
        "        self.t[i] += 1\n        grad *= 1.0",
    ),
    (  # each failed every Adam test, and two hidden tests named a cause of their own (eps's place, one step count)
        "10_optimizers",
        "adam",
        "no bias correction",
        "m_hat = self.m[i] / (1 - self.beta1 ** self.t[i])\n        u_hat = self.u[i] / (1 - self.beta2 ** self.t[i])",
        "m_hat = self.m[i]\n        u_hat = self.u[i]",
    ),
    (
        "10_optimizers",
        "adam",
        "running averages in local names, never stored",
        "self.m[i] = self.beta1 * self.m[i] + (1 - self.beta1) * grad\n"
        "        self.u[i] = self.beta2 * self.u[i] + (1 - self.beta2) * grad * grad\n"
        "        m_hat = self.m[i] / (1 - self.beta1 ** self.t[i])\n        u_hat = self.u[i] / (1 - self.beta2 ** self.t[i])",
        "m = self.beta1 * self.m[i] + (1 - self.beta1) * grad\n"
        "        u = self.beta2 * self.u[i] + (1 - self.beta2) * grad * grad\n"
        "        m_hat = m / (1 - self.beta1 ** self.t[i])\n        u_hat = u / (1 - self.beta2 ** self.t[i])",
    ),
]
MUTANTS += LATER

# The gaps of issue 44, appended after the lists above for the same reason. A float64 gradient for a float32 input
# earned full marks where every hidden input was float64 (03 states the rule, check_backward refuses it); central
# differences with a step of 2 % of |x| are exact for the visible test's square.
ISSUE_44 = [
    (
        "05_matmul_and_reductions",
        "sum_backward",
        "ones made float64 (a float64 gradient for a float32 input)",
        "* np.ones(x.shape, dtype=grad_output.dtype),)",
        "* Tensor(np.ones(x.shape)),)",
    ),
    (
        "05_matmul_and_reductions",
        "mean_backward",
        "ones made float64 (a float64 gradient for a float32 input)",
        "* np.ones(x.shape, dtype=grad_output.dtype) / count,)",
        "* Tensor(np.ones(x.shape)) / count,)",
    ),
    (
        "07_activations",
        "relu_backward",
        "mask made float64 (a float64 gradient for a float32 input)",
        "return (grad_output * (x.data > 0),)",
        "return (grad_output * Tensor((x.data > 0).astype(np.float64)),)",
    ),
    (
        "13_embedding",
        "embedding_backward",
        "one-hot rows made float (a float64 gradient for a float32 table)",
        "return (scatter_add(grad_output, self.ids, weight.shape),)",
        "one_hot = (np.reshape(self.ids, (-1, 1)) == np.arange(weight.shape[0])).astype(float)\n"
        "        return (Tensor(one_hot.T) @ grad_output.reshape(-1, weight.shape[1]),)",
    ),
    (
        "04_elementwise",
        "pow_backward",
        "numerical: central differences with a step of 2 % of |a|, exact for a square",
        "return (grad_output * p * a ** (p - 1),)",
        "h = 0.02 * np.abs(a.data) + 1e-12\n        slope = ((a.data + h) ** p - (a.data - h) ** p) / (2 * h)\n"
        "        return (grad_output * Tensor(slope),)",
    ),
    (  # the old hidden test had one parameter per case: this earned it (the mutant above fails on a None gradient)
        "14_higher_order",
        "hvp",
        "one grad() per parameter, None and constant terms handled (no cross terms)",
        "products = grad(dot, params)",
        "terms = [None if g is None else (g * Tensor(v)).sum() for g, v in zip(grads, vectors)]\n"
        "    products = [grad(t, [p])[0] if t is not None and t.requires_grad else None for t, p in zip(terms, params)]",
    ),
    (  # a correct alternative of the suite until float32 was tested (its np.eye is float64)
        "07_activations",
        "softmax_backward",
        "the Jacobian built with np.eye without its dtype (a float64 gradient for a float32 input)",
        "return (s * (grad_output - (grad_output * s).sum(axis=self.axis, keepdims=True)),)",
        "s_last = np.moveaxis(s.data, self.axis, -1)\n"
        "        g_last = np.moveaxis(grad_output.data, self.axis, -1)\n"
        "        jacobian = s_last[..., :, None] * (np.eye(s_last.shape[-1]) - s_last[..., None, :])\n"
        "        grad = np.einsum('...ij,...i->...j', jacobian, g_last)\n"
        "        return (Tensor(np.moveaxis(grad, -1, self.axis)),)",
    ),
]
MUTANTS += ISSUE_44
NUMERICAL_RULES += [m for m in ISSUE_44 if m[2].startswith("numerical")]  # (in MUTANTS already)

# Each mutant that the hidden tests once let through, with the tests that must now cost it points.
CAUGHT_BY = [
    ("05_matmul_and_reductions", "sum_backward", "ones made float64 (a float64 gradient for a float32 input)"),
    ("05_matmul_and_reductions", "mean_backward", "ones made float64 (a float64 gradient for a float32 input)"),
    ("07_activations", "relu_backward", "mask made float64 (a float64 gradient for a float32 input)"),
    (
        "07_activations",
        "softmax_backward",
        "the Jacobian built with np.eye without its dtype (a float64 gradient for a float32 input)",
    ),
    ("13_embedding", "embedding_backward", "one-hot rows made float (a float64 gradient for a float32 table)"),
    ("04_elementwise", "pow_backward", "numerical: central differences with a step of 2 % of |a|, exact for a square"),
    ("14_higher_order", "hvp", "one grad() per parameter, None and constant terms handled (no cross terms)"),
]
CATCHING = {"pow_backward": ["pow_backward", "pow_backward_hidden"]}  # else the rule's hidden test alone

# Correct solutions written differently from the reference: each must earn every point of its notebook.
ALTERNATIVES = [
    (
        "18_attention",
        "the softmax's row sums as G times the output, row by row (FlashAttention's identity)",
        ATTENTION_SCORES,
        "out = p @ v.data\n        "
        "grad_scores = p * (grad_p - (g * out).sum(axis=-1, keepdims=True)) * q.shape[-1] ** -0.5",
    ),
    (
        "18_attention",
        "attention's gradients of q and k by einsum, each scaled after its product (float32 rounds otherwise)",
        ATTENTION_SCORES
        + "\n        grad_q = grad_scores @ k.data\n        grad_k = np.swapaxes(grad_scores, -1, -2) @ q.data",
        ATTENTION_SCORES.replace(SCALE, "")
        + "\n        scale = 1 / q.shape[-1] ** 0.5"
        + '\n        grad_q = np.einsum("...ij,...jd->...id", grad_scores, k.data) * scale'
        + '\n        grad_k = np.einsum("...ij,...id->...jd", grad_scores, q.data) * scale',
    ),
    (
        "18_attention",
        "heads moved with swapaxes",
        "return x.reshape(batch, length, heads, width // heads).transpose(0, 2, 1, 3)",
        "return x.reshape(batch, length, heads, width // heads).swapaxes(1, 2)",
    ),
    (
        "18_attention",
        "the block with its intermediate sum named",
        "x = x + self.attention(self.norm1(x), mask)\n        return x + self.mlp(self.norm2(x))",
        "attended = x + self.attention(self.norm1(x), mask)\n        out = attended + self.mlp(self.norm2(attended))\n"
        "        return out",
    ),
    (
        "17_norm",
        "batch norm's gradient of x path by path, unsimplified (the variance's, the mean's, then the direct one)",
        BN_GRAD_X,
        "centred, var = x.data - x.data.mean(axis=0, keepdims=True), x.data.var(axis=0, keepdims=True)\n"
        "        d_var = (g * centred).sum(axis=0, keepdims=True) * (-0.5 * (var + self.eps) ** -1.5)\n"
        "        d_mean = -g.sum(axis=0, keepdims=True) * inv_std\n"
        "        grad_x = g * inv_std + d_var * (2 * centred / x.shape[0]) + d_mean / x.shape[0]",
    ),
    (
        "17_norm",
        "dropout's output from a scaled keep array, the boolean mask saved from it",
        "mask = rng.random(x.shape) >= p\n    return attach(Tensor(x.data * mask / (1 - p)), DropoutBackward, x, mask=mask, p=p)",
        "keep = (rng.random(x.shape) >= p) / (1 - p)\n"
        "    return attach(Tensor(x.data * keep), DropoutBackward, x, mask=keep > 0, p=p)",
    ),
    (
        "04_elementwise",
        "unbroadcast one axis at a time",
        "extra = grad.ndim - len(shape)\n    if extra > 0:\n        grad = grad.sum(axis=tuple(range(extra)))\n"
        "    stretched = tuple(axis for axis, n in enumerate(shape) if n == 1 and grad.shape[axis] != 1)\n"
        "    if stretched:\n        grad = grad.sum(axis=stretched, keepdims=True)",
        "while grad.ndim > len(shape):\n        grad = grad.sum(axis=0)\n    for axis, n in enumerate(shape):\n"
        "        if n == 1 and grad.shape[axis] != 1:\n            grad = grad.sum(axis=axis, keepdims=True)",
    ),
    (
        "07_activations",
        "sigmoid recomputed from the saved input",
        "return (grad_output * s * (1 - s),)",
        "(x,) = self.saved_tensors\n        s = Tensor(_stable_sigmoid(x.data))\n        return (grad_output * s * (1 - s),)",
    ),
    (
        "07_activations",
        "softmax backward as the explicit Jacobian-vector product",
        "return (s * (grad_output - (grad_output * s).sum(axis=self.axis, keepdims=True)),)",
        "s_last = np.moveaxis(s.data, self.axis, -1)\n"
        "        g_last = np.moveaxis(grad_output.data, self.axis, -1)\n"
        "        eye = np.eye(s_last.shape[-1], dtype=s_last.dtype)  # float32 stays float32\n"
        "        jacobian = s_last[..., :, None] * (eye - s_last[..., None, :])   # ds_i/dx_j\n"
        "        grad = np.einsum('...ij,...i->...j', jacobian, g_last)\n"
        "        return (Tensor(np.moveaxis(grad, -1, self.axis)),)",
    ),
    (
        "10_optimizers",
        "Adam's running averages updated in place",
        "self.m[i] = self.beta1 * self.m[i] + (1 - self.beta1) * grad\n"
        "        self.u[i] = self.beta2 * self.u[i] + (1 - self.beta2) * grad * grad",
        "self.m[i] *= self.beta1\n        self.m[i] += (1 - self.beta1) * grad\n"
        "        self.u[i] *= self.beta2\n        self.u[i] += (1 - self.beta2) * grad * grad",
    ),
    (
        "07_activations",
        "ReLU mask built with np.where",
        "return (grad_output * (x.data > 0),)",
        "return (grad_output * np.where(x.data > 0, 1.0, 0.0).astype(x.data.dtype),)",
    ),
    (
        "06_autograd",
        "topological order by Kahn's algorithm (in-degrees)",
        "while stack:\n        tensor, expanded = stack.pop()\n        if expanded:\n            order.append(tensor)\n"
        "            continue\n        if id(tensor) in visited:\n            continue\n        visited.add(id(tensor))\n"
        "        stack.append((tensor, True))\n        function = tensor._grad_fn  # inputs_of(tensor), written out: this "
        "loop runs for every tensor of the graph\n        for t in () if function is None else function.saved_tensors "
        'or ():\n            if getattr(t, "requires_grad", False) and id(t) not in visited:\n'
        "                stack.append((t, False))",
        "nodes, todo = {id(root): root}, [root]\n    while todo:\n        for t in inputs_of(todo.pop()):\n"
        "            if id(t) not in nodes:\n                nodes[id(t)] = t\n                todo.append(t)\n"
        "    indegree = dict.fromkeys(nodes, 0)\n    for t in nodes.values():\n        for inp in inputs_of(t):\n"
        "            indegree[id(inp)] += 1\n    ready = [root]\n    while ready:\n        t = ready.pop()\n"
        "        order.insert(0, t)   # inputs first, as the reversal below expects\n        for inp in inputs_of(t):\n"
        "            indegree[id(inp)] -= 1\n            if indegree[id(inp)] == 0:\n                ready.append(inp)",
    ),
    (
        "06_autograd",
        "accumulate by popping the earlier gradient",
        "grads[key] = grad if key not in grads else grads[key] + grad",
        "grads[key] = grads.pop(key) + grad if key in grads else grad",
    ),
    (
        "08_losses",
        "cross-entropy from a softmax of its own, not the forward's (self.probabilities())",
        "(self.probabilities() - one_hot)",
        "(softmax(logits, axis=1) - one_hot)",
    ),
    (
        "08_losses",
        "cross-entropy with the one-hot rows set by index",
        "one_hot = np.eye(logits.shape[1], dtype=logits.dtype)[labels]",
        "one_hot = np.zeros(logits.shape, dtype=logits.dtype)\n        one_hot[np.arange(len(labels)), labels] = 1",
    ),
    (
        "02_function",
        "attach with any() over the inputs",
        "if _grad_enabled:\n        for tensor in inputs:\n            if requires_grad(tensor):  # one input that needs a gradient is enough\n"
        "                result.requires_grad = True\n                result._grad_fn = function_cls(*inputs, **extras)\n"
        "                break",
        "if is_grad_enabled() and any(requires_grad(t) for t in inputs):\n"
        "        result.requires_grad = True\n        result._grad_fn = function_cls(*inputs, **extras)",
    ),
    (
        "03_gradcheck",
        "numerical_grad restoring a saved copy of the whole array",
        "original = flat[j]\n            flat[j] = original + eps\n            plus = value()\n            flat[j] = original - eps\n            minus = value()\n            flat[j] = original\n            grad[j] = (plus - minus) / (2 * eps)",
        "saved = flat.copy()\n            flat[j] += eps\n            plus = value()\n            flat[:] = saved\n"
        "            flat[j] -= eps\n            minus = value()\n            flat[:] = saved\n"
        "            grad[j] = (plus - minus) / (2 * eps)",
    ),
    (
        "13_embedding",
        "sparse rows summed by a loop over the positions",
        "np.add.at(values, inverse, grad.reshape(-1, grad.shape[-1]))",
        "for position, number in enumerate(inverse):\n        values[number] += grad.reshape(-1, grad.shape[-1])[position]",
    ),
    (
        "13_embedding",
        "tied gradient through the one-hot matrix of the ids",
        "return output_use + input_use",
        "one_hot = np.eye(weight.shape[0])[flat_ids]\n    return grad.T @ looked_up + one_hot.T @ (grad @ weight)",
    ),
    (
        "01_tensor",
        "elementwise: shapes checked with np.broadcast_shapes before computing",
        "try:\n        return Tensor(numpy_op(a.data, b.data))\n    except ValueError:\n"
        "        raise broadcast_error(symbol, a.shape, b.shape) from None",
        "try:\n        np.broadcast_shapes(a.shape, b.shape)\n    except ValueError:\n"
        "        raise broadcast_error(symbol, a.shape, b.shape) from None\n"
        "    result = numpy_op(a.data, b.data)\n    return Tensor(result)",
    ),
    (
        "01_tensor",
        "matmul with the @ operator on the arrays",
        "return Tensor(np.matmul(a.data, b.data))",
        "result = a.data @ b.data\n    return Tensor(result)",
    ),
    (
        "01_tensor",
        "sum with np.sum",
        "return Tensor(x.data.sum(axis=axis, keepdims=keepdims))",
        "total = np.sum(x.data, axis=axis, keepdims=keepdims)\n    return Tensor(total)",
    ),
    (
        "02_function",
        "Function keeps the *tensors tuple as it came",
        "self.saved_tensors = tuple(tensors)",
        "self.saved_tensors = tensors  # *tensors is already a tuple",
    ),
    (
        "02_function",
        "SquareBackward as (x + x) times grad_output",
        "return (grad_output * 2 * x,)",
        "return ((x + x) * grad_output,)",
    ),
    (
        "04_elementwise",
        "add: each gradient named, reduced only when the shapes differ",
        "return unbroadcast(grad_output, a.shape), unbroadcast(grad_output, b.shape)",
        "grad_a = grad_output if a.shape == grad_output.shape else unbroadcast(grad_output, a.shape)\n"
        "        grad_b = grad_output if b.shape == grad_output.shape else unbroadcast(grad_output, b.shape)\n"
        "        return grad_a, grad_b",
    ),
    (
        "04_elementwise",
        "sub: b's gradient as grad_output * -1",
        "return unbroadcast(grad_output, a.shape), unbroadcast(-grad_output, b.shape)",
        "return unbroadcast(grad_output, a.shape), unbroadcast(grad_output * -1, b.shape)",
    ),
    (
        "04_elementwise",
        "mul: factors in the other order, in named variables",
        MUL_BODY,
        "grad_a = b * grad_output\n        grad_b = a * grad_output\n"
        "        return unbroadcast(grad_a, a.shape), unbroadcast(grad_b, b.shape)",
    ),
    (
        "04_elementwise",
        "div: b's gradient from a's (-grad_a * a / b)",
        "grad_a = grad_b = None\n        if self.needs_grad(0):\n            grad_a = unbroadcast(grad_output / b, a.shape)\n"
        "        if self.needs_grad(1):\n            grad_b = unbroadcast(-grad_output * a / (b * b), b.shape)\n"
        "        return grad_a, grad_b",
        "grad_a = grad_output / b\n        grad_b = -grad_a * a / b\n"
        "        return unbroadcast(grad_a, a.shape), unbroadcast(grad_b, b.shape)",
    ),
    ("04_elementwise", "neg as grad_output * -1", "return (-grad_output,)", "return (grad_output * -1,)"),
    (
        "04_elementwise",
        "pow with the exponent first",
        "return (grad_output * p * a ** (p - 1),)",
        "return (p * a ** (p - 1) * grad_output,)",
    ),
    (
        "04_elementwise",
        "exp recomputed from the saved input",
        "return (grad_output * self.output,)",
        "(a,) = self.saved_tensors\n        return (grad_output * a.exp(),)",
    ),
    (
        "04_elementwise",
        "log as grad_output times 1 / a",
        "return (grad_output / a,)",
        "return (grad_output * (1 / a),)",
    ),
    (
        "05_matmul_and_reductions",
        "matmul: b's gradient always as aᵀ g (no transposed-weight layout)",
        "if is_transposed(b2):  # x @ W.T: (gᵀ a)ᵀ is aᵀ g laid out like W.T, so W's gradient is stored row by row\n"
        "                grad_b = unbroadcast(swap_last(swap_last(g2) @ a2), b2.shape)\n"
        "            else:\n"
        "                grad_b = unbroadcast(swap_last(a2) @ g2, b2.shape)",
        "grad_b = unbroadcast(swap_last(a2) @ g2, b2.shape)",
    ),
    (
        "05_matmul_and_reductions",
        "sum: broadcast back by adding zeros of x's shape",
        "return (grad_output.reshape(kept_shape(x.shape, self.axis)) * np.ones(x.shape, dtype=grad_output.dtype),)",
        "kept = grad_output.reshape(kept_shape(x.shape, self.axis))\n"
        "        return (kept + Tensor(np.zeros(x.shape, dtype=grad_output.dtype)),)",
    ),
    (
        "05_matmul_and_reductions",
        "mean: spread * (1.0 / count) (the style that crashed on the empty batch)",
        "return (grad_output.reshape(shape) * np.ones(x.shape, dtype=grad_output.dtype) / count,)",
        "spread = grad_output.reshape(shape) * np.ones(x.shape, dtype=grad_output.dtype)\n"
        "        return (spread * (1.0 / count),)",
    ),
    (
        "05_matmul_and_reductions",
        "reshape with the shape as separate numbers",
        "return (grad_output.reshape(x.shape),)",
        "return (grad_output.reshape(*x.shape),)",
    ),
    (
        "05_matmul_and_reductions",
        "transpose: the inverse permutation built by a loop",
        "inverse = sorted(range(len(self.axes)), key=self.axes.__getitem__)  # argsort in Python: no NumPy call",
        "inverse = [0] * len(self.axes)\n        for position, axis in enumerate(self.axes):\n"
        "            inverse[axis] = position",
    ),
    (
        "05_matmul_and_reductions",
        "transpose: the inverse permutation by np.argsort, as the notebook's text suggests",
        "inverse = sorted(range(len(self.axes)), key=self.axes.__getitem__)  # argsort in Python: no NumPy call\n        return (grad_output.transpose(tuple(inverse)),)",
        "return (grad_output.transpose(tuple(np.argsort(self.axes))),)",
    ),
    (
        "05_matmul_and_reductions",
        "index: np.add.at into zeros",
        "return (scatter_add(grad_output, self.index, x.shape),)",
        "out = np.zeros(x.shape, dtype=grad_output.dtype)\n        np.add.at(out, self.index, grad_output.data)\n"
        "        return (Tensor(out),)",
    ),
    (
        "06_autograd",
        "run_backward: membership tested before popping",
        "grad = grads.pop(id(tensor), None)\n            if grad is None:\n                continue",
        "if id(tensor) not in grads:\n                continue\n            grad = grads.pop(id(tensor))",
    ),
    ("07_activations", "tanh with t ** 2", "(1 - t * t)", "(1 - t**2)"),
    (
        "07_activations",
        "log-softmax from softmax of the saved input",
        "return (grad_output - self.output.exp() * grad_output.sum(axis=self.axis, keepdims=True),)",
        "(x,) = self.saved_tensors\n        s = softmax(x, axis=self.axis)\n"
        "        return (grad_output - s * grad_output.sum(axis=self.axis, keepdims=True),)",
    ),
    (
        "08_losses",
        "MSE with the factor 2 / N computed once, each gradient written out",
        "grad = grad_output * 2 * (prediction - target) / prediction.size\n        return grad, -grad",
        "diff = prediction - target\n        scale = 2 / diff.size\n"
        "        return grad_output * diff * scale, grad_output * diff * -scale",
    ),
    (
        "08_losses",
        "BCE's gradient not simplified: -t / p + (1 - t) / (1 - p)",
        "grad_p = grad_output * (p - target) / (p * (1 - p)) / n",
        "grad_p = grad_output * (-target / p + (1 - target) / (1 - p)) / n",
    ),
    (
        "09_nn",
        "parameters: a module's attributes visited directly",
        "elif isinstance(value, Module):\n                found.extend(value.parameters())",
        "elif isinstance(value, Module):\n                for inner in vars(value).values():\n"
        "                    visit(inner)",
    ),
    (
        "09_nn",
        "LinearBackward: every input made rows, the weight's gradient as a transpose, a list",
        "g = grad_output\n        grad_x = g @ weight if self.needs_grad(0) else None\n"
        "        if x.ndim != 2:  # one sample, or more than one batch axis: every sample one row\n"
        "            g, x = g.reshape(-1, g.shape[-1]), x.reshape(-1, x.shape[-1])\n"
        "        grads = (grad_x, g.T @ x)\n"
        "        return grads + (g.sum(axis=0),) if len(self.saved_tensors) == 3 else grads",
        "rows_g = grad_output.reshape(-1, weight.shape[0])\n        rows_x = x.reshape(-1, weight.shape[1])\n"
        "        grads = [grad_output @ weight, (rows_x.T @ rows_g).T]\n        if len(self.saved_tensors) == 3:\n"
        "            grads.append(rows_g.sum(axis=0))\n        return tuple(grads)",
    ),
    (
        "09_nn",
        "init_bound as √(6 / fan) per scheme",
        'variance = 2 / fan_in if scheme == "he" else 2 / (fan_in + fan_out)\n    return float(np.sqrt(3 * variance))',
        'if scheme == "he":\n        return (6 / fan_in) ** 0.5\n    return float(np.sqrt(6 / (fan_in + fan_out)))',
    ),
    (
        "10_optimizers",
        "SGD's velocity as a new array each step",
        "velocity = self.velocity[i]\n            velocity *= self.momentum  # in place: no new array per step\n"
        "            velocity += grad\n            grad = velocity",
        "self.velocity[i] = self.momentum * self.velocity[i] + grad\n            grad = self.velocity[i]",
    ),
    (
        "11_training",
        "accuracy counted in a loop over the rows",
        "return float(np.mean(np.argmax(logits.data, axis=1) == np.asarray(labels)))",
        "predicted = logits.data.argmax(axis=-1)\n    right = sum(int(p == y) for p, y in zip(predicted, labels))\n"
        "    return right / len(predicted)",
    ),
    (
        "11_training",
        "train_epoch: the model's zero_grad after the forward, float of the loss's array",
        "optimizer.zero_grad()\n        loss = loss_fn(model(inputs), labels)\n        loss.backward()\n"
        "        optimizer.step()\n        losses.append(loss.item())",
        "logits = model(inputs)\n        loss = loss_fn(logits, labels)\n        model.zero_grad()\n"
        "        loss.backward()\n        optimizer.step()\n        losses.append(float(loss.data))",
    ),
    (
        "12_conv",
        "conv2d: g moved by moveaxis, the kernel's gradient by einsum, the bias summed one axis at a time, a list",
        "g_rows = g.transpose(0, 2, 3, 1).reshape(-1, f)\n        grad_w = (g_rows.T @ rows).reshape(w.shape)\n"
        "        grad_b = np.ones(len(g_rows), dtype=g.dtype) @ g_rows  # the rows' sum as one product (NumPy's sum is slow "
        "here)\n"
        "        grad_x = None  # a batch of images needs no gradient: the costliest product is left out then\n"
        "        if self.needs_grad(0):\n"
        "            grad_padded = col2im(g_rows @ w.data.reshape(f, -1), padded.shape, kh, kw, out_hw)\n"
        "            grad_x = Tensor(_crop(grad_padded, widths))\n"
        "        grads = (grad_x, Tensor(grad_w))\n"
        "        return grads + (Tensor(grad_b),) if len(self.saved_tensors) == 3 else grads",
        "g_rows = np.moveaxis(g, 1, -1).reshape(rows.shape[0], f)\n"
        "        grad_w = np.einsum('pf,pk->fk', g_rows, rows).reshape(f, c, kh, kw)\n"
        "        grad_rows = np.einsum('pf,fk->pk', g_rows, w.data.reshape(f, c * kh * kw))\n"
        "        (top, bottom), (left, right) = widths\n"
        "        grad_x = col2im(grad_rows, padded.shape, kh, kw, out_hw)[:, :, top : top + x.shape[2], left : left + x.shape[3]]\n"
        "        grads = [Tensor(grad_x), Tensor(grad_w)]\n"
        "        if len(self.saved_tensors) == 3:\n"
        "            grads.append(Tensor(g.sum(axis=3).sum(axis=2).sum(axis=0)))\n"
        "        return tuple(grads)",
    ),
    (
        "12_conv",
        "max-pool: each winner's row and column in the image, the gradients added there with np.add.at",
        MAXPOOL_WHOLE,
        MAXPOOL_DIRECT,
    ),
    (
        "13_embedding",
        "embedding as the one-hot product Hᵀ G",
        "return (scatter_add(grad_output, self.ids, weight.shape),)",
        "one_hot = Tensor(np.eye(weight.shape[0], dtype=grad_output.dtype)[np.reshape(self.ids, -1)])\n"
        "        return (one_hot.T @ grad_output.reshape(-1, weight.shape[1]),)",
    ),
    (
        "14_higher_order",
        "hessian_vector_product: the dot product summed in a loop",
        "dot = sum((g * Tensor(v)).sum() for g, v in zip(grads, vectors) if g is not None)\n"
        "    if not isinstance(dot, Tensor) or not dot.requires_grad:",
        "dot = None\n    for g, v in zip(grads, vectors):\n        if g is not None:\n"
        "            term = (g * Tensor(v)).sum()\n            dot = term if dot is None else dot + term\n"
        "    if dot is None or not dot.requires_grad:",
    ),
]

# 19_strides: two mutants of each of three rules, one of each in the student-bug study, and two correct alternatives
STRIDES_ROW_MAJOR = (
    "for n in reversed(tuple(shape)):\n        strides.append(block)\n        block *= n\n"
    "    return tuple(reversed(strides))"
)
STRIDES_BUGS = [
    (
        "19_strides",
        "strides_for",
        "each axis's own size counted in its stride (strides (24, 12, 4) for (2, 3, 4))",
        "strides.append(block)\n        block *= n",
        "block *= n\n        strides.append(block)",
    ),
    (
        "19_strides",
        "broadcast_to",
        "the view's offset dropped",
        'has {n} entries")\n    return StridedArray(view.buffer, shape, strides, view.offset)',
        'has {n} entries")\n    return StridedArray(view.buffer, shape, strides)',
    ),
    ("19_strides", "reshape", "always a copy, a contiguous view too", "if is_contiguous(view):", "if False:"),
]
STUDENT_BUGS += STRIDES_BUGS
MUTANTS += [
    (
        "19_strides",
        "strides_for",
        "column-major strides (the first index moves fastest)",
        STRIDES_ROW_MAJOR,
        "for n in tuple(shape):\n        strides.append(block)\n        block *= n\n    return tuple(strides)",
    ),
    (
        "19_strides",
        "broadcast_to",
        "a stretched axis of size 1 keeps its stride",
        "elif n == 1:\n            strides.append(0)",
        "elif n == 1:\n            strides.append(s)",
    ),
    (
        "19_strides",
        "reshape",
        "always a view with row-major strides (a transpose read in its old order)",
        "if is_contiguous(view):",
        "if True:",
    ),
] + STRIDES_BUGS
ALTERNATIVES += [
    (
        "19_strides",
        "strides_for as products of the sizes after each axis, with NumPy",
        "strides, block = [], 1\n    " + STRIDES_ROW_MAJOR,
        "shape = tuple(shape)\n    return tuple(int(np.prod(shape[i + 1 :])) for i in range(len(shape)))",
    ),
    (
        "19_strides",
        "reshape's copy gathered element by element with element_offset",
        "return StridedArray(to_numpy(view).reshape(-1), shape, strides_for(shape))",
        "values = [view.buffer[element_offset(view, index)] for index in np.ndindex(*view.shape)]\n"
        "    return StridedArray(np.array(values, dtype=view.buffer.dtype), shape, strides_for(shape))",
    ),
]


# Mutants that must lose points in their own tests only: one helper's bug must not cost the rest of its notebook.
ONLY_OWN_TESTS = [("11_training", "argmax over the wrong axis (axis 0, the batch)")]

# A rule graded in pieces (its hidden tests named <rule>_<piece>_hidden): a mutant that gets one piece wrong must keep
# the points of the other pieces, so partial work earns partial credit.
KEEPS_POINTS = [
    (  # the loop's tests use no tensor twice: an accumulate that does not add costs only its own points there
        "06_autograd",
        "gradient overwritten instead of accumulated",
        ["run_backward", "run_backward_hidden", "topological_order", "topological_order_hidden"],
    ),
    ("06_autograd", "gradients multiplied", ["run_backward", "run_backward_hidden"]),
    ("08_losses", "1/batch missing", ["loss_objects"]),  # it tests the loss objects, not CrossEntropyBackward
    ("08_losses", "one-hot not subtracted", ["loss_objects"]),
    ("09_nn", "a bias gradient returned without a bias (Linear(W))", ["parameters", "parameters_hidden"]),
    (
        "13_embedding",
        "raw NumPy scatter: the right gradient, as a constant (no second derivative)",
        ["embedding_backward", "embedding_backward_hidden"],
    ),
    ("10_optimizers", "velocity rebound locally, never kept (plain gradient descent)", ["sgd_hidden"]),
    ("10_optimizers", "velocity dampened by 1 - momentum", ["sgd_hidden"]),
    ("10_optimizers", "one step count shared by all parameters", ["adam_hidden", "adam_eps_hidden"]),
    ("12_conv", "bias gradient averaged", ["conv2d_backward_input_hidden", "conv2d_backward_weight_hidden"]),
    (
        "12_conv",
        "bias gradient of the first sample only",
        ["conv2d_backward_input_hidden", "conv2d_backward_weight_hidden"],
    ),
    (
        "12_conv",
        "weight's gradient not reshaped (rows of C·kh·kw, the wrong shape)",
        ["conv2d_backward_input_hidden", "conv2d_backward_bias_hidden"],
    ),
    ("12_conv", "kernel flipped for grad_x", ["conv2d_backward_weight_hidden", "conv2d_backward_bias_hidden"]),
    ("12_conv", "every tied maximum gets the gradient", ["maxpool2d_backward_hidden"]),
    (
        "12_conv",
        "overlapping windows' gradients written, not added (fancy-index +=)",
        ["maxpool2d_backward_hidden", "maxpool2d_backward_ties_hidden"],
    ),
    (
        "12_conv",
        "windows placed kernel_size apart whatever the stride",
        ["maxpool2d_backward_hidden", "maxpool2d_backward_ties_hidden"],
    ),
    (
        "12_conv",
        "the padded image's gradient returned uncropped",
        ["conv2d_backward_weight_hidden", "conv2d_backward_bias_hidden"],
    ),
    (
        "12_conv",
        "im2col at the convolution's stride, g not dilated",
        ["conv2d_backward_weight_hidden", "conv2d_backward_bias_hidden"],
    ),  # 18: the heads' and the block's tests go through no AttentionBackward
    ("18_attention", "the 1/sqrt(d) left out of the backward", ["heads_hidden", "transformer_block_hidden"]),
    (
        "18_attention",
        "the weights recomputed without the mask (the gradient leaks to the future)",
        ["heads_hidden", "transformer_block_hidden"],
    ),
]


def is_rules_test(name, rule):
    "Whether test `name` grades `rule`: the rule's own test, its hidden test, or one of its pieces' hidden tests."
    return name in (rule, rule + "_hidden") or (name.startswith(rule + "_") and name.endswith("_hidden"))


# A fixed course secret: the same variants of the hidden tests in every run of this suite. A variant is drawn from the
# secret and the student's name, so mutant k (student mutantk) meets one of its own, and every group of alternatives is
# handed in by VARIANTS students (a correct solution must hold for every student's variant; the reference solution
# meets 40 variants of every hidden test in tests/test_notebooks_run.py).
SECRET = "mutation-suite-secret-0-0123456789"
VARIANTS = 3


@functools.cache
def answers(notebook):
    "{grade id: the solution cell's code without markers} of the instructor's notebook (read once; not to be changed)."
    source = read_notebook(REPO / "notebooks" / f"{notebook}.ipynb")
    return {c.metadata["nbgrader"]["grade_id"]: strip_markers(c.source) for c in source.cells if is_solution(c)}


def is_solution(cell):
    "An exercise: a code cell with a solution region (the hours-spent cell is editable too, but no exercise)."
    return cell.cell_type == "code" and "### BEGIN SOLUTION" in cell.source


def exercise_of(notebook, old):
    "The grade id of the one solution cell of `notebook` that holds `old`."
    holders = [grade_id for grade_id, code in answers(notebook).items() for _ in range(code.count(old))]
    assert len(holders) == 1, f"{notebook}: {old!r} must occur once in the solutions, found {len(holders)}"
    return holders[0]


def alternative_groups():
    """The alternatives, several of a notebook in one submission (as a student who wrote each exercise their own way):
    [(notebook, [alternative numbers])], no two in a group editing the same exercise."""
    groups = {}
    for number, (notebook, _, old, _) in enumerate(ALTERNATIVES):
        exercise = exercise_of(notebook, old)
        rounds = groups.setdefault(notebook, [])
        group = next((g for g in rounds if exercise not in g), None)
        if group is None:
            rounds.append(group := {})
        group[exercise] = number
    return [(notebook, sorted(g.values())) for notebook, rounds in groups.items() for g in rounds]


def mutate(*edits):
    "An edit for answers.solved(): replace each `old` by its `new` in the solution cell that holds it."

    def edit(grade_id, code):
        for old, new in edits:
            code = code.replace(old, new) if old in code else code
        return code

    return edit


def submissions(mutants, groups):
    "(student, notebook, edits): each mutant as one student, each group of alternatives as VARIANTS students."
    for number, (notebook, _, _, old, new) in mutants:
        yield f"mutant{number:03d}", notebook, [(old, new)]
    for k, (notebook, numbers) in enumerate(groups):
        for variant in range(VARIANTS):
            yield f"correct{k:02d}v{variant}", notebook, [ALTERNATIVES[n][2:] for n in numbers]


def grade(kit, root, mutants, groups):
    """Autograde the submissions in one run; {student: the student's gradebook entry}.
    `mutants` is [(number, mutant)], `groups` alternative_groups() (a scratch run may pass fewer of either)."""
    for student, notebook, edits in submissions(mutants, groups):
        for old, _ in edits:
            exercise_of(notebook, old)
        source = read_notebook(REPO / "notebooks" / f"{notebook}.ipynb")
        nb = solved(read_notebook(kit / notebook / f"{notebook}.ipynb"), source, edit=mutate(*edits))
        write_notebook(nb, root / "submissions" / student / notebook / f"{notebook}.ipynb")
    (root / "secret").write_text(SECRET + "\n")
    result = run_cli(
        "autograde",
        root / "submissions",
        "--out",
        root / "grades",
        "--secret-file",
        root / "secret",
        "--feedback",
        "none",  # the messages are in the gradebook; no pages, a third less time
    )
    assert result.returncode == 0, result.stderr
    return json.loads((root / "grades" / "gradebook.json").read_text())


@pytest.fixture(scope="module")
def graded_mutants(kit, tmp_path_factory):
    return grade(kit, tmp_path_factory.mktemp("mutants"), list(enumerate(MUTANTS)), alternative_groups())


def mutant_tests(graded, number):
    "The tests of mutant `number`'s notebook, as graded."
    notebook = MUTANTS[number][0]
    return graded[f"mutant{number:03d}"][notebook]["tests"]


def test_every_mutant_loses_points_in_its_rules_tests(graded_mutants, capsys):
    caught, survivors = {}, []
    for number, (notebook, rule, what, _, _) in enumerate(MUTANTS):
        tests = mutant_tests(graded_mutants, number)
        own = {name: (t["score"], t["max_score"]) for name, t in tests.items() if is_rules_test(name, rule)}
        assert own, f"no tests named {rule} in {notebook}"
        lost = sum(maximum - score for score, maximum in own.values())
        total = caught.setdefault(notebook, [0, 0])
        total[1] += 1
        if lost > 0:
            total[0] += 1
        else:
            survivors.append(f"{notebook} {rule}: {what} (student mutant{number:03d})")
    with capsys.disabled():
        print("\nmutation score (caught / total), each mutant under a variant of the hidden tests of its own:")
        for notebook, (hit, total) in sorted(caught.items()):
            print(f"  {notebook:<26} {hit}/{total}  {100 * hit / total:.0f}%")
    assert not survivors, f"mutants not caught: {survivors}"


def test_a_helpers_bug_costs_only_that_helpers_points(graded_mutants):
    for notebook, what in ONLY_OWN_TESTS:
        number = next(n for n, m in enumerate(MUTANTS) if m[0] == notebook and m[2] == what)
        rule = MUTANTS[number][1]
        tests = mutant_tests(graded_mutants, number)
        elsewhere = {
            name: (t["score"], t["max_score"])
            for name, t in tests.items()
            if not is_rules_test(name, rule) and t["score"] < t["max_score"]
        }
        assert not elsewhere, f"{notebook} {what}: lost points outside {rule}'s tests: {elsewhere}"


def test_a_mistake_in_one_piece_of_a_rule_keeps_the_other_pieces_points(graded_mutants):
    for notebook, what, kept in KEEPS_POINTS:
        number = next(n for n, m in enumerate(MUTANTS) if m[0] == notebook and m[2] == what)
        tests = mutant_tests(graded_mutants, number)
        lost = {name: (tests[name]["score"], tests[name]["max_score"]) for name in kept}
        assert all(score == maximum for score, maximum in lost.values()), f"{notebook} {what}: {lost}"


def test_a_mutant_the_hidden_tests_once_let_through_loses_points_in_the_tests_that_now_catch_it(graded_mutants):
    for notebook, rule, what in CAUGHT_BY:
        number = next(n for n, m in enumerate(MUTANTS) if m[:3] == (notebook, rule, what))
        tests = mutant_tests(graded_mutants, number)
        catching = CATCHING.get(rule, [rule + "_hidden"])
        kept = {name: tests[name]["score"] for name in catching if tests[name]["score"] >= tests[name]["max_score"]}
        assert not kept, f"{notebook} {rule}: {what}: full marks in {kept}"


def test_numerical_rules_are_told_why_they_lost_their_points(graded_mutants):
    for mutant in NUMERICAL_RULES:
        number = MUTANTS.index(mutant)
        tests = mutant_tests(graded_mutants, number)
        rule, what = mutant[1], mutant[2]
        messages = " ".join(t.get("message", "") for name, t in tests.items() if is_rules_test(name, rule))
        assert "finite differences of the forward" in messages, (what, messages[:500])


def test_a_hessian_vector_product_by_backward_is_told_of_accumulation_where_it_is_graded(graded_mutants):
    """14's hvp_hidden named the accumulation of .grad only when w.grad was set, and a .grad the student's code writes
    is not copied back while graded: the page said create_graph=True was missing (a student solver's finding). The
    test now also knows it by its value, H·v plus the first gradient."""
    what = "backward() for both derivatives, .grad read (it accumulates the first gradient)"
    number = next(n for n, m in enumerate(MUTANTS) if m[0] == "14_higher_order" and m[2] == what)
    message = mutant_tests(graded_mutants, number)["hvp_hidden"].get("message", "")
    assert "w.grad was written" in message and "Use grad() (not backward())" in message, message


def test_train_epochs_order_of_calls_is_named_where_it_is_graded(graded_mutants):
    """11's digits_accuracy names the order of calls train_epoch made. It watched them with an Adam subclass defined in
    the test, whose methods never ran in the sandbox (a class the test defines arrives there without them): graded,
    every order was 'step() was never called' (a student solver's finding). It now compares what three batches
    leave with each order done by hand."""
    for what, words in [
        ("train_epoch forgets zero_grad (every batch's gradients add up)", "optimizer.zero_grad() missing"),
        ("train_epoch steps before backward (each step sees no gradient)", "it ran before this batch's backward()"),
    ]:
        number = next(n for n, m in enumerate(MUTANTS) if m[0] == "11_training" and m[2] == what)
        message = mutant_tests(graded_mutants, number)["digits_accuracy"].get("message", "")
        assert words in message and "Likely cause: optimizer.step() was never called" not in message, (what, message)


def test_correct_alternative_solutions_earn_full_marks(graded_mutants):
    short = {}
    for k, (notebook, numbers) in enumerate(alternative_groups()):
        for variant in range(VARIANTS):
            tests = graded_mutants[f"correct{k:02d}v{variant}"][notebook]["tests"]
            lost = {name: (t["score"], t["max_score"]) for name, t in tests.items() if t["score"] < t["max_score"]}
            if lost:
                whats = "; ".join(ALTERNATIVES[n][1] for n in numbers)
                short[f"{notebook} as student correct{k:02d}v{variant} ({whats})"] = lost
    assert not short, f"correct solutions that lost points: {short}"


def test_every_exercise_of_01_to_14_has_a_correct_alternative():
    notebooks = sorted(p.stem for p in (REPO / "notebooks").glob("*.ipynb") if "01" <= p.stem[:2] <= "14")
    missing = [
        f"{notebook} {exercise}"
        for notebook in notebooks
        for exercise in answers(notebook)
        if not any(nb == notebook and exercise_of(nb, old) == exercise for nb, _, old, _ in ALTERNATIVES)
    ]
    assert not missing, f"exercises without a correct alternative in ALTERNATIVES: {missing}"


def test_student_bugs_cover_every_rule():
    rules = {rule for _, rule, *_ in MUTANTS}
    assert rules <= {rule for _, rule, *_ in STUDENT_BUGS}, rules - {rule for _, rule, *_ in STUDENT_BUGS}
    assert len(ALTERNATIVES) >= 5


def test_at_least_two_mutants_per_rule():
    from collections import Counter

    counts = Counter(rule for _, rule, *_ in MUTANTS)
    assert min(counts.values()) >= 2 and len(counts) >= 25, counts
