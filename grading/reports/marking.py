"""The written answers, ready for marking by hand in nbgrader's formgrader: OUT/marking/ is an nbgrader course.

`autograde` keeps it up to date for every notebook with answer cells (`<!-- answer: name (n points) -->`). It is made
by the grader from trusted parts only, so nothing the student ran writes it:

- the assignments: generate_assignment of the instructor's notebooks, in this course's own gradebook.db;
- OUT/marking/autograded/<student>/<assignment>/<assignment>.ipynb: the student version of the notebook with the
  student's exercise cells and written answers put in, as submitted. It is never run (code cells have no outputs),
  and each written answer is shown as plain text (in a code fence), so nothing the student wrote runs in the
  instructor's browser;
- the autograded scores in the gradebook: the verdict's (grades.csv).

The instructor runs `jupyter lab` in OUT/marking and marks the answers in Nbgrader > Formgrader > Manual Grading;
the marks stay in OUT/marking/gradebook.db, which later autograde runs update but never reset. read_marks gives them
to grades.csv, gradebook.json and export-grades. A test's score edited in formgrader is cleared: the verdict's stands.
A graded cell added or removed after submissions were recorded (a test split in two), which nbgrader refuses, records
that assignment's submissions again, with the marks and comments of their answers kept (record_again).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..authoring.course import Course, gradebook
from ..common.answers import restored_notebook
from ..common.errors import GradingError
from ..common.layout import MARKING
from ..common.notebooks import (
    NotebookNode,
    file_fingerprint,
    is_manual_answer,
    nbgrader_meta,
    read_notebook,
    write_atomic,
    write_notebook,
)

if TYPE_CHECKING:  # nbgrader.api (SQLAlchemy) is imported by the functions that use it
    from nbgrader.api import Grade, SubmittedNotebook
    from nbgrader.api import Gradebook as NbgraderGradebook

Log = Callable[[str], object]  # where a step says what it did (autograde's log)
CONFIG = """# The nbgrader course of the written answers, made by `python -m grading autograde` (grading/reports/marking.py).
# Run `jupyter lab` in this folder and open Nbgrader > Formgrader > Manual Grading.
import os

