"""One autograde run as its stages read it (`Run`): where it writes, the instructor's notebooks, the limits, the
instructor's policies (`Policies`), and the job (grading.grade.spec.Spec) it makes of one submitted notebook.
"""

import functools
from dataclasses import dataclass
from pathlib import Path

from ..common.defaults import CELL_TIMEOUT, MEMORY_MB, NOTEBOOK_TIMEOUT
from ..reports.late import (
    Policy,
)
from . import heldout
from .spec import Spec
from .variant import variant_id


def module_of(notebook):
    "The module a notebook exports to (from its `#| default_exp` line), e.g. 'tinytorch.core.elementwise'."
    for cell in notebook.cells:
        for line in cell.source.splitlines():
            if line.startswith("#| default_exp"):
                return "tinytorch." + line.split()[-1]
    return None


@dataclass
class Policies:
    "The instructor's choices of one run besides its limits."

    secret: bytes  # the course secret (grading.grade.variant): it stays in this process
    feedback: str = "full"  # what the students' pages show (grading.reports.feedback)
    late: Policy = None  # due dates and the penalty (grading.reports.late)
    now: object = None  # the late policy's clock: a datetime, or None for the real one
    held_out: heldout.HeldOut = None  # the instructor's own held-out digits (grading.grade.heldout), or None


@dataclass
class Run:
    "One autograde run: where it writes, what it grades with, and its limits."

    out: Path
    state: Path  # OUT/.grading: the master course, the reference and released packages, the reference check
    notebooks: dict  # {stem: the instructor's notebook path}
    instructor: dict  # {stem: the instructor's notebook}
    sandboxed: bool
    policies: Policies
    cell_timeout: int = CELL_TIMEOUT
    notebook_timeout: int = NOTEBOOK_TIMEOUT
    memory_mb: int = MEMORY_MB
    student_user: str = ""  # where bwrap cannot run, the user students' code runs as (grading.sandbox.sandbox)
    cluster: str = ""  # a Dask scheduler's address, or local:N: grade there (grading.grade.cluster); "" grades here
    scratch: Path = None  # where this run's jobs make their folders
    jobs: Path = None  # this run's job specs, logs and results
    held_out_file: str = ""  # the copy of policies.held_out the jobs read (in `jobs`), or ""

    @functools.cached_property
    def modules(self):
        "{stem: the module its notebook exports}, read once per run."
        return {stem: module_of(nb) for stem, nb in self.instructor.items()}

    def held_out_digest(self, assignment):
        "The hash of the instructor's held-out digits where `assignment`'s hidden tests measure with them, else ''."
        held_out = self.policies.held_out
        return held_out.digest if held_out and heldout.uses(self.instructor[assignment]) else ""

    def spec(self, student, assignment, path, fingerprint, result, feedback, page):
        "The job of grading one notebook (grading.grade.job.Spec)."
        modules, order = self.modules, list(self.notebooks)
        return Spec(
            student=student,
            assignment=assignment,
            submitted=str(Path(path).resolve()),
            instructor=str(self.notebooks[assignment].resolve()),
            released=str(self.state / "master" / "release" / assignment / f"{assignment}.ipynb"),
            master=str(self.state / "master"),
            reference=str(self.state / "reference"),
            module_file=modules[assignment].replace(".", "/") + ".py",
            module=modules[assignment],
            earlier_modules=[modules[s] for s in order[: order.index(assignment)] if modules[s]],
            scratch=str(self.scratch),
            result=str(result),
            feedback=str(feedback),
            cell_timeout=self.cell_timeout,
            notebook_timeout=self.notebook_timeout,
            sandboxed=self.sandboxed,
            student_user=self.student_user,
            memory_mb=self.memory_mb,
            fingerprint=fingerprint,
            variant=variant_id(self.policies.secret, student, assignment),
            held_out_digits=self.held_out_file if self.held_out_digest(assignment) else "",
            feedback_policy=self.policies.feedback,
            page=str(page),
            page_cache=str(self.state / "page-cache"),
        )
