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
the marks stay in OUT/marking/gradebook.db, which later autograde runs update but never reset.
"""

import json
import re
import shutil
from pathlib import Path

from .course import Course, gradebook
from .errors import GradingError
from .notebooks import is_manual_answer, nbgrader_meta, read_notebook, write_atomic, write_notebook

CONFIG = """# The nbgrader course of the written answers, made by `python -m grading autograde` (grading/marking.py).
# Run `jupyter lab` in this folder and open Nbgrader > Formgrader > Manual Grading.
import os

c = get_config()  # noqa: F821
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
"""


def as_plain_text(answer):
    "A student's written answer as a Markdown code fence: shown as typed, no HTML or script of theirs rendered."
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", answer)), default=0))
    return f"{fence}text\n{answer}\n{fence}"


def marking_notebook(released, submitted):
    "The student version with the student's exercise cells and answers in, not run, each answer as plain text."
    from .job import restored_notebook

    nb = restored_notebook(released, submitted, released)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        elif is_manual_answer(cell):
            cell.source = as_plain_text(cell.source)
    return nb


def prepare_assignments(root, notebooks, stamps_path, log):
    "Add (or update) the assignments whose instructor notebook changed; return those that could be added."
    from .autograde import file_fingerprint

    stamps = json.loads(stamps_path.read_text()) if stamps_path.exists() else {}
    ready = []
    for stem, path in notebooks.items():
        stamp = file_fingerprint(path)
        if stamps.get(stem) != stamp:
            try:
                Course(root).add_assignments({stem: path})
            except GradingError as error:
                log(f"marking course: {stem} could not be updated ({error}); its answers are not in {root}")
                continue
            stamps[stem] = stamp
            write_atomic(stamps_path, json.dumps(stamps, indent=1))
        ready.append(stem)
    return ready


def record(gb, student, assignment, result, answers):
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
        grade.needs_manual_grade = grade.manual_score is not None
    for answer_id in answers:
        grade = gb.find_grade(answer_id, assignment, assignment, student)
        grade.auto_score = None
        grade.needs_manual_grade = grade.manual_score is None or grade.needs_manual_grade
    gb.db.commit()


def update(out, state, notebooks, instructor, found, results, log=None):
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
    root = Path(out) / "marking"
    root.mkdir(exist_ok=True)
    (root / "nbgrader_config.py").write_text(CONFIG)
    ready = prepare_assignments(root, with_answers, root / ".assignments.json", log)
    shutil.rmtree(root / "release", ignore_errors=True)  # the student version is in the kit
    with gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for student, assignment, path in found:
            result = results.get((student, assignment))
            if assignment not in ready or result is None or result.get("problem"):
                continue
            released = read_notebook(Path(state) / "master" / "release" / assignment / f"{assignment}.ipynb")
            nb = marking_notebook(released, read_notebook(path))
            write_notebook(nb, root / "autograded" / student / assignment / f"{assignment}.ipynb")
            try:
                record(gb, student, assignment, result, answers[assignment])
            except MissingEntry as error:
                gb.db.rollback()
                log(f"marking course: {student}/{assignment} not recorded ({error}); its answers cannot be marked")
    return root
