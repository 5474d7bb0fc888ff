"""What an autograde run is told, in one typed place: `autograde(submissions, out, settings=Settings(...))`.

Its defaults are grading/common/defaults.py's, which the command line (grading/cli/) reads too, so that the two
never disagree (tests/test_settings.py) and the student kit, which has no grading/grade/, builds the same parser; the
Gradescope container (grading/lms/gradescope.py) and the demo make a Settings of their own."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..common.defaults import FEEDBACK_CHOICES, MEMORY_MB, NOTEBOOK_TIMEOUT

if TYPE_CHECKING:  # the command line reads this module to build its parser: nothing heavy is imported here
    from ..reports.late import Policy


@dataclass(frozen=True, kw_only=True)
class Settings:
    """notebooks_dir: the instructor's notebooks (None: notebooks/ of this repository).
    cell_timeout: CPU seconds one call of the student's code may use (None: grading.common.defaults.CELL_TIMEOUT).
    notebook_timeout, memory_mb: one submission's limits, all its processes together.
    workers: submissions graded at once (None: one per core).
    unsafe_no_sandbox: grade where bubblewrap cannot run, the students' code with your permissions.
    student_user: where bubblewrap cannot run, the unprivileged user the students' code runs as (one job at a time).
    cluster: a Dask scheduler's address (tcp://HOST:8786) or local:N, to grade there (grading.grade.cluster).
    secret_file: the course secret the hidden tests' variants come from (None: OUT/.grading-secret, made on first use).
    feedback: what the pages show, one of FEEDBACK_CHOICES.
    late: the late policy (None: the one the last run into OUT was given, if any); now: its clock (None: the time).
    held_out_digits: an .npz of the instructor's own digits the capstone is measured on (grading.grade.heldout)."""

    notebooks_dir: Path | str | None = None
    cell_timeout: float | None = None
    notebook_timeout: float = NOTEBOOK_TIMEOUT
    memory_mb: int = MEMORY_MB
    workers: int | None = None
    unsafe_no_sandbox: bool = False
    student_user: str | None = None
    cluster: str | None = None
    secret_file: Path | str | None = None
    feedback: str = FEEDBACK_CHOICES[0]
    late: Policy | None = None
    now: datetime | None = None
    held_out_digits: Path | str | None = None
