"""grading/ is packages with a README each, layered: no import cycles, and each package imports only what it may.

The import graph is read from the source with `ast`: every import, at module level or inside a function (a
function-local import that only hides a cycle is still a cycle), relative or absolute, and worker.py's import of the
file beside it (inside the sandbox it imports wire.py as a top-level module).
"""

import ast

from conftest import REPO

GRADING = REPO / "grading"
TOP = {"grading", "grading.__main__"}  # the entry point: the only modules outside a package
# What each package may import besides itself, lowest layer first; the command line (cli) may import every package.
MAY_IMPORT = {
    "common": set(),
    "student": {"common"},
    "authoring": {"common", "student"},
    "sandbox": {"common"},
    "examples": {"common"},
    "intake": {"common"},
    "reports": {"common", "authoring"},
    "grade": {"common", "student", "authoring", "sandbox", "reports"},
    "lms": {"common", "intake", "reports", "grade"},
    "cli": {"common", "student", "authoring", "sandbox", "examples", "intake", "reports", "grade", "lms"},
}


def modules(root):
    "{dotted name: path} of every module under `root` (a grading/ folder), packages as their __init__.py."
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = ("grading", *path.relative_to(root).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(name, path, known):
    "The modules of `known` that module `name` (at `path`) imports, anywhere in the file."
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                sibling = f"{package}.{alias.name}"  # worker.py's `import wire`: the file beside it
                found.add(alias.name if alias.name in known else sibling)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                found.add(submodule if submodule in known else source)
    return {module for module in found if module in known and module != name}


def graph(root):
    known = modules(root)
    return {name: imports(name, path, known) for name, path in known.items()}


def cycles(edges):
    "Every import cycle of `edges` ({module: modules it imports}), each as a list of modules, the first repeated last."
    found, state, stack = [], {}, []

    def visit(module):
        state[module] = "open"
        stack.append(module)
        for target in sorted(edges.get(module, ())):
            if state.get(target) == "open":
                found.append(stack[stack.index(target) :] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = "done"

    for module in sorted(edges):
        if module not in state:
            visit(module)
    return found


def package_of(module):
    return None if module in TOP else module.split(".")[1]


def layering_problems(edges):
    "Each import that crosses into a package its package may not import, as 'a imports b'."
    problems = []
    for module, targets in sorted(edges.items()):
        for target in sorted(targets):
            source, destination = package_of(module), package_of(target)
            if (target in TOP or destination == "cli") and module != "grading.__main__" and source != "cli":
                problems.append(f"{module} imports the command line ({target})")
            elif source is not None and destination not in {source} | MAY_IMPORT.get(source, set()):
                problems.append(f"{module} imports {target}: {source} may import {sorted(MAY_IMPORT[source])}")
    return problems


def test_no_import_cycles():
    found = cycles(graph(GRADING))
    assert not found, "import cycles: " + "; ".join(" -> ".join(cycle) for cycle in found)


def test_the_command_line_is_the_only_module_outside_a_package():
    outside = {name for name in modules(GRADING) if name.count(".") < 2} - TOP - {f"grading.{p}" for p in MAY_IMPORT}
    assert not outside, f"modules at the top of grading/: {sorted(outside)}; put them in a package"


def test_every_package_is_in_the_layering_and_has_an_init_and_a_readme():
    packages = {p.name for p in GRADING.iterdir() if p.is_dir() and any(p.rglob("*.py"))}
    assert packages == set(MAY_IMPORT), "a package is missing from MAY_IMPORT, or MAY_IMPORT names one that is gone"
    for package in packages:
        assert (GRADING / package / "__init__.py").is_file(), package
        assert (GRADING / package / "README.md").is_file(), f"grading/{package} has no README.md"


def test_each_package_imports_only_what_its_readme_allows():
    for package, allowed in MAY_IMPORT.items():
        lines = [
            line
            for line in (GRADING / package / "README.md").read_text().splitlines()
            if line.startswith("May import:")
        ]
        assert len(lines) == 1, f"grading/{package}/README.md: no 'May import:' line"
        said = {word.strip(" .`") for word in lines[0].removeprefix("May import:").split(",")} - {"nothing", ""}
        assert said == allowed, f"grading/{package}/README.md says it may import {sorted(said)}, the test {allowed}"
    problems = layering_problems(graph(GRADING))
    assert not problems, "\n".join(problems)


def test_the_checks_see_a_cycle_and_a_forbidden_import(tmp_path):
    "The graph catches function-local and relative imports (autograde <-> marking, as grading/ once had)."
    (tmp_path / "grade").mkdir()
    (tmp_path / "reports").mkdir()
    for folder in [tmp_path, tmp_path / "grade", tmp_path / "reports"]:
        (folder / "__init__.py").write_text("")
    (tmp_path / "grade" / "autograde.py").write_text("from ..reports import marking\n")
    (tmp_path / "reports" / "marking.py").write_text("def f():\n    from ..grade.autograde import x\n")
    edges = graph(tmp_path)
    assert edges["grading.reports.marking"] == {"grading.grade.autograde"}
    assert cycles(edges) == [["grading.grade.autograde", "grading.reports.marking", "grading.grade.autograde"]]
    assert layering_problems(edges) == [
        "grading.reports.marking imports grading.grade.autograde: reports may import ['authoring', 'common']"
    ]


def test_worker_imports_wire_beside_it():
    assert "grading.sandbox.wire" in graph(GRADING)["grading.sandbox.worker"]


def test_the_graders_digest_covers_every_package(tmp_path, monkeypatch):
    "A Dask worker whose grader differs in any file of grading/, a subpackage's included, fails the workers' check."
    from grading.grade import cluster

    def digest_of(root):
        monkeypatch.setattr(cluster, "REPO", root)
        cluster.grader_digest.cache_clear()
        try:
            return cluster.grader_digest()
        finally:
            cluster.grader_digest.cache_clear()

    for folder, name in [("sandbox", "worker.py"), ("common", "defaults.py")]:
        (tmp_path / "grading" / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / "grading" / folder / name).write_text("x = 1\n")
    (tmp_path / "grading" / "cli").mkdir()
    (tmp_path / "grading" / "cli" / "__init__.py").write_text("")
    before = digest_of(tmp_path)
    (tmp_path / "grading" / "sandbox" / "worker.py").write_text("x = 2\n")
    assert digest_of(tmp_path) != before
