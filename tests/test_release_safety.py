"""Releasing into an earlier kit never deletes a student's work: the release records what it wrote (a manifest of
sha256s); over changed or added files it refuses and names them, --update adds the new notebooks and keeps the
student's files, --force replaces everything. The logic is tested on hand-made kits (fast); the command end to end on
one small release, copied for each case (slow)."""

import json
import shutil

import pytest
from release_helpers import course_copy, release_in

from conftest import REPO
from grading.authoring.manifest import MANIFEST, compare, hashes, read_manifest, write_manifest
from grading.authoring.release import check_output, put_in_place, update_in_place
from grading.common.errors import GradingError

NOTEBOOK = "02_function/02_function.ipynb"


def make_kit(root, files):
    "A folder holding `files` ({relative path: text}) and the manifest a release would write for them."
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    write_manifest(root, hashes(root))
    return root


RELEASE_1 = {NOTEBOOK: "notebook 02, first release", "README.md": "readme 1", "tinytorch/core/function.py": "stubs 02"}
RELEASE_2 = dict(
    RELEASE_1,
    **{"README.md": "readme 2", "03_gradcheck/03_gradcheck.ipynb": "notebook 03", "tinytorch/core/gradcheck.py": "03"},
)


def tree(root):
    "{relative path: text} of every file under `root`: to show that nothing changed."
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_kit_the_student_has_not_touched_is_replaced_without_asking(tmp_path):
    kit = make_kit(tmp_path / "kit", RELEASE_1)
    (kit / "tinytorch" / "__pycache__").mkdir()
    (kit / "tinytorch" / "__pycache__" / "function.cpython-311.pyc").write_bytes(b"\0")
    (kit / "tinytorch.egg-info").mkdir()  # what pip install -e . makes
    (kit / "README.md").unlink()  # deleted: nothing of the student's to lose
    state = check_output(kit)
    assert state.work == [], "caches Python makes again and deleted files are not work"
    staged = make_kit(tmp_path / "staged", RELEASE_2)
    put_in_place(staged, kit)
    assert tree(kit) == tree(make_kit(tmp_path / "expected", RELEASE_2))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".kit")] == [], "the old kit is gone"


def test_changed_and_added_files_stop_a_release_which_names_them(tmp_path):
    kit = make_kit(tmp_path / "kit", RELEASE_1)
    (kit / NOTEBOOK).write_text("notebook 02 with the student's answers")
    (kit / "notes.txt").write_text("my notes")
    (kit / "scratch").mkdir()
    (kit / "link").symlink_to(tmp_path)
    before = tree(kit)
    with pytest.raises(GradingError) as error:
        check_output(kit)
    message = str(error.value)
    assert "\n" not in message and "holds work that releasing would delete" in message
    assert f"changed {NOTEBOOK};" in message and "not from the release link, notes.txt, scratch/" in message
    assert "--update" in message and "--force" in message
    assert tree(kit) == before, "nothing is touched"
    assert check_output(kit, force=True).work == [NOTEBOOK, "link", "notes.txt", "scratch/"]


def test_a_folder_that_is_not_empty_and_has_no_manifest_is_refused_unless_forced(tmp_path):
    folder = tmp_path / "documents"
    folder.mkdir()
    (folder / "thesis.tex").write_text("years of work")
    for options in ({}, {"update": True}):
        with pytest.raises(GradingError, match=r"is not empty and holds no release manifest.*--force"):
            check_output(folder, **options)
    assert check_output(folder, force=True).extra == ["thesis.tex"]
    (tmp_path / "empty").mkdir()
    assert check_output(tmp_path / "empty") is None and check_output(tmp_path / "new") is None
    (tmp_path / "file").write_text("")
    with pytest.raises(GradingError, match="is not a folder"):
        check_output(tmp_path / "file")


def test_a_broken_manifest_and_update_with_force_are_one_line_errors(tmp_path):
    kit = make_kit(tmp_path / "kit", RELEASE_1)
    with pytest.raises(GradingError, match="--update and --force: choose one"):
        check_output(kit, update=True, force=True)
    (kit / MANIFEST).write_text("{half")
    with pytest.raises(GradingError, match=r"\.release-manifest\.json: not a release manifest .*--force"):
        check_output(kit)


def test_update_adds_and_refreshes_the_releases_files_and_keeps_the_students(tmp_path):
    kit = make_kit(tmp_path / "kit", RELEASE_1)
    original = (kit / NOTEBOOK).read_text()
    (kit / NOTEBOOK).write_text("notebook 02 with the student's answers")
    (kit / "notes.txt").write_text("my notes")
    lines = []
    update_in_place(make_kit(tmp_path / "staged", RELEASE_2), kit, check_output(kit, update=True), lines.append)
    assert (kit / NOTEBOOK).read_text() == "notebook 02 with the student's answers"
    assert (kit / "notes.txt").read_text() == "my notes"
    assert (kit / "README.md").read_text() == "readme 2", "untouched: refreshed"
    assert (kit / "03_gradcheck" / "03_gradcheck.ipynb").read_text() == "notebook 03", "new: added"
    assert lines[0].endswith("2 files added, 2 files of the release refreshed"), lines
    assert lines[1] == f"kept as the student left them: {NOTEBOOK}, notes.txt"
    manifest = read_manifest(kit)
    assert manifest[NOTEBOOK] == hashes(make_kit(tmp_path / "r1", {NOTEBOOK: original}))[NOTEBOOK]
    assert "notes.txt" not in manifest, "the student's file stays theirs"
    state = compare(kit, manifest)
    assert (state.changed, state.extra) == ([NOTEBOOK], ["notes.txt"]), "a later release still sees the work"


