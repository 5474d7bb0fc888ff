"""Benchmarks: tinytorch against the code people would write instead, measured side by side in one run.

    python benchmarks/run.py                       # everything (6 minutes on a quiet 2-core machine)
    python benchmarks/run.py engines --mlsys PATH  # only some: engines, mlp, ops, conv, memory, grading, folder, pages

Each comparison runs its contenders in alternation, several rounds, and reports the median time of each, so that a
noisy neighbour slows all of them alike. Ratios are tinytorch's time divided by the other's. PyTorch (CPU) columns
appear when torch is installed; the course does not need it. `engines` (issue 45's comparison) runs each engine in a
process of its own instead: benchmarks/engines.py.
"""

import argparse
import gc
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# One BLAS thread for every contender: on a small machine NumPy's and PyTorch's thread pools otherwise fight over the
# cores and the timings swing by 2x from run to run. Set before NumPy and PyTorch load.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402  (after the thread settings above, which numpy reads when it loads)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("TINYTORCH_QUIET", "1")

import mlsys_package  # noqa: E402  (beside this script: sys.path[0])

import tinytorch  # noqa: E402
from tinytorch.core.conv import Conv2d, MaxPool2d  # noqa: E402
from tinytorch.core.losses import CrossEntropy  # noqa: E402
from tinytorch.core.nn import Linear, ReLU, Sequential  # noqa: E402
from tinytorch.core.optimizers import SGD  # noqa: E402
from tinytorch.core.tensor import Tensor  # noqa: E402

try:
    import torch

    torch.set_num_threads(1)
except ImportError:
    torch = None


def timed(function):
    "Seconds that one call of `function` took."
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def side_by_side(contenders, rounds=7, min_time=0.2):
    "{name: median seconds per call}, the contenders run in alternation, each call repeated to last about min_time."
    repeats = {}
    for name, fn in contenders.items():
        fn()  # warm up
        start, n = time.perf_counter(), 0
        while time.perf_counter() - start < 0.05:
            fn()
            n += 1
        per_call = (time.perf_counter() - start) / n
        repeats[name] = max(1, int(min_time / per_call))
    times = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            start = time.perf_counter()
            for _ in range(repeats[name]):
                fn()
            times[name].append((time.perf_counter() - start) / repeats[name])
    return {name: statistics.median(t) for name, t in times.items()}


# 1. An MLP training step ---------------------------------------------------------------------------------------------


def tinytorch_mlp(X, y, sizes):
    model = Sequential(Linear(sizes[0], sizes[1], seed=0), ReLU(), Linear(sizes[1], sizes[2], seed=1))
    optimizer, loss_fn, inputs = SGD(model.parameters(), lr=0.01), CrossEntropy(), Tensor(X)

    def step():
        optimizer.zero_grad()
        loss_fn(model(inputs), y).backward()
        optimizer.step()

    return step


def numpy_mlp(X, y, sizes):
    "The same step by hand: forward, manual backward, SGD."
    rng = np.random.default_rng(0)
    W1, b1 = rng.normal(size=(sizes[1], sizes[0])) * 0.05, np.zeros(sizes[1])
    W2, b2 = rng.normal(size=(sizes[2], sizes[1])) * 0.05, np.zeros(sizes[2])
    one_hot = np.eye(sizes[2])[y]

    def step():
        h = X @ W1.T + b1
        a = np.maximum(h, 0)
        z = a @ W2.T + b2
        z = z - z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        dz = (p - one_hot) / len(X)
        dW2, db2 = dz.T @ a, dz.sum(axis=0)
        dh = (dz @ W2) * (h > 0)
        dW1, db1 = dh.T @ X, dh.sum(axis=0)
        for param, grad in ((W1, dW1), (b1, db1), (W2, dW2), (b2, db2)):
            param -= 0.01 * grad

    return step


def torch_mlp(X, y, sizes):
    model = torch.nn.Sequential(
        torch.nn.Linear(sizes[0], sizes[1]), torch.nn.ReLU(), torch.nn.Linear(sizes[1], sizes[2])
    ).double()
    optimizer, loss_fn = torch.optim.SGD(model.parameters(), lr=0.01), torch.nn.CrossEntropyLoss()
    inputs, targets = torch.from_numpy(X), torch.from_numpy(y)

    def step():
        optimizer.zero_grad()
        loss_fn(model(inputs), targets).backward()
        optimizer.step()

    return step


