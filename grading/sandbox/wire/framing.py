"""One message as bytes: a JSON header and the message's arrays as `.npy` blobs read with `allow_pickle=False`.

Whatever a malformed message breaks while it is read is a WireError that quotes none of it (the text would quote
what the other side chose).
"""

import io
import json
import math
import struct
from collections.abc import Callable

import numpy as np

from .protocol import ARRAY_KINDS, MAX_MESSAGE, WireError


def array_bytes(array: object) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    return buffer.getvalue()


def array_from(data: bytes) -> np.ndarray:
    try:
        array = np.load(io.BytesIO(data), allow_pickle=False)
    except Exception as error:  # noqa: BLE001  (whatever numpy says about malformed bytes)
        raise WireError(f"an array that is not plain numbers ({type(error).__name__})") from None  # (its text quotes)
    if not isinstance(array, np.ndarray) or array.dtype.kind not in ARRAY_KINDS or array.dtype.fields:
        raise WireError(f"an array of dtype {getattr(array, 'dtype', '?')}: only numbers may cross")
    return array


def pack(header: dict, arrays: list) -> bytes:
    """One message: the header, then one `.npy` blob per dtype holding every array of that dtype end to end (the
    header gives each array's dtype and shape); a graph of 100,000 small tensors is then a few blobs, not 100,000."""
    layout, groups = [], {}
    for array in arrays:
        array = np.asarray(array, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
        layout.append([array.dtype.str, list(array.shape)])
        groups.setdefault(array.dtype.str, []).append(array.reshape(-1))
    blobs = [array_bytes(np.concatenate(parts)) for parts in groups.values()]
    head = json.dumps(dict(header, arrays=layout, blobs=[[d, len(b)] for d, b in zip(groups, blobs)])).encode()
    body = struct.pack("<Q", len(head)) + head + b"".join(blobs)
    return struct.pack("<Q", len(body)) + body


def read_exactly(read: Callable[[int], bytes], size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = read(min(left, 1 << 20))
        if not chunk:
            raise EOFError("the other side closed the channel")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def unpack(read: Callable[[int], bytes], clean: Callable[[object], object] | None = None) -> tuple[dict, list]:
    """Read one message with `read(n)`; return (header, arrays). `clean`: what the grader makes of a header that holds
    a JSON escape (grading.common.notebooks.valid_text: no lone surrogate, which no file of UTF-8 can hold)."""
    (size,) = struct.unpack("<Q", read_exactly(read, 8))
    if size > MAX_MESSAGE:
        raise WireError(f"a message of {size} bytes (more than {MAX_MESSAGE})")
    body = read_exactly(read, size)
    try:
        (head_size,) = struct.unpack("<Q", body[:8])
        header = json.loads(body[8 : 8 + head_size])
        header = clean(header) if clean is not None and b"\\u" in body[8 : 8 + head_size] else header
        layout, blobs = header.pop("arrays"), header.pop("blobs")
        shapes = [(str(d), tuple(int(n) for n in shape)) for d, shape in layout]
        sizes = [(str(d), int(n)) for d, n in blobs]
    except Exception as error:  # noqa: BLE001  (struct.error, JSON nested too deep, a shape of letters …)
        # its kind only: the text would quote the other side's data
        raise WireError(f"a message that is not JSON of the expected form ({type(error).__name__})") from None
    try:
        return header, carved(body, 8 + head_size, sizes, shapes)
    except WireError:
        raise
    except Exception:  # noqa: BLE001  (the message is the other side's: whatever it breaks is its fault)
        # No detail of the error: its text would quote what the other side chose (a shape of its numbers, say)
        raise WireError("arrays that do not fit the message") from None


def carved(body: bytes, at: int, sizes: list, shapes: list) -> list:
    "The message's arrays: each blob of one dtype read at `at`, then cut into the arrays of `shapes` in order."
    flat = {}
    for dtype, n in sizes:
        flat[dtype] = array_from(body[at : at + n]).reshape(-1)
        at += n
    arrays, used = [], dict.fromkeys(flat, 0)
    for dtype, shape in shapes:
        count = math.prod(shape)  # Python's integers: NumPy's int64 product wraps around to 0 for (2**32, 2**32)
        if dtype not in flat or any(n < 0 for n in shape) or used[dtype] + count > flat[dtype].size:
            raise WireError("an array that is not in the message")
        arrays.append(flat[dtype][used[dtype] : used[dtype] + count].reshape(shape))
        used[dtype] += count
    return arrays
