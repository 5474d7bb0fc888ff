"""The student kit: notebooks without solutions or hidden tests, and a tinytorch/ exported from them.

The kit is built in a temporary folder, scanned for answer lines (grading.authoring.leaks), and only then put where
it goes. Where that is matters, because a kit is where a student works: releasing again must never delete their work.
The release records what it wrote (grading.authoring.manifest), and into a folder that already holds something it

- replaces the folder when it holds only what the last release wrote (unchanged, or deleted: nothing to lose);
- refuses, with an error naming the changed files and the files that are not the release's, when the student changed
  or added anything; and refuses a folder that is not empty and has no manifest (a kit from before manifests, or any
  other folder), since what in it is the student's cannot be told;
- with --update: writes the new notebooks (and every file the student did not change) into the kit, keeps every
  changed file and every file of the student's as it is, and names them;
- with --force: replaces the folder whatever it holds (the only way to lose work, and it says what went).
"""

import os
import shutil
import tempfile
from collections.abc import Callable, Collection
from pathlib import Path

from ..common.errors import GradingError
from ..common.notebooks import (
    DEFINITION,
    REPO,
    SOLUTION_BEGIN,
    NotebookNode,
    course_notebooks,
    nbgrader_meta,
    read_notebook,
    strip_markers,
    write_notebook,
)
from ..student.check import FROM_LATER
from ..student.export import (
    REFERENCES,
    copy_package_skeleton,
    default_module,
    export_package,
    exported_notebooks,
    module_file,
)
from .convention import mismatches
from .course import made_course
from .leaks import scan_for_solutions
from .manifest import KitState, compare, hashes, listing, read_manifest, write_manifest

KIT_MARKER = ".tinytorch-kit"
KIT_FILES = REPO / "grading" / "authoring" / "kit"  # the kit's own pyproject.toml and README.md
# What of grading/ goes into the student kit, listed as paths inside grading/ (an allow-list, so a new instructor module
# stays out until it is named here): the command line, and what `python -m grading check` and `python -m grading export`
# need (grading/student/ and the parts of grading/common/ they import). Everything else (autograding, the sandbox,
# grading/examples/classroom.py, which builds wrong and cheating answers from the solutions) stays with the instructor.
STUDENT_KIT = [
    "__init__.py",
    "__main__.py",
    "cli/__init__.py",
    "cli/authoring_commands.py",
    "cli/grading_commands.py",
    "cli/kit_commands.py",
    "cli/lms_commands.py",
    "common/__init__.py",
    "common/defaults.py",
    "common/environment.py",
    "common/errors.py",
    "common/notebooks.py",
    "student/__init__.py",
    "student/backend.py",
    "student/check.py",
    "student/export.py",
]
STUB = "raise NotImplementedError()"
GIVEN_AFTER_STUB = "# Given: the code below runs after yours (replace only the raise above)."


def stub_message(assignment: str, exercise: str) -> str:
    "The stub's line: a test of a later notebook that goes through the exercise shows it too, so it says both."
    return (
        f'raise NotImplementedError("Exercise {exercise} in {assignment}.ipynb is not done yet: '
        f"write your code here, then run: python -m grading export, and restart the kernel of an open notebook (it "
        f"keeps the modules it imported). {FROM_LATER} Its test went through "
        f"{exercise} of {assignment}.ipynb: finish that first, or ask your instructor for the reference module of "
        f'{assignment}.")'
    )


def later_stub_message(assignment: str, exercise: str) -> str:
    """The stub's line in the package a notebook is graded with, where only a notebook before `assignment` meets it
    (grading.grade.job.build_package): its code went through an exercise of a later notebook."""
    return (
        f'raise NotImplementedError("{exercise} is an exercise of {assignment}.ipynb, a later notebook: a notebook is '
        "graded with the course's own modules of the notebooks before it, and nothing of the ones after it. Use only "
        'what the notebooks up to the one graded here build.")'
    )


