"""The student kit's grading/ files are an allow-list, and the kit's pyproject.toml declares what they import."""

import ast
import importlib.metadata
import re
import sys
import tomllib

from conftest import REPO
from grading.release import STUDENT_KIT

INSTRUCTOR_MODULES = {"autograde", "job", "verdict", "outputs", "worker", "wire", "sandbox", "classroom", "lms"}


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
    project = tomllib.loads((REPO / "grading" / "kit" / "pyproject.toml").read_text())["project"]
    return {re.split(r"[<>=!~\[ ]", requirement)[0].lower() for requirement in project["dependencies"]}


def test_kit_lists_only_files_that_exist_and_no_instructor_module():
    for name in STUDENT_KIT:
        assert (REPO / "grading" / name).is_file(), name
    assert not INSTRUCTOR_MODULES & {name.removesuffix(".py") for name in STUDENT_KIT}


def test_kit_pyproject_declares_every_third_party_import_of_the_kit():
    files = [REPO / "grading" / name for name in STUDENT_KIT] + sorted((REPO / "tinytorch").rglob("*.py"))
    wanted = (
        set().union(*(imported_modules(f) for f in files)) - set(sys.stdlib_module_names) - {"tinytorch", "grading"}
    )
    providers = importlib.metadata.packages_distributions()
    declared = declared_distributions()
    missing = {name for name in wanted if not {d.lower() for d in providers.get(name, [name])} & declared}
    assert not missing, f"grading/kit/pyproject.toml does not declare what provides {sorted(missing)}"


def test_kit_files_import_only_kit_files_at_module_level():
    "The instructor's commands are imported inside cli.py's functions; in the kit they end in a one-line error."
    kit = {name.removesuffix(".py") for name in STUDENT_KIT}
    for name in STUDENT_KIT:
        for node in ast.parse((REPO / "grading" / name).read_text()).body:
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                assert node.module in kit, f"grading/{name} imports .{node.module}, which the kit does not contain"
    for function in ("cmd_check", "cmd_export"):
        source = ast.get_source_segment(cli := (REPO / "grading" / "cli.py").read_text(), _function(cli, function))
        imported = {n.module for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom) and n.level == 1}
        assert imported <= kit, f"{function} needs {sorted(imported - kit)}, which the kit does not contain"


def _function(source, name):
    return next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == name)
