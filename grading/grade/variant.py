"""Per-student variants of the hidden tests: each student's hidden tests draw their own shapes and numbers.

A hidden test cell draws its random inputs from `variant_rng(name)`:

    from grading.grade.variant import variant_rng
    rng = variant_rng("linear_hidden")
    n = int(rng.integers(3, 7))

Outside grading (the instructor running the source notebook) the generator's seed comes from `name` alone, so the
notebook runs the same every time. While a grading job computes the verdict for one student's notebook
(grading.grade.verdict), the seed comes from that submission's *variant*: a hash of the course secret, the student and the
assignment. Hidden tests only ever run in the grader's process; the student kit has no hidden tests, and the secret
never goes into a job, let alone a sandbox: a job gets only the variant id, which is recorded in the gradebook so that
a regrade draws the same inputs.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from ..common.errors import GradingError

SECRET_BYTES = 32
_variant = None  # the variant id of the submission being graded, or None (the instructor's own run)


def variant_id(secret: bytes, student: str, assignment: str) -> str:
    "16 hex digits that name one student's variant of one assignment; they do not reveal the secret."
    text = b"\0".join([b"tinytorch-variant", secret, student.encode(), assignment.encode()])
    return hashlib.sha256(text).hexdigest()[:16]


def seed_of(name: str, variant: str | None = None) -> int:
    "The seed of the generator `variant_rng(name)` gives in `variant` (None: the same for everybody)."
    text = f"{variant}\0{name}" if variant else f"tinytorch-hidden-test\0{name}"
    return int(hashlib.sha256(text.encode()).hexdigest()[:16], 16)


def variant_rng(name: str) -> np.random.Generator:
    "A NumPy generator for the hidden test `name`: one stream per student while grading, a fixed one otherwise."
    return np.random.default_rng(seed_of(name, _variant))


def use(variant: str | None) -> None:
    "Set the variant the hidden tests draw from (None: the instructor's fixed inputs). Called by the verdict."
    global _variant
    _variant = variant or None


def current() -> str | None:
    return _variant


def read_secret(path: Path | str, create: bool = False) -> bytes:
    """The course secret in `path` (raw bytes). With `create`, a missing file is made with random bytes, mode 0600:
    keep it, or every later run draws other inputs and grades every submission again."""
    path = Path(path)
    if not path.exists():
        if not create:
            raise GradingError(f"{path}: no such secret file. Pass the file an earlier run used (--secret-file).")
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(os.urandom(SECRET_BYTES).hex().encode() + b"\n")
    if path.is_dir():
        raise GradingError(f"{path}: is a folder; --secret-file takes a file of random text (at least 16 bytes).")
    secret = path.read_bytes().strip()
    if len(secret) < 16:
        raise GradingError(
            f"{path}: the course secret is {len(secret)} bytes; use at least 16 random bytes, or delete the "
            "file to have a new one made (every submission is then graded again, with new hidden inputs)."
        )
    return secret
