"""The tests' data belong to the grader (grading.grade.ownership): a student's function may change only what its exercise
declares; an array of anything else changed in place fails the call naming it, and other changes are not read back."""

import numpy as np
import pytest

from grading.common.errors import Refusal
from grading.grade.ownership import MAY_CHANGE, check_changes, object_paths

WORKER = 1 << 40


class Tensor:  # stands for the course's Tensor: a course object (its module is __main__-like for the walk)
    __module__ = "tinytorch.core.tensor"

    def __init__(self, data):
        self.data, self.grad = np.asarray(data, dtype=float), None


def numbered(*values):
    "number_of as a wire session has it: every object the grader sent, numbered from 1."
    return {id(v): i for i, v in enumerate(values, 1)}


def test_an_input_array_changed_in_place_fails_the_call_and_names_the_argument():
    a, b = Tensor([1.0, 2.0]), Tensor([3.0, 4.0])
    number_of = numbered(a, a.data, b, b.data)
    table = [[4, "a", 0], [WORKER, "a", 1]]  # b.data changed; a new array of the worker's
    with pytest.raises(Refusal, match=r"your matmul changed b\.data in place"):
        check_changes("matmul", {"a": a, "b": b}, table, number_of, WORKER)


def test_declared_changes_are_read_back_and_other_changes_are_dropped():
    model, X = Tensor([0.0]), np.zeros(3)
    rng = np.random.default_rng(0)
    number_of = numbered(model, model.data, X, rng)
    table = [[2, "a", 0], [4, "g", {}], [1, "o", {}]]
    kept = check_changes("train_epoch", {"model": model, "X": X, "rng": rng}, table, number_of, WORKER)
    assert kept == table, "train_epoch may change its model (and its arrays) and its random generator"
    assert MAY_CHANGE["attach"] == ("result",)
    result, other = Tensor([1.0]), Tensor([2.0])
    number_of = numbered(result, other)
    kept = check_changes(
        "attach", {"result": result, "inputs": (other,)}, [[1, "o", {}], [2, "o", {}]], number_of, WORKER
    )
    assert kept == [[1, "o", {}]], "attach records on result; a change to its input is not read back"


def test_paths_name_nested_arguments_nearest_first():
    params = [Tensor([1.0]), Tensor([2.0])]
    number_of = numbered(params, params[0], params[0].data, params[1], params[1].data)
    paths = object_paths({"params": params}, number_of)
    assert paths[5] == "params[1].data" and paths[1] == "params"
    assert object_paths({"params": params, "vectors": [params[1].data]}, number_of)[5] == "vectors[0]"


def test_a_gradient_changed_in_place_in_the_backward_walk_is_told_to_store_a_new_sum():
    """A solver's accumulate did grads[key].data += grad.data: autograde said 'your run_backward changed an array it
    was given in place', with nothing on where the walk changes one (x + x hands one grad_output to both inputs)."""
    root, seed = Tensor([1.0]), np.ones(1)
    number_of = numbered(root, root.data, seed)
    with pytest.raises(Refusal, match=r"your run_backward changed .* in place") as raised:
        check_changes("run_backward", {"root": root, "grad_output": seed}, [[3, "a", 0]], number_of, WORKER)
    assert "accumulate stores the sum as a new array, not grads[key].data += grad.data" in str(raised.value)
    with pytest.raises(Refusal) as plain:
        check_changes("matmul", {"a": root, "b": Tensor([2.0])}, [[2, "a", 0]], number_of, WORKER)
    assert "accumulate" not in str(plain.value)


def test_the_objects_a_call_may_change_are_those_its_arguments_reach_when_it_begins():
    """run_backward releases the graph it walks: a set of changeable objects taken from the released graph refused
    the gradient retain_grad() stores on an intermediate result (06's demo printed dL/dy = None when graded). The
    set is taken once, when the call begins; a graph the worker grows meanwhile reaches nothing more."""
    from grading.grade.ownership import may_change

    class Function:
        __module__ = "tinytorch.core.function"

        def __init__(self, *saved):
            self.saved_tensors = saved

    middle = Tensor([2.0])
    root = Tensor([4.0])
    root._grad_fn = Function(middle)
    expected = Tensor([9.0])  # the test's own data, reached from no argument
    number_of = numbered(root, root.data, root._grad_fn, middle, middle.data, expected, expected.data)
    allowed = may_change("run_backward", {"root": root}, number_of)
    root._grad_fn.saved_tensors = None  # released during the call
    middle_grad = [[4, "o", {}]]
    assert check_changes("run_backward", {"root": root}, middle_grad, number_of, WORKER, allowed=allowed) == middle_grad
    assert check_changes("run_backward", {"root": root}, middle_grad, number_of, WORKER) == []  # taken too late
    root._grad_fn.saved_tensors = (expected,)  # the worker links the test's data into the graph: still not allowed
    with pytest.raises(Refusal, match="in place"):
        check_changes("run_backward", {"root": root}, [[7, "a", 0]], number_of, WORKER, allowed=allowed)