def explain_stubs(source: str, assignment: str, message: Callable[[str, str], str] = stub_message) -> str:
    "Make each stub nbgrader left name its exercise (the top-level class or function it stands in), in `message`."
    lines, current = [], None
    source_lines = source.splitlines()
    for number, line in enumerate(source_lines):
        match = DEFINITION.match(line)
        current = match[1] if match else current
        if STUB not in line:
            lines.append(line)
            continue
        lines.append(line.replace(STUB, message(assignment, current)))
        indent = line[: len(line) - len(line.lstrip())]
        following = source_lines[number + 1] if number + 1 < len(source_lines) else ""
        if following.strip() and following.startswith(indent) and not following[len(indent)].isspace():
            lines.append(f"{indent}{GIVEN_AFTER_STUB}")  # `return result` after a raise reads as dead code
    return "\n".join(lines)


def check_sources(notebooks: dict[str, Path]) -> None:
    "Refuse to release notebooks whose nbgrader metadata is out of date with the convention."
    for path in notebooks.values():
        cells = mismatches(path)
        if cells:
            raise GradingError(
                f"{path}: the nbgrader metadata of cells {cells} is out of date; run: python -m grading metadata"
            )


def student_notebooks(notebooks: dict[str, Path], workdir: str | Path) -> dict[str, NotebookNode]:
    "Generate the student version of every notebook with nbgrader; return {stem: notebook}."
    released = {}
    for stem, release_path in made_course(notebooks, workdir).items():
        nb = read_notebook(release_path)
        # nbgrader stubs an editable code cell that has no solution region (the hours cell) whole: put it back
        as_written = {
            nbgrader_meta(c).get("grade_id"): c.source
            for c in read_notebook(notebooks[stem]).cells
            if c.cell_type == "code" and nbgrader_meta(c).get("solution") and SOLUTION_BEGIN not in c.source
        }
        for cell in nb.cells:
            meta = nbgrader_meta(cell)
            if meta.get("grade_id") in as_written:
                cell.source = as_written[meta["grade_id"]]
            elif meta.get("solution"):
                cell.source = explain_stubs(cell.source, stem)
        released[stem] = nb
    return released


# Read by nbdev in the kit: nbdev_export's default rewrites pyproject.toml's name to lib_name (tinytorch), which made
# the kit's `pip install -e .` replace the instructor's course in the same environment; the kit keeps its own name.
KIT_ONLY_SETTINGS = {"update_pyproject": "False"}


def kit_settings(settings_path: str | Path, nbs_path: str = ".") -> str:
    "The repository's settings.ini with the notebooks read from `nbs_path`, and nbdev told to leave pyproject.toml be."
    settings = {"nbs_path": nbs_path, **KIT_ONLY_SETTINGS}
    lines = []
    for line in Path(settings_path).read_text().splitlines():
        key = line.split("=")[0].strip()
        lines.append(f"{key} = {settings.pop(key)}" if "=" in line and key in settings else line)
    lines += [f"{key} = {value}" for key, value in settings.items()]
    return "\n".join(lines) + "\n"


def check_output(out: str | Path, update: bool = False, force: bool = False) -> KitState | None:
    """What is in `out` now (a KitState, or None when there is nothing to keep); a GradingError when releasing there
    would delete the student's work and neither --update nor --force says what to do."""
    out = Path(out)
    if update and force:
        raise GradingError("--update and --force: choose one (--update keeps the student's work, --force deletes it).")
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise GradingError(f"{out} is not a folder; give --out a new or empty folder, or an earlier kit.")
    if not out.exists() or not any(out.iterdir()):
        return None
    manifest = read_manifest(out)
    if manifest is None:
        if force:
            return KitState({}, extra=sorted(p.name for p in out.iterdir()))
        raise GradingError(
            f"{out} is not empty and holds no release manifest (a kit released before manifests, or another folder), "
            "so the student's work in it cannot be told from the release's; release into a new folder (copy the "
            "student's notebooks over), or pass --force to replace everything in it."
        )
    state = compare(out, manifest)
    if state.work and not (update or force):
        what = [f"changed {listing(state.changed)}"] if state.changed else []
        what += [f"not from the release {listing(state.extra)}"] if state.extra else []
        raise GradingError(
            f"{out} holds work that releasing would delete ({'; '.join(what)}); release into a new folder, or pass "
            "--update to add the new notebooks and keep these, or --force to replace them (they are lost)."
        )
    return state