c = get_config()  # noqa: F821
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
"""


def as_plain_text(answer: str) -> str:
    "A student's written answer as a Markdown code fence: shown as typed, no HTML or script of theirs rendered."
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", answer)), default=0))
    return f"{fence}text\n{answer}\n{fence}"


def marking_notebook(released: NotebookNode, submitted: NotebookNode) -> NotebookNode:
    "The student version with the student's exercise cells and answers in, not run, each answer as plain text."
    nb = restored_notebook(released, submitted, released)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        elif is_manual_answer(cell):
            cell.source = as_plain_text(cell.source)
    return nb


def seed(root: Path, master: Path, notebooks: dict[str, Path], stamps_path: Path) -> None:
    """Start a new marking course from the master course (grading.grade.autograde.prepare), whose gradebook
    generate_assignment made from these same notebooks, less the assignments without written answers: a new grading
    folder does not make every assignment a second time."""
    if stamps_path.exists() or (root / "gradebook.db").exists() or not (master / "gradebook.db").exists():
        return
    shutil.copyfile(master / "gradebook.db", root / "gradebook.db")
    with gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for name in [a.name for a in gb.assignments if a.name not in notebooks]:
            gb.remove_assignment(name)
    course = Course(root, print_logs=False)
    for stem, path in notebooks.items():
        course.add_source(stem, path)
    write_atomic(stamps_path, json.dumps({stem: file_fingerprint(p) for stem, p in notebooks.items()}, indent=1))


def prepare_assignments(root: Path, notebooks: dict[str, Path], stamps_path: Path, log: Log) -> list[str]:
    "Add (or update) the assignments whose instructor notebook changed; return those that could be added."
    stamps = json.loads(stamps_path.read_text()) if stamps_path.exists() else {}
    ready = []
    for stem, path in notebooks.items():
        stamp = file_fingerprint(path)
        if stamps.get(stem) != stamp:
            try:
                add_assignment(root, stem, path, log)
            except GradingError as error:
                log(f"marking course: {stem} could not be updated ({error}); its answers are not in {root}")
                continue
            stamps[stem] = stamp
            write_atomic(stamps_path, json.dumps(stamps, indent=1))
        ready.append(stem)
    return ready


CELLS_CHANGED = "Cannot add or remove cells"  # nbgrader, when a graded cell is added or removed after submissions
KEPT_MARKS = "kept-marks.json"  # in OUT/marking: the marks of an assignment being recorded again, until restored


def add_assignment(root: Path, stem: str, path: Path, log: Log) -> None:
    "Add or update one assignment; where nbgrader refuses because its graded cells changed, record it again."
    try:
        Course(root, print_logs=False).add_assignments({stem: path})
    except GradingError as error:
        if CELLS_CHANGED not in str(error):
            print(f"nbgrader's log:\n{getattr(error, 'log', '')}", file=sys.stderr)
            raise
        record_again(root, stem, path, log)


def read_kept(root: Path) -> dict[str, dict[str, dict]]:
    "{assignment: {student: {'marks': ..., 'comments': ...}}} kept by record_again and not restored yet."
    path = root / KEPT_MARKS
    return json.loads(path.read_text()) if path.exists() else {}


def record_again(root: Path, stem: str, path: Path, log: Log) -> None:
    """The instructor added or removed a graded cell of `stem` after its submissions were recorded, which nbgrader
    refuses. Keep the marks and comments of its written answers in OUT/marking/kept-marks.json (written before anything
    is removed), remove its submissions from the gradebook, and add the assignment again: `update` records each
    submission again and puts its kept marks back (restore_marks)."""
    kept = read_kept(root)
    with gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        submissions = gb.find_assignment(stem).submissions
        for submission in submissions:
            entry = kept.setdefault(stem, {}).setdefault(submission.student_id, {"marks": {}, "comments": {}})
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    if grade.cell_type == "markdown" and grade.manual_score is not None:
                        entry["marks"][grade.name] = [grade.manual_score, grade.extra_credit]
                for comment in notebook.comments:
                    if comment.manual_comment:
                        entry["comments"][comment.name] = comment.manual_comment
        write_atomic(root / KEPT_MARKS, json.dumps(kept, indent=1))
        for student in [submission.student_id for submission in submissions]:
            gb.remove_submission(stem, student)
    Course(root).add_assignments({stem: path})
    log(
        f"marking course: {stem}'s graded cells changed, so its {len(submissions)} submission(s) were recorded again "
        "in formgrader; the marks and comments of the written answers are kept"
    )


def restore_marks(
    gb: NbgraderGradebook, kept: dict[str, dict[str, dict]], student: str, assignment: str, answers: list[str], log: Log
) -> bool:
    """Put back the marks `kept` (read_kept) for this submission, if any, and take them out of `kept`; True if there
    were some (the caller writes `kept` back once)."""
    from nbgrader.api import MissingEntry

    entry = kept.get(assignment, {}).get(student)
    if entry is None:
        return False
    for name, (score, extra) in entry["marks"].items():
        if name not in answers:
            log(f"marking course: {student}/{assignment}: answer {name} was removed; its mark {score:g} is dropped")
            continue
        grade = gb.find_grade(name, assignment, assignment, student)
        grade.manual_score, grade.extra_credit, grade.needs_manual_grade = score, extra, False
    for name, text in entry["comments"].items():
        try:
            gb.find_comment(name, assignment, assignment, student).manual_comment = text
        except MissingEntry:
            log(f"marking course: {student}/{assignment}: the comment on {name} has no cell left; dropped: {text!r}")
    gb.db.commit()
    del kept[assignment][student]  # only once they are in the gradebook
    return True


def revert_test_edit(grade: Grade, student: str, assignment: str, log: Log) -> None:
    "A test's score given in formgrader is cleared, and said: the verdict's score stands."
    given = [value for value in (grade.manual_score, grade.extra_credit) if value is not None]
    if not given:
        return
    log(
        f"marking course: {student}/{assignment}: test {grade.name} was given {' + '.join(f'{v:g}' for v in given)} "
        "in formgrader, ignored: the grader's score stands: change the test and regrade instead"
    )
    grade.manual_score = grade.extra_credit = None
    grade.needs_manual_grade = False


def record(gb: NbgraderGradebook, student: str, assignment: str, result: dict, answers: list[str], log: Log) -> None:
    "The submission in the gradebook: the verdict's score for each test, each written answer waiting for a mark."
    from nbgrader.api import MissingEntry

    gb.update_or_create_student(student)
    try:
        gb.find_submission(assignment, student)
    except MissingEntry:
        gb.add_submission(assignment, student)
    for test_id, test in result["tests"].items():
        grade = gb.find_grade(test_id, assignment, assignment, student)
        grade.auto_score = test["score"]
        grade.needs_manual_grade = False
        revert_test_edit(grade, student, assignment, log)
    for answer_id in answers:
        grade = gb.find_grade(answer_id, assignment, assignment, student)
        grade.auto_score = None
        grade.needs_manual_grade = grade.manual_score is None or grade.needs_manual_grade
    gb.db.commit()


def update(
    out: str | Path,
    state: str | Path,
    notebooks: dict[str, Path],
    instructor: dict[str, NotebookNode],
    found: list[tuple[str, str, Path]],
    results: dict[tuple[str, str], dict],
    *,
    log: Log | None = None,
) -> Path | None:
    """Bring OUT/marking up to date with the graded submissions of every notebook that has written answers.
    `found`: [(student, assignment, submitted path)]; `results`: {(student, assignment): result}."""
    from nbgrader.api import MissingEntry

    log = log or (lambda message: None)
    answers = {
        stem: [nbgrader_meta(c)["grade_id"] for c in nb.cells if is_manual_answer(c)] for stem, nb in instructor.items()
    }
    with_answers = {stem: notebooks[stem] for stem, ids in answers.items() if ids}
    if not with_answers:
        return None
    root = Path(out) / MARKING
    root.mkdir(exist_ok=True)
    (root / "nbgrader_config.py").write_text(CONFIG)
    seed(root, Path(state) / "master", with_answers, root / ".assignments.json")
    ready = prepare_assignments(root, with_answers, root / ".assignments.json", log)
    shutil.rmtree(root / "release", ignore_errors=True)  # the student version is in the kit
    kept, restored = read_kept(root), False
    with gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for student, assignment, path in found:
            result = results.get((student, assignment))
            if assignment not in ready or result is None or result.get("problem"):
                continue
            released = read_notebook(Path(state) / "master" / "release" / assignment / f"{assignment}.ipynb")
            nb = marking_notebook(released, read_notebook(path))
            write_notebook(nb, root / "autograded" / student / assignment / f"{assignment}.ipynb")
            try:
                record(gb, student, assignment, result, answers[assignment], log)
                restored |= restore_marks(gb, kept, student, assignment, answers[assignment], log)
            except MissingEntry as error:
                gb.db.rollback()
                log(f"marking course: {student}/{assignment} not recorded ({error}); its answers cannot be marked")
    if restored:  # what is still kept waits for a run that records its submission
        write_atomic(root / KEPT_MARKS, json.dumps({a: s for a, s in kept.items() if s}, indent=1))
    return root


# -- The marks, for the grade table and the exports ------------------------------------------------------------------


@dataclass
class Marks:
    "The written answers of one submission as marked in formgrader."

    score: float = 0.0  # the marks given so far (with any extra credit)
    points: float = 0.0  # the points of the written answers
    unmarked: list = field(default_factory=list)  # the answers without a mark yet

    @property
    def manual_score(self) -> float | None:
        "The marks, once every answer has one; None before."
        return None if self.unmarked else self.score


def none_yet(answers: dict[str, float]) -> Marks:
    "The Marks of a submission that is not in the marking course: `answers` {name: points}, none marked."
    return Marks(points=sum(answers.values()), unmarked=sorted(answers))


def notebook_marks(notebook: SubmittedNotebook, student: str, assignment: str, log: Log) -> Marks:
    "The Marks of one submitted notebook; a test's score given in formgrader is reverted (revert_test_edit)."
    marks = Marks()
    for grade in notebook.grades:
        if grade.cell_type != "markdown":  # an autograded test
            revert_test_edit(grade, student, assignment, log)
            continue
        marks.points += grade.max_score
        if grade.manual_score is None:
            marks.unmarked.append(grade.name)
        else:
            marks.score += grade.manual_score + (grade.extra_credit or 0.0)
    marks.unmarked.sort()
    return marks


def read_marks(out: str | Path, log: Log | None = None) -> dict[tuple[str, str], Marks]:
    "{(student, assignment): Marks} of OUT/marking/gradebook.db ({} when there is none)."
    db = Path(out) / MARKING / "gradebook.db"
    if not db.is_file():
        return {}
    log = log or (lambda message: None)
    found = {}
    with gradebook(f"sqlite:///{db}") as gb:
        for assignment in gb.assignments:
            for submission in assignment.submissions:
                student = submission.student.id
                for notebook in submission.notebooks:  # one: the notebook is named as its assignment
                    found[(student, assignment.name)] = notebook_marks(notebook, student, assignment.name, log)
        gb.db.commit()
    return found
