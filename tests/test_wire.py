"""The trust boundary's message format (grading.sandbox.wire) and the sandbox command line: fast unit tests."""

import io
import json
import struct
import sys

import numpy as np
import pytest

import tinytorch  # noqa: F401  (Tensor as patched by enable_autograd)
from grading.common.notebooks import REPO, read_notebook
from grading.grade import remote
from grading.grade.targets import exercise_targets
from grading.sandbox import sandbox, wire
from tinytorch.core.tensor import Tensor


def resolve(module, qualname):
    value = sys.modules[module]
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def across(values, readonly=False):
    "Send `values` from a grader's session to a worker's; return (what arrived, both sessions)."
    grader = wire.Session(resolve)
    worker = wire.Session(
        resolve,
        first_number=wire.WORKER_NUMBERS,
        readonly=readonly,
        accept_new_classes=True,
        make_callable=lambda number: lambda *a: None,
    )
    header, arrays = wire.unpack(io.BytesIO(grader.message({"op": "call"}, values)).read)
    return worker.receive(header, arrays), grader, worker


def reply(worker, grader, values):
    header, arrays = wire.unpack(io.BytesIO(worker.message({"op": "return"}, values)).read)
    return grader.receive(header, arrays)


def test_arrays_keep_shape_dtype_and_values():
    values = {
        "a": np.arange(6.0).reshape(2, 3),
        "b": np.array(2.5),
        "c": np.zeros((0, 4), dtype=np.float32),
        "d": np.array([1, 2], dtype=np.int64),
        "e": np.array([True, False]),
        "f": np.float32(3.0),
    }
    got, _, _ = across(values)
    for name, value in values.items():
        assert np.asarray(got[name]).shape == np.shape(value) and np.asarray(got[name]).dtype == np.asarray(value).dtype
        assert np.array_equal(got[name], value)


def test_objects_keep_identity_within_a_call_and_come_back_as_the_same_object():
    x = Tensor([1.0, 2.0], requires_grad=True)
    y = x * x + x
    got, grader, worker = across({"root": y, "again": x})
    assert got["again"] is got["root"]._grad_fn.saved_tensors[1]
    back = reply(worker, grader, {"value": [got["again"], got["root"]]})
    assert back["value"][0] is x and back["value"][1] is y


