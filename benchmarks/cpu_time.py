"""The digits MLP step and the per-op chain of run.py timed by CPU time, for a machine that other work is loading.

    python benchmarks/cpu_time.py              # 9 rounds
    python benchmarks/cpu_time.py --rounds 15

run.py reports medians of wall time, which a busy machine inflates unevenly: other processes take the CPU in the
middle of one contender's round and not the next one's. Here each contender's rounds are timed with
`time.process_time` (the time this process ran) and the minimum is kept: the least disturbed round of each, the
contenders in alternation. Same contenders, sizes and one BLAS thread each as run.py; the PyTorch chain needs torch.
"""

import argparse
import os
import sys
import time
from pathlib import Path

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402  (after the thread settings)

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run  # noqa: E402  (run.py's contenders)


def contenders():
    "{name: (function, calls per round)}: about 50 ms of work per round each."
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(64, 64)), rng.integers(0, 10, 64)
    found = {
        "tinytorch MLP step": (run.tinytorch_mlp(X, y, (64, 128, 10)), 200),
        "numpy MLP step": (run.numpy_mlp(X, y, (64, 128, 10)), 400),
        # The same step at sizes where BLAS does next to nothing: what each step costs whatever its sizes.
        "tinytorch tiny step": (run.tinytorch_mlp(X[:2, :2], y[:2] % 2, (2, 2, 2)), 400),
        "numpy tiny step": (run.numpy_mlp(X[:2, :2], y[:2] % 2, (2, 2, 2)), 2000),
        "tinytorch chain": (
            run.autograd_chain(run.Tensor(np.ones(10), requires_grad=True), run.Tensor(np.full(10, 0.999))),
            4,
        ),
    }
    if run.torch:
        torch = run.torch
        x = torch.ones(10, dtype=torch.float64, requires_grad=True)
        found["torch tiny step"] = (run.torch_mlp(X[:2, :2], y[:2] % 2, (2, 2, 2)), 400)
        found["torch chain"] = (run.autograd_chain(x, torch.full((10,), 0.999, dtype=torch.float64)), 6)
    return found


def least_disturbed(found, rounds):
    """{name: seconds per call} of {name: (function, calls per round)}: each warmed up, then timed by CPU time in
    alternation for `rounds` rounds, its least disturbed round kept."""
    best = dict.fromkeys(found, float("inf"))
    for function, _ in found.values():
        function()  # warm up
    for _ in range(rounds):
        for name, (function, calls) in found.items():
            start = time.process_time()
            for _ in range(calls):
                function()
            best[name] = min(best[name], (time.process_time() - start) / calls)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9, help="rounds per contender (default 9)")
    args = parser.parse_args(argv)
    best = least_disturbed(contenders(), args.rounds)
    mlp = best["tinytorch MLP step"] / best["numpy MLP step"]
    print(
        f"MLP step, digits: tinytorch {best['tinytorch MLP step'] * 1e6:.0f} µs, "
        f"numpy {best['numpy MLP step'] * 1e6:.0f} µs: {mlp:.2f}× numpy (target ≤ 1.5×)"
    )
    tiny, tiny_numpy = best["tinytorch tiny step"] * 1e6, best["numpy tiny step"] * 1e6
    print(
        f"fixed cost of a step (the same MLP at 2→2→2, batch 2): tinytorch {tiny:.0f} µs, numpy {tiny_numpy:.0f} µs; "
        f"at the digits' sizes 1.5× numpy leaves tinytorch "
        f"{1.5 * best['numpy MLP step'] * 1e6 - (best['numpy MLP step'] * 1e6 - tiny_numpy):.0f} µs of fixed cost"
        + (f" (torch's: {best['torch tiny step'] * 1e6:.0f} µs)" if "torch tiny step" in best else "")
    )
    per_op = {name: seconds / run.CHAIN for name, seconds in best.items() if name.endswith("chain")}
    line = f"per op, chain of {run.CHAIN}: tinytorch {per_op['tinytorch chain'] * 1e6:.2f} µs"
    if "torch chain" in per_op:
        ratio = per_op["tinytorch chain"] / per_op["torch chain"]
        line += f", torch {per_op['torch chain'] * 1e6:.2f} µs: {ratio:.2f}× torch (target ≤ 1.5×)"
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
