"""The instructor's own held-out digits for the capstone (`autograde --held-out-digits FILE.npz`, grading.grade.heldout):
a bad file is refused before anything is graded; with a good one the capstone is measured on it (deformed, as the
split of the shipped digits is), so the held-out images are in no copy of the course; the file never reaches a
sandbox."""

import json
import os
import re
import shutil
import zipfile

import numpy as np
import pytest

from conftest import REPO, run_cli
from grading.common.answers import solved
from grading.common.errors import GradingError
from grading.common.notebooks import read_notebook, write_notebook
from grading.grade import heldout
from grading.grade.cluster import worker_spec
from grading.grade.spec import Spec
from tinytorch.core.training import load_digits

AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="the student-user fallback needs a grader running as root")

HELD_OUT = ["capstone_held_out", "capstone_held_out_high"]


def noisy_copies(n=600, seed=0):
    """Digits of the instructor's own, made here from the shipped ones (no secret in them): each pixel of n of them
    moved by -1/16, 0 or +1/16 at random. None is among the shipped images; an honest model classifies them as well."""
    X, y = load_digits()
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(X), n, replace=False)
    return np.clip(X[chosen] + rng.integers(-1, 2, (n, 64)) / 16, 0, 1), y[chosen]


def save(path, **arrays):
    np.savez(path, **arrays)
    return path


# -- 3. A bad file is the instructor's to fix: said up front, nothing graded -------------------------------------------

X, Y = load_digits()
BAD_FILES = {
    "keys": ({"images": X, "labels": Y}, "expected exactly X and y"),
    "square images": ({"X": X.reshape(-1, 8, 8), "y": Y}, "X.reshape(len(X), 64)"),
    "0-16 pixels": ({"X": X * 16, "y": Y}, "divide"),
    "float labels": ({"X": X, "y": Y.astype(float)}, "integer labels"),
    "labels 1-10": ({"X": X, "y": Y + 1}, "expected the digits 0-9"),
    "a few images": ({"X": X[:40], "y": Y[:40]}, "too few images of some digits"),
    "NaN": ({"X": np.where(X > 0.9, np.nan, X), "y": Y}, "NaN"),
    "one label per image": ({"X": X, "y": Y[:-1]}, "one label per image"),
}


@pytest.mark.parametrize("name", BAD_FILES)
def test_a_bad_held_out_file_names_the_option_what_is_wrong_and_the_fix(tmp_path, name):
    arrays, expected = BAD_FILES[name]
    path = save(tmp_path / "digits.npz", **arrays)
    with pytest.raises(GradingError, match="--held-out-digits") as raised:
        heldout.read(path)
    assert expected in str(raised.value), str(raised.value)


def test_a_missing_file_a_folder_and_a_file_that_is_not_an_npz_are_refused(tmp_path):
    np.save(tmp_path / "one.npy", X)
    (tmp_path / "text.npz").write_text("X,y\n")
    for path, expected in [
        (tmp_path / "missing.npz", "no such file"),
        (tmp_path, "is a folder"),
        (tmp_path / "one.npy", "one .npy array"),
        (tmp_path / "text.npz", "not a NumPy .npz file"),
    ]:
        with pytest.raises(GradingError, match=expected):
            heldout.read(path)
    object_arrays = save(tmp_path / "objects.npz", X=np.array([object()] * 3), y=Y[:3])
    with pytest.raises(GradingError, match="without unpickling"):
        heldout.read(object_arrays)


def test_autograde_and_gradescope_refuse_a_bad_held_out_file_before_writing_anything(tmp_path):
    bad = save(tmp_path / "digits.npz", X=X * 16, y=Y)
    (tmp_path / "submissions" / "alice").mkdir(parents=True)
    result = run_cli("autograde", tmp_path / "submissions", "--out", tmp_path / "grades", "--held-out-digits", bad)
    assert result.returncode == 2, result.stderr
    assert "error: --held-out-digits" in result.stderr and "divide" in result.stderr, result.stderr
    assert not (tmp_path / "grades").exists(), "nothing is written, let alone graded"
    result = run_cli("gradescope", "--out", tmp_path / "autograder.zip", "--held-out-digits", tmp_path / "nope.npz")
    assert result.returncode == 2 and "no such file" in result.stderr, result.stderr
    assert not (tmp_path / "autograder.zip").exists()


def test_a_good_file_reads_as_load_digits_does_and_only_while_the_verdict_says_so(tmp_path):
    images, labels = noisy_copies(200)
    path = save(tmp_path / "digits.npz", X=images.astype(np.float32), y=labels.astype(np.int32))
    held_out = heldout.read(path)
    assert held_out.images == 200 and held_out.data == path.read_bytes() and heldout.shipped_among(held_out) == 0
    assert heldout.held_out_digits() is None, "outside grading (the instructor's run) the hidden test splits as before"
    heldout.use(heldout.write_copy(held_out, tmp_path))
    try:
        got_X, got_y = heldout.held_out_digits()
    finally:
        heldout.use(None)
    assert got_X.dtype == np.float64 and got_y.dtype == np.int64 and np.allclose(got_X, images.astype(np.float32))
    assert heldout.held_out_digits() is None
    assert (tmp_path / heldout.FILE_NAME).stat().st_mode & 0o077 == 0, "the copy is readable by the grader alone"


