"""How far the digits MLP step could go: issue 25's target (≤ 1.5× hand-written NumPy) against what each way of
getting there would give, measured side by side.

    python benchmarks/what_if.py              # 9 rounds, about a minute
    python benchmarks/what_if.py --rounds 15

Contenders, all on the digits step of run.py (64→128→10, batch 64, SGD), the same numbers out of each
(tests/test_what_if.py checks that every one makes the same update as tinytorch's step):

- hand-written NumPy and tinytorch: run.py's two contenders;
- "tinytorch's NumPy calls alone": the NumPy calls tinytorch's reference engine makes for one step, in its order
  (each label checked, one-hot rows built), with no Tensor, graph or rule around them: the floor of the engine as
  written, whatever its Python costs;
- a change that would break the engine's promises: the step backpropagated by an engine with every check, message and
  hook left out (`lean_backward`). (Two earlier ones are the course's own now: `Linear` as one operation with one
  rule, PyTorch's addmm, in notebook 09's `LinearBackward`, and the forward's softmax handed to the cross-entropy
  rule, notebook 08's `CrossEntropyBackward.probabilities()`.)

None of these is the course's engine: they are experiments to put numbers on the profile in docs/benchmarks.md. Timed by CPU
time (`time.process_time`), the minimum of the rounds, contenders in alternation (cpu_time.least_disturbed), so that a
loaded machine disturbs the ratios less.
"""

import argparse
import os
import sys
from pathlib import Path

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402  (after the thread settings)

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cpu_time  # noqa: E402  (its timing by CPU time)
import run  # noqa: E402  (run.py's contenders, and tinytorch on the path)

from tinytorch.core import function as function_module  # noqa: E402
from tinytorch.core.autograd import topological_order  # noqa: E402
from tinytorch.core.losses import cross_entropy  # noqa: E402
from tinytorch.core.nn import Linear, ReLU, Sequential  # noqa: E402
from tinytorch.core.optimizers import SGD  # noqa: E402
from tinytorch.core.tensor import Tensor  # noqa: E402

SIZES, BATCH, LR = (64, 128, 10), 64, 0.01


def digits_batch():
    rng = np.random.default_rng(0)
    return rng.normal(size=(BATCH, SIZES[0])), rng.integers(0, SIZES[2], BATCH)


def reference_weights():
    "The weights and biases tinytorch_mlp's model starts from, as arrays."
    first, second = Linear(SIZES[0], SIZES[1], seed=0), Linear(SIZES[1], SIZES[2], seed=1)
    return [t.data.copy() for t in (first.weight, first.bias, second.weight, second.bias)]


# The NumPy calls alone -----------------------------------------------------------------------------------------------


def numpy_calls(X, y, weights):
    """The step as the NumPy calls tinytorch makes for it, in its order: forward (02, 06, 07, 09), cross-entropy and
    its rule (08), the other rules (04, 05, 07), SGD (10). `weights` is changed in place, as the Tensors' data are."""
    W1, b1, W2, b2 = weights

    def log_softmax(z):
        shifted = z - z.max(axis=1, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))

    def step():
        h = X @ W1.T
        h += b1  # linear(): the product, the bias added in place
        a = np.maximum(h, 0)
        z = a @ W2.T
        z += b2
        labels = np.asarray(y).astype(np.int64)  # _class_labels: a copy, and the range in one pass
        labels.view(np.uint64).max()
        log_probs = log_softmax(z)
        -log_probs[np.arange(len(labels)), labels].sum() / len(labels)  # the loss's value
        probabilities = np.exp(log_probs)  # kept for the rule
        seed = np.ones(())
        one_hot = np.eye(z.shape[1], dtype=z.dtype)[labels]
        dz = seed * (probabilities - one_hot) / np.asarray(len(labels), dtype=z.dtype)
        da = dz @ W2  # LinearBackward: the input's gradient (the first layer's images need none)
        dW2, db2 = dz.T @ a, dz.sum(axis=0)
        dh = da * (h > 0)
        dW1, db1 = dh.T @ X, dh.sum(axis=0)
        for param, grad in ((W1, dW1), (b1, db1), (W2, dW2), (b2, db2)):
            param -= LR * grad

    step.parameters = weights
    return step


# What if: an engine without checks -----------------------------------------------------------------------------------


def lean_backward(root):
    """backward() with everything but the arithmetic left out: no check of a rule's answer, no message, no retain_grad
    or grad() hooks, no copy of a shared gradient; the graph freed by dropping the saved tensors only."""
    grads, enabled = {id(root): Tensor(np.ones(root.shape, dtype=root.dtype))}, function_module._grad_enabled
    function_module._grad_enabled = False
    try:
        for tensor in topological_order(root):
            grad = grads.pop(id(tensor), None)
            function = tensor._grad_fn
            if grad is None:
                continue
            if function is None:
                tensor.grad = grad if tensor._grad is None else tensor._grad + grad
                continue
            for inp, g in zip(function.saved_tensors, function.apply(grad)):
                if g is not None and inp.requires_grad:
                    key = id(inp)
                    grads[key] = g if key not in grads else grads[key] + g
            function.saved_tensors = None
    finally:
        function_module._grad_enabled = enabled
    return None


# The contenders ------------------------------------------------------------------------------------------------------


def tinytorch_step(X, y, linear=Linear, loss=cross_entropy, backward=Tensor.backward):
    "tinytorch_mlp's step, with the Linear layer, the loss and the backward pass given."
    first, second = linear(SIZES[0], SIZES[1], seed=0), linear(SIZES[1], SIZES[2], seed=1)
    model = Sequential(first, ReLU(), second)
    optimizer, inputs = SGD(model.parameters(), lr=LR), Tensor(X)

    def step():
        optimizer.zero_grad()
        backward(loss(model(inputs), y))
        optimizer.step()

    step.parameters = model.parameters()
    return step


def contenders():
    "{name: step function}, each making the same update from the same weights."
    X, y = digits_batch()
    return {
        "hand-written NumPy": run.numpy_mlp(X, y, SIZES),
        "tinytorch": tinytorch_step(X, y),
        "tinytorch's NumPy calls alone": numpy_calls(X, y, reference_weights()),
        "what if: an engine without checks": tinytorch_step(X, y, backward=lean_backward),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9, help="rounds per contender (default 9)")
    args = parser.parse_args(argv)
    best = cpu_time.least_disturbed({name: (step, 300) for name, step in contenders().items()}, args.rounds)
    hand = best["hand-written NumPy"]
    print(f"digits MLP step {SIZES[0]}→{SIZES[1]}→{SIZES[2]}, batch {BATCH}: CPU time, minimum of {args.rounds} rounds")
    print("| contender | µs per step | × hand-written NumPy |")
    print("|---|---|---|")
    for name, seconds in best.items():
        print(f"| {name} | {seconds * 1e6:.1f} | {seconds / hand:.2f}× |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
