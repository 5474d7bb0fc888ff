"""Notebook 12's text held against the code (issue 23, points 1 and 5), and its CNN test independent of the cell
before it (issue 24): a wrong `Conv2dBackward` fails `cnn_digits` with its own error, not with `NameError: history`."""

import numpy as np
import pytest
from test_notebook_errors import cell_source, notebook_text, with_solution

from conftest import REPO
from grading.common.notebooks import read_notebook
from tinytorch.core.autograd import enable_autograd
from tinytorch.core.conv import Conv2dBackward, conv2d, im2col, max_pool2d, unwindow, window
from tinytorch.core.tensor import Tensor


def test_the_worked_1d_convolution_of_the_text_is_what_the_engine_computes():
    enable_autograd()
    x = Tensor(np.array([[[[1.0, 2.0, 3.0, 4.0]]]]), requires_grad=True)
    w = Tensor(np.array([[[[1.0, -1.0]]]]), requires_grad=True)
    b = Tensor(np.array([0.5]), requires_grad=True)
    y = conv2d(x, w, b)
    assert np.allclose(y.data.ravel(), [-0.5, -0.5, -0.5])
    (y * Tensor(np.array([[[[1.0, 0.0, 2.0]]]]))).sum().backward()
    assert np.allclose(w.grad.data.ravel(), [7, 10]) and np.allclose(b.grad.data, [3])
    assert np.allclose(x.grad.data.ravel(), [1, -1, 2, -2])
    text = cell_source("12_conv", "c12-006")
    for stated in ["[7, 10]", "[1, -1, 2, -2]", "= 3$", "[-0.5, -0.5, -0.5]"]:
        assert stated in text, stated


def test_the_worked_2d_convolutions_of_the_text_are_what_the_engine_computes():
    image, kernel, bias = np.arange(9.0).reshape(1, 1, 3, 3), np.array([[[[1.0, 2.0], [3.0, 4.0]]]]), np.array([0.5])
    rule = Conv2dBackward(Tensor(image, requires_grad=True), Tensor(kernel), Tensor(bias))
    grad_x, grad_w, grad_b = (
        g.data[0, 0] if g.ndim == 4 else g.data for g in rule.apply(Tensor([[[[1.0, 0], [0, 2]]]]))
    )
    assert grad_x.tolist() == [[1, 2, 0], [3, 6, 4], [0, 6, 8]] and grad_w.tolist() == [[8, 11], [17, 20]]
    assert grad_b.tolist() == [3] and conv2d(image, Tensor(kernel), Tensor(bias)).data[0, 0].tolist() == [
        [27.5, 37.5],
        [57.5, 67.5],
    ]
    flipped = Conv2dBackward(Tensor(image, requires_grad=True), Tensor(kernel[:, :, ::-1, ::-1].copy()), Tensor(bias))
    assert flipped.apply(Tensor([[[[1.0, 0], [0, 2]]]]))[0].data[0, 0].tolist() == [[4, 3, 0], [2, 9, 6], [0, 4, 2]]
    strided = Conv2dBackward(Tensor(image, requires_grad=True), Tensor(kernel), Tensor(bias), stride=2, padding=1)
    grad_x, grad_w, _ = (g.data for g in strided.apply(Tensor(np.ones((1, 1, 2, 2)))))
    assert grad_x[0, 0].tolist() == [[4, 3, 4], [2, 1, 2], [4, 3, 4]] and grad_w[0, 0].tolist() == [[4, 8], [8, 16]]
    text = cell_source("12_conv", "c12-006")
    for stated in ["[[27.5, 37.5], [57.5, 67.5]]", "[[8, 11], [17, 20]]", "[[1, 2, 0], [3, 6, 4], [0, 6, 8]]"]:
        assert stated in text, stated
    for stated in ["[[4, 8], [8, 16]]", "[[4, 3, 4], [2, 1, 2], [4, 3, 4]]", "[[4, 3, 0], [2, 9, 6], [0, 4, 2]]"]:
        assert stated in text, stated