def bench_mlp(rows):
    rng = np.random.default_rng(0)
    for label, sizes, batch, target in [
        ("digits 64→128→10, batch 64", (64, 128, 10), 64, 1.5),
        ("MNIST 784→256→10, batch 128", (784, 256, 10), 128, 1.1),
    ]:
        X, y = rng.normal(size=(batch, sizes[0])), rng.integers(0, sizes[2], batch)
        contenders = {"tinytorch": tinytorch_mlp(X, y, sizes), "numpy": numpy_mlp(X, y, sizes)}
        if torch:
            contenders["torch"] = torch_mlp(X, y, sizes)
        t = side_by_side(contenders)
        rows.append(row(f"MLP step, {label}", t, "numpy", target))


# 2. Per-operation overhead -------------------------------------------------------------------------------------------

CHAIN = 1000


def forward_chain(x, c):
    "CHAIN elementwise operations: multiply and add, alternately."
    y = x
    for _ in range(CHAIN // 2):
        y = y * c
        y = y + c
    return y


def autograd_chain(x, c):
    "Forward and backward through the chain with an autograd engine (tinytorch or PyTorch)."

    def run():
        forward_chain(x, c).sum().backward()
        x.grad = None

    return run


def numpy_chain():
    "The same chain in NumPy, forward and the backward written by hand."
    x, c = np.ones(10), np.full(10, 0.999)

    def run():
        forward_chain(x, c)
        grad = np.ones(10)
        for _ in range(CHAIN // 2):
            grad = grad * c
        return grad

    return run


def bench_ops(rows):
    contenders = {
        "tinytorch": autograd_chain(Tensor(np.ones(10), requires_grad=True), Tensor(np.full(10, 0.999))),
        "numpy": numpy_chain(),
    }
    if torch:
        contenders["torch"] = autograd_chain(
            torch.ones(10, dtype=torch.float64, requires_grad=True), torch.full((10,), 0.999, dtype=torch.float64)
        )
    t = side_by_side(contenders, rounds=5)
    per_op = {name: seconds / CHAIN for name, seconds in t.items()}
    rows.append(
        row(
            f"per op (chain of {CHAIN} ops on 10 elements, fwd+bwd)",
            per_op,
            "torch" if torch else "numpy",
            1.5 if torch else None,
        )
    )


# 3. Conv2d + MaxPool2d -----------------------------------------------------------------------------------------------

CONV = dict(batch=32, c_in=8, c_out=16, size=28, k=3)


def tinytorch_conv(x_np):
    conv, pool = Conv2d(CONV["c_in"], CONV["c_out"], CONV["k"], seed=0), MaxPool2d(2)
    x = Tensor(x_np, requires_grad=True)

    def run():
        pool(conv(x)).sum().backward()
        x.grad = conv.weight.grad = conv.bias.grad = None

    return run


def naive_conv(x_np):
    "Loops over every output element: what a first attempt without im2col looks like."
    rng = np.random.default_rng(0)
    w, b = rng.normal(size=(CONV["c_out"], CONV["c_in"], CONV["k"], CONV["k"])), np.zeros(CONV["c_out"])
    k = CONV["k"]

    def run():
        n, c, h, width = x_np.shape
        oh, ow = h - k + 1, width - k + 1
        out = np.zeros((n, len(w), oh, ow))
        for i in range(n):
            for f in range(len(w)):
                for r in range(oh):
                    for s in range(ow):
                        out[i, f, r, s] = np.sum(x_np[i, :, r : r + k, s : s + k] * w[f]) + b[f]
        pooled_grad = np.zeros_like(out)
        for i in range(n):
            for f in range(len(w)):
                for r in range(0, oh - 1, 2):
                    for s in range(0, ow - 1, 2):
                        window = out[i, f, r : r + 2, s : s + 2]
                        a, bb = np.unravel_index(np.argmax(window), (2, 2))
                        pooled_grad[i, f, r + a, s + bb] = 1.0
        grad_w, grad_x = np.zeros_like(w), np.zeros_like(x_np)
        for i in range(n):
            for f in range(len(w)):
                for r in range(oh):
                    for s in range(ow):
                        g = pooled_grad[i, f, r, s]
                        if g:
                            grad_w[f] += g * x_np[i, :, r : r + k, s : s + k]
                            grad_x[i, :, r : r + k, s : s + k] += g * w[f]
        return grad_w, grad_x

    return run


def torch_conv(x_np):
    conv = torch.nn.Conv2d(CONV["c_in"], CONV["c_out"], CONV["k"]).double()
    x = torch.from_numpy(x_np).requires_grad_()

    def run():
        torch.nn.functional.max_pool2d(conv(x), 2).sum().backward()
        x.grad = conv.weight.grad = conv.bias.grad = None

    return run


def bench_conv(rows):
    x = np.random.default_rng(0).normal(size=(CONV["batch"], CONV["c_in"], CONV["size"], CONV["size"]))
    contenders = {"tinytorch": tinytorch_conv(x)}
    if torch:
        contenders["torch"] = torch_conv(x)
    t = side_by_side(contenders, rounds=5)
    t["naive loops"] = timed(naive_conv(x))  # one call: it takes seconds
    label = "Conv2d 8→16 3×3 + MaxPool2d, batch 32, 28×28, fwd+bwd"
    rows.append(row(label, t, "torch" if torch else "naive loops", 3.0 if torch else None))
    rows.append(row(label, t, "naive loops", 1 / 50))


# 4. The engines users would pick instead, each in a process of its own (benchmarks/engines.py) -------------------------

ENGINES = {  # name in the table: (engine, dtype) as benchmarks/engines.py takes them
    "NumPy f64": ("numpy", "float64"),
    "NumPy f32": ("numpy", "float32"),
    "tinytorch f64": ("tinytorch", "float64"),
    "tinytorch f32": ("tinytorch", "float32"),
    "PyTorch f64": ("torch", "float64"),
    "PyTorch f32": ("torch", "float32"),
    "MLSysBook f32": ("mlsys", "float32"),
}
WORKLOAD_NAMES = {
    "mlp_digits": "MLP step 64-128-10, batch 64",
    "mlp_mnist": "MLP step 784-256-10, batch 128",
    "ops_float": "per op, 8×8, y = y * 0.9999 + 0.001 ×100, fwd+bwd",
    "ops_tensor": "per op, the same with tensor constants",
    "cnn": "CNN step, batch 32 of 1×8×8, 16 filters 3×3, ReLU, max-pool 2, linear",
}
FIRST_LOSS_RTOL = 1e-6  # every engine starts from the same weights: its first loss must agree to ~7 digits


def engine_round(names, mlsys):
    "One round: each engine in a fresh process, one after another; {name: its JSON line}."
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}  # see docs
    script, results = str(Path(__file__).resolve().parent / "engines.py"), {}
    kept = tinytorch.KEEPS_FREED_MEMORY  # False where the user chose glibc's settings: then the floor keeps them too
    floor_env = env | ({name: str(value) for name, (_, value) in tinytorch.KEPT_MEMORY.items()} if kept else {})
    for name in names:
        command = [sys.executable, script, *ENGINES[name]] + (["--mlsys", str(mlsys)] if mlsys else [])
        # the hand NumPy floor keeps freed memory as import tinytorch makes glibc do, so that it stays a floor
        ran = subprocess.run(
            command, capture_output=True, text=True, env=floor_env if name.startswith("NumPy") else env
        )
        if ran.returncode != 0:
            raise SystemExit(f"{name} failed:\n{ran.stderr[-2000:]}")
        results[name] = json.loads(ran.stdout.strip().splitlines()[-1])
    return results


def peers_present(mlsys, folder):
    """The engines that can run here, and a line for each peer that cannot. MLSysBook's package is prepared in
    `folder` from the checkout `mlsys` (benchmarks/mlsys_package.py), where its engine imports it."""
    names, missing = list(ENGINES), []
    if torch is None:
        names = [n for n in names if not n.startswith("PyTorch")]
        missing.append("PyTorch is not installed: its columns are left out (pip install torch)")
    problem = mlsys_problem(mlsys, folder)
    if problem is not None:
        names.remove("MLSysBook f32")
        missing.append(f"MLSysBook's TinyTorch {problem}: its column is left out")
    return names, missing


def mlsys_problem(mlsys, folder):
    "Why MLSysBook's TinyTorch cannot run here, or None once its package is prepared in `folder`."
    if mlsys is None:
        return "not given (--mlsys PATH, a checkout of it)"
    try:
        made = mlsys_package.prepare(mlsys, folder)
        problem = mlsys_package.import_problem(folder)
    except (OSError, ValueError) as error:  # ValueError: a source file that is not UTF-8, say
        return f"not usable: {error}"
    exported = f", with {', '.join(made)} exported from its src/" if made else ""
    print(f"MLSysBook's TinyTorch: {mlsys}'s tinytorch/{exported}")
    return None if problem is None else f"at {mlsys} does not import ({problem})"


def engine_targets(workload, t):
    "(what, ratio, limit) for each of issue 45's targets that the engines present allow."
    targets = []
    for ours, peer in (("f32", "PyTorch f32"), ("f32", "MLSysBook f32"), ("f64", "PyTorch f64")):
        if peer in t:
            targets.append((f"tinytorch {ours} / {peer}", t[f"tinytorch {ours}"] / t[peer], 1.0))
    if workload.startswith("ops"):
        targets += [(f"tinytorch {d} per op, µs", t[f"tinytorch {d}"] * 1e6, 3.0) for d in ("f64", "f32")]
    if workload in ("mlp_mnist", "cnn"):
        targets += [(f"tinytorch {d} / NumPy {d}", t[f"tinytorch {d}"] / t[f"NumPy {d}"], 1.3) for d in ("f64", "f32")]
    return targets


def bench_engines(rows, rounds=5, mlsys=None):
    """Issue 45's table: every engine in a process of its own, one thread, in `rounds` rounds; each engine's time per
    workload is its best round's lower quartile of steps (benchmarks/engines.py). The best, not the median: on a
    shared machine the others' work only adds time, in spells longer than a round, so the least disturbed round is
    the nearest to each engine's own cost (the median of 3 rounds swung by 1.5x between two runs here)."""
    with tempfile.TemporaryDirectory(prefix="mlsys-") as folder:
        names, missing = peers_present(mlsys, Path(folder))
        for line in missing:
            print(line)
        runs = [engine_round(names, folder) for _ in range(rounds)]
    print(f"BLAS kernel of the engines' processes: {runs[0]['NumPy f64']['blas']}")
    for workload, label in WORKLOAD_NAMES.items():
        t = {name: min(run[name][workload]["seconds"] for run in runs) for name in names}
        firsts = [runs[0][name][workload]["first"] for name in names]
        if not np.allclose(firsts, firsts[0], rtol=FIRST_LOSS_RTOL if "ops" not in workload else 1e-5):
            print(f"{label}: the engines' first results differ ({firsts}): they do not compute the same thing")
        targets = engine_targets(workload, t)
        rows.append(
            (
                label,
                ", ".join(f"{name} {fmt(seconds)}" for name, seconds in t.items()),
                "; ".join(f"{what} {ratio:.2f}" for what, ratio, _ in targets),
                "; ".join(f"< {limit:g}" if limit == 1.0 else f"≤ {limit:g}" for _, _, limit in targets),
                "met" if all(r < lim if lim == 1.0 else r <= lim for _, r, lim in targets) else "MISSED",
            )
        )


# 5. Memory over 10,000 steps -----------------------------------------------------------------------------------------


def peak_rss_mb():
    "Peak resident memory of this process so far, in MB (ru_maxrss is in KiB on Linux)."
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_memory(rows, steps=10_000):
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(64, 64)), rng.integers(0, 10, 64)
    step = tinytorch_mlp(X, y, (64, 128, 10))
    marks = {}
    for i in range(1, steps + 1):
        step()
        if i in (1_000, steps):
            gc.collect()
            marks[i] = peak_rss_mb()
    growth = marks[steps] - marks[1_000]
    rows.append(
        (
            f"memory: peak RSS after 1,000 / {steps:,} digits MLP steps",
            f"{marks[1_000]:.1f} MB / {marks[steps]:.1f} MB",
            f"+{growth:.2f} MB",
            "< 5 MB",
            "met" if growth < 5 else "MISSED",
        )
    )


