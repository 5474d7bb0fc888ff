"""What `python -m grading export-grades` reads besides the roster (grading.intake.roster): the gradebook autograde
wrote and which tests are hidden.

Kept apart from the writing (grading.lms.export_grades) so each side stays readable: here every problem with the
input (a missing or malformed gradebook) becomes a one-line GradingError that names the file, before anything is
written.

Standard library only (csv, json): the export runs wherever the grades were copied to.
"""

import json
from pathlib import Path

from ..common.errors import GradingError
from ..common.layout import GRADEBOOK, OUT_FILES, OUT_FOLDERS, RESULTS

Gradebook = dict[str, dict[str, dict]]  # {student: {assignment: entry}}, as autograde writes gradebook.json
HiddenTests = dict[str, dict[str, bool]]  # {assignment: {test id: whether its cell holds hidden tests}}, in order
HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"  # as in grading.common.notebooks, which needs nbformat; this module does not


def check_export_path(out: str | Path, grading_dir: str | Path, folder: bool = False) -> None:
    """GradingError, before anything is written, for an export's --out that is a folder where a file is written, or
    that is one of the files or folders autograde writes in GRADING_DIR (or, for a `folder` export, GRADING_DIR
    itself). A file where a folder goes is refused by the folder exports themselves."""
    out, grading_dir = Path(out).resolve(), Path(grading_dir).resolve()
    if not folder and out.is_dir():
        raise GradingError(f"--out {out}: that is a folder; give the file to write, such as {out / 'grades-lms.csv'}.")
    own = [grading_dir / name for name in OUT_FILES + OUT_FOLDERS]  # what autograde and leaderboard write
    if out == grading_dir and folder or any(out == path or path in out.parents for path in own):
        raise GradingError(
            f"--out {out}: that is autograde's own {'folder' if out == grading_dir else out.name} in {grading_dir}, "
            f"which the export would replace. Write the export elsewhere, such as {grading_dir.parent / 'lms'}."
        )


def read_gradebook(grading_dir: str | Path) -> Gradebook:
    "{student: {assignment: entry}} from GRADING_DIR/gradebook.json, checked for the shape autograde writes."
    grading_dir = Path(grading_dir)
    if not grading_dir.is_dir():
        raise GradingError(f"{grading_dir}: no such folder; give the --out folder of `python -m grading autograde`.")
    path = grading_dir / GRADEBOOK
    if not path.is_file():
        students_work = any(grading_dir.glob("*/*/*.ipynb"))  # SUBMISSIONS/<student>/<assignment>/<notebook>
        raise GradingError(
            f"{path}: no gradebook here. "
            + (
                "This folder holds students' notebooks: give the --out folder of `python -m grading autograde` "
                "instead, the one that holds grades.csv."
                if students_work
                else "Give the --out folder of `python -m grading autograde` (it holds grades.csv); if nothing is "
                "graded yet, run `python -m grading autograde SUBMISSIONS --out GRADES` first."
            )
        )
    try:
        book = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise GradingError(f"{path}: not a readable gradebook ({error}).") from None
    if not isinstance(book, dict):
        raise GradingError(f"{path}: not a gradebook (expected an object of students).")
    for student, assignments in book.items():
        if not isinstance(assignments, dict):
            raise GradingError(f"{path}: student {student!r}: expected an object of assignments.")
        for assignment, entry in assignments.items():
            if not (isinstance(entry, dict) and number(entry.get("score")) and number(entry.get("max_score"))):
                raise GradingError(f"{path}: {student}/{assignment}: expected numbers score and max_score.")
            if "tests" not in entry:
                tests = load_result_tests(grading_dir, student, assignment)
                if tests is not None:
                    entry["tests"] = tests
    return book


def number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def load_result_tests(grading_dir: str | Path, student: str, assignment: str) -> dict | None:
    "The per-test scores of GRADING_DIR/results/<student>/<assignment>.json, or None."
    try:
        result = json.loads((Path(grading_dir) / RESULTS / student / f"{assignment}.json").read_text())
    except (OSError, ValueError):
        return None
    tests = result.get("tests") if isinstance(result, dict) else None
    return tests if isinstance(tests, dict) else None


def hidden_tests(notebooks_dir: str | Path) -> HiddenTests:
    "{assignment: set of test ids whose cell holds hidden tests}, from the instructor's notebooks (plain JSON)."
    found = {}
    for path in sorted(Path(notebooks_dir).glob("*.ipynb")):
        try:
            cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
        except (OSError, UnicodeDecodeError, ValueError, AttributeError):
            continue
        tests = {}
        for cell in cells:
            meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell, dict) else {}
            if meta.get("grade") and meta.get("grade_id") and cell.get("cell_type") == "code":  # not written answers
                source = cell.get("source", "")
                tests[meta["grade_id"]] = HIDDEN_BEGIN in ("".join(source) if isinstance(source, list) else source)
        found[path.stem] = tests
    return found