def test_the_im2col_example_and_its_memory_blow_up_are_what_the_text_states():
    rows, out_hw = im2col(np.arange(9.0).reshape(1, 1, 3, 3), 2, 2)
    assert rows.tolist() == [[0, 1, 3, 4], [1, 2, 4, 5], [3, 4, 6, 7], [4, 5, 7, 8]] and out_hw == (2, 2)
    text = cell_source("12_conv", "c12-004")
    assert "no copy" not in text and "8.4 MB" in text and "65.4 MB" in text
    n, h = 1344, 28  # the text's batch of 28×28 float64 images and a 3×3 kernel: rows of (h - 2)² windows of 9
    assert round(n * h * h * 8 / 1e6, 1) == 8.4 and round(n * (h - 2) ** 2 * 9 * 8 / 1e6, 1) == 65.4
    x = np.zeros((64, 3, 32, 32))  # the measuring cell's batch, padding 1
    padded_rows, _ = im2col(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))), 3, 3)
    measured = cell_source("12_conv", "c12-measure-md")
    assert "size=(64, 3, 32, 32)" in cell_source("12_conv", "c12-measure")
    assert f"{padded_rows.nbytes / 1e6:.1f} MB for a {x.nbytes / 1e6:.1f} MB input" in measured


def test_the_max_pooling_example_of_the_text_is_what_the_engine_computes():
    enable_autograd()
    x = Tensor(np.array([[[[1.0, 5.0, 2.0, 0.0], [3.0, 4.0, 7.0, 7.0]]]]), requires_grad=True)
    out = max_pool2d(x, 2)
    assert out.data.ravel().tolist() == [5, 7]
    (out * Tensor(np.array([[[[10.0, 20.0]]]]))).sum().backward()
    assert x.grad.data[0, 0].tolist() == [[0, 10, 0, 0], [0, 0, 20, 0]]
    assert "`[[0, 10, 0, 0], [0, 0, 20, 0]]`" in cell_source("12_conv", "c12-010")


def test_the_overlapping_and_strided_max_pooling_examples_of_the_text_are_what_the_engine_computes():
    "Example 2 (stride 1: one pixel wins both windows, through a tie) and example 3 (stride 3: the nines are in none)."
    enable_autograd()
    text = cell_source("12_conv", "c12-010")
    for image, k, stride, out, g, grad in [
        ([[1, 3, 2], [0, 3, 1]], 2, 1, [3, 3], [10, 20], [[0, 30, 0], [0, 0, 0]]),
        ([[4, 1, 9, 2, 6], [0, 3, 9, 5, 5]], 2, 3, [4, 6], [1, 2], [[1, 0, 0, 0, 2], [0, 0, 0, 0, 0]]),
    ]:
        x = Tensor(np.array([[image]], dtype=float), requires_grad=True)
        pooled = max_pool2d(x, k, stride=stride)
        assert pooled.data.ravel().tolist() == out
        (pooled * Tensor(np.array([[[g]]], dtype=float))).sum().backward()
        assert x.grad.data[0, 0].tolist() == grad
        assert f"`{image}`" in text and f"`[{g}]`" in text and f"`{grad}`" in text
    assert "`[[4, 6]]`" in text
    assert "20 or 10 instead of 30" in text


def test_the_released_conv_docstring_states_no_gradient_formula():
    doc = Conv2dBackward.__doc__
    assert "@" not in doc and "col2im" not in doc and "Σ" not in doc