def put_in_place(staged: Path, out: str | Path) -> None:
    "Replace `out` (absent, empty or an earlier kit) by the finished kit in `staged`; the old one goes last."
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    old = out.with_name(f".{out.name}.replaced-{os.getpid()}") if out.exists() else None
    if old:
        os.replace(out, old)
    shutil.move(str(staged), str(out))
    if old:
        shutil.rmtree(old)


def blocked(root: Path, relative: str) -> bool:
    "Whether writing ROOT/RELATIVE would go through a link or need a folder where the student put something else."
    path = Path(root)
    for part in Path(relative).parts[:-1]:
        path = path / part
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            return True
    return False


def update_in_place(staged: Path, out: str | Path, state: KitState, log: Callable[[str], object]) -> None:
    """Write the kit in `staged` into the earlier kit `out`, file by file, keeping whatever the student changed or
    added (state: grading.authoring.manifest.KitState); the new manifest keeps the old hash of a kept file, so a later release
    still knows it as the student's."""
    out, new = Path(out), hashes(staged)
    work = set(state.work)
    kept, added, refreshed = [], [], []
    for relative in new:
        target = out / relative
        if relative in work or blocked(out, relative) or target.is_dir():
            kept.append(relative)
            continue
        existed = target.exists()
        copy_in(staged / relative, target)
        (refreshed if existed else added).append(relative)
    beside = new_versions_beside(staged, out, state, kept, new)
    manifest = {path: digest for path, digest in state.manifest.items() if path not in new}  # no longer released
    manifest.update({path: new[path] for path in added + refreshed})
    manifest.update({path: state.manifest[path] for path in kept if path in state.manifest})
    manifest.update({copy: new[relative] for relative, copy in beside.items()})
    write_manifest(out, manifest)
    log(f"updated {out}: {len(added)} files added, {len(refreshed)} files of the release refreshed")
    if state.work:
        log(f"kept as the student left them: {listing(state.work, most=20)}")
    if beside:
        log(
            "the release changed these since, and the student changed them too: its new version is beside each, "
            f"{listing(list(beside.values()), most=20)} (move the answers into it, or its changes into the notebook)"
        )
    if kept:
        log(f"run python -m grading export in {out} to bring tinytorch/ up to date with the notebooks")


def copy_in(source: Path, target: Path) -> None:
    "Copy `source` to `target` whole: written beside it, then put in its place (never half a file, nor through a link)."
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.release-tmp")
    shutil.copyfile(source, tmp)
    os.replace(tmp, target)


def new_versions_beside(
    staged: Path, out: Path, state: KitState, kept: list[str], new: dict[str, str]
) -> dict[str, str]:
    """{notebook: its copy}: each notebook the student changed whose release changed too (an instructor's finding: the
    kept notebook silently lacked a new test), written beside it as NAME.new.ipynb, where that is no file of the
    student's (a copy of an earlier update is replaced)."""
    beside = {}
    for relative in kept:
        if not relative.endswith(".ipynb") or state.manifest.get(relative) in (None, new[relative]):
            continue
        copy = relative.removesuffix(".ipynb") + ".new.ipynb"
        target = out / copy
        theirs = copy in state.work or (target.exists() and copy not in state.manifest)  # (their answers moved in)
        if theirs or blocked(out, copy) or target.is_symlink():
            continue
        copy_in(staged / relative, target)
        beside[relative] = copy
    return beside


