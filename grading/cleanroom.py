"""The clean room: the authoritative run of a submission's tests.

nbgrader runs the student's whole notebook, scratch cells included, and its result is what the student sees in the
feedback. The score comes from a second run, here, built so that the student's code can only be *called*, not
change how it is judged:

* It runs the instructor's cells, not the student's: the setup and test cells (hidden tests included) come from the
  instructor's notebook; the student contributes only the module exported from their exercise cells (the given code
  around them restored to the instructor's version first). Scratch cells, added cells and edited tests never run.
* It seals what the tests rely on. Before any student code runs, it imports NumPy and the reference modules of the
  earlier notebooks and records every name in them (and the code of every function). After the student's module is
  imported, and after every cell, any name that changed (`np.allclose = ...`, a patched `check_backward`, a replaced
  builtin, `Tensor.backward` from notebook 07 on, a test helper) is put back. A change made while a test ran fails
  that test; one made on import or during setup is undone before the tests run, so the cheat earns nothing and the
  honest part of the work still counts.
* It runs in the sandbox (grading.sandbox), in a plain Python process: no IPython, so no display hooks or traceback
  printers to subvert. Results go to the grader over a private pipe; the process's own output is discarded.

Child side: `python -m grading.cleanroom IN_FD OUT_FD`. The grader writes a header line and then one cell at a time
to IN_FD, each only after the previous cell's result came back on OUT_FD: the student's code never sees a test
before it runs.
"""
import ast
import builtins
import json
import os
import signal
import sys
import types

SEALED_MODULES = ["builtins", "numpy", "numpy.testing", "numpy.linalg", "math"]


# -- Parent side: what to run ----------------------------------------------------------------------------------------

def is_export(source):
    return any(line.strip().startswith("#| export") or line.strip().startswith("#|export")
               for line in source.splitlines()[:3])


def exported_sources(nb):
    "The code of every exported cell, in order: what nbdev puts in the module."
    return [cell.source for cell in nb.cells if cell.cell_type == "code" and is_export(cell.source)]


def plan_cells(instructor_nb, student_answers):
    """The cells the clean room runs, in order: [{'id', 'kind', 'source'}]. Setup and test cells are the instructor's;
    an exercise that is not exported (so not in the module) runs as the student wrote it (`student_answers`)."""
    cells = []
    for cell in instructor_nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        source = cell.source
        if cell.cell_type != "code" or is_export(source) or "#| default_exp" in source:
            continue
        if meta.get("solution"):
            cells.append({"id": meta["grade_id"], "kind": "solution", "source": student_answers[meta["grade_id"]]})
        else:
            cells.append({"id": meta.get("grade_id", cell.get("id")), "kind": "test" if meta.get("grade") else "setup",
                          "source": source})
    return cells


# -- Child side: sealing ---------------------------------------------------------------------------------------------

