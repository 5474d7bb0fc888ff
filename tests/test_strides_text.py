"""Notebook 19's text against its code: the worked examples of strides, indexing, transpose, broadcast, contiguity,
reshape and im2col, the numbers each named mistake is said to give, and the reference functions against NumPy's own
on random shapes (hypothesis): 0-d arrays, axes of size 0 and 1, offsets, refused indices and shapes."""

import functools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import sliding_window_view

from grading.common.notebooks import read_notebook
from tinytorch.core import strides as S

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "19_strides.ipynb"


@functools.cache
def text():
    "The notebook's markdown, all its cells (read once)."
    return "\n".join(c.source for c in read_notebook(NOTEBOOK).cells if c.cell_type == "markdown")


def stated(numbers):
    "Whether `numbers` (as '(12, 4, 1)' or '[[7, 8], [12, 13]]') is written in the text."
    return numbers in text()


def position(strides, index, offset=0):
    return offset + sum(i * s for i, s in zip(index, strides))


def test_the_strides_example_and_its_two_mistakes_give_the_numbers_the_text_states():
    assert S.strides_for((2, 3, 4)) == (12, 4, 1) and position((12, 4, 1), (1, 0, 2)) == 14
    assert np.zeros((2, 3, 4)).strides == (96, 32, 8)
    column_major, own_size = (1, 2, 6), (24, 12, 4)
    assert position(column_major, (1, 0, 2)) == 13 and position(own_size, (1, 0, 2)) == 32
    with pytest.raises(ValueError, match="outside its buffer of 24"):
        S.to_numpy(S.StridedArray(np.arange(24), (2, 3, 4), own_size))
    for numbers in ["$(12, 4, 1)$", "$(1, 2, 6)$", "$(24, 12, 4)$", "$(96, 32, 8)$", "= 14$", "lands on position 13"]:
        assert stated(numbers), numbers
    assert "is at 32, past the end of a buffer of 24" in text()
    assert S.strides_for(()) == () and S.strides_for((3, 1)) == (1, 1) and S.strides_for((2, 0, 3)) == (0, 3, 1)
    assert stated("shape $(2, 0, 3)$ has strides $(0, 3, 1)$")


def test_the_indexing_examples_are_what_the_reference_gives():
    view = S.from_numpy(np.arange(24).reshape(2, 3, 4))
    assert S.element_offset(view, (1, 2, 3)) == 23 and stated("`element_offset(view, (1, 2, 3))` is 23")
    every_other = S.StridedArray(np.arange(24), (3, 4), (8, 2), offset=1)
    assert S.element_offset(every_other, (2, 1)) == 19 and every_other.buffer[19] == 19
    assert stated("$1 + 16 + 2 = 19$")
    for index in [(0, 3, 0), (0, -1, 0), (0, 0), (0, 0, 0, 0)]:
        with pytest.raises(IndexError):
            S.element_offset(view, index)
    assert S.element_offset(S.StridedArray(np.arange(5), (), (), 3), ()) == 3


def test_the_transpose_example_and_its_mistake():
    small = S.from_numpy(np.arange(6).reshape(2, 3))
    flipped = S.transpose(small)
    assert (flipped.shape, flipped.strides) == ((3, 2), (1, 3)) and flipped.buffer is small.buffer
    assert S.to_numpy(flipped).tolist() == [[0, 3], [1, 4], [2, 5]] and stated("$[[0, 3], [1, 4], [2, 5]]$")
    fresh = S.StridedArray(small.buffer, (3, 2), S.strides_for((3, 2)))
    assert S.to_numpy(fresh).tolist() == [[0, 1], [2, 3], [4, 5]] and stated("reads $[[0, 1], [2, 3], [4, 5]]$")
    cube = S.transpose(S.from_numpy(np.zeros((2, 3, 4))), (2, 0, 1))
    assert (cube.shape, cube.strides) == ((4, 2, 3), (1, 12, 4)) and stated("strides $(1, 12, 4)$")


def test_the_broadcast_examples_and_the_stride_kept_mistake():
    row = S.from_numpy(np.array([10, 20, 30]))
    wide = S.broadcast_to(row, (2, 3))
    assert wide.strides == (0, 1) and S.to_numpy(wide).tolist() == [[10, 20, 30], [10, 20, 30]]
    column = S.from_numpy(np.array([[5], [7]]))
    tall = S.broadcast_to(column, (2, 3))
    assert tall.strides == (1, 0) and S.to_numpy(tall).tolist() == [[5, 5, 5], [7, 7, 7]]
    kept = S.StridedArray(column.buffer, (2, 3), (1, 1))
    assert column.buffer[S.element_offset(kept, (0, 1))] == 7
    with pytest.raises(IndexError):
        column.buffer[S.element_offset(kept, (0, 2))]
    with pytest.raises(ValueError, match="outside its buffer"):
        S.to_numpy(kept)
    for numbers in ["strides $(0, 1)$", "strides $(1, 0)$", "$[[5, 5, 5], [7, 7, 7]]$", "which is 7"]:
        assert stated(numbers), numbers