def release(
    out: str | Path,
    notebooks_dir: str | Path | None = None,
    *,
    update: bool = False,
    force: bool = False,
    references: Collection[str] = (),
    log: Callable[[str], object] | None = None,
) -> list[str]:
    """Build the student kit and put it in `out`, never deleting a student's work there unless told --force.

    Args:
        out: the kit's folder: new, empty, or a kit an earlier release wrote (see the module docstring).
        notebooks_dir: the instructor's notebooks (default notebooks/ of this repository).
        update: write into an earlier kit, keeping every file the student changed or added.
        force: replace `out` whatever it holds.
        references: the notebooks whose reference module the kit hands out (their deadline has passed): it goes into
            the kit's references/ and tinytorch/, and the kit's export keeps it there.
        log: called with a line for the user about what an update kept, or what --force deleted (default: silent).

    Returns:
        The released assignments, in order.

    Raises:
        GradingError: out of date nbgrader metadata, a kit that would show an answer, or an `out` that holds work
        (or is not a kit) without --update or --force, or a reference asked for a notebook the course does not have.
    """
    log = log or (lambda line: None)
    notebooks = course_notebooks(notebooks_dir)
    check_sources(notebooks)
    handed_out = check_references(references, notebooks)
    state = check_output(out, update, force)
    with tempfile.TemporaryDirectory(prefix="tinytorch-release-") as workdir:
        released = student_notebooks(notebooks, Path(workdir) / "course")
        write_references(Path(workdir) / "kit", {stem: notebooks[stem] for stem in handed_out}, Path(workdir) / "ref")
        build_kit(Path(workdir) / "kit", released)
        scan_for_solutions(Path(workdir) / "kit", notebooks, handed_out)
        if update and state is not None:
            update_in_place(Path(workdir) / "kit", out, state, log)
        else:
            put_in_place(Path(workdir) / "kit", out)
            if state is not None and state.work:
                log(f"--force: deleted from {out}: {listing(state.work, most=20)}")
    if handed_out:
        log(
            f"reference modules handed out in {Path(out) / REFERENCES}: {', '.join(handed_out)}; the kit's export "
            "keeps them in tinytorch/ (export --mine uses the student's own notebooks instead)"
        )
    return list(released)


def check_references(references: Collection[str], notebooks: dict[str, Path]) -> list[str]:
    "The notebooks of --reference, in course order; a GradingError names one the course does not have."
    unknown = [stem for stem in references if stem not in notebooks]
    if unknown:
        raise GradingError(
            f"--reference {unknown[0]}: the course has no such notebook; give one of {', '.join(notebooks)} "
            "(comma-separated, or the option again)."
        )
    return [stem for stem in notebooks if stem in references]


REFERENCE_NOTE = (
    "# The reference module of {stem}, handed out by your instructor: python -m grading export keeps it in tinytorch/;"
    " python -m grading export --mine exports your own notebook instead.\n"
)


def write_references(kit: Path, sources: dict[str, Path], workdir: Path) -> None:
    "Export the instructor's notebooks `sources` ({stem: path}) and put their modules, without markers, in kit/references."
    if not sources:
        return
    for stem, path in sources.items():  # laid out as in the kit, so that each module names the kit's notebook
        (workdir / stem).mkdir(parents=True)
        shutil.copyfile(path, workdir / stem / f"{stem}.ipynb")
    (workdir / "settings.ini").write_text(kit_settings(REPO / "settings.ini"))
    copy_package_skeleton(workdir)
    export_package(workdir)
    for path, cells in exported_notebooks(workdir).items():
        relative = module_file(default_module(cells))
        header, rest = (workdir / "tinytorch" / relative).read_text().split("\n", 1)
        target = kit / REFERENCES / "tinytorch" / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"{header}\n{REFERENCE_NOTE.format(stem=path.stem)}{strip_markers(rest)}\n")


def build_kit(out: Path, released: dict[str, NotebookNode]) -> None:
    for stem, nb in released.items():
        write_notebook(nb, out / stem / f"{stem}.ipynb")
    (out / "settings.ini").write_text(kit_settings(REPO / "settings.ini"))
    for name in STUDENT_KIT:
        (out / "grading" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / "grading" / name, out / "grading" / name)
    shutil.copyfile(KIT_FILES / "pyproject.toml", out / "pyproject.toml")
    shutil.copyfile(KIT_FILES / "README.md", out / "README.md")
    copy_package_skeleton(out)
    export_package(out)
    (out / KIT_MARKER).write_text("A TinyTorch student kit made by python -m grading release.\n")
    write_manifest(out, hashes(out))