def run_until(stop_grade_id, solution, solution_cell="c12-007"):
    """Run notebook 12's code cells in order in one namespace, as nbgrader does (a failing cell does not stop the
    run), with `solution` as the answer of `solution_cell` (Conv2dBackward's by default); return the exception raised
    by the cell graded `stop_grade_id`."""
    namespace = {"__name__": "__main__"}
    for cell in read_notebook(REPO / "notebooks" / "12_conv.ipynb").cells:
        if cell.cell_type != "code":
            continue
        source = with_solution(cell.source, solution) if cell.get("id") == solution_cell else cell.source
        try:
            exec(compile(source, cell.get("id"), "exec"), namespace)
        except Exception as error:  # noqa: BLE001  (a failing cell, as in a student's run)
            if cell.metadata.get("nbgrader", {}).get("grade_id") == stop_grade_id:
                return error
        else:
            if cell.metadata.get("nbgrader", {}).get("grade_id") == stop_grade_id:
                return None
    raise AssertionError(f"no cell graded {stop_grade_id}")


# The reference Conv2dBackward, one step a line: each mistake below replaces one step.
CONV_RULE = (
    "x, w = self.saved_tensors[:2]\n"
    "f, c, kh, kw = w.shape\n"
    "widths = pad_widths(self.padding, kh, kw)\n"
    "padded = _pad(x.data, widths)\n"
    "rows, out_hw = im2col(padded, kh, kw)\n"
    "g = dilate(grad_output.data, out_hw, self.stride)\n"
    "g_rows = g.transpose(0, 2, 3, 1).reshape(-1, f)\n"
    "grad_w = (g_rows.T @ rows).reshape(w.shape)\n"
    "grad_padded = col2im(g_rows @ w.data.reshape(f, -1), padded.shape, kh, kw, out_hw)\n"
    "grads = (Tensor(_crop(grad_padded, widths)), Tensor(grad_w))\n"
    "return grads + (Tensor(g.sum(axis=(0, 2, 3))),) if len(self.saved_tensors) == 3 else grads"
)


def conv_rule_with(old, new):
    "CONV_RULE with the step `old` replaced by `new`."
    assert old in CONV_RULE, old
    return CONV_RULE.replace(old, new)


def test_a_conv_rule_giving_the_wrong_shape_fails_cnn_digits_with_its_own_error_not_a_missing_history():
    unshaped = conv_rule_with("grad_w = (g_rows.T @ rows).reshape(w.shape)", "grad_w = g_rows.T @ rows")  # (F, C·kh·kw)
    error = run_until("cnn_digits", unshaped)
    assert error is not None and not isinstance(error, NameError), repr(error)


CONV_MISTAKES = {
    "im2col at the convolution's stride": (
        ("im2col(padded, kh, kw)", "im2col(padded, kh, kw, self.stride)"),
        "im2col at the convolution's stride is a common mistake",  # said by the given dilate
    ),
    "grad_rows reshaped as the image's gradient": (
        (
            "grad_padded = col2im(g_rows @ w.data.reshape(f, -1), padded.shape, kh, kw, out_hw)\n"
            "grads = (Tensor(_crop(grad_padded, widths)), Tensor(grad_w))",
            "grad_x = (g_rows @ w.data.reshape(f, -1)).reshape(x.shape)\ngrads = (Tensor(grad_x), Tensor(grad_w))",
        ),
        "col2im adds the rows back onto the image",
    ),
    "no dilate at a stride": (
        ("g = dilate(grad_output.data, out_hw, self.stride)", "g = grad_output.data"),
        "dilate puts it on the stride-1 output first",
    ),
}


@pytest.mark.parametrize("mistake", CONV_MISTAKES)
def test_the_visible_conv_test_names_a_listed_mistake_that_raises_not_numpys_bare_error(mistake):
    (old, new), cause = CONV_MISTAKES[mistake]
    error = run_until("conv2d_backward", conv_rule_with(old, new))
    assert error is not None and cause in str(error), repr(error)
    assert ".." not in str(error)