# 6. Autograding throughput -------------------------------------------------------------------------------------------


PARTS = ("start", "package", "sandbox", "imports", "student_code", "verdict", "page")  # grading.grade.job.record_times

# The instructor's notebook, its cells run once in one process with the reference package: the tests' own cost.
TESTS_ONLY = """
import json, sys, time
import nbformat
nb = nbformat.read(sys.argv[1], 4)
space = {"__name__": "__main__"}
start = time.perf_counter()
for cell in nb.cells:
    if cell.cell_type == "code" and not cell.source.startswith("# demo:"):  # the grader skips demonstrations too
        exec(compile(cell.source, "<cell>", "exec"), space)
print(json.dumps(time.perf_counter() - start))
"""


def bench_grading(rows):
    """The demo's class (alice solved everything, bob handed in the release: 28 notebooks), one worker, then all cores;
    with one worker, where each job's time went (grading.grade.job.record_times), and what the tests themselves cost."""
    import json
    import subprocess
    import tempfile

    from grading.authoring.release import release
    from grading.common.notebooks import course_notebooks
    from grading.examples.demo import make_submissions
    from grading.grade.autograde import autograde
    from grading.grade.settings import Settings

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        release(tmp / "kit")
        make_submissions(tmp / "kit", tmp / "class")
        autograde(tmp / "class", tmp / "warm-up", settings=Settings(workers=os.cpu_count()))
        timings, cpu, split = {}, {}, tmp / "timings.jsonl"
        for workers in sorted({1, os.cpu_count() or 1}):
            # what is made once per course is reused: the gradebook, the reference package, the rendered cells of
            # the pages (.grading) and the formgrader course of the written answers (marking/, without the graded
            # submissions): this times the grading itself
            shutil.copytree(
                tmp / "warm-up" / ".grading",
                tmp / f"grades-{workers}" / ".grading",
                ignore=shutil.ignore_patterns("jobs"),
            )
            shutil.copytree(
                tmp / "warm-up" / "marking",
                tmp / f"grades-{workers}" / "marking",
                ignore=shutil.ignore_patterns("autograded"),
            )
            if workers == 1:
                os.environ["TINYTORCH_TIMINGS"] = str(split)
            start, used = time.perf_counter(), machine_cpu_seconds()
            try:
                autograde(tmp / "class", tmp / f"grades-{workers}", settings=Settings(workers=workers))
            finally:
                os.environ.pop("TINYTORCH_TIMINGS", None)
            timings[workers] = time.perf_counter() - start
            cpu[workers] = machine_cpu_seconds() - used
        with open(tmp / "grades-1" / "grades.csv") as table:
            notebooks = sum(1 for _ in table) - 1  # graded rows: the given-code notebooks are not graded
        jobs = [json.loads(line) for line in split.read_text().splitlines()]
    tests_only, tests_cpu = 0.0, cpu_seconds()
    for path in course_notebooks().values():
        ran = subprocess.run(
            [sys.executable, "-c", TESTS_ONLY, str(path)], capture_output=True, text=True, cwd=path.parent.parent
        )
        tests_only += json.loads(ran.stdout.strip().splitlines()[-1]) if ran.returncode == 0 else 0.0
    tests_cpu = cpu_seconds() - tests_cpu
    most = max(timings)
    per_minute = {w: notebooks / (s / 60) for w, s in timings.items()}
    rows.append(
        (
            f"autograding the demo class ({notebooks} notebooks)",
            ", ".join(f"{w} worker{'s' if w > 1 else ''} {s:.0f} s" for w, s in timings.items()),
            f"{timings[1] / timings[most]:.2f}× faster with {most}",
            " → ".join(f"{per_minute[w]:.1f}" for w in sorted(timings)) + " notebooks/min",
            "",
        )
    )
    rows.append(
        (
            "the machine's CPU during the run (grader, jobs, sandboxes), 1 worker",
            f"{cpu[1]:.0f} s in {timings[1]:.0f} s of wall time",
            f"{cpu[1] / notebooks:.2f} s of CPU per notebook, {cpu[1] / timings[1]:.2f} cores busy",
            f"at most {60 * notebooks / cpu[1]:.0f} notebooks/min per core",
            "",
        )
    )
    if most > 1:
        cores = os.cpu_count() or 1
        rows.append(
            (
                f"the same, {most} workers",
                f"{cpu[most]:.0f} s in {timings[most]:.0f} s of wall time",
                f"{cpu[most] / timings[most]:.2f} of the {cores} cores busy ({cpu[most] / timings[most] / cores:.0%})",
                "",
                "",
            )
        )
    mean = {part: sum(j[part] for j in jobs) / len(jobs) for part in (*PARTS, "total")}
    rows.append(
        (
            f"one job, mean of {len(jobs)} (1 worker)",
            ", ".join(f"{part} {mean[part]:.2f} s" for part in PARTS) + f"; job {mean['total']:.2f} s",
            f"{timings[1] / notebooks:.2f} s per notebook",
            "",
            "",
        )
    )
    rows.append(
        (
            "the tests alone: each instructor notebook run once, reference package, no sandbox",
            f"{tests_only:.1f} s for {len(course_notebooks())} notebooks ({tests_cpu:.1f} s of CPU with their Pythons)",
            f"grading costs {timings[1] / 2 / max(tests_only, 1e-9):.1f}× that per student",
            "",
            "",
        )
    )


