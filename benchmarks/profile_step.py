"""Where the time of a training step goes: the digits MLP step of run.py, by phase and by function.

    python benchmarks/profile_step.py              # digits 64→128→10, batch 64
    python benchmarks/profile_step.py --mnist      # 784→256→10, batch 128

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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mnist", action="store_true", help="the MNIST-sized step instead of the digits one")
    parser.add_argument("--steps", type=int, default=2000, help="steps to time and to profile (default 2000)")
    parser.add_argument("--top", type=int, default=20, help="functions to list (default 20)")
    args = parser.parse_args(argv)
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