POOL_START = (
    "(x,) = self.saved_tensors\n"
    "grad_windows = np.zeros(self.argmax.shape + (self.k * self.k,), dtype=grad_output.dtype)\n"
)
POOL_MISTAKES = {
    "the stride not passed on": (
        POOL_START
        + "np.put_along_axis(grad_windows, self.argmax[..., None], grad_output.data[..., None], axis=-1)\n"
        + "return (Tensor(unwindow(grad_windows, x.shape, self.k)),)",
        "Pass the kernel size and stride the forward pass used",
    ),
    "g to every tied maximum": (
        "(x,) = self.saved_tensors\n"
        "windows = window(x.data, self.k, self.stride)\n"
        "top = windows == windows.max(axis=-1, keepdims=True)\n"
        "return (Tensor(unwindow(top * grad_output.data[..., None], x.shape, self.k, self.stride)),)",
        "of tied maxima only the first gets g",
    ),
    "windows k pixels apart whatever the stride": (
        "(x,) = self.saved_tensors\n"
        "n, c, oh, ow = self.argmax.shape\n"
        "grad_x = np.zeros(x.shape)\n"
        "for i in range(oh):\n"
        "    for j in range(ow):\n"
        "        r, q = np.divmod(self.argmax[:, :, i, j], self.k)\n"
        "        for a in range(n):\n"
        "            for b in range(c):\n"
        "                grad_x[a, b, i * self.k + r[a, b], j * self.k + q[a, b]] += grad_output.data[a, b, i, j]\n"
        "return (Tensor(grad_x),)",
        "the windows start every stride pixels",
    ),
    "a buffered += at repeated positions": (
        "(x,) = self.saved_tensors\n"
        "n, c, oh, ow = self.argmax.shape\n"
        "s, k = self.stride, self.k\n"
        "rows = np.arange(oh)[:, None] * s + self.argmax // k\n"
        "cols = np.arange(ow)[None, :] * s + self.argmax % k\n"
        "grad_x = np.zeros(x.shape)\n"
        "ni, ci = np.arange(n)[:, None, None, None], np.arange(c)[None, :, None, None]\n"
        "grad_x[ni, ci, rows, cols] += grad_output.data\n"
        "return (Tensor(grad_x),)",
        "a write (or += at a repeated position) keeps only one",
    ),
}


@pytest.mark.parametrize("mistake", POOL_MISTAKES)
def test_the_visible_max_pooling_test_names_the_likely_cause_of_a_wrong_rule(mistake):
    solution, cause = POOL_MISTAKES[mistake]
    error = run_until("maxpool2d_backward", solution, solution_cell="c12-011")
    assert error is not None and cause in str(error), repr(error)


def test_notebook_12_has_three_questions_a_measuring_question_and_a_summary():
    text = notebook_text("12_conv")
    assert text.count("<!-- answer: ") == 4 and "## Summary" in text


@pytest.mark.parametrize("stride", [0, -1, 1.5, True])
def test_a_stride_that_is_not_a_whole_number_of_one_or_more_pixels_is_refused_with_the_courses_message(stride):
    "conv2d(x, w, None, 0) ended in NumPy's 'slice step cannot be zero' (issue 44)."
    x, w = Tensor(np.ones((1, 1, 4, 4))), Tensor(np.ones((1, 1, 2, 2)))
    with pytest.raises(
        ValueError, match=rf"^conv2d needs a stride of 1 or more pixels, a whole number; got stride={stride!r}\.$"
    ):
        conv2d(x, w, None, stride)
    assert conv2d(x, w, None, np.int64(2)).shape == (1, 1, 2, 2), "a NumPy integer is a whole number"


