"""A student's code may call a test's function (a callback), which runs in the grader's process: a request whose
inputs, or their broadcast together, are larger than any test's is refused before it runs, failing that call only."""

import numpy as np

from grading.grade.remote import CALLBACK_MB, request_too_big


class Holder:
    "Stands for a Tensor: the array is in .data."

    def __init__(self, data):
        self.data = data


def test_two_small_arrays_whose_broadcast_is_huge_are_refused():
    why = request_too_big((np.zeros((10000, 1)), np.zeros((1, 10000))), {})
    assert why and "broadcast together they make 763 MB" in why


def test_large_inputs_are_refused_whether_arrays_tensors_or_in_a_list():
    big = np.zeros(CALLBACK_MB * 2**20 // 8 + 1)
    assert request_too_big((big,), {})
    assert request_too_big((), {"x": Holder(big)})
    assert request_too_big(([Holder(big)],), {})


def test_what_a_test_gives_is_computed_and_arrays_that_do_not_broadcast_are_left_to_the_function():
    assert request_too_big((np.zeros((64, 128)), np.zeros(128)), {}) is None
    assert request_too_big((np.zeros((3, 2)), np.zeros((4,))), {}) is None
    assert request_too_big((1.0, "text"), {"f": len}) is None