def test_run_backward_may_store_gradients_on_its_graph_but_never_change_a_tensors_data():
    """A red-team finding: run_backward may change root's graph, and every tensor of it was changeable, data included.
    06's run_backward_hidden computes its expected gradient, 2 x data + 2, from the graph after the call: a
    run_backward that set every tensor to zeros and handed each leaf 2 passed. The data now stay the grader's."""
    from grading.grade.ownership import may_change

    class Function:
        __module__ = "tinytorch.core.function"

        def __init__(self, *saved):
            self.saved_tensors = saved

    leaf = Tensor([1.0, 2.0])
    leaf.requires_grad = True
    root = Tensor([3.0])
    root._grad_fn = Function(leaf)
    number_of = numbered(root, root.data, leaf, leaf.data, root._grad_fn)
    objects = {number: value for value, number in ((root, 1), (root.data, 2), (leaf, 3), (leaf.data, 4))}
    named = {"root": root}
    allowed = may_change("run_backward", named, number_of)
    assert {1, 2, 3, 4, 5} <= allowed
    with pytest.raises(Refusal, match=r"changed root\._grad_fn\.saved_tensors\[0\]\.data in place"):
        check_changes("run_backward", named, [[4, "a", 0]], number_of, WORKER, allowed=allowed, objects=objects)
    zeros = {"c": {}, "s": {"data": {"r": WORKER}, "grad": {"r": WORKER + 1}, "requires_grad": False}}
    (kept,) = check_changes(
        "run_backward", named, [[3, "o", zeros]], number_of, WORKER, allowed=allowed, objects=objects
    )
    assert kept[2]["s"] == {"data": {"r": 4}, "grad": {"r": WORKER + 1}, "requires_grad": True}  # its grad is taken
    released = [[5, "o", {"c": {}, "s": {"saved_tensors": None}}]]
    assert (
        check_changes("run_backward", named, released, number_of, WORKER, allowed=allowed, objects=objects) == released
    )
    assert check_changes("train_epoch", {"model": leaf}, [[4, "a", 0]], number_of, WORKER, objects=objects)  # its job


def test_a_tensors_data_set_and_then_handed_to_a_tests_function_fails_the_call_naming_both():
    """Issue 44, point 4: 14's visible test holds a central-difference H·v that a student can paste; it moves each
    p.data and calls loss_fn, which when graded computes with the parameters unmoved (a write stays in the student's
    copy), and the test then said "H·v is zero: was the first grad called with create_graph=True?". The callback
    is refused, naming what happened. A reply that sets it (no function of the test's runs on it) is not read back."""
    params, loss_fn = [Tensor([1.0, 2.0]), Tensor([3.0])], lambda: None
    number_of = numbered(params, params[0], params[0].data, params[1], params[1].data, loss_fn)
    objects = {number: value for value, number in ((params[0], 2), (params[1], 4))}
    moved = [[4, "o", {"c": {}, "s": {"data": {"r": WORKER}, "grad": None}}]]  # params[1].data = a new array
    named = {"loss_fn": loss_fn, "params": params, "vectors": []}
    with pytest.raises(Refusal) as refused:
        check_changes("hessian_vector_product", named, moved, number_of, WORKER, objects=objects, calling=6)
    assert str(refused.value).startswith(
        "your hessian_vector_product set params[1].data and then called loss_fn, a function the test gave it. A "
        "function graded here may change only what its exercise says; its writes to anything else stay in its own "
        "copy, so loss_fn computes with params[1] as the test made it"
    )
    assert check_changes("hessian_vector_product", named, moved, number_of, WORKER, objects=objects) == []
    to_a_number = [[2, "o", {"c": {}, "s": {"data": 2.00001, "grad": None}}]]  # 0-d data plus a step: a NumPy float
    with pytest.raises(Refusal, match=r"set params\[0\]\.data and then called loss_fn"):
        check_changes("hessian_vector_product", named, to_a_number, number_of, WORKER, objects=objects, calling=6)
    same = [[4, "o", {"c": {}, "s": {"data": {"r": 5}, "grad": {"r": WORKER}}}]]  # its grad set, its data as it was
    assert check_changes("hessian_vector_product", named, same, number_of, WORKER, objects=objects, calling=6) == []
