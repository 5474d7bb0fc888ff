"""Grade a folder of submissions (SUBMISSIONS/<student>/<assignment>/<assignment>.ipynb) with nbgrader."""
import csv
import shutil
from dataclasses import dataclass
from pathlib import Path

from .course import Course
from .errors import GradingError
from .notebooks import REPO, course_notebooks, nbgrader_meta, read_notebook
from .release import check_sources, copy_package_skeleton, export_package, kit_settings

COLUMNS = ["student", "assignment", "notebook", "score", "max_score", "note"]


@dataclass
class Row:
    student: str
    assignment: str
    notebook: str
    score: float = 0.0
    max_score: float = 0.0
    note: str = ""

    def values(self):
        return [self.student, self.assignment, self.notebook, f"{self.score:g}", f"{self.max_score:g}", self.note]


def find_submissions(submissions, known):
    "[(student, assignment, path)] to grade, and [Row] for every submission that cannot be graded."
    submissions = Path(submissions)
    if not submissions.is_dir():
        raise GradingError(f"{submissions}: no such folder. Pass the folder that holds one folder per student.")
    found, problems = [], []
    students = sorted(p for p in submissions.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not students:
        raise GradingError(f"{submissions}: contains no student folders (expected {submissions}/<student>/<assignment>/).")
    for student in students:
        for item in sorted(p for p in student.iterdir() if not p.name.startswith(".")):
            if not item.is_dir():
                problems.append(Row(student.name, item.stem, item.name, note=f"{item.name} is not inside an assignment "
                                    f"folder; expected {student.name}/<assignment>/<assignment>.ipynb"))
                continue
            if item.name not in known:
                problems.append(Row(student.name, item.name, "", note=f"unknown assignment {item.name!r}; "
                                    f"the assignments are {', '.join(known)}"))
                continue
            notebook = item / f"{item.name}.ipynb"
            if not notebook.exists():
                others = ", ".join(p.name for p in item.glob("*.ipynb")) or "no notebook"
                problems.append(Row(student.name, item.name, notebook.name,
                                    note=f"missing {notebook.name} (found: {others})"))
                continue
            try:
                nb = read_notebook(notebook)
            except GradingError as error:
                problems.append(Row(student.name, item.name, notebook.name, note=str(error).split(": ", 1)[-1]))
                continue
            ids = {nbgrader_meta(c).get("grade_id") for c in nb.cells}
            if not ids & known[item.name]:
                problems.append(Row(student.name, item.name, notebook.name,
                                    note=f"this is not the {item.name} notebook: none of its cells are there"))
                continue
            found.append((student.name, item.name, notebook))
    return found, problems


def module_file(notebook_path):
    "The file of tinytorch/ that a notebook exports to (from its `#| default_exp` line)."
    for cell in read_notebook(notebook_path).cells:
        for line in cell.source.splitlines():
            if line.startswith("#| default_exp"):
                return Path("tinytorch", *line.split()[-1].split(".")).with_suffix(".py")
    return None


def reference_package(notebooks, root):
    "tinytorch/ exported from the instructor's notebooks, once per grading run."
    ref = root / "reference"
    (ref / "nbs").mkdir(parents=True, exist_ok=True)
    for stem, path in notebooks.items():
        shutil.copyfile(path, ref / "nbs" / f"{stem}.ipynb")
    (ref / "settings.ini").write_text(kit_settings(REPO / "settings.ini", nbs_path="nbs"))
    copy_package_skeleton(ref)
    export_package(ref)
    return ref


def student_package(reference, module, submitted, target):
    """The package a submission is graded with: the reference modules of every other notebook (so a mistake in
    notebook 3 costs nothing in notebook 7) and this notebook's module exported from the student's own code.
    The reference module is deleted first, so it can never be imported."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(reference / "tinytorch", target / "tinytorch")
    shutil.copyfile(reference / "settings.ini", target / "settings.ini")
    if module is not None:
        (target / module).unlink(missing_ok=True)
    (target / "nbs").mkdir()
    shutil.copyfile(submitted, target / "nbs" / submitted.name)
    export_package(target)
    return target


def write_table(rows, path):
    "Write the grade table atomically: a reader never sees half a file."
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        for row in sorted(rows, key=lambda r: (r.student, r.assignment)):
            writer.writerow(row.values())
    tmp.replace(path)


def autograde(submissions, out, notebooks_dir=None, cell_timeout=None, progress=None):
    "Grade every submission; write out/grades.csv and out/feedback/. Return the table's rows."
    notebooks = course_notebooks(notebooks_dir)
    check_sources(notebooks)
    known = {stem: {nbgrader_meta(c).get("grade_id") for c in read_notebook(p).cells} for stem, p in notebooks.items()}
    found, problems = find_submissions(submissions, known)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = list(problems)
    if found:
        root = out / "nbgrader-course"
        course = Course(root, **({"cell_timeout": cell_timeout} if cell_timeout else {}))
        course.add_assignments(notebooks)
        reference = reference_package(notebooks, root)
        modules = {stem: module_file(path) for stem, path in notebooks.items()}
        for student, assignment, path in (progress or (lambda x, **k: x))(found, desc="grading", unit="notebook"):
            package = student_package(reference, modules[assignment], path, root / "env" / student / assignment)
            rows.append(grade_one(course, out, student, assignment, path, package))
    write_table(rows, out / "grades.csv")
    return rows


def grade_one(course, out, student, assignment, path, package):
    row = Row(student, assignment, f"{assignment}.ipynb")
    try:
        course.submit(student, assignment, path)
        course.autograde(assignment, student, pythonpath=package)
        _, (row.score, row.max_score) = course.scores(assignment, student)
        html = course.feedback(assignment, student)
        target = out / "feedback" / student / f"{assignment}.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(html, target)
    except GradingError as error:
        row.note = str(error)
    return row
