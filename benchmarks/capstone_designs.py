"""Where the capstone's (notebook 16) bars sit: the held-out accuracy and size of the designs they must tell apart.

    python benchmarks/capstone_designs.py             # 5 graded students, about 2 minutes of CPU
    python benchmarks/capstone_designs.py --students 10

Each "student" is graded as the hidden test grades one: the digits split with a seed of its own, the design trained
on the training and validation parts, its accuracy measured on the held-out part as the grader changes it
(`deformed`: moved by up to a pixel and noised). Designs: a one-layer softmax, trained on the images as given and on
deformed copies; the nearest-neighbour lookup that memorises every training image (Linear, Softmax and Linear layers
holding the images, untrained) and the largest one under MAX_PARAMETERS; the reference MLP trained on the images as
given; the reference solution (build_and_train); a small CNN trained on deformed copies. The bars of the hidden
tests (HELD_OUT_BARS) must lie above every design but the last two, and below those.
"""

import argparse
import os
import time

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # as the grader runs a student's code

import numpy as np  # noqa: E402  (after the thread settings)

from tinytorch.core.capstone import (  # noqa: E402
    HELD_OUT_BARS,
    MAX_PARAMETERS,
    Reshape,
    build_and_train,
    count_parameters,
    deformed,
    measure,
    three_way_split,
)
from tinytorch.core.conv import Conv2d, MaxPool2d  # noqa: E402
from tinytorch.core.losses import CrossEntropy  # noqa: E402
from tinytorch.core.nn import Flatten, Linear, ReLU, Sequential, Softmax  # noqa: E402
from tinytorch.core.optimizers import AdamW  # noqa: E402
from tinytorch.core.training import batches, load_digits  # noqa: E402


def trained(model, X_train, y_train, seed, *, epochs=30, lr0=0.003, deform=False):
    "`model` after `epochs` of AdamW with a cosine schedule, on the images as given or on new deformed copies each epoch."
    optimizer, loss_fn, rng = (
        AdamW(model.parameters(), lr=lr0, weight_decay=0.01),
        CrossEntropy(),
        np.random.default_rng(seed),
    )
    for epoch in range(epochs):
        optimizer.lr = lr0 * 0.5 * (1 + np.cos(np.pi * epoch / epochs))
        for inputs, labels in batches(deformed(X_train, rng) if deform else X_train, y_train, 32, rng):
            optimizer.zero_grad()
            loss_fn(model(inputs), labels).backward()
            optimizer.step()
    return model


def lookup(X_train, y_train, count=None):
    """An untrained nearest-neighbour lookup of the first `count` training images (all when None), from course layers:
    the scores -|x - t|^2 (up to a constant), a sharp softmax, and each image's one-hot label summed per class."""
    templates, labels = X_train[:count], y_train[:count]
    first, last = Linear(64, len(templates)), Linear(len(templates), 10)
    first.weight.data[...], first.bias.data[...] = 200 * templates, -100 * (templates**2).sum(axis=1)
    last.weight.data[...], last.bias.data[...] = np.eye(10)[labels].T, 0
    return Sequential(first, Softmax(), last)


def small_cnn(seed):
    return Sequential(
        Reshape(1, 8, 8),
        Conv2d(1, 16, 3, padding=1, seed=seed),
        ReLU(),
        MaxPool2d(2),
        Flatten(),
        Linear(256, 10, seed=seed + 1),
    )


def mlp(seed):
    return Sequential(Linear(64, 256, seed=seed, init="he"), ReLU(), Linear(256, 10, seed=seed + 1, init="he"))


DESIGNS = {
    "Linear(64, 10)": lambda X, y, Xv, yv, s: trained(Linear(64, 10, seed=s), X, y, s),
    "Linear(64, 10), deformed copies": lambda X, y, Xv, yv, s: trained(Linear(64, 10, seed=s), X, y, s, deform=True),
    "lookup of every training image": lambda X, y, Xv, yv, s: lookup(X, y),
    "lookup under the bound": lambda X, y, Xv, yv, s: lookup(X, y, (MAX_PARAMETERS - 10) // 75),
    "MLP 64-256-10, images as given": lambda X, y, Xv, yv, s: trained(mlp(s), X, y, s, epochs=40),
    "reference (build_and_train)": lambda X, y, Xv, yv, s: build_and_train(X, y, Xv, yv, seed=s),
    "small CNN, deformed copies": lambda X, y, Xv, yv, s: trained(
        small_cnn(s), X, y, s, epochs=20, lr0=0.01, deform=True
    ),
}


def graded(design, students):
    """(held-out accuracies on deformed images, on the images as they are, size of the last model, mean CPU seconds of
    a training) over `students` graded students."""
    X, y = load_digits()
    accuracies, as_they_are, seconds = [], [], []
    for student in range(students):
        draw = np.random.default_rng(1000 + student)  # stands in for the hidden test's variant_rng
        parts = three_way_split(X, y, seed=int(draw.integers(2**31)))
        start = time.process_time()
        model = DESIGNS[design](*parts[:4], int(draw.integers(1000)))
        seconds.append(time.process_time() - start)
        accuracies.append(measure(model, deformed(parts[4], draw), parts[5])[1])
        as_they_are.append(measure(model, *parts[4:])[1])
    return accuracies, as_they_are, count_parameters(model), float(np.mean(seconds))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=5, help="graded students per design (default 5)")
    students = parser.parse_args().students
    print(f"held-out accuracy on deformed images, {students} students; bars {HELD_OUT_BARS}, at most {MAX_PARAMETERS}")
    print("| design | numbers | held-out accuracy | the same images as they are | CPU s to train |")
    print("|---|---:|---|---|---:|")
    for design in DESIGNS:
        accuracies, as_they_are, size, seconds = graded(design, students)
        over = " (over the bound: 0 points)" if size > MAX_PARAMETERS else ""
        print(f"| {design} | {size:,}{over} | {span(accuracies)} | {span(as_they_are)} | {seconds:.1f} |", flush=True)


def span(values):
    return f"{min(values):.3f}–{max(values):.3f}"


if __name__ == "__main__":
    main()