@pytest.mark.parametrize("stride", [0, -2, 1.5])
def test_a_pooling_stride_of_zero_is_refused_not_read_as_the_kernel_size(stride):
    "MaxPool2d(2, stride=0) pooled with stride 2, and max_pool2d(x, 2, 0) the same: `stride or kernel_size`."
    from tinytorch.core.conv import AvgPool2d, MaxPool2d, avg_pool2d

    x = Tensor(np.arange(16.0).reshape(1, 1, 4, 4))
    refused = rf"^pooling needs a stride of 1 or more pixels, a whole number; got stride={stride!r}\.$"
    for pool in [lambda: max_pool2d(x, 2, stride), lambda: avg_pool2d(x, 2, stride)]:
        with pytest.raises(ValueError, match=refused):
            pool()
    for layer in [MaxPool2d(2, stride=stride), AvgPool2d(2, stride=stride)]:
        with pytest.raises(ValueError, match=refused):
            layer(x)
    assert MaxPool2d(2)(x).shape == (1, 1, 2, 2) and max_pool2d(x, 2, None).shape == (1, 1, 2, 2)


def test_a_rule_that_rounds_to_float32_is_refused_saying_which_values_were_rounded():
    """Issue 44, point 3: a right conv rule that rounds its rows to float32 was told "a step's result has another
    shape" (the checker's `except` caught the grader's refusal). The refusal is a Refusal, which no test's `except
    (ValueError, IndexError)` catches, and it says what was measured: the gradient is exact for the saved tensors
    rounded to float32 (the reference rule run on them)."""
    import tinytorch.core.conv as conv
    from grading.common.errors import Refusal
    from grading.grade.stand_ins import refuse_numerical_rule

    solution = cell_source("12_conv", "c12-007").split("class Conv2dBackward(Function):")[1]
    old = "rows, out_hw = im2col(padded, kh, kw)"
    assert old in solution
    space = dict(vars(conv))
    exec("class Rounding(Function):" + solution.replace(old, old + "; rows = rows.astype(np.float32)"), space)
    rng = np.random.default_rng(1)
    rule = Conv2dBackward(*(Tensor(rng.normal(size=s)) for s in [(2, 3, 5, 5), (4, 3, 3, 3), (4,)]))
    g = Tensor(rng.normal(size=(2, 4, 3, 3)))
    value = space["Rounding"].apply(rule, g)
    assert np.allclose(value[1].data, Conv2dBackward.apply(rule, g)[1].data, rtol=1e-6), "right to float32's digits"
    with pytest.raises(Refusal) as refused:
        refuse_numerical_rule("Conv2dBackward.apply", value, Conv2dBackward.apply, (rule, g), {})
    assert not isinstance(refused.value, Exception), "a test's except Exception would catch it"
    assert str(refused.value).startswith(
        "Conv2dBackward: the gradient of input 1 (the second gradient apply returns) is the exact one computed from "
        "its saved tensors rounded to float32 "
        "(it agrees with that to about 1e-16, and with the exact one only to "
    )
    exact = Conv2dBackward.apply(rule, g)
    assert refuse_numerical_rule("Conv2dBackward.apply", exact, Conv2dBackward.apply, (rule, g), {}) is False
    assert "*Rounding to float32 inside the rule*" in cell_source("12_conv", "c12-006")  # the exercise's text


def test_max_pooling_finds_the_first_maximum_of_every_window_as_argmax_over_copied_windows_would():
    "The forward's running maximum over strided views, against the plain definition: each window copied, np.argmax."
    rng = np.random.default_rng(12)
    for case in range(300):
        k, stride = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        x = rng.integers(-2, 3, size=(2, 3, int(rng.integers(k, 8)), int(rng.integers(k, 8)))).astype(float)  # ties
        if case % 3 == 0:
            x[rng.random(x.shape) < 0.1] = np.nan  # NaN counts as the largest, as in np.argmax
        if case % 4 == 0:
            x[x == 0] = -0.0  # the value of the first maximum, signed zeros included
        if case % 5 == 0:
            x = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)  # channels last in memory
        windows = window(x, k, stride)
        argmax = windows.argmax(axis=-1)
        expected = np.take_along_axis(windows, argmax[..., None], axis=-1)[..., 0]
        out = max_pool2d(Tensor(x, requires_grad=True), k, stride)
        assert np.array_equal(out._grad_fn.argmax, argmax)
        assert np.array_equal(out.data, expected, equal_nan=True)
        assert np.array_equal(np.signbit(out.data), np.signbit(expected))