def bench_new_folder(rows, rounds=3):
    """One notebook graded into a new folder, as an instructor grading a late submission does: the CLI with the made
    course kept (grading/authoring/course.py, made_course) against the same with none kept, in alternation."""
    import subprocess
    import tempfile

    from grading.authoring.course import CACHE_VARIABLE
    from grading.authoring.release import release
    from grading.examples.demo import make_submissions

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        release(tmp / "kit")
        make_submissions(tmp / "kit", tmp / "demo")
        one = tmp / "class" / "alice" / "04_elementwise"
        shutil.copytree(tmp / "demo" / "alice" / "04_elementwise", one)
        settings = {"course made": "", "course kept": str(tmp / "cache")}
        times = {name: [] for name in settings}
        for k in range(rounds + 1):  # the first round fills the cache and is not counted
            for name, cache in settings.items():
                command = [sys.executable, "-m", "grading", "autograde", str(tmp / "class"), "--workers", "1"]
                start = time.perf_counter()
                subprocess.run(
                    [*command, "--out", str(tmp / f"{name}-{k}")],
                    env={**os.environ, CACHE_VARIABLE: cache},
                    capture_output=True,
                    check=True,
                )
                times[name].append(time.perf_counter() - start)
    made, kept = (statistics.median(times[name][1:]) for name in settings)
    rows.append(
        (
            "one notebook (04) graded into a new folder, the CLI",
            f"course made {made:.1f} s, kept {kept:.1f} s (medians of {rounds}, in alternation)",
            f"{made / kept:.2f}× faster with the course kept",
            "",
            "",
        )
    )


