"""The committed tinytorch/ is exactly what nbdev_export makes from notebooks/."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO
from grading.student.export import SKELETON

pytestmark = pytest.mark.slow  # nbdev_export of every notebook


def python_files(root):
    return {
        p.relative_to(root): p.read_text()
        for p in sorted((root / "tinytorch").rglob("*.py"))
        if "__pycache__" not in p.parts
    }


def test_nbdev_export_leaves_the_package_unchanged(tmp_path):
    shutil.copytree(REPO / "notebooks", tmp_path / "notebooks")
    shutil.copyfile(REPO / "settings.ini", tmp_path / "settings.ini")
    (tmp_path / "tinytorch").mkdir()
    for name in SKELETON:  # the files written by hand, which nbdev_export leaves as they are
        shutil.copyfile(REPO / "tinytorch" / name, tmp_path / "tinytorch" / name)
    result = subprocess.run(
        [sys.executable, "-c", "from nbdev.doclinks import nbdev_export; nbdev_export()"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    exported, committed = python_files(tmp_path), python_files(REPO)
    assert sorted(exported) == sorted(committed), "modules differ: run `python -m grading export` and commit"
    for name in committed:
        assert exported[name] == committed[name], f"{name} differs from its notebook: run `python -m grading export`"


def checkout_copy(root):
    "A checkout of the course in `root`: settings.ini, notebooks/ and tinytorch/ as committed."
    shutil.copytree(REPO / "notebooks", root / "notebooks")
    shutil.copyfile(REPO / "settings.ini", root / "settings.ini")
    shutil.copytree(REPO / "tinytorch", root / "tinytorch", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def start_export(root):
    return subprocess.Popen(
        [sys.executable, "-m", "grading", "export"], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


RECORDS = (
    "import tinytorch; from tinytorch.core.tensor import Tensor; x = Tensor([3.0]); x.requires_grad_(); "
    "(x * x).sum().backward(); print(x.grad.data[0])"
)


def test_two_exports_at_once_leave_a_whole_package_that_records_gradients(tmp_path):
    root = checkout_copy(tmp_path)
    with open(root / "tinytorch" / "core" / "tensor.py", "a") as module:
        module.write("# stale\n")  # so that both exports write a module, as well as __init__.py's version line
    runs = [start_export(root), start_export(root)]
    for run in runs:
        out, err = run.communicate(timeout=600)
        assert run.returncode == 0, err
    assert python_files(root) == python_files(REPO)
    imported = subprocess.run(
        [sys.executable, "-c", RECORDS],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
    )
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip() == "6.0"  # the recording Tensor: d(x*x)/dx at 3


def test_an_export_swaps_each_module_in_whole_so_a_reader_never_sees_half_of_one(tmp_path):
    from grading.student.export import export_package

    root = checkout_copy(tmp_path)
    module = root / "tinytorch" / "core" / "tensor.py"
    stale = module.read_text() + "# stale\n"
    module.write_text(stale)
    with open(module) as reader:  # opened before the export, read after it
        export_package(root)
        assert reader.read() == stale
    assert module.read_text() == (REPO / "tinytorch" / "core" / "tensor.py").read_text()


def blocked_on_a_lock(pid):
    "Whether process `pid` waits for a file lock (a '->' line of /proc/locks)."
    return any(
        line.split()[1] == "->" and str(pid) in line.split() for line in Path("/proc/locks").read_text().splitlines()
    )


def test_an_export_waits_while_a_grading_run_reads_the_package(tmp_path):
    from grading.student.export import package_lock

    root = checkout_copy(tmp_path)
    module = root / "tinytorch" / "core" / "tensor.py"
    module.write_text(module.read_text() + "# stale\n")
    with package_lock(root, shared=True):  # what copy_package_skeleton holds while it copies the package
        run = start_export(root)
        give_up = time.monotonic() + 600  # never hang the suite: an export that neither waits nor ends fails
        while run.poll() is None and not blocked_on_a_lock(run.pid) and time.monotonic() < give_up:
            time.sleep(0.05)
        assert blocked_on_a_lock(run.pid), f"the export did not wait for the reader: {run.communicate()}"
        assert module.read_text().endswith("# stale\n")
    _, err = run.communicate(timeout=600)
    assert run.returncode == 0, err
    assert module.read_text() == (REPO / "tinytorch" / "core" / "tensor.py").read_text()


def test_two_runs_of_export_and_autograde_in_one_checkout_both_grade_and_leave_the_package_whole(tmp_path):
    """What two `python -m grading demo` at once did, on one notebook: each exports the checkout, then grades (which
    copies the package). Two whole demos at once take twice a demo's minutes, which the stages here do not need."""
    checkout = checkout_copy(tmp_path / "checkout")
    shutil.copytree(REPO / "grading", checkout / "grading", ignore=shutil.ignore_patterns("__pycache__"))
    notebook = checkout / "submissions" / "alice" / "01_tensor" / "01_tensor.ipynb"
    notebook.parent.mkdir(parents=True)
    shutil.copyfile(REPO / "notebooks" / "01_tensor.ipynb", notebook)  # the solution, hidden tests and all
    grading = f"{sys.executable} -m grading"
    stages = f"{grading} export && {grading} autograde submissions --unsafe-no-sandbox --out "
    env = {**os.environ, "PYTHONPATH": str(checkout)}  # this checkout's grading/ and tinytorch/
    runs = [
        subprocess.Popen(
            stages + out, shell=True, cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        for out in ("grades-1", "grades-2")
    ]
    for run in runs:
        output, _ = run.communicate(timeout=1200)
        assert run.returncode == 0, output
    for out in ("grades-1", "grades-2"):
        table = (checkout / out / "grades.csv").read_text().splitlines()
        assert table[1].startswith("alice,01_tensor,01_tensor.ipynb,"), table
        score, max_score = table[1].split(",")[3:5]
        assert float(score) == float(max_score) > 0, table
    assert python_files(checkout) == python_files(REPO)
    imported = subprocess.run([sys.executable, "-c", RECORDS], cwd=checkout, env=env, capture_output=True, text=True)
    assert imported.stdout.strip() == "6.0", imported.stderr
