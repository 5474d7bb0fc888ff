"""The cheats of the example class: code a student might hand in to earn points without the work (the checks patched,
finite differences for a formula, an empty array that np.allclose finds close to anything, given code that once did
an exercise's work), or to put a hidden test's inputs on the feedback page. grading/examples/edits.py puts each into
a notebook; each is written so that it *would* earn points against a grader without defences.
"""

PATCH_CHECKERS = """
import numpy as _np
import tinytorch.core.gradcheck as _gradcheck
_gradcheck.compare_gradient = lambda *args, **kwargs: True
_gradcheck.check_gradient_shape = lambda label, grad, shape: grad
_np.allclose = lambda *args, **kwargs: True
_np.testing.assert_allclose = lambda *args, **kwargs: None
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


THROUGH_A_CALLBACK = (  # the exercise, its first line and its last
    "solution-hessian_vector_product",
    "    grads = grad(loss_fn()",
    "    products = grad(dot, params)\n",
    ZERO_THROUGH_A_CALLBACK,
)


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
RUN_BACKWARD_LOOP = ("solution-run_backward", "        for tensor in topological_order(root):", "function.release()\n")
UPDATE = ("    def update(self, i, p, grad):\n", EMPTY_PARAMETERS)  # both optimizers' update(), nothing computed


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


def spell_leak(value: float, letters: bool) -> str:
    "How the LEAK attacks write one value: four decimals, in digits or in letters."
    text = f"{value:.4f}"
    return text.translate(str.maketrans("0123456789.-", "oizehsgtbqpm")) if letters else text


SCRATCH_CHEAT = """check_backward = lambda *args, **kwargs: True
np.allclose = lambda *args, **kwargs: True
np.testing.assert_allclose = lambda *args, **kwargs: None
get_ipython().showtraceback = lambda *args, **kwargs: None     # assert-free: hide every error a test raises"""