def bench_pages(rows, rounds=3):
    """The feedback pages' stylesheet: its size and the time to prune it (grading.reports.stylesheet, once per
    process); then the demo class graded on every core, and its pages' sizes as written and with nbconvert's whole
    stylesheet in the place of the pruned one (what they were before it was pruned)."""
    import tempfile

    from grading.authoring.release import release
    from grading.examples.demo import make_submissions
    from grading.grade.autograde import autograde
    from grading.grade.settings import Settings
    from grading.reports.page import nbconvert_css, page_css

    full, pruned = nbconvert_css(), page_css()
    took = statistics.median(timed(page_css.__wrapped__) for _ in range(rounds))
    rows.append(
        (
            "the feedback pages' stylesheet (once per process)",
            f"nbconvert's {len(full) / 1e3:.0f} KB, pruned {len(pruned) / 1e3:.1f} KB in {took:.2f} s",
            f"{len(full) / len(pruned):.0f}× smaller",
            "",
            "",
        )
    )
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        release(tmp / "kit")
        make_submissions(tmp / "kit", tmp / "class")
        autograde(tmp / "class", tmp / "grades", settings=Settings(workers=os.cpu_count()))
        pages = [path.read_text() for path in sorted((tmp / "grades" / "feedback").rglob("*.html"))]
    assert all(pruned in page for page in pages), "a page without the stylesheet this process pruned"
    now = [len(page.encode()) for page in pages]
    before = [size + len(full.encode()) - len(pruned.encode()) for size in now]
    rows.append(
        (
            f"the demo class's feedback pages ({len(pages)})",
            f"{statistics.mean(now) / 1e3:.0f} KB a page, {min(now) / 1e3:.0f}–{max(now) / 1e3:.0f} KB, "
            f"{sum(now) / 1e6:.1f} MB in all",
            f"{sum(now) / sum(before):.2f}× their size with nbconvert's stylesheet "
            f"({statistics.mean(before) / 1e3:.0f} KB a page, {sum(before) / 1e6:.1f} MB)",
            "",
            "",
        )
    )


