"""The student kit's grading/ files are an allow-list, and the kit's pyproject.toml declares what they import."""

import ast
import importlib.metadata
import re
import sys
import tomllib

from conftest import REPO
from grading.authoring.release import STUDENT_KIT

INSTRUCTOR_MODULES = {"autograde", "job", "verdict", "outputs", "worker", "wire", "sandbox", "classroom", "lms"}
INSTRUCTOR_PACKAGES = {
    "authoring",
    "grade",
    "sandbox",
    "reports",
    "lms",
    "examples",
}  # none of their files is in the kit


def imported_modules(path):
    "Top-level names of every module `path` imports, at module level or inside functions."
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def declared_distributions():
    "What the kit's pyproject.toml installs, with what its build needs (grading/student/backend.py imports setuptools)."
    kit = tomllib.loads((REPO / "grading" / "authoring" / "kit" / "pyproject.toml").read_text())
    requirements = kit["project"]["dependencies"] + kit["build-system"]["requires"]
    return {re.split(r"[<>=!~\[ ]", requirement)[0].lower() for requirement in requirements}


def test_kit_lists_only_files_that_exist_and_no_instructor_module():
    for name in STUDENT_KIT:
        assert (REPO / "grading" / name).is_file(), name
    assert not INSTRUCTOR_MODULES & {name.removesuffix(".py").split("/")[-1] for name in STUDENT_KIT}
    assert not INSTRUCTOR_PACKAGES & {name.split("/")[0] for name in STUDENT_KIT}
    for name in STUDENT_KIT:  # a package's files come with its __init__.py
        parts = name.split("/")
        assert len(parts) == 1 or "/".join([*parts[:-1], "__init__.py"]) in STUDENT_KIT, name


def test_kit_pyproject_declares_every_third_party_import_of_the_kit():
    files = [REPO / "grading" / name for name in STUDENT_KIT] + sorted((REPO / "tinytorch").rglob("*.py"))
    wanted = (
        set().union(*(imported_modules(f) for f in files)) - set(sys.stdlib_module_names) - {"tinytorch", "grading"}
    )
    providers = importlib.metadata.packages_distributions()
    declared = declared_distributions()
    missing = {name for name in wanted if not {d.lower() for d in providers.get(name, [name])} & declared}
    assert not missing, f"grading/authoring/kit/pyproject.toml does not declare what provides {sorted(missing)}"


def test_kit_files_import_only_kit_files_at_module_level():
    "The instructor's commands are imported inside grading/cli's functions; in the kit they end in a one-line error."
    kit = set(STUDENT_KIT)
    for name in STUDENT_KIT:
        for node in ast.parse((REPO / "grading" / name).read_text()).body:
            if isinstance(node, ast.ImportFrom) and node.level:
                for needed in _kit_files(name, node):
                    assert needed in kit, f"grading/{name} imports {needed}, which the kit does not contain"
    for function in ("cmd_check", "cmd_export"):
        cli = (REPO / "grading" / "cli" / "kit_commands.py").read_text()
        source = ast.get_source_segment(cli, _function(cli, function))
        imported = {
            _kit_file("cli/kit_commands.py", n) for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom)
        }
        assert imported <= kit, f"{function} needs {sorted(imported - kit)}, which the kit does not contain"


def _kit_file(name, node):
    "The file of grading/ (as a STUDENT_KIT entry) that the relative import `node` in grading/`name` reads."
    folder = name.split("/")[:-1]
    folder = folder[: len(folder) - (node.level - 1)]
    path = "/".join([*folder, *(node.module or "").split(".")])
    return f"{path}.py" if (REPO / "grading" / f"{path}.py").is_file() else f"{path}/__init__.py"


def _kit_files(name, node):
    "The files of grading/ that the relative import `node` in grading/`name` reads: `from . import a, b` reads two."
    if node.module:
        return [_kit_file(name, node)]
    return [_kit_file(name, ast.ImportFrom(module=alias.name, level=node.level)) for alias in node.names]


def _function(source, name):
    return next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == name)
