"""One engine's side of `python benchmarks/run.py engines`: the issue's workloads in one engine and dtype, timed in
this process alone, printed as one JSON line. run.py starts one process per engine, in rounds, and compares.

    python benchmarks/engines.py tinytorch float32          # also: numpy, torch (float32, float64), mlsys float32
    python benchmarks/engines.py mlsys float32 --mlsys PATH # PATH/tinytorch: benchmarks/mlsys_package.py makes it

Every engine starts from the same weights and data (`problem`), so their first losses agree; each workload is a
function that returns one step, timed STEPS times after a warm-up; the lower quartile is what is printed.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"  # one thread per engine: set before NumPy and PyTorch load

import numpy as np  # noqa: E402  (after the thread settings above)

STEPS, WARM_UP, BUDGET_S = 60, 10, 4.0  # a slow engine stops timing after BUDGET_S seconds of steps
CHAIN = 100  # the per-op workload: `y = y * a + b` CHAIN times, so 2 * CHAIN recorded operations
MLPS = {"mlp_digits": ((64, 128, 10), 64), "mlp_mnist": ((784, 256, 10), 128)}
CNN = {"batch": 32, "size": 8, "filters": 16, "k": 3, "classes": 10}
WORKLOADS = ("mlp_digits", "mlp_mnist", "ops_float", "ops_tensor", "cnn")


def problem(workload):
    "The data and first weights of a workload, float64, the same for every engine."
    rng = np.random.default_rng(0)
    if workload in MLPS:
        (n_in, hidden, n_out), batch = MLPS[workload]
        x, y = rng.normal(size=(batch, n_in)), rng.integers(0, n_out, batch)
        layers = [
            (rng.uniform(-1, 1, (o, i)) / np.sqrt(i), rng.uniform(-0.1, 0.1, o))
            for i, o in [(n_in, hidden), (hidden, n_out)]
        ]
        return x, y, layers
    c = CNN
    x, y = rng.normal(size=(c["batch"], 1, c["size"], c["size"])), rng.integers(0, c["classes"], c["batch"])
    features = c["filters"] * ((c["size"] - c["k"] + 1) // 2) ** 2
    conv = (rng.uniform(-1, 1, (c["filters"], 1, c["k"], c["k"])) / c["k"], rng.uniform(-0.1, 0.1, c["filters"]))
    return x, y, [conv, (rng.uniform(-1, 1, (c["classes"], features)) / np.sqrt(features), np.zeros(c["classes"]))]


def time_steps(step):
    "The lower quartile of STEPS timed calls of `step` after WARM_UP calls, and what the first call returned."
    first, start = step(), time.perf_counter()
    for _ in range(WARM_UP):
        if time.perf_counter() - start > BUDGET_S / 4:  # an engine that takes a second a step warms up in a few
            break
        step()
    times, start = [], time.perf_counter()
    while len(times) < STEPS and (time.perf_counter() - start < BUDGET_S or len(times) < 5):
        begin = time.perf_counter()
        step()
        times.append(time.perf_counter() - begin)
    return float(np.percentile(times, 25)), first


# Hand-written NumPy: the floor ---------------------------------------------------------------------------------------


def numpy_mlp(workload, dtype):
    x, y, layers = problem(workload)
    x = x.astype(dtype)
    (W1, b1), (W2, b2) = [(w.astype(dtype), b.astype(dtype)) for w, b in layers]
    one_hot = np.eye(W2.shape[0], dtype=dtype)[y]

    def step():
        h = x @ W1.T + b1
        a = np.maximum(h, 0)
        z = a @ W2.T + b2
        z = z - z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        loss = -np.log(p[np.arange(len(y)), y]).mean()
        dz = (p - one_hot) / len(x)
        dW2, db2 = dz.T @ a, dz.sum(axis=0)
        dh = (dz @ W2) * (h > 0)
        dW1, db1 = dh.T @ x, dh.sum(axis=0)
        for param, grad in ((W1, dW1), (b1, db1), (W2, dW2), (b2, db2)):
            grad *= 0.01
            param -= grad
        return float(loss)

    return step


def numpy_ops(workload, dtype):
    x = np.ones((8, 8), dtype=dtype)
    a, b = (
        (0.9999, 0.001) if workload == "ops_float" else (np.full((8, 8), 0.9999, dtype), np.full((8, 8), 0.001, dtype))
    )

    def step():
        y = x
        for _ in range(CHAIN):
            y = y * a + b
        grad = np.ones_like(x)
        for _ in range(CHAIN):
            grad = grad * a
        return float(y.sum())

    return step


def numpy_cnn(workload, dtype):
    from numpy.lib.stride_tricks import sliding_window_view

    x, y, ((K, kb), (W, b)) = problem("cnn")
    x, K, kb, W, b = (v.astype(dtype) for v in (x, K, kb, W, b))
    k, n = K.shape[-1], len(x)
    cols = sliding_window_view(x[:, 0], (k, k), axis=(1, 2)).reshape(-1, k * k)  # (n·6·6, 9): the input needs no grad
    one_hot = np.eye(W.shape[0], dtype=dtype)[y]

    def step():
        h = (cols @ K.reshape(len(K), -1).T + kb).reshape(n, 6, 6, -1)  # channels last
        r = np.maximum(h, 0)
        windows = r.reshape(n, 3, 2, 3, 2, -1)
        pooled = windows.max(axis=(2, 4))
        flat = pooled.transpose(0, 3, 1, 2).reshape(n, -1)  # channel-first order, as the engines flatten
        z = flat @ W.T + b
        z = z - z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        loss = -np.log(p[np.arange(n), y]).mean()
        dz = (p - one_hot) / n
        dW, db = dz.T @ flat, dz.sum(axis=0)
        dpooled = (dz @ W).reshape(n, -1, 3, 3).transpose(0, 2, 3, 1)
        dr = (windows == pooled[:, :, None, :, None]) * dpooled[:, :, None, :, None]
        dh = (dr.reshape(n, 6, 6, -1) * (h > 0)).reshape(-1, len(K))
        dK, dkb = (dh.T @ cols).reshape(K.shape), dh.sum(axis=0)
        for param, grad in ((K, dK), (kb, dkb), (W, dW), (b, db)):
            grad *= 0.01
            param -= grad
        return float(loss)

    return step


# tinytorch -----------------------------------------------------------------------------------------------------------


def tinytorch_cnn(dtype):
    "The CNN workload in tinytorch: (model, input, labels); also what benchmarks/profile_step.py --cnn times."
    import tinytorch as tt
    from tinytorch.core.conv import Conv2d, MaxPool2d
    from tinytorch.core.nn import Flatten, Linear, ReLU, Sequential

    x, y, ((K, kb), (W, b)) = problem("cnn")
    conv = Conv2d(1, CNN["filters"], CNN["k"], dtype=dtype)
    conv.weight.data[...], conv.bias.data[...] = K, kb
    head = Linear(tt.Tensor(W, dtype, requires_grad=True), tt.Tensor(b, dtype, requires_grad=True))
    return Sequential(conv, ReLU(), MaxPool2d(2), Flatten(), head), tt.Tensor(x, dtype), y


def tinytorch_engine():
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import tinytorch as tt
    from tinytorch.core.losses import cross_entropy
    from tinytorch.core.nn import Linear, ReLU, Sequential
    from tinytorch.core.optimizers import SGD

    def training(model, x, y):
        optimizer = SGD(model.parameters(), lr=0.01)

        def step():
            optimizer.zero_grad()
            loss = cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            return float(loss.item())

        return step

    def mlp(workload, dtype):
        x, y, layers = problem(workload)
        linears = [
            Linear(tt.Tensor(w, dtype, requires_grad=True), tt.Tensor(b, dtype, requires_grad=True)) for w, b in layers
        ]
        return training(Sequential(linears[0], ReLU(), linears[1]), tt.Tensor(x, dtype), y)

    def cnn(workload, dtype):
        return training(*tinytorch_cnn(dtype))

    def ops(workload, dtype):
        x = tt.Tensor(np.ones((8, 8)), dtype, requires_grad=True)
        if workload == "ops_float":
            a, b = 0.9999, 0.001
        else:
            a, b = tt.Tensor(np.full((8, 8), 0.9999), dtype), tt.Tensor(np.full((8, 8), 0.001), dtype)
        return autograd_chain(x, a, b)

    return {"mlp": mlp, "cnn": cnn, "ops": ops}


def autograd_chain(x, a, b):
    "Forward and backward through the chain with an autograd engine whose tensors have .sum() and .backward()."

    def step():
        y = x
        for _ in range(CHAIN):
            y = y * a + b
        total = y.sum()
        total.backward()
        x.grad = None
        return float(np.asarray(total.data))

    return step


# PyTorch (eager, CPU) ------------------------------------------------------------------------------------------------


def torch_engine():
    import torch

    torch.set_num_threads(1)

    def training(model, x, y):
        optimizer, loss_fn = torch.optim.SGD(model.parameters(), lr=0.01), torch.nn.CrossEntropyLoss()

        def step():
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            return loss.item()

        return step

    def load(module, weight, bias, dtype):
        with torch.no_grad():
            module.weight.copy_(torch.from_numpy(weight))
            module.bias.copy_(torch.from_numpy(bias))
        return module.to(getattr(torch, np.dtype(dtype).name))

    def mlp(workload, dtype):
        x, y, ((W1, b1), (W2, b2)) = problem(workload)
        first, second = (load(torch.nn.Linear(w.shape[1], w.shape[0]), w, b, dtype) for w, b in ((W1, b1), (W2, b2)))
        return training(
            torch.nn.Sequential(first, torch.nn.ReLU(), second), torch.from_numpy(x.astype(dtype)), torch.from_numpy(y)
        )

    def cnn(workload, dtype):
        x, y, ((K, kb), (W, b)) = problem("cnn")
        conv = load(torch.nn.Conv2d(1, CNN["filters"], CNN["k"]), K, kb, dtype)
        head = load(torch.nn.Linear(W.shape[1], W.shape[0]), W, b, dtype)
        model = torch.nn.Sequential(conv, torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(), head)
        return training(model, torch.from_numpy(x.astype(dtype)), torch.from_numpy(y))

    def ops(workload, dtype):
        x = torch.ones((8, 8), dtype=getattr(torch, np.dtype(dtype).name), requires_grad=True)
        if workload == "ops_float":
            return autograd_chain(x, 0.9999, 0.001)
        return autograd_chain(x, torch.full_like(x, 0.9999).detach(), torch.full_like(x, 0.001).detach())

    return {"mlp": mlp, "cnn": cnn, "ops": ops}


# MLSysBook's TinyTorch (float32 only), from the exported package of a checkout -----------------------------------------


def mlsys_engine(path):
    sys.path.insert(0, str(path))
    from tinytorch.core.activations import ReLU
    from tinytorch.core.autograd import enable_autograd
    from tinytorch.core.layers import Linear
    from tinytorch.core.losses import CrossEntropyLoss
    from tinytorch.core.optimizers import SGD
    from tinytorch.core.spatial import Conv2d, MaxPool2d
    from tinytorch.core.tensor import Tensor

    enable_autograd()

    def training(layers, x, y):
        parameters = [p for layer in layers if hasattr(layer, "parameters") for p in layer.parameters()]
        optimizer, loss_fn, targets = SGD(parameters, lr=0.01), CrossEntropyLoss(), Tensor(y)

        def step():
            optimizer.zero_grad()
            out = x
            for layer in layers:
                out = layer(out)
            loss = loss_fn(out, targets)
            loss.backward()
            optimizer.step()
            return float(loss.data)

        return step

    def linear(weight, bias):
        layer = Linear(weight.shape[1], weight.shape[0])
        layer.weight.data[...], layer.bias.data[...] = weight.T, bias  # its weight is (in, out)
        return layer

    def mlp(workload, dtype):
        x, y, ((W1, b1), (W2, b2)) = problem(workload)
        return training([linear(W1, b1), ReLU(), linear(W2, b2)], Tensor(x), y)

    def cnn(workload, dtype):
        x, y, ((K, kb), (W, b)) = problem("cnn")
        conv = Conv2d(1, CNN["filters"], CNN["k"])
        conv.weight.data[...], conv.bias.data[...] = K, kb
        flatten = lambda t: t.reshape(t.shape[0], -1)  # noqa: E731  (its own layers have no Flatten)
        return training([conv, ReLU(), MaxPool2d(2), flatten, linear(W, b)], Tensor(x), y)

    def ops(workload, dtype):
        x = Tensor(np.ones((8, 8)), requires_grad=True)
        if workload == "ops_float":
            return autograd_chain(x, 0.9999, 0.001)
        return autograd_chain(x, Tensor(np.full((8, 8), 0.9999)), Tensor(np.full((8, 8), 0.001)))

    return {"mlp": mlp, "cnn": cnn, "ops": ops}


def blas_kernel():
    """Which BLAS and kernel NumPy runs: as threadpoolctl reads it, or else OpenBLAS's own answer from the library
    this process loaded (None when neither is there)."""
    try:
        import threadpoolctl
    except ImportError:
        return openblas_core()
    return ", ".join(f"{i['internal_api']} {i.get('architecture', '?')}" for i in threadpoolctl.threadpool_info())


def openblas_core():
    "The kernel OpenBLAS chose at load time (OPENBLAS_CORETYPE overrides it), read with ctypes; None if not OpenBLAS."
    import ctypes

    with open("/proc/self/maps") as maps:
        loaded = {line.split()[-1] for line in maps if "openblas" in line.lower() and line.split()[-1].startswith("/")}
    for path in sorted(loaded):
        library = ctypes.CDLL(path)
        for name in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename"):
            if hasattr(library, name):
                corename = getattr(library, name)
                corename.restype = ctypes.c_char_p
                return f"openblas {corename().decode()}"
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("engine", choices=("numpy", "tinytorch", "torch", "mlsys"))
    parser.add_argument("dtype", choices=("float32", "float64"))
    parser.add_argument("--mlsys", type=Path, help="a folder holding MLSysBook TinyTorch's exported tinytorch/")
    args = parser.parse_args(argv)
    if args.engine == "numpy":
        builders = {"mlp": numpy_mlp, "ops": numpy_ops, "cnn": numpy_cnn}
    elif args.engine == "mlsys":
        builders = mlsys_engine(args.mlsys)
    else:
        builders = tinytorch_engine() if args.engine == "tinytorch" else torch_engine()
    dtype, result = np.dtype(args.dtype).type, {"blas": blas_kernel()}
    for workload in WORKLOADS:
        seconds, first = time_steps(builders[workload.split("_")[0]](workload, dtype))
        result[workload] = {"seconds": seconds / (2 * CHAIN if workload.startswith("ops") else 1), "first": first}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