def test_update_puts_a_changed_release_of_a_notebook_the_student_changed_beside_it(tmp_path):
    """An instructor's finding: a kept notebook silently lacked the new release's test; its new version now lies
    beside it, and is refreshed by later updates until the student changes it too."""
    kit = make_kit(tmp_path / "kit", RELEASE_1)
    (kit / NOTEBOOK).write_text("notebook 02 with the student's answers")
    lines = []
    release_3 = dict(RELEASE_1, **{NOTEBOOK: "notebook 02, with a new test"})
    update_in_place(make_kit(tmp_path / "staged", release_3), kit, check_output(kit, update=True), lines.append)
    beside = kit / "02_function" / "02_function.new.ipynb"
    assert (kit / NOTEBOOK).read_text() == "notebook 02 with the student's answers"
    assert beside.read_text() == "notebook 02, with a new test"
    assert any("its new version is beside each, 02_function/02_function.new.ipynb" in line for line in lines), lines
    release_4 = dict(RELEASE_1, **{NOTEBOOK: "notebook 02, fixed again"})
    update_in_place(make_kit(tmp_path / "staged4", release_4), kit, check_output(kit, update=True), lines.append)
    assert beside.read_text() == "notebook 02, fixed again", "the release's copy is the release's: refreshed"
    beside.write_text("the new version, with the student's answers moved in")
    release_5 = dict(RELEASE_1, **{NOTEBOOK: "notebook 02, fifth"})
    update_in_place(make_kit(tmp_path / "staged5", release_5), kit, check_output(kit, update=True), lines.append)
    assert beside.read_text() == "the new version, with the student's answers moved in", "now the student's: kept"


def test_update_never_writes_through_a_link_the_student_made(tmp_path):
    kit = make_kit(tmp_path / "kit", RELEASE_1)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(kit / "02_function")
    (kit / "02_function").symlink_to(outside)
    update_in_place(make_kit(tmp_path / "staged", RELEASE_2), kit, check_output(kit, update=True), print)
    assert list(outside.iterdir()) == [] and (kit / "02_function").is_symlink()


# -- The command, end to end (slow: nbgrader releases a one-notebook course) -----------------------------------------


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    "A course of notebook 02 released once into `kit`; then notebook 03 joins the course."
    base = tmp_path_factory.mktemp("release-safety")
    root = course_copy(base, ["02_function"])
    result = release_in(root, base / "kit")
    assert result.returncode == 0, result.stderr
    shutil.copyfile(REPO / "notebooks" / "03_gradcheck.ipynb", root / "notebooks" / "03_gradcheck.ipynb")
    return root, base / "kit"


def worked_kit(released, tmp_path):
    "A copy of the kit in which the student answered notebook 02 and added a file."
    root, kit = released
    copy = tmp_path / "kit"
    shutil.copytree(kit, copy, symlinks=True)
    nb = json.loads((copy / NOTEBOOK).read_text())
    nb["cells"].append({"cell_type": "markdown", "id": "mine", "metadata": {}, "source": "my answer"})
    (copy / NOTEBOOK).write_text(json.dumps(nb))
    (copy / "02_function" / "notes.txt").write_text("my notes")
    return root, copy


@pytest.mark.slow
def test_the_command_refuses_to_release_over_work_and_update_keeps_it(released, tmp_path):
    root, kit = worked_kit(released, tmp_path)
    assert (kit / MANIFEST).is_file()
    before = tree(kit)
    result = release_in(root, kit)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2 and len(errors) == 1, result.stderr
    assert f"changed {NOTEBOOK}" in errors[0] and "02_function/notes.txt" in errors[0], errors[0]
    assert tree(kit) == before, "nothing deleted, nothing written"
    result = release_in(root, kit, "--update")
    assert result.returncode == 0, result.stderr
    assert "kept as the student left them: 02_function/02_function.ipynb, 02_function/notes.txt" in result.stdout
    assert "updated in" in result.stdout
    assert (kit / NOTEBOOK).read_bytes() == before[NOTEBOOK] and (kit / "02_function" / "notes.txt").exists()
    assert (kit / "03_gradcheck" / "03_gradcheck.ipynb").is_file(), "the new notebook is added"
    assert (kit / "tinytorch" / "core" / "gradcheck.py").is_file(), "with its module"
    assert release_in(root, kit).returncode == 2, "the work is still the student's after the update"


@pytest.mark.slow
def test_force_replaces_the_kit_and_says_what_it_deleted(released, tmp_path):
    root, kit = worked_kit(released, tmp_path)
    result = release_in(root, kit, "--force")
    assert result.returncode == 0, result.stderr
    assert f"--force: deleted from {kit}: {NOTEBOOK}, 02_function/notes.txt" in result.stdout
    assert not (kit / "02_function" / "notes.txt").exists() and (kit / "03_gradcheck").is_dir()
    assert compare(kit, read_manifest(kit)).work == [], "a fresh kit with its manifest"