class Seal:
    "Remember every name of some namespaces (and their functions' code); put back whatever changed."

    def __init__(self):
        self.spaces = []          # (label, namespace object, {name: value}, {name: code details}, strict)

    def add(self, label, space, strict=False):
        "strict: also remove names added later (for classes, where a new attribute can shadow a base class's)."
        items = dict(vars(space))
        self.spaces.append((label, space, items, {n: self._code(v) for n, v in items.items()}, strict))

    def add_module_tree(self, module):
        "A module, and every class defined in it."
        self.add(module.__name__, module)
        for name, value in list(vars(module).items()):
            if isinstance(value, type) and getattr(value, "__module__", None) == module.__name__:
                self.add(f"{module.__name__}.{name}", value, strict=True)

    def forget(self, prefix):
        "Stop watching the namespaces whose label starts with `prefix` (to add them again as they are now)."
        self.spaces = [space for space in self.spaces if not space[0].startswith(prefix)]

    @staticmethod
    def _code(value):
        function = getattr(value, "__func__", value)
        if isinstance(function, types.FunctionType):
            return function, function.__code__, function.__defaults__, function.__kwdefaults__
        return None

    def restore(self, _vars=vars, _sorted=sorted, _set_of=set, _list=list, _isinstance=isinstance,
                _function=types.FunctionType):
        """Put every changed name back; return the names that had changed. The builtins it uses are bound here,
        when the grader defines it, so a student who replaced them cannot stop it (builtins are restored first)."""
        changed = []
        for label, space, items, codes, strict in self.spaces:
            current = space.__dict__
            for name, value in items.items():
                if name not in current or current[name] is not value:
                    changed.append(label + "." + name)
                    _set(space, name, value)
                code = codes[name]
                if code is not None:
                    function, original, defaults, kwdefaults = code
                    if (function.__code__ is not original or function.__defaults__ is not defaults
                            or function.__kwdefaults__ is not kwdefaults):
                        changed.append(label + "." + name + " (its code)")
                        function.__code__, function.__defaults__, function.__kwdefaults__ = original, defaults, kwdefaults
            if strict:
                for name in [n for n in _list(current) if n not in items]:
                    changed.append(label + "." + name + " (added)")
                    _del(space, name)
        return _sorted(_set_of(changed))


def _set(space, name, value, _setattr=setattr, _type=type):
    if _type(space).__name__ == "module":
        space.__dict__[name] = value
    else:
        _setattr(space, name, value)


def _del(space, name, _delattr=delattr):
    try:
        _delattr(space, name)
    except (AttributeError, TypeError):
        pass


class NamespaceSeal:
    "The functions, classes and modules the setup cells defined; a test may not rebind those it does not assign."

    def __init__(self):
        self.items = {}

    def refresh(self, namespace):
        self.items = {n: v for n, v in namespace.items()
                      if isinstance(v, (types.FunctionType, type, types.ModuleType, types.BuiltinFunctionType))}

    def restore(self, namespace, assigned):
        changed = []
        for name, value in self.items.items():
            if name not in assigned and namespace.get(name) is not value:
                changed.append(name)
                namespace[name] = value
        return changed


def assigned_names(source):
    "Names a cell binds itself (so rebinding them is the test's own business)."
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


# -- Child side: running ---------------------------------------------------------------------------------------------

class CellTimeout(BaseException):
    "Raised by the alarm when a cell runs too long (BaseException, so `except Exception` in student code misses it)."


def _alarm(signum, frame):
    raise CellTimeout()


def stub_package(root):
    "Make `tinytorch` importable without running its __init__, so modules load one at a time, in course order."
    import importlib.util
    for name in ("tinytorch", "tinytorch.core"):
        folder = os.path.join(root, *name.split("."))
        spec = importlib.util.spec_from_file_location(name, os.path.join(folder, "__init__.py"),
                                                      submodule_search_locations=[folder])
        module = importlib.util.module_from_spec(spec)       # made, not run: __init__ would import everything
        sys.modules[name] = module
    sys.modules["tinytorch"].core = sys.modules["tinytorch.core"]


def describe(error):
    text = f"{type(error).__name__}: {error}"
    return text if len(text) < 2000 else text[:2000] + " ..."