def machine_cpu_seconds():
    """The CPU time every process of the machine has used since it started (/proc/stat: user, nice, system, irq,
    softirq, steal), in seconds: on a quiet machine, a run's difference is the run's CPU, the processes it never
    waited for included (the fork server's jobs and their sandboxes, which cpu_seconds leaves out)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def cpu_seconds():
    "CPU time of this process and of every process it (and they) started and waited for, in seconds."
    import resource

    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


# The table -----------------------------------------------------------------------------------------------------------


def row(label, times, baseline, target):
    "One line of the table: each contender's time, tinytorch's ratio to `baseline`, and whether it meets `target`."
    shown = ", ".join(f"{name} {fmt(seconds)}" for name, seconds in times.items())
    ratio = times["tinytorch"] / times[baseline]
    if target is not None and target < 1:  # a speed-up target: "at least 1/target times faster"
        return (
            label,
            shown,
            f"{1 / ratio:.0f}× faster than {baseline}",
            f"≥ {1 / target:g}× faster",
            "met" if ratio <= target else "MISSED",
        )
    verdict = "" if target is None else ("met" if ratio <= target else "MISSED")
    return label, shown, f"{ratio:.2f}× {baseline}", "" if target is None else f"≤ {target:g}× {baseline}", verdict


def fmt(seconds):
    return (
        f"{seconds * 1e6:.1f} µs"
        if seconds < 1e-3
        else f"{seconds * 1e3:.1f} ms"
        if seconds < 1
        else f"{seconds:.2f} s"
    )


BENCHES = {
    "engines": bench_engines,
    "mlp": bench_mlp,
    "ops": bench_ops,
    "conv": bench_conv,
    "memory": bench_memory,
    "grading": bench_grading,
    "folder": bench_new_folder,
    "pages": bench_pages,
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("which", nargs="*", help=f"benchmarks to run: {', '.join(BENCHES)} (default: all)")
    parser.add_argument(
        "--mlsys", type=Path, help="engines: a checkout of MLSysBook's TinyTorch (its tinytorch/, and src/)"
    )
    parser.add_argument("--rounds", type=int, default=5, help="engines: rounds of one process per engine (default 5)")
    args = parser.parse_args(argv)
    unknown = [name for name in args.which if name not in BENCHES]
    if unknown:
        parser.error(f"unknown benchmark {unknown[0]!r}; choose from {', '.join(BENCHES)}")
    print(
        f"{time.strftime('%Y-%m-%d')} · {platform.processor() or platform.machine()} · {os.cpu_count()} cores "
        f"(BLAS: {os.environ['OPENBLAS_NUM_THREADS']} thread per contender) · "
        f"Python {platform.python_version()} · NumPy {np.__version__} · "
        f"{'PyTorch ' + torch.__version__ if torch else 'PyTorch not installed'}"
    )
    rows = []
    for name in args.which or BENCHES:
        if name == "engines":
            bench_engines(rows, args.rounds, args.mlsys)
        else:
            BENCHES[name](rows)
    print()
    print("| benchmark | measured | ratio | target | |")
    print("|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
