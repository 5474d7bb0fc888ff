"""Notebook 11's given training code (issue 23 for 11, issue 24's note on independent tests): the three sets it
describes, and a `fit` that a broken `accuracy` cannot stop, so that the test of the trained model grades
`train_epoch` alone."""

import numpy as np

import tinytorch.core.training as training
from tinytorch.core.autograd import enable_autograd
from tinytorch.core.losses import CrossEntropy
from tinytorch.core.nn import Linear
from tinytorch.core.optimizers import SGD


def test_the_two_splits_give_disjoint_sets_of_the_sizes_the_text_states():
    X, y = training.load_digits()
    X_rest, X_test, y_rest, y_test = training.train_test_split(X, y, test_fraction=0.2, seed=0)
    X_train, X_val, y_train, y_val = training.train_test_split(X_rest, y_rest, test_fraction=0.2, seed=1)
    assert (len(X_train), len(X_val), len(X_test)) == (1150, 288, 359)
    rows = [{row.tobytes() for row in part} for part in (X_train, X_val, X_test)]
    assert sum(map(len, rows)) == len(set().union(*rows)) == len(X), "no image in two sets (and none repeated)"


def test_fit_trains_every_epoch_when_the_accuracy_raises_and_says_so_once(monkeypatch, capsys):
    enable_autograd()

    def wrong_axis(logits, labels):
        return float(np.mean(np.argmax(logits.data, axis=0) == np.asarray(labels)))

    monkeypatch.setattr(training, "accuracy", wrong_axis)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(24, 4)), rng.integers(0, 3, size=24)
    model = Linear(4, 3, seed=0)
    optimizer = SGD(model.parameters(), lr=0.5)
    history = training.fit(model, CrossEntropy(), optimizer, X[:16], y[:16], X[16:], y[16:], epochs=3, batch_size=8)
    assert len(history["loss"]) == 3 and history["train_loss"][-1] < history["train_loss"][0]
    assert all(np.isnan(a) for a in history["train_accuracy"] + history["test_accuracy"])
    assert capsys.readouterr().out.count("accuracy raised ValueError") == 1


def test_fit_records_both_sets_under_the_name_given_to_the_held_out_one():
    enable_autograd()
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(20, 4)), rng.integers(0, 3, size=20)
    model = Linear(4, 3, seed=0)
    history = training.fit(
        model, CrossEntropy(), SGD(model.parameters(), lr=0.1), X, y, X[:5], y[:5], epochs=2, held_out="validation"
    )
    keys = {"loss", "train_loss", "train_accuracy", "validation_loss", "validation_accuracy"}
    assert set(history) == keys and all(len(v) == 2 for v in history.values())
    assert history["validation_accuracy"][-1] == training.evaluate(model, X[:5], y[:5])
