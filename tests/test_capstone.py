"""Notebook 16's given code: the split the grader holds out from, and the size bound of a capstone model."""

import numpy as np

from tinytorch.core.capstone import MAX_PARAMETERS, count_parameters, curve_recorder, measure, three_way_split
from tinytorch.core.nn import Linear, ReLU, Sequential
from tinytorch.core.training import load_digits


def test_the_three_sets_are_disjoint_cover_the_digits_and_depend_on_the_seed():
    X, y = load_digits()
    index = np.arange(len(X), dtype=float)[:, None]  # each row remembers where it came from
    parts = three_way_split(index, y, seed=3)
    train, val, test = (parts[i][:, 0].astype(int) for i in (0, 2, 4))
    assert (len(train), len(val), len(test)) == (1258, 180, 359)
    assert sorted(np.concatenate([train, val, test])) == list(range(len(X)))
    assert (y[train] == parts[1]).all() and (y[test] == parts[5]).all(), "labels stay with their images"
    assert not (three_way_split(index, y, seed=4)[4][:, 0].astype(int) == test).all()


def test_a_frozen_weight_counts_towards_the_size_of_a_model():
    features = Linear(64, 4000, seed=0)
    features.weight.requires_grad = False
    model = Sequential(features, ReLU(), Linear(4000, 10, seed=1))
    assert count_parameters(model) == 64 * 4000 + 4000 + 4000 * 10 + 10 > MAX_PARAMETERS
    assert count_parameters(model) > sum(p.data.size for p in model.parameters()), "parameters() misses frozen ones"


def test_a_layer_shared_twice_counts_once():
    shared = Linear(8, 8, seed=0)
    assert count_parameters(Sequential(shared, ReLU(), shared)) == 8 * 8 + 8


def test_the_curves_are_measured_by_the_given_code():
    X, y = load_digits()
    model = Sequential(Linear(64, 10, seed=0))
    history, report = curve_recorder(train=(X[:100], y[:100]), val=(X[100:150], y[100:150]))
    report(0, model)
    report(1, model)
    assert [len(history["train"]), len(history["val"])] == [2, 2]
    loss, accuracy = measure(model, X[:100], y[:100])
    assert history["train"][0] == (loss, accuracy) and 0 <= accuracy <= 1 and loss > 0