def test_only_the_capstone_measures_with_the_held_out_digits():
    readers = [path.stem for path in sorted((REPO / "notebooks").glob("*.ipynb")) if heldout.uses(read_notebook(path))]
    assert readers == ["16_capstone"]


def test_a_cluster_task_keeps_the_held_out_digits_in_its_own_folder(tmp_path):
    fields = {name: "x" for name in Spec.__dataclass_fields__ if name not in ("earlier_modules", "fingerprint")}
    spec = Spec(**{**fields, "earlier_modules": [], "fingerprint": {}, "page": "", "held_out_digits": "/there/h.npz"})
    task = {"spec": spec.__dict__, "released": "master/release/16_capstone/16_capstone.ipynb"}
    assert worker_spec(task, tmp_path).held_out_digits == str(tmp_path / heldout.FILE_NAME)
    task["spec"] = {**spec.__dict__, "held_out_digits": ""}
    assert worker_spec(task, tmp_path).held_out_digits == ""


def test_the_gradescope_zip_holds_the_held_out_digits_when_given(tmp_path):
    from grading.lms.gradescope import build

    path = save(tmp_path / "digits.npz", X=noisy_copies(200)[0], y=noisy_copies(200)[1])
    out = build(tmp_path / "autograder.zip", ["16_capstone"], log=lambda message: None, held_out_digits=path)
    with zipfile.ZipFile(out) as archive:
        assert archive.read(heldout.FILE_NAME) == path.read_bytes()
        assert archive.getinfo(heldout.FILE_NAME).external_attr >> 16 == 0o600
    out = build(tmp_path / "plain.zip", ["16_capstone"], log=lambda message: None)
    with zipfile.ZipFile(out) as archive:
        assert heldout.FILE_NAME not in archive.namelist()


# -- 1, 2 and 4: graded on the instructor's digits; the embedding attack; the file never in a sandbox ------------------

# A student who pastes every shipped digit (the grader's held-out images among them) into the notebook, 16 levels a
# pixel as one character each, and fits a model that reproduces all 1,797 labels exactly: random ReLU features, as
# many as there are images, and a least-squares output layer (134,785 numbers: under the bound of 200,000 it had when
# it scored 6 of 6 without the instructor's file; over the bound of 20,000 now). It ignores the arrays it is given.
EMBEDDER = '''#| export
SHIPPED = """
{rows}
"""


def build_and_train(X_train, y_train, X_val, y_val, seed=0, report=None):
    rows = SHIPPED.split()
    X = np.array([[int(c, 17) for c in row[:64]] for row in rows]) / 16.0
    y = np.array([int(row[64]) for row in rows])
    rng = np.random.default_rng(0)
    W, b = rng.standard_normal((64, len(X))), rng.standard_normal(len(X))
    V = np.linalg.lstsq(np.maximum(X @ W + b, 0), np.eye(10)[y], rcond=None)[0]
    model = Sequential(Linear(Tensor(W.T), Tensor(b)), ReLU(), Linear(Tensor(V.T), Tensor(np.zeros(10))))
    if report is not None:
        report(0, model)
    return model
'''

# A student who looks for the instructor's file in the sandbox: every file of its size, and every .npz holding 64
# pixels a row, anywhere it can read. It fits them if found (full marks), and returns an untrained model if not.
HUNTER = """#| export
def build_and_train(X_train, y_train, X_val, y_val, seed=0, report=None):
    import os

    looked, found = 0, []
    for top in ["/"]:
        for folder, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if os.path.join(folder, d) not in ("/proc", "/sys", "/dev")]
            for name in files:
                path = os.path.join(folder, name)
                looked += 1
                try:
                    if os.path.getsize(path) == {size} or name.endswith(".npz"):
                        with np.load(path, allow_pickle=False) as npz:
                            if "X" in npz.files and npz["X"].shape[-1:] == (64,):
                                found.append((path, npz["X"], npz["y"]))
                except Exception:
                    pass
    print(f"hunter looked at {{looked}} files and found {{[p for p, _, _ in found]}}")
    model = Sequential(Linear(64, 10, seed=seed))
    if found:
        X, y = found[0][1], found[0][2]
        V = np.linalg.lstsq(np.c_[X, np.ones(len(X))], np.eye(10)[y], rcond=None)[0]
        model = Sequential(Linear(Tensor(V[:-1].T), Tensor(V[-1])))
    if report is not None:
        report(0, model)
    return model
"""


def embedded_rows():
    X, y = load_digits()
    pixels = np.round(X * 16).astype(int)
    return "\n".join("".join(np.base_repr(v, 17).lower() for v in row) + str(label) for row, label in zip(pixels, y))


def capstone_submission(kit, code):
    source = read_notebook(REPO / "notebooks" / "16_capstone.ipynb")
    released = read_notebook(kit / "16_capstone" / "16_capstone.ipynb")
    return solved(released, source, edit=lambda grade_id, old: code if "def build_and_train" in old else old)


