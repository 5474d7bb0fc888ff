"""Reading a folder of submissions, SUBMISSIONS/<student>/<assignment>/<assignment>.ipynb, whatever it holds.

A folder of submissions is the students' work, unpacked from an LMS download: any name, any file, any JSON. Nothing
in it may stop the class: every entry ends either as a submission to grade or as a row with a note saying what is
wrong and what to do. Nothing in it is followed out of the student's own folder: a symbolic link (to another
student's work, to the instructor's notebook) and a notebook with a second hard link are refused, and every name
the grader will build a path from (the student's, the assignment's) is checked first.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..authoring.manifest import MANIFEST
from ..common.defaults import MAX_NOTEBOOK_MB
from ..common.errors import GradingError
from ..common.names import name_problem
from ..common.notebooks import did_you_mean_path, identifying_ids, nbgrader_meta, parse_notebook

if TYPE_CHECKING:
    from nbformat import NotebookNode


@dataclass
class Problem:
    "An entry of the folder that cannot be graded, and why (it becomes a row of the table with that note)."

    student: str
    assignment: str
    notebook: str
    note: str


def shown(name: str) -> str:
    "A name as the table can show it: printable, and not longer than the table's column allows."
    text = name.encode("utf-8", "backslashreplace").decode("utf-8") if not name.isprintable() else name
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= 60 else text[:57] + "..."


def find_submissions(
    submissions: Path | str, known: dict[str, set[str]]
) -> tuple[list[tuple[str, str, Path]], list[Problem]]:
    """([(student, assignment, path)], [Problem]): what to grade, and every entry that cannot be graded.

    `known`: {assignment: the grade ids of its cells}. Raises GradingError only for the folder itself (missing, or
    holding no student folders at all)."""
    submissions = Path(submissions)
    students = check_folder(submissions, known)
    found, problems = [], []
    for entry in students:
        try:
            student_found, student_problems = read_student(Path(entry.path), known)
        except Exception as error:  # noqa: BLE001  (whatever breaks on one student's folder must not stop the class)
            student_found, student_problems = [], [Problem(shown(entry.name), "", "", f"could not be read: {error}")]
        found += student_found
        problems += student_problems
    return found, problems


def check_out(submissions: Path, out: Path) -> None:
    """GradingError, before anything is written, for a grading folder OUT that is a file, or the submissions folder
    or inside it: the next run would take its results/ and feedback/ for students."""
    if out.exists() and not out.is_dir():
        raise GradingError(f"--out {out}: that is a file; give the folder the grades go to (made if it is missing).")
    where = submissions.resolve()
    if out == where or where in out.parents:
        raise GradingError(
            f"--out {out}: that is {'the submissions folder' if out == where else 'inside the submissions folder'}, "
            "where the next run would take the grader's folders (results, feedback) for students. Give a folder "
            f"outside it, such as {where.parent / 'grades'}."
        )


def check_folder(submissions: Path, known: Mapping[str, object]) -> list:
    """The student folders of `submissions` (os.DirEntry); GradingError, before anything is read, for a folder that is
    missing (with the nearest name), is the student kit, holds no student folders, or is laid out as one student's
    (its folders are assignments: each would become a "student" named after it)."""
    if not submissions.is_dir():
        raise GradingError(
            f"{submissions}: no such folder{did_you_mean_path(submissions)}. Pass the folder that holds one folder "
            "per student."
        )
    if (submissions / MANIFEST).is_file():
        raise GradingError(
            f"{submissions}: this is the student kit (python -m grading release made it), not students' work. Pass "
            "the folder that holds one folder per student, each with the notebooks that student handed in."
        )
    entries = sorted((e for e in os.scandir(submissions) if not e.name.startswith(".")), key=lambda e: e.name)
    students = [e for e in entries if e.is_dir(follow_symlinks=True)]
    if students and all(e.name in known for e in students):
        raise GradingError(
            f"{submissions}: its folders ({', '.join(e.name for e in students[:5])}) are assignments, so it is one "
            f"student's folder: pass its parent, the folder that holds one folder per student ({submissions.parent})."
        )
    if not students:
        notebooks = [e.name for e in entries if e.name.endswith(".ipynb")]
        held = (
            f" It holds notebooks ({', '.join(notebooks[:3])}): put each in <student>/<assignment>/."
            if notebooks
            else ""
        )
        raise GradingError(
            f"{submissions}: contains no student folders (expected {submissions}/<student>/<assignment>/).{held}"
        )
    return students


def read_student(folder: Path, known: dict[str, set[str]]) -> tuple[list[tuple[str, str, Path]], list[Problem]]:
    "What one student's folder holds: ([(student, assignment, path)], [Problem])."
    student = folder.name
    if folder.is_symlink():
        return [], [
            Problem(shown(student), "", "", f"the folder {shown(student)} is a symbolic link: refused ({link_note()})")
        ]
    why = name_problem(student)
    if why:
        return [], [
            Problem(shown(student), "", "", f"the student folder's name cannot be used: {why}. Rename the folder.")
        ]
    items = sorted(p for p in folder.iterdir() if not p.name.startswith("."))
    if not items:
        return [], [Problem(student, "", "", f"the folder {student} is empty: no assignment folders in it")]
    found, problems = [], []
    for item in items:
        try:
            submission, problem = read_item(student, item, known)
        except Exception as error:  # noqa: BLE001  (one broken entry costs only its own row)
            submission, problem = None, Problem(student, shown(item.name), "", f"could not be read: {error}")
        if submission:
            found.append(submission)
        if problem:
            problems.append(problem)
    return found, problems


def read_item(
    student: str, item: Path, known: dict[str, set[str]]
) -> tuple[tuple[str, str, Path] | None, Problem | None]:
    "One entry of a student's folder: ((student, assignment, path) or None, Problem or None)."
    name = shown(item.name)
    if item.is_symlink():
        return None, Problem(student, name, "", f"{student}/{name} is a symbolic link: refused ({link_note()})")
    if not item.is_dir():
        return None, Problem(
            student,
            shown(item.stem),
            name,
            f"{name} is not inside an assignment folder; expected {student}/<assignment>/<assignment>.ipynb",
        )
    if item.name not in known:
        return None, Problem(student, name, "", f"unknown assignment {name!r}; the assignments are {', '.join(known)}")
    assignment = item.name
    notebook = item / f"{assignment}.ipynb"
    text, why = read_file(notebook)
    if why:
        return None, Problem(student, assignment, notebook.name, why)
    try:
        nb = parse_notebook(text, notebook)
    except GradingError as error:
        return None, Problem(student, assignment, notebook.name, str(error).split(": ", 1)[-1])
    ids = identifying_ids(nb)
    if not ids & known[assignment]:
        shared = {other: len(ids & theirs) for other, theirs in known.items() if ids & theirs}
        looks_like = [other for other, count in shared.items() if count == max(shared.values(), default=0)]
        why = broken_cells_note(nb) or f"this is not the {assignment} notebook: none of its cells are there" + (
            f"; it has the cells of {', '.join(looks_like)} (handed in as the wrong assignment?)" if looks_like else ""
        )
        return None, Problem(student, assignment, notebook.name, why)
    return (student, assignment, notebook), None


def read_file(notebook: Path) -> tuple[bytes | None, str | None]:
    "(the notebook's bytes, None), or (None, why not): never through a link, never a file linked elsewhere."
    name = notebook.name
    try:
        fd = os.open(notebook, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        others = sorted(p.name for p in notebook.parent.glob("*.ipynb"))
        if not others:
            return None, f"missing {name}: the folder holds no notebook"
        todo = f"rename it to {name}" if len(others) == 1 else f"keep the one to grade, named {name}"
        return None, f"missing {name} (found: {', '.join(others)}): {todo}, and run again"
    except OSError as error:
        if notebook.is_symlink():
            return None, f"{name} is a symbolic link: refused ({link_note()})"
        return None, f"{name} cannot be read ({error.strerror})"
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            return None, f"{name} is a folder, expected a .ipynb notebook file"
        if not stat.S_ISREG(info.st_mode):
            return None, f"{name} is not a plain file"
        if info.st_nlink > 1:
            return None, (
                f"{name} is a hard link (the same file as {info.st_nlink - 1} other name(s) on this disk): refused "
                f"({link_note()})"
            )
        limit = MAX_NOTEBOOK_MB * 2**20
        if info.st_size > limit:
            return (
                None,
                f"{name} is {info.st_size / 2**20:.0f} MB, more than the {MAX_NOTEBOOK_MB} MB a notebook may be; clear its outputs and hand it in again",
            )
        with os.fdopen(fd, "rb", closefd=False) as file:
            return file.read(limit + 1), None
    finally:
        os.close(fd)


def link_note() -> str:
    return "only the student's own files are graded: copy the file itself into the folder"


def missing_exercises_note(nb: NotebookNode, released: NotebookNode) -> str:
    "A note naming the exercise cells of the release that the notebook no longer has (deleted), or ''."
    present = {nbgrader_meta(cell).get("grade_id") for cell in nb.cells}
    missing = [
        nbgrader_meta(cell)["grade_id"]
        for cell in released.cells
        if nbgrader_meta(cell).get("solution") and nbgrader_meta(cell).get("grade_id") not in present
    ]
    if not missing:
        return ""
    return (
        f"exercise cell(s) {', '.join(missing[:10])} missing from the notebook (deleted?): the release's empty cell was "
        "graded in each one's place, so its tests fail; copy it from a fresh copy of the release and fill it in"
    )


def broken_cells_note(nb: NotebookNode) -> str:
    "A note on cells whose nbgrader metadata is not what Jupyter saved (their answers cannot be found), or ''."
    broken = [
        str(number)
        for number, cell in enumerate(nb.cells, 1)
        if "nbgrader" in cell.get("metadata", {}) and not nbgrader_meta(cell)
    ]
    if not broken:
        return ""
    return (
        f"the nbgrader metadata of cell(s) {', '.join(broken[:10])} is broken (not what Jupyter saved): those cells "
        "could not be matched with the exercises and count as not done; copy your answers into a fresh copy of the "
        "notebook"
    )