def test_the_pooling_gradient_is_laid_out_in_memory_as_its_input_is():
    "A convolution's output is channels-last in memory: the pooling's gradient follows, so ReLU's rule reads both alike."
    rng = np.random.default_rng(13)
    layouts = {"contiguous": rng.normal(size=(2, 4, 6, 6))}
    layouts["channels last"] = np.ascontiguousarray(layouts["contiguous"].transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    grads = {}
    for name, data in layouts.items():
        x = Tensor(data, requires_grad=True)
        g = Tensor(np.arange(2 * 4 * 3 * 3, dtype=float).reshape(2, 4, 3, 3))
        (grads[name],) = max_pool2d(x, 2)._grad_fn.apply(g)
        assert np.argsort(grads[name].data.strides).tolist() == np.argsort(data.strides).tolist(), name
    assert np.array_equal(grads["contiguous"].data, grads["channels last"].data)


def test_unwindow_gives_a_plain_array_whatever_array_type_it_is_handed():
    windows = np.ma.masked_array(np.arange(4.0).reshape(1, 1, 1, 1, 4))
    grad = unwindow(windows, (1, 1, 2, 2), 2)
    assert type(grad) is np.ndarray and grad.tolist() == [[[[0.0, 1.0], [2.0, 3.0]]]]


def test_im2col_copies_the_rows_the_transposed_windows_give():
    "im2col copies one place of the kernel at a time; its rows are the windows' view transposed and reshaped."
    from numpy.lib.stride_tricks import sliding_window_view

    rng = np.random.default_rng(14)
    for case in range(200):
        kh, kw, stride = (int(v) for v in rng.integers(1, 4, size=3))
        shape = (int(rng.integers(0, 4)), int(rng.integers(1, 4)), int(rng.integers(kh, 9)), int(rng.integers(kw, 9)))
        x = rng.normal(size=shape).astype(np.float32 if case % 2 else np.float64)
        if case % 3 == 0:
            x = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)  # channels last in memory
        windows = sliding_window_view(x, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
        n, c, out_h, out_w = windows.shape[:4]
        rows, out_hw = im2col(x, kh, kw, stride)
        assert out_hw == (out_h, out_w) and rows.dtype == x.dtype
        assert np.array_equal(rows, windows.transpose(0, 2, 3, 1, 4, 5).reshape(n * out_h * out_w, c * kh * kw))
    with pytest.raises(ValueError, match=r"a 3×3 kernel needs at least 3×3 pixels \(with padding\); got 2×4"):
        im2col(np.zeros((1, 1, 2, 4)), 3, 3)


def test_unwindow_of_windows_side_by_side_puts_each_gradient_where_the_general_loop_adds_it():
    "Windows side by side (stride k) are copied into place at once: the same array as adding them one place at a time."
    rng = np.random.default_rng(15)
    for case in range(100):
        k = int(rng.integers(1, 4))
        x_shape = (2, 3, int(rng.integers(k, 9)), int(rng.integers(k, 9)))  # rows and columns left over, sometimes
        out_h, out_w = x_shape[2] // k, x_shape[3] // k
        grad_windows = rng.normal(size=(2, 3, out_h, out_w, k * k))
        if case % 2:
            grad_windows = np.moveaxis(np.ascontiguousarray(np.moveaxis(grad_windows, -1, 0)), 0, -1)  # place first
        if case % 5 == 0:
            grad_windows = np.broadcast_to(grad_windows[..., :1], grad_windows.shape)  # as average pooling hands it
        expected = np.zeros(x_shape)
        for i in range(k):
            for j in range(k):
                expected[:, :, i : i + k * out_h : k, j : j + k * out_w : k] += grad_windows[..., i * k + j]
        grad = unwindow(grad_windows, x_shape, k)
        assert np.array_equal(grad, expected)
