"""Where the time of a training step goes: the digits MLP step of run.py, by phase and by function.

    python benchmarks/profile_step.py              # digits 64→128→10, batch 64
    python benchmarks/profile_step.py --mnist      # 784→256→10, batch 128
    python benchmarks/profile_step.py --cnn        # engines.py's CNN step: each layer's forward and each rule

First the step's phases (forward, loss, backward, optimizer) timed without a profiler, then cProfile's functions by
their own time. cProfile adds a fixed cost to every Python call, so it overstates the share of small functions: read
its table for where calls go, and the phases for how long they take.
"""

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402  (after the thread settings)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tinytorch.core.losses import CrossEntropy  # noqa: E402
from tinytorch.core.nn import Linear, ReLU, Sequential  # noqa: E402
from tinytorch.core.optimizers import SGD  # noqa: E402
from tinytorch.core.tensor import Tensor  # noqa: E402


def phases(model, optimizer, loss_fn, inputs, y, steps):
    "Median µs per step of each phase, over `steps` steps."
    times = {"forward": [], "loss": [], "backward": [], "optimizer": []}
    for _ in range(steps):
        t0 = time.perf_counter()
        optimizer.zero_grad()
        out = model(inputs)
        t1 = time.perf_counter()
        loss = loss_fn(out, y)
        t2 = time.perf_counter()
        loss.backward()
        t3 = time.perf_counter()
        optimizer.step()
        t4 = time.perf_counter()
        for name, seconds in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            times[name].append(seconds * 1e6)
    return {name: float(np.median(values)) for name, values in times.items()}


def cnn_split(steps):
    """µs per step spent in each layer's forward and each rule's apply, in the CNN step of benchmarks/engines.py
    (float64), each timed by a wrapper around it; and the whole step with the wrappers."""
    from engines import tinytorch_cnn

    from tinytorch.core.function import Function

    model, inputs, y = tinytorch_cnn(np.float64)
    spent = {}

    def timed(owner, name, label):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.perf_counter() - start

        setattr(owner, name, wrapper)

    for layer in model.layers:
        timed(type(layer), "forward", f"forward  {type(layer).__name__}")
    rules, stack = set(), list(Function.__subclasses__())
    while stack:
        rule = stack.pop()
        stack.extend(rule.__subclasses__())
        if "apply" in rule.__dict__:
            rules.add(rule)
    for rule in rules:
        timed(rule, "apply", f"backward {rule.__name__}")
    optimizer, loss_fn = SGD(model.parameters(), lr=0.01), CrossEntropy()
    phases(model, optimizer, loss_fn, inputs, y, steps // 10)  # warm-up
    spent.clear()
    start = time.perf_counter()
    phases(model, optimizer, loss_fn, inputs, y, steps)
    total = (time.perf_counter() - start) / steps * 1e6
    print(f"CNN step of benchmarks/engines.py, float64: {total:.0f} µs with the wrappers (means over {steps} steps)")
    for label, seconds in sorted(spent.items(), key=lambda item: -item[1]):
        print(f"  {label:<28} {seconds / steps * 1e6:8.1f} µs")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mnist", action="store_true", help="the MNIST-sized step instead of the digits one")
    parser.add_argument("--cnn", action="store_true", help="the time of each layer and rule in engines.py's CNN step")
    parser.add_argument("--steps", type=int, default=2000, help="steps to time and to profile (default 2000)")
    parser.add_argument("--top", type=int, default=20, help="functions to list (default 20)")
    args = parser.parse_args(argv)
    if args.cnn:
        cnn_split(args.steps)
        return 0
    sizes, batch = ((784, 256, 10), 128) if args.mnist else ((64, 128, 10), 64)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(batch, sizes[0])), rng.integers(0, sizes[2], batch)
    model = Sequential(Linear(sizes[0], sizes[1], seed=0), ReLU(), Linear(sizes[1], sizes[2], seed=1))
    optimizer, loss_fn, inputs = SGD(model.parameters(), lr=0.01), CrossEntropy(), Tensor(X)

    split = phases(model, optimizer, loss_fn, inputs, y, args.steps)
    total = sum(split.values())
    print(f"MLP step {sizes[0]}→{sizes[1]}→{sizes[2]}, batch {batch}: {total:.0f} µs (medians, no profiler)")
    for name, micros in split.items():
        print(f"  {name:<10} {micros:8.1f} µs  {micros / total:5.1%}")

    profiler = cProfile.Profile()
    profiler.enable()
    phases(model, optimizer, loss_fn, inputs, y, args.steps)
    profiler.disable()
    print(f"\ncProfile, {args.steps} steps: calls per step and own time")
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
