"""What one grading job is (a Spec, saved as JSON for the job's process) and what others read of a job without running
one: the graded test cells of a notebook, their points, the line about written answers. The orchestrator
(grading.grade.autograde), the Dask tasks (grading.grade.cluster) and the exports import this module; the job itself
runs in grading.grade.job."""

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..common.defaults import MEMORY_MB, NOTEBOOK_TIMEOUT
from ..common.notebooks import is_manual_answer, nbgrader_meta, write_atomic

if TYPE_CHECKING:
    from nbformat import NotebookNode


@dataclass
class Spec:
    student: str
    assignment: str
    submitted: str  # the student's notebook
    instructor: str  # the instructor's notebook (solutions and hidden tests)
    released: str  # the student version (stubs), for exercise cells a student deleted
    master: str  # the nbgrader course with the gradebook made by generate_assignment
    reference: str  # folder holding the reference tinytorch/ and settings.ini
    module_file: str  # e.g. tinytorch/core/elementwise.py
    module: str  # e.g. tinytorch.core.elementwise
    earlier_modules: list[str]  # reference modules of the notebooks before this one
    scratch: str  # where the job makes its folder
    result: str  # where the result JSON goes
    feedback: str  # where the feedback HTML goes
    cell_timeout: int = 120
    notebook_timeout: int = NOTEBOOK_TIMEOUT
    sandboxed: bool = True  # False where bwrap cannot run: then as student_user, or (--unsafe-no-sandbox) as the grader
    student_user: str = (
        ""  # the unprivileged user the student's code runs as where bwrap cannot run (grading.sandbox.sandbox)
    )
    memory_mb: int = MEMORY_MB
    fingerprint: dict[str, str] = field(default_factory=dict)
    variant: str = ""  # this submission's variant of the hidden tests (grading.grade.variant); never the secret
    held_out_digits: str = ""  # the instructor's held-out digits for its hidden tests (grading.grade.heldout), or ""
    feedback_policy: str = "full"  # how much the student's page shows: full, summary or none (grading.reports.feedback)
    page: str = ""  # where the notebook the page shows is kept, to write the page again under another policy
    page_cache: str = ""  # a folder where the pages' given cells are kept rendered (grading.reports.page.PageCache)

    @classmethod
    def load(cls, path: Path | str) -> "Spec":
        return cls(**json.loads(Path(path).read_text()))

    def save(self, path: Path | str) -> None:
        write_atomic(path, json.dumps(asdict(self), indent=1))


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


FAULT = 3  # the job's exit status when the grader (not the student's code) failed: the row is not graded


def test_cells(instructor: "NotebookNode") -> dict[str, tuple[float, str]]:
    "{test id: (points, fingerprint of its source)} for every graded test cell (written answers are marked by hand)."
    return {
        nbgrader_meta(c)["grade_id"]: (float(nbgrader_meta(c).get("points", 0)), digest(c.source))
        for c in instructor.cells
        if nbgrader_meta(c).get("grade") and not is_manual_answer(c)
    }


def manual_points(instructor: "NotebookNode") -> float:
    "The points of the written answers, which the instructor marks by hand (in formgrader): not in the score."
    return sum(float(nbgrader_meta(c).get("points", 0)) for c in instructor.cells if is_manual_answer(c))


def manual_note(points: float) -> str:
    "The feedback's line about the written answers, which this score leaves out."
    if not points:
        return ""
    unit, verb = ("point", "is") if points == 1 else ("points", "are")
    return (
        f'<p id="tinytorch-manual">{points:g} {unit} of this notebook {verb} marked by hand (your written answers): '
        "they are not in the score above, and your instructor adds them after reading your answers.</p>"
    )