def test_a_deep_graph_crosses_without_recursion():
    x = Tensor(1.0, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y * 1.0
    got, _, _ = across({"y": y})
    depth, t = 0, got["y"]
    while t._grad_fn is not None:
        t, depth = t._grad_fn.saved_tensors[0], depth + 1
    assert depth == 5000 and float(t.data) == 1.0


def test_what_the_worker_changed_is_written_back():
    p = Tensor([1.0, -2.0], requires_grad=True)
    history = []
    got, grader, worker = across({"p": p, "history": history})
    got["p"].data = got["p"].data - 0.5
    got["history"].append(3.0)
    reply(worker, grader, {"value": None})
    assert np.allclose(p.data, [0.5, -2.5]) and history == [3.0]


def test_a_read_only_call_gets_arrays_it_cannot_change():
    got, _, _ = across({"g": np.ones(3)}, readonly=True)
    with pytest.raises(ValueError, match="read-only"):
        got["g"][0] = 5.0


def test_only_numbers_cross_as_arrays():
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(wire.WireError):
        wire.array_from(buffer.getvalue())
    with pytest.raises(wire.WireError):
        wire.array_from(b"not an npy file")


def forged(table, values):
    head = json.dumps({"op": "return", "objects": table, "values": values, "arrays": [], "blobs": []}).encode()
    body = struct.pack("<Q", len(head)) + head
    return wire.unpack(io.BytesIO(struct.pack("<Q", len(body)) + body).read)


@pytest.mark.parametrize(
    "table",
    [
        [[1 << 40, "c", {"m": "os", "q": "system"}]],  # not a course class
        [[1 << 40, "c", {"L": "Evil", "b": []}]],  # a class the grader never sent
        [[1 << 40, "f", None]],  # a function
        [
            [1 << 40, "c", {"m": "tinytorch.core.tensor", "q": "Tensor"}],
            [(1 << 40) + 1, "o", {"c": {"r": 1 << 40}, "s": {"__class__": 1}}],
        ],  # a dunder attribute
        [[1 << 40, "x", None]],  # an unknown kind
        # a path through a course module's imports to NumPy's types: one segfaulted the grader when made (red team 4)
        [[1 << 40, "c", {"m": "tinytorch.core.function", "q": "np._core._multiarray_umath._ArrayFunctionDispatcher"}]],
        [[1 << 40, "c", {"m": "tinytorch.core.nn", "q": "Tensor"}]],  # imported there, defined in tinytorch.core.tensor
    ],
)
def test_the_grader_refuses_anything_but_plain_data(table):
    grader = wire.Session(remote.resolve_trusted_class)
    header, arrays = forged(table, {"value": {"r": table[-1][0]}})
    with pytest.raises(wire.WireError):
        grader.receive(header, arrays)


def test_a_course_class_is_found_where_it_is_defined_and_only_there():
    import tinytorch.core.function
    import tinytorch.core.nn
    import tinytorch.core.tensor

    assert remote.resolve_trusted_class("tinytorch.core.tensor", "Tensor") is tinytorch.core.tensor.Tensor
    assert remote.resolve_trusted_class("tinytorch.core.nn", "Linear") is tinytorch.core.nn.Linear
    for module, qualname in [("tinytorch.core.nn", "Tensor"), ("tinytorch.core.function", "np.ndarray")]:
        with pytest.raises(wire.WireError):
            remote.resolve_trusted_class(module, qualname)


def raw_message(header, blob=b""):
    "A message as the other side could forge it: any header, and the blob after it."
    head = header if isinstance(header, bytes) else json.dumps(header).encode()
    body = struct.pack("<Q", len(head)) + head + blob
    return io.BytesIO(struct.pack("<Q", len(body)) + body).read


EMPTY_F8 = io.BytesIO()
np.save(EMPTY_F8, np.zeros(0))


@pytest.mark.parametrize(
    "header, blob",
    [  # red team round 5: a shape whose int64 product wraps to 0 passed the size check, and reshape's ValueError
        # quoted the whole shape, the hidden inputs in its numbers, onto the feedback page
        ({"arrays": [["<f8", [2**32, 2**32, 7165123, 1396845]]], "blobs": [["<f8", 136]]}, EMPTY_F8.getvalue()),
        ({"arrays": [["<f8", [2**64, 7165123]]], "blobs": [["<f8", 136]]}, EMPTY_F8.getvalue()),  # OverflowError
        ({"arrays": [["<f8", ["7165123"]]], "blobs": []}, b""),
        ({"arrays": [], "blobs": [["<f8", 20]]}, b"\x93NUMPY 7165123 LEAK"),  # np.load's message quotes the bytes
        (b'{"arrays": [], "blobs": [], "values": ' + b"[" * 5000 + b"7165123" + b"]" * 5000 + b"}", b""),
    ],
)
def test_a_malformed_message_is_a_wire_error_that_quotes_none_of_it(header, blob):
    with pytest.raises(wire.WireError) as refused:
        wire.unpack(raw_message(header, blob))
    assert "7165123" not in str(refused.value) and "LEAK" not in str(refused.value)


@pytest.mark.parametrize(
    "values",
    [
        {"value": {"d": [[[[1, [2]]], 7165123]]}},  # a dict key that is a tuple holding a list: unhashable
        {"value": {"cx": [1, 2, 7165123]}},
    ],
)
def test_values_the_grader_cannot_decode_are_a_wire_error(values):
    grader = wire.Session(remote.resolve_trusted_class)
    with pytest.raises(wire.WireError) as refused:
        grader.receive({"op": "return", "objects": [], "values": values}, [])
    assert "7165123" not in str(refused.value)


def test_an_oversized_message_is_refused_before_it_is_read():
    with pytest.raises(wire.WireError, match="more than"):
        wire.unpack(io.BytesIO(struct.pack("<Q", wire.MAX_MESSAGE + 1)).read)


def test_the_sandbox_starts_from_an_empty_environment_and_new_namespaces(tmp_path):
    (tmp_path / "tinytorch").mkdir()
    (tmp_path / "tinytorch" / "ops.py").write_text("x = 1\n")
    fds = []
    try:
        argv = sandbox.command(["python", "-c", "pass"], [(tmp_path, "/student")], {"PYTHONPATH": "/x"}, fds=fds)
    finally:
        sandbox.close_all(fds)
    assert argv[0] == "bwrap" and {"--unshare-all", "--unshare-user", "--die-with-parent", "--clearenv"} <= set(argv)
    names = {argv[i + 1] for i, a in enumerate(argv) if a == "--setenv"}
    assert names == set(sandbox.BASE_ENV) | {"PYTHONPATH", "TINYTORCH_SEARCH_PATH"}
    binds = [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == "--bind"]
    assert not binds, "nothing outside is writable from inside"
    assert str(tmp_path) not in argv, "the student's package is copied in, not bound: its path outside never shows"
    copied = [argv[i + 2] for i, a in enumerate(argv) if a == "--file"]
    assert copied == ["/student/tinytorch/ops.py"] and len(fds) == 2  # the file, and the seccomp filter's
    assert argv[argv.index("--seccomp") + 1] == str(fds[0]), "no locks on the files every sandbox shares"
    assert argv[argv.index("--remount-ro") + 1] == "/" and argv.index("--remount-ro") > argv.index("--file")


def test_the_exercises_are_the_functions_with_a_solution_region():
    targets = dict(exercise_targets(read_notebook(REPO / "notebooks" / "04_elementwise.ipynb")))
    assert targets["unbroadcast"] == "function" and targets["AddBackward.apply"] == "method"
    assert "AddBackward.__init__" not in targets
    assert dict(exercise_targets(read_notebook(REPO / "notebooks" / "06_autograd.ipynb"))).keys() == {
        "topological_order",
        "accumulate",
        "run_backward",
    }


def test_a_readonly_call_freezes_every_array_unless_the_grader_froze_only_some():
    free, frozen = np.zeros(3), np.ones(3)
    frozen.flags.writeable = False
    got, _, _ = across({"g": np.zeros(3), "x": np.ones(3)}, readonly=True)
    assert not got["g"].flags.writeable and not got["x"].flags.writeable, "nothing frozen by the grader: all are"
    got, _, _ = across({"g": free, "x": frozen}, readonly=True)
    assert got["g"].flags.writeable and not got["x"].flags.writeable, "the grader's choice is mirrored"
    got, _, _ = across({"g": free, "x": frozen})
    assert got["g"].flags.writeable and not got["x"].flags.writeable, "outside a readonly call, mirrored too"
    # (10's step() hands update() a read-only gradient: a write into it fails in the worker as it does in Jupyter;
    # a student solver's finding, a mutant that passed every graded test)


def test_the_grader_refuses_an_array_the_worker_marks_read_only():
    _, grader, worker = across({"x": np.ones(2)})
    header = {"objects": [[wire.WORKER_NUMBERS + 50, "ar", 0]], "values": {}}
    with pytest.raises(wire.WireError, match="read-only"):
        grader.receive(header, [np.zeros(2)])


def test_an_array_of_the_graders_object_keeps_its_shape():
    """tom's optimizers (red team) gave each parameter an empty array as its data, which np.allclose finds close to
    anything: on the grader's side an object's array keeps its shape; the worker's side takes what the grader sends."""
    from grading.sandbox.wire.decoder import WireError, _same_shapes

    class Parameter:
        pass

    p = Parameter()
    p.data, p.name = np.ones(3), "w"
    _same_shapes(p, {"data": np.zeros(3), "name": "v"})  # the same shape: a step
    with pytest.raises(WireError, match=r"Parameter.data was given an array of shape \(0, 1\) for one of \(3,\)"):
        _same_shapes(p, {"data": np.zeros((0, 1))})


def test_a_tensors_data_is_an_array_and_an_array_stays_one():
    "uli hid an empty array inside a Tensor's data (a Tensor, a list, a tuple): np.allclose saw through it."
    from grading.sandbox.wire.decoder import WireError, _same_shapes

    class Tensor:
        pass

    class Layer:
        pass

    blank, layer = Tensor(), Layer()
    layer.mask = np.ones(3)
    for wrapped in (Tensor(), [np.zeros((0, 1))], (np.zeros((0, 1)),)):
        with pytest.raises(WireError, match="a Tensor whose data is a"):
            _same_shapes(blank, {"data": wrapped})
    with pytest.raises(WireError, match=r"Layer.mask, an array, was given a list"):
        _same_shapes(layer, {"mask": [1.0, 2.0, 3.0]})


def test_a_generator_the_students_code_gives_back_is_refused_with_what_to_return():
    "A solver's parameters() written with yield: the page said only 'WireError: a generator object cannot be sent'."
    _, grader, worker = across({"x": 1})
    with pytest.raises(wire.WireError, match=r"your code gave back a generator object \(a generator or iterator: "):
        worker.message({"op": "return"}, {"result": (t for t in [1, 2])})
    with pytest.raises(wire.WireError, match="^a generator object cannot be sent$"):
        grader.message({"op": "call"}, {"arg": (t for t in [1, 2])})


def test_one_array_named_by_many_objects_is_refused_before_any_copy():
    """Each entry of an object table that names an array gets a copy of it: a worker's reply of a thousand entries
    naming one large array would cost a thousand copies, up to the job's memory cap (issue 44). An honest sender
    describes each array once; a table that names one twice is refused, with a message of the grader's."""
    _, grader, _ = across({"x": np.ones(2)})
    first = wire.WORKER_NUMBERS + 50
    table = [[first + k, "a", 0] for k in range(1000)]
    with pytest.raises(wire.WireError, match="one array of the message named by several objects"):
        grader.receive({"objects": table, "values": {}}, [np.zeros(1 << 20)])
    assert first not in grader.objects, "nothing of the message was made"
    got = grader.receive({"objects": [[first, "a", 0], [first + 1, "a", 1]], "values": {}}, [np.zeros(2), np.ones(2)])
    assert got == {} and np.array_equal(grader.objects[first + 1], np.ones(2)), "one entry per array still crosses"


def test_the_grader_reads_a_lone_surrogate_from_the_worker_as_u_fffd():
    "A message its code raised with chr(0xD800) in it made the grader fail writing UTF-8 (red team round 8)."
    import io

    from grading.common.notebooks import valid_text
    from grading.sandbox import wire

    message = wire.pack({"op": "ready", "error": "ValueError: half-written \ud800", "printed": []}, [])
    header, _ = wire.unpack(io.BytesIO(message).read, valid_text)
    assert header["error"] == "ValueError: half-written \ufffd"
    assert wire.unpack(io.BytesIO(message).read)[0]["error"].endswith("\ud800"), "the worker's side takes it as sent"
