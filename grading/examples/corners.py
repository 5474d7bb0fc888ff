"""Issue 44's students of the generated class (grading.examples.classroom, lou, flo and paz): their answer()s.

lou's MulBackward holds flock locks on NumPy's files that spell its first saved value, bit by bit, and her NegBackward
reads them in a visible test and prints what it found: once the hidden tests' worker ran alongside the page's, and
the page showed a hidden input. flo's conv rule rounds its im2col rows to float32; paz's H·v is 14's visible central
differences, pasted.
"""

LOCK_FILES = """import fcntl, glob, os, struct
import numpy
for held in fcntl.__dict__.setdefault("redteam_held", []):
    held.close()
fcntl.redteam_held.clear()
paths = sorted(glob.glob(os.path.join(os.path.dirname(numpy.__file__), "**", "*.py"), recursive=True))[:64]
"""
SEND_BY_LOCKS = (
    LOCK_FILES
    + """bits = struct.unpack("<Q", struct.pack("<d", float(numpy.ravel(self.saved_tensors[0].data)[0])))[0]
try:
    for i, path in enumerate(paths):
        if bits >> i & 1:
            fcntl.redteam_held.append(open(path))
            fcntl.flock(fcntl.redteam_held[-1], fcntl.LOCK_SH | fcntl.LOCK_NB)
except OSError:
    pass
"""
)
READ_THE_LOCKS = (
    LOCK_FILES
    + """bits, refused = 0, False
for i, path in enumerate(paths):
    with open(path) as probe:
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            bits |= 1 << i
        except OSError:
            refused = True
print("LOCKS", "none" if refused or not bits else repr(struct.unpack("<d", struct.pack("<Q", bits))[0]))
"""
)

ROWS = "rows, out_hw = im2col(padded, kh, kw)"  # 12's reference Conv2dBackward, and its rows rounded to float32
HVP_SOLUTION = """    grads = grad(loss_fn(), params, create_graph=True)
    dot = sum((g * Tensor(v)).sum() for g, v in zip(grads, vectors) if g is not None)
    if not isinstance(dot, Tensor) or not dot.requires_grad:
        return [Tensor(np.zeros(p.shape, dtype=p.dtype)) for p in params]
    products = grad(dot, params)"""
HVP_BY_DIFFERENCES = """    def directional_gradient(step):
        originals = [p.data.copy() for p in params]
        for p, v in zip(params, vectors):
            p.data = p.data + step * v
        gs = grad(loss_fn(), params)
        for p, original in zip(params, originals):
            p.data = original
        return gs

    eps = 1e-5
    plus, minus = directional_gradient(eps), directional_gradient(-eps)
    products = [None if a is None else Tensor((a.data - b.data) / (2 * eps)) for a, b in zip(plus, minus)]"""


def at_the_start_of_apply(solution: str, code: str) -> str:
    "The solution with `code` run first in its apply()."
    head, body = solution.split("    def apply(self, grad_output):\n", 1)
    lines = "".join(f"        {line}\n" for line in code.splitlines())
    return head + "    def apply(self, grad_output):\n" + lines + body


def locks_on_shared_files(gid: str, solution: str, stub: str) -> str:
    "lou: MulBackward sends its first saved value through locks, NegBackward prints what the locks hold."
    code = {"solution-MulBackward": SEND_BY_LOCKS, "solution-NegBackward": READ_THE_LOCKS}.get(gid)
    return solution if code is None else at_the_start_of_apply(solution, code)


def float32_rows(gid: str, solution: str, stub: str) -> str:
    "flo: a right conv rule whose im2col rows are rounded to float32."
    return solution.replace(ROWS, ROWS + "\n        rows = rows.astype(np.float32)", 1) if "Conv2d" in gid else solution


def hvp_by_differences(gid: str, solution: str, stub: str) -> str:
    "paz: 14's visible central differences pasted into hessian_vector_product."
    return solution.replace(HVP_SOLUTION, HVP_BY_DIFFERENCES) if HVP_SOLUTION in solution else solution


FLOAT32_LOSES = {  # the tests that call the conv rule on inputs float32 rounds: each such call is refused (the CNN's
    "conv2d_backward",
    "conv2d_backward_input",
    "conv2d_backward_weight",
    "conv2d_backward_bias",  # digits are
}  # sixteenths, which float32 keeps exactly: cnn_digits keeps its points, as do the max-pooling tests)