def import_student_module(plan, seal):
    "Import the earlier modules (sealed), then the student's; return (namespace, error, names changed on import)."
    import importlib
    import math                       # noqa: F401  (sealed below, before any student code)
    import numpy                      # noqa: F401
    import numpy.linalg               # noqa: F401
    import numpy.testing              # noqa: F401
    stub_package(plan["package"])
    for name in SEALED_MODULES:
        seal.add(name, sys.modules[name])
    for name in plan["earlier_modules"]:
        seal.add_module_tree(importlib.import_module(name))
    if "tinytorch.core.autograd" in plan["earlier_modules"]:
        sys.modules["tinytorch.core.autograd"].enable_autograd()
        seal.forget("tinytorch.core.tensor")
        seal.add_module_tree(sys.modules["tinytorch.core.tensor"])   # Tensor as patched: sealed from here on
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    error = module = None
    try:
        signal.alarm(plan["cell_timeout"])
        module = importlib.import_module(plan["module"])
    except BaseException as exc:          # noqa: BLE001  (the student's module may raise anything)
        error = exc
    finally:
        signal.alarm(0)
    changed = seal.restore()              # first: the student's code may have replaced the builtins used below
    if error is not None:
        error = describe(error)
        namespace.update(cell_by_cell(plan, seal))
        changed += seal.restore()
    else:
        namespace.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
    if "tinytorch.core.autograd" not in plan["earlier_modules"]:
        try:                              # what tinytorch/__init__.py does; it patches Tensor, so seal Tensor again
            importlib.import_module("tinytorch.core.autograd").enable_autograd()
            seal.forget("tinytorch.core.tensor")
            seal.add_module_tree(sys.modules["tinytorch.core.tensor"])
        except BaseException as exc:      # noqa: BLE001
            error = error or f"importing tinytorch failed: {describe(exc)}"
        changed += seal.restore()
    return namespace, error, changed


def cell_by_cell(plan, seal):
    """When the module does not import (a syntax error in one exercise, say), run its cells one by one, as the
    notebook does, so that one broken cell costs only the tests that need it."""
    module = types.ModuleType(plan["module"])
    module.__dict__["__builtins__"] = builtins
    sys.modules[plan["module"]] = module
    for source in plan["exported"]:
        try:
            signal.alarm(plan["cell_timeout"])
            exec(compile(source, f"<{plan['module']}>", "exec"), module.__dict__)
        except BaseException:             # noqa: BLE001
            pass
        finally:
            signal.alarm(0)
    return {k: v for k, v in vars(module).items() if not k.startswith("__")}


def run_cell(cell, namespace, seal, names, timeout):
    "Run one cell; return its result record. Sealed names that changed are put back first."
    failure = None
    try:
        signal.alarm(timeout)
        exec(compile(cell["source"], f"<{cell['id']}>", "exec"), namespace)
    except BaseException as exc:          # noqa: BLE001  (SystemExit, KeyboardInterrupt from the student too)
        failure = exc
    finally:
        signal.alarm(0)
    changed = seal.restore() + names.restore(namespace, assigned_names(cell["source"]))
    if cell["kind"] != "test":
        names.refresh(namespace)
    message = "" if failure is None else \
        f"took longer than {timeout} s" if isinstance(failure, CellTimeout) else describe(failure)
    passed = failure is None and not (changed and cell["kind"] == "test")
    if changed and cell["kind"] == "test":
        message = (f"while this test ran, your code replaced {', '.join(changed[:5])}{' …' if len(changed) > 5 else ''};"
                   " they were put back, and the test cannot count." + (f" (It also failed: {message})" if message else ""))
    return {"event": "cell", "id": cell["id"], "kind": cell["kind"], "passed": passed, "message": message,
            "changed": changed}


def main(argv=None):
    in_fd, out_fd = map(int, (argv or sys.argv[1:])[:2])
    inbox = os.fdopen(in_fd, "r")
    write, dumps = os.write, json.dumps

    def send(record):
        write(out_fd, (dumps(record) + "\n").encode())

    plan = json.loads(inbox.readline())
    sys.path.insert(0, plan["package"])
    os.chdir(plan["cwd"])
    import matplotlib
    matplotlib.use("Agg")
    signal.signal(signal.SIGALRM, _alarm)
    seal = Seal()
    namespace, error, changed = import_student_module(plan, seal)
    send({"event": "imported", "error": error, "changed": changed})
    names = NamespaceSeal()
    names.refresh(namespace)
    for line in inbox:
        cell = json.loads(line)
        if cell.get("event") == "end":
            break
        send(run_cell(cell, namespace, seal, names, plan["cell_timeout"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
