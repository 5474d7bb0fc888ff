"""Per-student variants of the hidden tests (grading.grade.variant): each student's hidden tests draw their own inputs,
the same ones at every regrade with the same course secret; the visible tests are the same for everybody."""

import json
import stat
import subprocess
import sys

import pytest

from conftest import REPO
from grading.common.errors import GradingError
from grading.common.notebooks import HIDDEN_BEGIN, course_notebooks, read_notebook
from grading.grade import variant

SECRET = b"0123456789abcdef0123456789abcdef"


def test_variant_ids_differ_between_students_and_repeat_for_one():
    alice, bob = variant.variant_id(SECRET, "alice", "09_nn"), variant.variant_id(SECRET, "bob", "09_nn")
    assert alice != bob
    assert alice == variant.variant_id(SECRET, "alice", "09_nn"), "a regrade with the same secret draws alike"
    assert alice != variant.variant_id(SECRET, "alice", "10_optimizers"), "each assignment has its own variant"
    assert alice != variant.variant_id(b"another secret of 32 bytes......", "alice", "09_nn")
    assert len(alice) == 16 and int(alice, 16) >= 0 and SECRET.decode() not in alice


def test_variant_rng_is_fixed_outside_grading_and_per_student_inside():
    variant.use(None)
    fixed = variant.variant_rng("linear_hidden").normal(size=4)
    assert (fixed == variant.variant_rng("linear_hidden").normal(size=4)).all()
    assert not (fixed == variant.variant_rng("sgd_hidden").normal(size=4)).all(), "one stream per test"
    try:
        variant.use(variant.variant_id(SECRET, "alice", "09_nn"))
        alice = variant.variant_rng("linear_hidden").normal(size=4)
        variant.use(variant.variant_id(SECRET, "bob", "09_nn"))
        bob = variant.variant_rng("linear_hidden").normal(size=4)
    finally:
        variant.use(None)
    assert not (alice == bob).all() and not (alice == fixed).all()


def test_the_secret_file_is_made_private_once_and_reused(tmp_path):
    path = tmp_path / "course" / "secret"
    with pytest.raises(GradingError, match="no such secret file"):
        variant.read_secret(path)
    first = variant.read_secret(path, create=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(first) >= 32 and variant.read_secret(path, create=True) == first
    path.write_text("short")
    with pytest.raises(GradingError, match="at least 16"):
        variant.read_secret(path)


def test_only_hidden_tests_draw_from_the_variant():
    "The release strips hidden regions; so a visible test that called variant_rng would differ between students."
    for stem, path in course_notebooks().items():
        for cell in read_notebook(path).cells:
            visible = cell.source.split(HIDDEN_BEGIN)[0]
            assert "variant_rng" not in visible and "grading.grade.variant" not in visible, f"{stem}: {cell.get('id')}"


def test_every_hidden_test_that_draws_random_inputs_draws_them_from_the_variant():
    fixed = []
    for stem, path in course_notebooks().items():
        for cell in read_notebook(path).cells:
            if HIDDEN_BEGIN not in cell.source:
                continue
            hidden = cell.source.split(HIDDEN_BEGIN)[1]
            if "default_rng(" in hidden or "np.random." in hidden.replace("np.random.default_rng", ""):
                fixed.append(f"{stem} {cell.get('id')}")
            elif "rng" in hidden:
                assert "variant_rng(" in hidden, f"{stem} {cell.get('id')}: draws from a generator it did not make"
    assert not fixed, f"hidden tests with a fixed seed (use grading.grade.variant.variant_rng): {fixed}"


DRAW = r"""
import copy, json, os, sys
import nbformat
import numpy as np
sys.path.insert(0, sys.argv[1])
os.chdir(sys.argv[1] + "/notebooks")
from grading.grade import variant

nb = nbformat.read("09_nn.ipynb", 4)
setup = {"__name__": "__main__"}
cells = [c for c in nb.cells if c.cell_type == "code"]
tests = [c for c in cells if c.source.startswith("# test:")]
for cell in cells:
    if cell not in tests:
        exec(cell.source, setup)
draws = {}
for name in ["alice", "bob", "alice", None]:
    variant.use(name and variant.variant_id(b"0123456789abcdef0123456789abcdef", name, "09_nn"))
    seen = []
    for cell in tests:
        space = {k: copy.deepcopy(v) if isinstance(v, np.random.Generator) else v for k, v in setup.items()}
        np.random.seed(0)  # (a visible test may draw from NumPy's global generator)
        exec(cell.source, space)
        x = space.get("x")
        seen.append([cell.source.splitlines()[0], list(x.shape), float(x.data.sum())] if x is not None else None)
    draws.setdefault(str(name), []).append(seen)
print(json.dumps(draws))
"""


def test_two_students_get_different_hidden_inputs_and_the_same_visible_ones():
    "Notebook 09's test cells run with the reference package, as the verdict runs them, for alice, bob and alice."
    run = subprocess.run([sys.executable, "-c", DRAW, str(REPO)], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert run.returncode == 0, run.stderr[-2000:]
    draws = json.loads(run.stdout.strip().splitlines()[-1])
    (alice, again), (bob,), (instructor,) = draws["alice"], draws["bob"], draws["None"]
    assert alice == again, "the same student twice draws the same hidden inputs"
    hidden = [i for i, seen in enumerate(alice) if seen and "_hidden" in seen[0]]
    visible = [i for i, seen in enumerate(alice) if seen and "_hidden" not in seen[0]]
    assert hidden and visible
    assert all(alice[i] != bob[i] for i in hidden), "two students' hidden inputs differ"
    assert all(alice[i] == bob[i] == instructor[i] for i in visible), "the visible tests are the same for all"
