"""The student kit: notebooks without solutions or hidden tests, and a tinytorch/ exported from them."""
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .convention import DEFINITION, mismatches
from .course import Course
from .errors import GradingError
from .notebooks import REPO, course_notebooks, nbgrader_meta, read_notebook, solution_lines, write_notebook

KIT_MARKER = ".tinytorch-kit"
# Modules of grading/ that the student kit leaves out: autograding, and classroom.py, which builds wrong and cheating
# answers from the solutions. The kit keeps what `check` and `export` need.
INSTRUCTOR_ONLY = ["autograde.py", "job.py", "verdict.py", "worker.py", "wire.py", "inside.py", "sandbox.py", "execute.py",
                   "classroom.py", "demo.py", "lms.py",
                   "feedback.py"]
STUB = "raise NotImplementedError()"


def stub_message(assignment, exercise):
    return (f'raise NotImplementedError("Exercise {exercise} in {assignment}.ipynb is not done yet: '
            f'write your code here, then run: python -m grading export")')


def explain_stubs(source, assignment):
    "Make each stub nbgrader left name its exercise: the top-level class or function it stands in."
    lines, current = [], None
    for line in source.splitlines():
        match = DEFINITION.match(line)
        current = match[1] if match else current
        lines.append(line.replace(STUB, stub_message(assignment, current)) if STUB in line else line)
    return "\n".join(lines)


def check_sources(notebooks):
    "Refuse to release notebooks whose nbgrader metadata is out of date with the convention."
    for stem, path in notebooks.items():
        cells = mismatches(path)
        if cells:
            raise GradingError(f"{path}: the nbgrader metadata of cells {cells} is out of date; "
                               "run: python -m grading metadata")


def student_notebooks(notebooks, workdir):
    "Generate the student version of every notebook with nbgrader; return {stem: notebook}."
    released = {}
    for stem, release_path in Course(workdir).add_assignments(notebooks).items():
        nb = read_notebook(release_path)
        for cell in nb.cells:
            meta = nbgrader_meta(cell)
            if meta.get("solution"):
                cell.source = explain_stubs(cell.source, stem)
        released[stem] = nb
    return released


def kit_settings(settings_path, nbs_path="."):
    "The repository's settings.ini with the notebooks read from `nbs_path`."
    lines = []
    for line in Path(settings_path).read_text().splitlines():
        lines.append(f"nbs_path = {nbs_path}" if line.split("=")[0].strip() == "nbs_path" else line)
    return "\n".join(lines) + "\n"


def export_package(root):
    "Run nbdev_export in `root` (a folder with settings.ini) and fail with its message."
    result = subprocess.run([sys.executable, "-c", "from nbdev.doclinks import nbdev_export; nbdev_export()"],
                            cwd=root, capture_output=True, text=True)
    if result.returncode:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise GradingError(f"nbdev_export failed in {root}: {detail[-1] if detail else 'no detail'}")


def copy_package_skeleton(target):
    "What tinytorch/ holds besides exported modules: the package __init__ and the shipped data."
    (target / "tinytorch").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REPO / "tinytorch" / "__init__.py", target / "tinytorch" / "__init__.py")
    shutil.copytree(REPO / "tinytorch" / "data", target / "tinytorch" / "data", dirs_exist_ok=True)


def check_output(out):
    out = Path(out)
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / KIT_MARKER).exists())):
        raise GradingError(f"{out} exists and is not empty (and is not an earlier kit); "
                           "choose a new folder so nothing in it is overwritten.")
    return out


def put_in_place(staged, out):
    "Replace `out` (absent, empty or an earlier kit) by the finished kit in `staged`."
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(staged), str(out))


def scan_for_solutions(out, notebooks):
    "Fail if any solution or hidden-test line of the instructor notebooks appears in any file of the kit."
    secret = [line for line in solution_lines(read_notebook(p) for p in notebooks.values()) if len(line) > 12]
    for file in sorted(p for p in Path(out).rglob("*") if p.is_file()):
        try:
            text = file.read_text()
        except UnicodeDecodeError:
            continue
        leaked = sorted(line for line in secret if line in text)
        if leaked:
            raise GradingError(f"{file}: contains solution code ({leaked[0]!r}); the kit was not released.")


def release(out, notebooks_dir=None):
    "Build the student kit in `out`; return the list of assignments."
    notebooks = course_notebooks(notebooks_dir)
    check_sources(notebooks)
    out = check_output(out)
    with tempfile.TemporaryDirectory(prefix="tinytorch-release-") as workdir:
        released = student_notebooks(notebooks, Path(workdir) / "course")
        build_kit(Path(workdir) / "kit", released)
        scan_for_solutions(Path(workdir) / "kit", notebooks)
        put_in_place(Path(workdir) / "kit", out)
    return list(released)


def build_kit(out, released):
    for stem, nb in released.items():
        write_notebook(nb, out / stem / f"{stem}.ipynb")
    (out / "settings.ini").write_text(kit_settings(REPO / "settings.ini"))
    shutil.copytree(REPO / "grading", out / "grading", ignore=shutil.ignore_patterns("__pycache__", *INSTRUCTOR_ONLY))
    shutil.copyfile(REPO / "grading" / "kit" / "pyproject.toml", out / "pyproject.toml")
    shutil.copyfile(REPO / "grading" / "kit" / "README.md", out / "README.md")
    copy_package_skeleton(out)
    export_package(out)
    (out / KIT_MARKER).write_text("A TinyTorch student kit made by python -m grading release.\n")
