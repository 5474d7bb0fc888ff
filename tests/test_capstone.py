"""Notebook 16's given code (the split the grader holds out from, the size bound of a capstone model), and that a
capstone cannot train on the grader's held-out images while it is graded."""

import json

import numpy as np

from conftest import REPO, run_cli
from grading.common.answers import solved
from grading.common.notebooks import read_notebook, write_notebook
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


def test_a_weight_left_a_numpy_array_counts_towards_the_size_of_a_model():
    """A red-team finding: Linear's forward takes a weight that is a NumPy array as well, and the count once took
    Tensors only, so 300,010 numbers of random features and a least-squares head counted 0 and scored 6 of 6."""
    features, head = Linear(64, 4000, seed=0), Linear(4000, 10, seed=1)
    features.weight, features.bias = features.weight.data, features.bias.data
    head.weight = head.weight.data
    model = Sequential(features, ReLU(), head)
    assert count_parameters(model) == 64 * 4000 + 4000 + 4000 * 10 + 10 > MAX_PARAMETERS
    assert model(np.zeros((2, 64))).shape == (2, 10), "the layers do compute with the arrays"


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


def grade(tmp_path, *options):
    "Autograde TMP_PATH/submissions into TMP_PATH/grades with the secret TMP_PATH/secret: (gradebook, what it printed)."
    result = run_cli(
        "autograde",
        tmp_path / "submissions",
        "--out",
        tmp_path / "grades",
        "--secret-file",
        tmp_path / "secret",
        *options,
    )
    assert result.returncode == 0, result.stderr + result.stdout
    return json.loads((tmp_path / "grades" / "gradebook.json").read_text()), result.stdout


# A student who trains on every shipped digit, the grader's held-out images among them, instead of the arrays given.
TRAINS_ON_EVERY_DIGIT = (
    "    epochs, lr0 = 40, 0.003\n",
    "    from tinytorch.core.training import load_digits\n\n"
    "    X_train, y_train = load_digits()  # the grader's held-out images are among them\n"
    "    epochs, lr0 = 40, 0.003\n",
)


# Red team round 4: random ReLU features and a least-squares head, 300,010 numbers, held as NumPy arrays in the course's
# Linear layers (whose forward takes them), which the size bound once did not count: 6 of 6 for a model 1.5 times the
# bound. Counted now, it loses the held-out tests as the same model with Tensor weights does.
ARRAYS_PAST_THE_BOUND = """#| export
def build_and_train(X_train, y_train, X_val, y_val, seed=0, report=None):
    first, last = Linear(64, 4000, seed=seed), Linear(4000, 10, seed=seed + 1)
    rng = np.random.default_rng(seed)
    W, b = rng.normal(size=(4000, 64)) / 2.0, rng.normal(size=4000)
    F = np.maximum(X_train @ W.T + b, 0)
    head = np.linalg.solve(F.T @ F + 0.1 * np.eye(4000), F.T @ (np.eye(10)[y_train] * 2 - 1))
    first.weight, first.bias = W, b
    last.weight, last.bias = np.ascontiguousarray(head.T), np.zeros(10)
    return Sequential(first, ReLU(), last)
"""


def test_a_capstone_that_trains_on_the_held_out_images_or_hides_its_size_loses_its_points(kit, tmp_path):
    """While it is graded, the student's code runs with a package that holds no data (grading.grade.job.build_package): it
    gets the digits only as the arrays it is passed, so it cannot train on the images it is measured on. And its model's
    numbers are counted wherever they are held (ARRAYS_PAST_THE_BOUND)."""
    source = read_notebook(REPO / "notebooks" / "16_capstone.ipynb")
    released = read_notebook(kit / "16_capstone" / "16_capstone.ipynb")
    old, new = TRAINS_ON_EVERY_DIGIT

    def cheat(grade_id, code):
        if "def build_and_train" not in code:
            return code
        assert old in code, "the solution no longer starts as TRAINS_ON_EVERY_DIGIT expects"
        return code.replace(old, new)

    def arrays(grade_id, code):
        return ARRAYS_PAST_THE_BOUND if "def build_and_train" in code else code

    students = [("honest", None), ("cheat", cheat), ("arrays", arrays)]
    for student, edit in students:
        nb = solved(released, source, edit=edit) if edit else solved(released, source)
        write_notebook(nb, tmp_path / "submissions" / student / "16_capstone" / "16_capstone.ipynb")
    (tmp_path / "secret").write_text("capstone-held-out-test-secret-0123456789\n")
    book, _ = grade(tmp_path, "--feedback", "none")
    honest, cheat_tests = book["honest"]["16_capstone"]["tests"], book["cheat"]["16_capstone"]["tests"]
    held_out = ["capstone_held_out", "capstone_held_out_high"]
    assert all(honest[name]["score"] == honest[name]["max_score"] > 0 for name in held_out), honest
    assert all(cheat_tests[name]["score"] == 0 for name in held_out), cheat_tests
    assert "the arrays it is passed" in cheat_tests["capstone_held_out"]["message"], cheat_tests
    past_the_bound = book["arrays"]["16_capstone"]["tests"]
    assert all(past_the_bound[name]["score"] == 0 for name in held_out), past_the_bound
    assert "the model holds 300010 numbers" in past_the_bound["capstone_held_out"]["message"], past_the_bound
