"""The instructor's own held-out digits for the capstone: `autograde ... --held-out-digits FILE.npz`.

The capstone's hidden tests (notebook 16) split the 1,797 digits the kit ships, give the student's `build_and_train`
the training and validation parts and measure the model on the rest, each image moved and noised with the student's
variant (`deformed`), under a bound on the model's numbers that a copy of the training images does not fit. An
instructor who wants images that were never in the repository at all keeps a file of digits of their own and passes
it to autograde. The hidden test then measures the returned model on those images instead, deformed the same way
(`held_out_digits()` below); the student's function still gets the same training and validation parts of the
shipped digits, so nothing else changes. What the hidden test measured (`record`) goes into the submission's result,
for the leaderboard (grading.reports.leaderboard).

The file is an `.npz` (`np.savez(path, X=images, y=labels)`) in load_digits' format: X of shape (n, 64), one row of
8x8 pixels per image, values in [0, 1] (load_digits' 0-16 divided by 16), and integer labels y (n,) in 0-9, at least
MIN_PER_CLASS images of each. `read` checks all of it up front (a bad file is the instructor's to fix: nothing is
graded). It is read here, in the orchestrator, once; its bytes are what the jobs read (a copy in the run's own folder
or, on a cluster, in the task's folder) and its hash is recorded in every result it was used for, so that a regrade
with another file or without one grades those submissions again, as another secret does. Like the hidden tests, it is
only ever read in the grader's process (the verdict): never in a sandbox, a student's package or a feedback page.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..common.errors import GradingError
from ..common.notebooks import REPO

if TYPE_CHECKING:
    from nbformat import NotebookNode

OPTION = "--held-out-digits"
FILE_NAME = "held-out-digits.npz"  # the copy the jobs read, and its name in a task's folder and the Gradescope zip
PIXELS = 64  # an 8x8 image as a row, as load_digits gives it
CLASSES = 10
MIN_PER_CLASS = 10  # fewer, and the accuracy of a class hangs on a handful of images
CALL = "held_out_digits("  # a notebook whose cells call it is graded with the file (grading.grade.autograde)
FORMAT = f"np.savez(FILE, X=images, y=labels) with images (n, {PIXELS}) in [0, 1] and integer labels (n,) in 0-9"

_path = ""  # the file of the submission being graded (set by the verdict), or "" (the shipped digits' split)
_cache = {}
_measured = {}  # what the capstone's hidden test measured of the submission being graded, for the leaderboard


@dataclass(frozen=True)
class HeldOut:
    "A validated file of the instructor's digits, as read once: its bytes are what every job reads."

    source: str  # where the instructor keeps it (for messages)
    data: bytes
    digest: str  # recorded in each result graded with it (never the images)
    images: int


def read(path: str | Path) -> HeldOut:
    "The file `path`, read and checked; GradingError naming what is wrong with it and what to do."
    path = Path(path)
    if not path.exists():
        raise GradingError(f"{OPTION} {path}: no such file. Pass the .npz file of your own digits ({FORMAT}).")
    if path.is_dir():
        raise GradingError(f"{OPTION} {path}: is a folder; pass one .npz file ({FORMAT}).")
    data = path.read_bytes()
    X, y = arrays(data, f"{OPTION} {path}")
    return HeldOut(str(path), data, hashlib.sha256(data).hexdigest()[:16], len(X))


def arrays(data: bytes, where: str) -> tuple:
    "(X float64, y int64) of an .npz file's bytes, checked; GradingError starting with `where` otherwise."
    if not data.startswith(b"PK"):  # an .npz is a zip archive of .npy files
        what = "one .npy array" if data.startswith(b"\x93NUMPY") else "not a NumPy .npz file"
        raise GradingError(f"{where}: {what}; make the file with {FORMAT}.")
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            found = {name: npz[name] for name in npz.files}
    except ValueError as error:  # object arrays (pickles) are refused by allow_pickle=False
        raise GradingError(
            f"{where}: cannot be read without unpickling ({error}); save plain numbers: {FORMAT}."
        ) from None
    except (OSError, zipfile.BadZipFile, EOFError) as error:
        raise GradingError(f"{where}: not a NumPy .npz file ({error}); make it with {FORMAT}.") from None
    if sorted(found) != ["X", "y"]:
        raise GradingError(f"{where}: holds the arrays {sorted(found)}; expected exactly X and y: {FORMAT}.")
    return check_images(found["X"], where), check_labels(found["y"], len(found["X"]), where)


def check_images(X: np.ndarray, where: str) -> np.ndarray:
    if X.ndim != 2 or X.shape[1] != PIXELS or len(X) == 0:
        hint = " (reshape 8x8 images with X.reshape(len(X), 64))" if X.shape[1:] == (8, 8) else ""
        raise GradingError(f"{where}: X has shape {X.shape}; expected (n, {PIXELS}), one image per row{hint}.")
    if X.dtype.kind not in "fiu":
        raise GradingError(f"{where}: X has dtype {X.dtype}; expected numbers (float64, as load_digits gives).")
    X = X.astype(np.float64)
    if not np.isfinite(X).all():
        raise GradingError(f"{where}: X holds NaN or infinite values; every pixel must be a number in [0, 1].")
    if X.min() < 0 or X.max() > 1:
        hint = " (load_digits divides the 0-16 pixels by 16: do the same)" if X.max() > 1 else ""
        raise GradingError(f"{where}: X's values run from {X.min():g} to {X.max():g}; expected [0, 1]{hint}.")
    return X


def check_labels(y: np.ndarray, n: int, where: str) -> np.ndarray:
    if y.shape != (n,):
        raise GradingError(f"{where}: y has shape {y.shape}; expected ({n},), one label per image of X.")
    if y.dtype.kind not in "iu":
        raise GradingError(f"{where}: y has dtype {y.dtype}; expected integer labels 0-9 (y.astype(int)).")
    if y.min() < 0 or y.max() >= CLASSES:
        raise GradingError(f"{where}: y's labels run from {y.min()} to {y.max()}; expected the digits 0-9.")
    counts = np.bincount(y, minlength=CLASSES)
    few = [f"{digit}: {count}" for digit, count in enumerate(counts) if count < MIN_PER_CLASS]
    if few:
        raise GradingError(
            f"{where}: too few images of some digits ({', '.join(few)}); each of the ten needs at least "
            f"{MIN_PER_CLASS}, so that the accuracy does not hang on a handful of images."
        )
    return y.astype(np.int64)


def shipped_among(held_out: HeldOut) -> int:
    "How many of the file's images are also among the digits the kit ships (a student may have pasted those)."
    path = REPO / "tinytorch" / "data" / "digits.csv.gz"
    if not path.exists():  # a course copied without its data: nothing to compare with
        return 0
    with gzip.open(path, "rt") as file:
        shipped = np.loadtxt(file, delimiter=",")[:, :-1] / 16.0
    X, _ = arrays(held_out.data, held_out.source)
    known = {row.tobytes() for row in shipped}
    return sum(row.tobytes() in known for row in X)


def uses(notebook: NotebookNode) -> bool:
    "Whether a notebook's cells read the instructor's digits (its hidden tests call held_out_digits())."
    return any(CALL in cell.source for cell in notebook.cells)


def write_copy(held_out: HeldOut, folder: Path) -> str:
    "The file's bytes in `folder` (the run's own), readable by this user only; its path."
    path = Path(folder) / FILE_NAME
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(held_out.data)
    return str(path)


# -- In the grading job: what the hidden test reads ----------------------------------------------------------------


def use(path: str | None) -> None:
    """The file the hidden tests of this submission measure with ('' or None: none). Called by the verdict: with the
    spec's path ('' included) as a submission starts, which forgets what the last one measured, and with None as it
    ends, which keeps what this one measured until its result is written (measured())."""
    global _path
    _path = path or ""
    if path is not None:
        _measured.clear()


def record(accuracy: float, parameters: int) -> None:
    "What the capstone's hidden test measured: the held-out accuracy and the model's numbers (for the leaderboard)."
    _measured.update(accuracy=round(float(accuracy), 4), parameters=int(parameters))


def measured() -> dict:
    "{'accuracy', 'parameters'} as record() got them for the submission being graded; {} when nothing was measured."
    return dict(_measured)


def held_out_digits() -> tuple[np.ndarray, np.ndarray] | None:
    """(X, y): the instructor's own held-out digits while a submission is graded with `autograde --held-out-digits`;
    None otherwise (the hidden test then holds out a part of the shipped digits)."""
    if not _path:
        return None
    if _path not in _cache:
        _cache[_path] = arrays(Path(_path).read_bytes(), _path)
    X, y = _cache[_path]
    return X.copy(), y.copy()