def test_the_capstone_is_measured_on_the_instructors_digits_which_no_sandbox_can_find(kit, tmp_path):
    """With a file of digits that are not in the kit, the capstone is measured on those, deformed as the split would be:
    the reference solution passes on them (as the reference check found), a notebook that hunts for the file in its
    sandbox finds nothing and is measured on them like everybody; the gradebook records the file's hash, a second run
    keeps both, and a Dask cluster gives the same scores."""
    from test_capstone import grade

    images, labels = noisy_copies()
    (tmp_path / "private").mkdir()  # kept outside the repository and the grading folder, as an instructor would
    private = save(tmp_path / "private" / "digits.npz", X=images, y=labels)
    size = private.stat().st_size
    source = read_notebook(REPO / "notebooks" / "16_capstone.ipynb")
    honest = solved(read_notebook(kit / "16_capstone" / "16_capstone.ipynb"), source)
    write_notebook(honest, tmp_path / "submissions" / "honest" / "16_capstone" / "16_capstone.ipynb")
    write_notebook(
        capstone_submission(kit, HUNTER.format(size=size)),
        tmp_path / "submissions" / "hunter" / "16_capstone" / "16_capstone.ipynb",
    )
    (tmp_path / "secret").write_text("held-out-digits-test-secret-0123456789\n")
    book, log = grade(tmp_path, "--held-out-digits", private)
    digest = heldout.read(private).digest
    assert f"held-out digits: {private} (600 images, sha256 {digest}): 16_capstone measured on them" in log, log
    honest, hunter = book["honest"]["16_capstone"], book["hunter"]["16_capstone"]
    assert all(honest["tests"][name]["score"] == honest["tests"][name]["max_score"] > 0 for name in HELD_OUT), honest
    assert all(hunter["tests"][name]["score"] == 0 for name in HELD_OUT), hunter
    assert "on your instructor's own digits" in hunter["tests"]["capstone_held_out"]["message"], hunter
    assert honest["held_out_digits"] == hunter["held_out_digits"] == digest
    page = (tmp_path / "grades" / "feedback" / "hunter" / "16_capstone.html").read_text()
    printed = re.search(r"hunter looked at (\d+) files and found \[\]", page)  # its output, not its source
    assert printed and int(printed.group(1)) > 1000, "the hunter searched its whole sandbox and found no digits"
    assert str(private.parent) not in page and digest not in page
    assert not list((tmp_path / "grades").rglob(heldout.FILE_NAME)), "the run's copy is gone with its jobs folder"

    again, log = grade(tmp_path, "--held-out-digits", private)
    assert again == book and "2 submissions already graded (unchanged since): kept" in log, log

    # On a Dask cluster the file's bytes travel with the capstone's tasks (grading.grade.cluster): the same scores.
    options = ["--secret-file", tmp_path / "secret", "--held-out-digits", private, "--cluster", "local:1"]
    result = run_cli("autograde", tmp_path / "submissions", "--out", tmp_path / "grades-dask", *options)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr + result.stdout
    clustered = json.loads((tmp_path / "grades-dask" / "gradebook.json").read_text())
    for student in ("honest", "hunter"):
        here, there = book[student]["16_capstone"], clustered[student]["16_capstone"]
        assert {t: r["score"] for t, r in there["tests"].items()} == {t: r["score"] for t, r in here["tests"].items()}
        assert there["held_out_digits"] == digest, there


@pytest.mark.slow
@AS_ROOT
def test_gradescope_measures_the_capstone_on_the_digits_in_its_zip(kit, tmp_path, student_user_turn):
    """The zip made with --held-out-digits, run as Gradescope runs it (the students' code as `nobody`): the reference
    solution passes on the instructor's digits, the notebook that memorised the shipped ones does not."""
    from test_gradescope import gradescope_root, run_autograder, submit

    images, labels = noisy_copies()
    private = save(tmp_path / "digits.npz", X=images, y=labels)
    zipped = tmp_path / "autograder.zip"
    result = run_cli("gradescope", "--out", zipped, "--assignment", "16_capstone", "--held-out-digits", private)
    assert result.returncode == 0, result.stderr
    root = gradescope_root(zipped)
    env = {"TINYTORCH_NO_BWRAP": "1", "TINYTORCH_STUDENT_USER": "nobody"}
    source = read_notebook(REPO / "notebooks" / "16_capstone.ipynb")
    honest = solved(read_notebook(kit / "16_capstone" / "16_capstone.ipynb"), source)
    try:
        scores = {}
        for name, notebook in [
            ("honest", honest),
            ("embedder", capstone_submission(kit, EMBEDDER.format(rows=embedded_rows()))),
        ]:
            submit(root, {"16_capstone.ipynb": notebook})
            scores[name] = {t["name"]: (t["score"], t["max_score"]) for t in run_autograder(root, **env)["tests"]}
    finally:
        shutil.rmtree(root)
    assert all(scores["honest"][name][0] == scores["honest"][name][1] > 0 for name in HELD_OUT), scores["honest"]
    assert all(scores["embedder"][name][0] == 0 for name in HELD_OUT), scores["embedder"]
