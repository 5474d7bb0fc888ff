"""`pip install` of the reference package gives code without nbgrader's solution markers, and it works."""

import subprocess
import sys
import zipfile

import pytest

from conftest import REPO

pytestmark = pytest.mark.slow  # builds a wheel (a few seconds)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    build = [sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation", "-q", "-w", str(out)]
    result = subprocess.run(build, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    (path,) = out.glob("tinytorch-*.whl")
    unpacked = out / "unpacked"
    zipfile.ZipFile(path).extractall(unpacked)
    return unpacked


def test_wheel_modules_have_no_solution_markers_but_the_same_code(wheel):
    committed = sorted((REPO / "tinytorch").rglob("*.py"))
    assert any("### BEGIN SOLUTION" in p.read_text() for p in committed), "the repository copy keeps its markers"
    for source in committed:
        built = (wheel / source.relative_to(REPO)).read_text()
        assert "### BEGIN SOLUTION" not in built and "### END SOLUTION" not in built, source.name
        expected = [line for line in source.read_text().splitlines() if "### BEGIN SOLUTION" not in line]
        expected = [line for line in expected if "### END SOLUTION" not in line]
        assert built.splitlines() == expected, f"{source.name}: the wheel changed more than the marker lines"


def test_the_installed_package_runs_a_backward_pass(wheel):
    program = (
        "from tinytorch.core.autograd import enable_autograd\n"
        "from tinytorch.core.tensor import Tensor\n"
        "enable_autograd(); x = Tensor(2.0, requires_grad=True); (x * x + x).backward()\n"
        f"import tinytorch.core.autograd as a; assert a.__file__.startswith({str(wheel)!r}), a.__file__\n"
        "print(float(x.grad.data))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program],
        cwd=wheel,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(wheel), "PATH": ""},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "5.0"


def test_the_wheel_has_every_grading_package_and_the_kit_files(wheel):
    "packages.find takes grading's subpackages, and package-data the kit's own files (grading/authoring/kit)."
    for package in (REPO / "grading").iterdir():
        if (package / "__init__.py").is_file():
            assert (wheel / "grading" / package.name / "__init__.py").is_file(), package.name
    assert (wheel / "grading" / "sandbox" / "worker.py").is_file()
    assert {p.name for p in (wheel / "grading" / "authoring" / "kit").iterdir()} == {"README.md", "pyproject.toml"}
    top = {p.name for p in (wheel / "grading").glob("*.py")}
    assert top == {"__init__.py", "__main__.py"}, f"{top}: a stale build/ of the flat grading/? remove build/"


def test_the_readme_is_the_packages_long_description(wheel):
    "PyPI-style metadata shows the README's guide, whatever it says (pyproject's readme = README.md)."
    (metadata,) = wheel.glob("tinytorch-*.dist-info/METADATA")
    description = metadata.read_text().split("\n\n", 1)[1]
    assert description.strip() == (REPO / "README.md").read_text().strip()