def test_contiguity_ignores_size_one_axes_where_the_strict_comparison_does_not():
    flat_column = S.transpose(S.from_numpy(np.arange(3).reshape(1, 3)))
    assert (flat_column.shape, flat_column.strides) == ((3, 1), (1, 3))
    assert S.is_contiguous(flat_column) and flat_column.strides != S.strides_for(flat_column.shape)
    assert not S.is_contiguous(S.transpose(S.from_numpy(np.zeros((2, 3)))))
    assert S.is_contiguous(S.from_numpy(np.zeros((2, 0, 3))))
    assert stated("strides $(1, 3)$ against $(1, 1)$")


def test_a_reshape_after_a_transpose_copies_and_the_mistake_reads_the_old_order():
    a = S.from_numpy(np.arange(6).reshape(2, 3))
    copied = S.reshape(S.transpose(a), (6,))
    assert S.to_numpy(copied).tolist() == [0, 3, 1, 4, 2, 5] and copied.buffer is not a.buffer
    assert S.reshape(a, (3, 2)).buffer is a.buffer
    assert stated("$[0, 3, 1, 4, 2, 5]$") and stated("$[0, 1, 2, 3, 4, 5]$")
    with pytest.raises(ValueError, match="cannot reshape"):
        S.reshape(a, (4, 2))


def test_the_im2col_examples_and_the_forgotten_stride():
    image = S.from_numpy(np.arange(20).reshape(4, 5))
    windows = S.im2col_view(image, 2, 2)
    assert (windows.shape, windows.strides) == ((3, 4, 2, 2), (5, 1, 5, 1)) and windows.buffer is image.buffer
    assert S.to_numpy(windows)[1, 2].tolist() == [[7, 8], [12, 13]]
    assert S.to_numpy(S.im2col_view(image, 2, 2, stride=2))[1, 1].tolist() == [[12, 13], [17, 18]]
    forgotten = S.StridedArray(image.buffer, (2, 2, 2, 2), (5, 1, 5, 1))
    assert S.to_numpy(forgotten)[1, 1].tolist() == [[6, 7], [11, 12]]
    for numbers in ["$(5, 1, 5, 1)$", "$[[7, 8], [12, 13]]$", "$[[12, 13], [17, 18]]$", "$[[6, 7], [11, 12]]$"]:
        assert stated(numbers), numbers
    with pytest.raises(ValueError, match="does not fit"):
        S.im2col_view(image, 5, 2)


def test_the_measured_bytes_the_text_reads_follow_from_the_shapes():
    assert 512 * 512 * 8 == 2_097_152 and stated("2,097,152 bytes")
    ratio = 8 * 30 * 30 * 27 / (8 * 3 * 32 * 32)
    assert round(ratio, 1) == 7.9 and round(27 / 3 * (30 / 32) ** 2, 1) == 7.9 and stated("\\approx 7.9$")


shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


@settings(max_examples=60, deadline=None)
@given(shapes)
def test_strides_for_is_numpys_for_every_shape_with_elements(shape):
    got = S.strides_for(shape)
    assert all(type(s) is int for s in got) and len(got) == len(shape)
    if 0 not in shape:
        assert got == tuple(s // 8 for s in np.zeros(shape).strides)


@settings(max_examples=60, deadline=None)
@given(shapes, st.randoms(use_true_random=False))
def test_transpose_reshape_and_contiguity_agree_with_numpy(shape, random):
    a = np.arange(float(np.prod(shape))).reshape(shape)
    axes = list(range(len(shape)))
    random.shuffle(axes)
    moved = S.transpose(S.from_numpy(a), axes)
    assert np.array_equal(S.to_numpy(moved), a.transpose(axes)) and moved.buffer.size == a.size
    numpy_moved = a.transpose(axes)
    assert S.is_contiguous(moved) == (numpy_moved.flags.c_contiguous or a.size == 0)
    flat = S.reshape(moved, (a.size,))
    assert np.array_equal(S.to_numpy(flat), numpy_moved.reshape(-1))
    assert (flat.buffer is moved.buffer) == S.is_contiguous(moved)


@settings(max_examples=60, deadline=None)
@given(shapes, st.lists(st.booleans(), min_size=4, max_size=4), st.integers(0, 2))
def test_broadcast_to_agrees_with_numpy(shape, stretch, extra):
    source = tuple(1 if s else n for s, n in zip(stretch, shape))
    target = (2,) * extra + shape
    a = np.arange(float(np.prod(source))).reshape(source)
    got = S.broadcast_to(S.from_numpy(a), target)
    assert np.array_equal(S.to_numpy(got), np.broadcast_to(a, target))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(2, 7), st.integers(2, 7), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3))
def test_im2col_view_agrees_with_sliding_window_view(c, h, w, kh, kw, stride):
    x = np.arange(float(2 * c * h * w)).reshape(2, c, h, w)
    if kh > h or kw > w:
        with pytest.raises(ValueError):
            S.im2col_view(S.from_numpy(x), kh, kw, stride)
        return
    expected = sliding_window_view(x, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    assert np.array_equal(S.to_numpy(S.im2col_view(S.from_numpy(x), kh, kw, stride)), expected)


def test_to_numpy_refuses_a_view_that_leaves_its_buffer_and_reads_an_empty_one():
    with pytest.raises(ValueError, match="outside its buffer"):
        S.to_numpy(S.StridedArray(np.arange(4), (3,), (-1,), offset=1))
    assert S.to_numpy(S.StridedArray(np.arange(4), (0, 3), (3, 1), offset=4)).shape == (0, 3)
