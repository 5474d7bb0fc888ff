"""The Gradescope autograder (grading/lms/gradescope.py): the zip, and run_autograder run as Gradescope runs it, in a
folder laid out as Gradescope lays out /autograder (source/ = the unzipped zip, submission/, results/), with the
Python of this venv instead of the one setup.sh makes."""

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from datetime import datetime
from pathlib import Path

import pytest

from conftest import REPO, run_cli
from grading.common.answers import solved
from grading.common.errors import GradingError
from grading.common.notebooks import nbgrader_meta, read_notebook, write_notebook
from grading.lms import gradescope

ASSIGNMENT = "01_tensor"  # the shortest notebook to grade
AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="the student-user fallback needs a grader running as root")


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory):
    out = tmp_path_factory.mktemp("gradescope") / "autograder.zip"
    result = run_cli("gradescope", "--out", out, "--assignment", ASSIGNMENT, "--late-penalty", "10%/day")
    assert result.returncode == 0, result.stderr
    return out


def gradescope_root(autograder_zip):
    """/autograder as Gradescope lays it out, under /tmp (mode 0755, as /autograder: every user can pass through, so
    what the student's code cannot reach is kept from it by the grader's own modes)."""
    root = Path(tempfile.mkdtemp(prefix="gradescope-root-"))
    root.chmod(0o755)
    for name in ["source", "submission", "results"]:
        (root / name).mkdir(mode=0o755)
    with zipfile.ZipFile(autograder_zip) as archive:
        archive.extractall(root / "source")
    (root / "source" / "run_autograder").chmod(0o755)
    return root


def run_autograder(root, check=True, **env):
    """Run the zip's run_autograder as Gradescope does (cwd /autograder), with this venv's Python; its results.json
    (with check=False: the finished process, whatever its status)."""
    environment = {**os.environ, "GRADESCOPE_ROOT": str(root), "TINYTORCH_GRADER_PYTHON": sys.executable, **env}
    done = subprocess.run(
        [str(root / "source" / "run_autograder")],
        cwd=root,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if not check:
        return done
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads((root / "results" / "results.json").read_text())


def submit(root, files, metadata=None):
    "Gradescope's submission/ (flat: the files the student uploaded) and submission_metadata.json."
    shutil.rmtree(root / "submission")
    (root / "submission").mkdir(mode=0o755)
    for name, notebook in files.items():
        write_notebook(notebook, root / "submission" / name)
    (root / "submission_metadata.json").write_text(json.dumps(metadata or {}))


def test_the_zip_holds_setup_run_autograder_and_the_course(autograder_zip):
    with zipfile.ZipFile(autograder_zip) as archive:
        names = set(archive.namelist())
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
        config = json.loads(archive.read("gradescope.json"))
        setup = archive.read("setup.sh").decode()
    assert {"setup.sh", "run_autograder", "course-secret", "course/pyproject.toml"} <= names
    assert f"course/notebooks/{ASSIGNMENT}.ipynb" in names and "course/grading/lms/gradescope.py" in names
    assert not any(name.startswith("course/tests/") for name in names)
    assert modes["run_autograder"] & stat.S_IXUSR and modes["setup.sh"] & stat.S_IXUSR
    assert config == {"assignments": [ASSIGNMENT], "late_penalty": "10%/day", "hidden_visibility": "after_published"}
    assert "bubblewrap" in setup and "useradd" in setup and "pip install -e" in setup and "chmod -R go-rwx" in setup


def test_an_unknown_assignment_or_penalty_is_refused_before_any_zip_is_written(tmp_path):
    with pytest.raises(GradingError, match="99_nothing: not a graded notebook"):
        gradescope.build(tmp_path / "a.zip", ["99_nothing"], log=lambda message: None)
    with pytest.raises(GradingError, match=r"--assignment 12_comv \(did you mean '12_conv'\?\): not a graded"):
        gradescope.build(tmp_path / "a.zip", ["12_comv"], log=lambda message: None)
    with pytest.raises(GradingError, match="--late-penalty 'lots'"):
        gradescope.build(tmp_path / "b.zip", late_penalty="lots", log=lambda message: None)
    assert not list(tmp_path.iterdir())


def test_a_zip_is_replaced_only_by_a_whole_one_and_a_folder_is_not_taken_for_it(tmp_path):
    "An instructor's finding: a mistyped --secret-file turned a working 1 MB zip into one of three files, and exit 2."
    old = tmp_path / "autograder.zip"
    old.write_bytes(b"the zip uploaded last week")
    with pytest.raises(GradingError, match="no such secret file"):
        gradescope.build(old, [ASSIGNMENT], secret_file=tmp_path / "no-such-secret", log=lambda message: None)
    assert old.read_bytes() == b"the zip uploaded last week" and sorted(tmp_path.iterdir()) == [old]
    refused = run_cli("gradescope", "--out", tmp_path, "--assignment", ASSIGNMENT)
    assert refused.returncode == 2 and "is a folder; name the zip to write" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr


def test_a_folder_named_like_the_notebook_is_no_notebook(tmp_path):
    "Red team round 6: a folder 01_tensor.ipynb (a zip the student uploaded, unpacked) ended as the grader's fault."
    (tmp_path / f"{ASSIGNMENT}.ipynb").mkdir()
    (tmp_path / f"{ASSIGNMENT}.ipynb" / "x").write_text("x")
    with pytest.raises(gradescope.Rejected, match="holds no notebook"):
        gradescope.find_notebook(tmp_path, [ASSIGNMENT])


def test_the_gradescope_assignments_title_decides_which_notebook_of_the_zip_it_takes():
    "Red team round 6: a zip of two assignments graded last week's solved notebook handed in to this week's."
    assignments = ["01_tensor", "02_function"]
    assert gradescope.assignment_titled({"assignment": {"title": "02_function: Function"}}, assignments) == (
        "02_function"
    )
    assert gradescope.assignment_titled({"assignment": {"title": "Week 2"}}, assignments) is None
    assert gradescope.assignment_titled({}, assignments) is None


@pytest.mark.parametrize("name", [f"{ASSIGNMENT} (1).ipynb", f"{ASSIGNMENT}-2.ipynb", "01_Tensor.ipynb"])
def test_a_browsers_second_download_of_the_notebook_is_the_notebook(tmp_path, name):
    "collect takes '04_elementwise (1).ipynb' as 04_elementwise; Gradescope's run_autograder gave it 0."
    write_notebook(read_notebook(REPO / "notebooks" / f"{ASSIGNMENT}.ipynb"), tmp_path / name)
    assert gradescope.find_notebook(tmp_path, [ASSIGNMENT, "04_elementwise"]) == (ASSIGNMENT, tmp_path / name)


def test_the_results_say_that_written_answers_are_marked_by_hand(tmp_path):
    "An instructor's finding: Canvas counted 27 points for 04, Gradescope's results 24 and said nothing of the 3."
    from grading.grade.autograde import Row
    from grading.lms.lms_input import Person

    test = {"score": 1.0, "max_score": 1.0, "message": ""}
    entry = {"score": 1.0, "max_score": 1.0, "note": "", "tests": {"add_backward": test}, "manual_points": 3.0}
    (tmp_path / "gradebook.json").write_text(json.dumps({"ada": {"04_elementwise": entry}}))
    row = Row("ada", "04_elementwise", "04_elementwise.ipynb", 1.0, 1.0, manual_points=3.0)
    results = gradescope.results_of(tmp_path, Person(student="ada"), "04_elementwise", row, {})
    assert results["score"] == 1.0
    assert results["output"] == "Your written answers (3 points) are marked by hand: they are not in this score."


@pytest.mark.parametrize(
    "files, expected",
    [
        ({}, "holds no notebook"),
        ({f"{ASSIGNMENT}.ipynb": None, "02_function.ipynb": None}, "holds 2 notebooks"),
        ({"homework.ipynb": None}, "homework.ipynb is not a notebook of this assignment"),
        ({"04_elementwise.ipynb": None}, "04_elementwise.ipynb is not a notebook of this assignment"),
    ],
)
def test_a_submission_without_exactly_one_notebook_of_the_assignment_scores_0_with_a_message(
    autograder_zip, files, expected, capsys
):
    root = gradescope_root(autograder_zip)
    try:
        notebook = read_notebook(REPO / "notebooks" / "02_function.ipynb")  # never read: refused by its name first
        submit(root, {name: notebook for name in files})
        assert gradescope.run(root) == 0  # what run_autograder runs (in the unzipped course: see the tests below)
        results = json.loads((root / "results" / "results.json").read_text())
        assert results["score"] == 0 and results["tests"] == []
        assert expected in results["output"] and f"{ASSIGNMENT}.ipynb" in results["output"]
        assert stat.S_IMODE((root / "source").stat().st_mode) == 0o700  # the answer key is root's alone
    finally:
        shutil.rmtree(root)


def test_where_neither_bubblewrap_nor_the_student_user_can_be_had_nothing_is_graded(autograder_zip):
    root = gradescope_root(autograder_zip)
    try:
        submit(root, {f"{ASSIGNMENT}.ipynb": read_notebook(REPO / "notebooks" / f"{ASSIGNMENT}.ipynb")})
        (root / "results" / "results.json").write_text('{"score": 24}')  # an earlier run's: not left for this one
        ran = run_autograder(root, TINYTORCH_NO_BWRAP="1", TINYTORCH_STUDENT_USER="no-such-user-here", check=False)
        assert ran.returncode == 1, ran.stderr
        assert "Not graded" in ran.stdout and "no user 'no-such-user-here'" in ran.stdout
        assert not (root / "results" / "results.json").exists(), "the grader's fault is no score of 0 for the student"
        assert not (root / "source" / "work" / "out" / "gradebook.json").exists()
    finally:
        shutil.rmtree(root)


HOSTILE = """import json, os
root = {root!r}
report = {{"uid": os.getuid()}}
attempts = {{
    "read_own_submission": lambda: open(root + "/submission/{assignment}.ipynb").read(),
    "read_answer_key": lambda: open(root + "/source/course/notebooks/{assignment}.ipynb").read(),
    "list_source": lambda: os.listdir(root + "/source"),
    "write_results": lambda: open(root + "/results/results.json", "w").write('{{"score": 1000}}'),
    "signal_grader": lambda: os.kill(os.getppid(), 9),
    "read_metadata": lambda: open(root + "/submission_metadata.json").read(),  # earlier results: red team round 6
}}
for name, attempt in attempts.items():
    try:
        attempt()
        report[name] = "done"
    except Exception as error:
        report[name] = type(error).__name__
open({report!r}, "w").write(json.dumps(report))
raise NotImplementedError()"""


def notebook_with(kit, solve=(), replace=None):
    "The released notebook with the exercises in `solve` solved and `replace` ({grade id: body}) written in."
    source = read_notebook(REPO / "notebooks" / f"{ASSIGNMENT}.ipynb")
    released = read_notebook(kit / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    nb = solved(released, source)
    answers = {nbgrader_meta(c).get("grade_id"): c.source for c in released.cells}
    instructor = {nbgrader_meta(c).get("grade_id"): c.source for c in source.cells}
    for cell in nb.cells:
        grade_id = nbgrader_meta(cell).get("grade_id")
        if grade_id in (replace or {}):  # the function's head, then the given body in place of the solution
            head = instructor[grade_id].split("### BEGIN SOLUTION")[0].splitlines()[:-1]
            body = "\n".join("    " + line for line in replace[grade_id].splitlines())
            cell.source = "\n".join(head + [body])
        elif nbgrader_meta(cell).get("solution") and grade_id not in solve:
            cell.source = answers[grade_id]
    return nb


@AS_ROOT
@pytest.mark.parametrize(
    "users, due",
    [
        ([{"email": "a@x.edu"}], "2026-12-01T00:00:00+00:00"),  # no date of the user's own: the assignment's
        ([{"email": "a@x.edu", "assignment": {"due_date": "2026-12-03T00:00:00+01:00"}}], "2026-12-03T00:00:00+01:00"),
        (  # a group: the latest of its members' own dates (one of them has an extension)
            [
                {"email": "a@x.edu", "assignment": {"due_date": "2026-12-01T00:00:00+00:00"}},
                {"email": "b@x.edu", "assignment": {"due_date": "2026-12-04T12:00:00-08:00"}},
            ],
            "2026-12-04T12:00:00-08:00",
        ),
        ([{"email": "a@x.edu", "assignment": {"due_date": "not a date"}}], "2026-12-01T00:00:00+00:00"),
    ],
)
def test_the_late_policy_uses_the_students_own_due_date_where_gradescope_gives_an_extension(tmp_path, users, due):
    "Gradescope puts a student's own dates (an extension included) under users[].assignment; the assignment's otherwise."
    metadata = {"users": users, "created_at": "2026-12-02T06:00:00+00:00"}
    metadata["assignment"] = {"due_date": "2026-12-01T00:00:00+00:00"}
    copy = tmp_path / "01_tensor" / "01_tensor.ipynb"
    copy.parent.mkdir()
    policy = gradescope.late_policy({"late_penalty": "10%/day"}, metadata, "01_tensor", copy)
    assert policy.due_of("01_tensor").isoformat() == datetime.fromisoformat(due).isoformat()


def test_run_autograder_grades_good_partial_and_hostile_submissions_as_the_student_user(kit, autograder_zip):
    """Graded as where bubblewrap cannot run (Gradescope's container): the students' code runs as `nobody`. The good
    notebook gets full marks, less Gradescope's late penalty; the partial one loses its unsolved exercise's tests;
    the hostile one earns nothing, ran as another user, and could not read the answer key, write results.json or
    signal the grader, though it could read its own submission."""
    root, drop = gradescope_root(autograder_zip), Path(tempfile.mkdtemp(prefix="gradescope-hostile-"))
    drop.chmod(0o777)  # where the hostile code reports what it could do
    env = {"TINYTORCH_NO_BWRAP": "1", "TINYTORCH_STUDENT_USER": "nobody"}
    exercises = [
        nbgrader_meta(c)["grade_id"]
        for c in read_notebook(kit / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").cells
        if nbgrader_meta(c).get("solution")
    ]
    try:
        late = {
            "users": [{"email": "ada@example.edu", "name": "Ada", "id": 7}],
            "created_at": "2026-12-02T06:00:00+00:00",
            "assignment": {"due_date": "2026-12-01T00:00:00+00:00"},  # 30 hours late: two started days, 20%
        }
        submit(root, {f"{ASSIGNMENT}.ipynb": notebook_with(kit, solve=exercises)}, late)
        good = run_autograder(root, **env)
        full = sum(t["max_score"] for t in good["tests"])
        assert full > 0 and all(t["score"] == t["max_score"] for t in good["tests"]), good
        assert good["score"] == pytest.approx(0.8 * full) and "hours late" in good["output"]
        assert good["extra_data"]["student"] == "ada-example-edu" and good["extra_data"]["variant"]
        visibility = {t["name"]: t["visibility"] for t in good["tests"]}
        assert visibility["tensor_elementwise"] == "visible"
        assert visibility["tensor_elementwise_hidden"] == "after_published"

        submit(root, {f"{ASSIGNMENT}.ipynb": notebook_with(kit, solve=[e for e in exercises if e != exercises[0]])})
        partial = run_autograder(root, **env)
        lost = {t["name"] for t in partial["tests"] if t["score"] < t["max_score"]}
        assert lost == {"tensor_elementwise", "tensor_elementwise_hidden"}, partial
        assert partial["score"] == full - 4

        report = drop / "report.json"
        hostile_code = HOSTILE.format(root=str(root), assignment=ASSIGNMENT, report=str(report))
        submit(root, {f"{ASSIGNMENT}.ipynb": notebook_with(kit, replace={exercises[0]: hostile_code})})
        hostile = run_autograder(root, **env)
        assert hostile["score"] == 0 and all(t["score"] == 0 for t in hostile["tests"]), hostile
        attempts = json.loads(report.read_text())
        assert attempts["uid"] != 0 and attempts["read_own_submission"] == "done", attempts
        for name in ["read_answer_key", "list_source", "write_results", "signal_grader", "read_metadata"]:
            assert attempts[name] == "PermissionError", attempts
    finally:
        shutil.rmtree(root)
        shutil.rmtree(drop)


@AS_ROOT
def test_without_a_sandbox_the_hidden_tests_worker_cannot_hand_its_inputs_to_the_pages(kit, tmp_path):
    """Without bubblewrap (the student user: Gradescope's container) the two workers would share /tmp, /dev/shm, IPC
    and the network. eve's AddBackward appends its inputs to a file in /dev/shm and her SubBackward prints the file in
    a visible test: the page shows the visible tests' inputs, never the hidden test's (the notebook runs without its
    hidden cells first, then whole with nothing shown), and the file is gone after the job. An attacker helper of
    issue 25's review put all of add_backward_hidden's inputs on the page this way, at 24 of 24."""
    import html

    import numpy as np

    from grading.examples.classroom import chained, inside, submission
    from grading.grade.variant import seed_of

    leak = f"/dev/shm/tinytorch-leak-{os.getpid()}"
    write = 'import numpy as np\nvalues = " ".join(f"{v:.6f}" for v in np.ravel(self.saved_tensors[0].data)[:4])'
    write += f'\nopen({leak!r}, "a").write("ADD " + values + "\\n")'
    show = f"import os\nif os.path.exists({leak!r}):\n    print(open({leak!r}).read())"
    answer = chained(inside("solution-AddBackward", write), inside("solution-SubBackward", show))
    folder = tmp_path / "subs" / "eve" / "04_elementwise"
    write_notebook(submission(kit, "04_elementwise", answer), folder / "04_elementwise.ipynb")
    env = {**os.environ, "PYTHONPATH": str(REPO), "TINYTORCH_NO_BWRAP": "1"}
    command = ["autograde", tmp_path / "subs", "--out", tmp_path / "out", "--workers", "1", "--student-user", "nobody"]
    done = subprocess.run(
        [sys.executable, "-m", "grading", *map(str, command)], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    entry = json.loads((tmp_path / "out" / "gradebook.json").read_text())["eve"]["04_elementwise"]
    assert entry["score"] == entry["max_score"] == 24, entry
    page = html.unescape((tmp_path / "out" / "feedback" / "eve" / "04_elementwise.html").read_text())
    assert "ADD -" in page or "ADD 0" in page or "ADD 1" in page, "the attack did not run (the visible inputs)"
    hidden = np.random.default_rng(seed_of("add_backward_hidden", entry["variant"])).normal(size=(3, 4))
    assert f"{hidden.ravel()[0]:.6f}" not in page and f"{hidden.ravel()[0]:.6f}" not in json.dumps(entry)
    assert not os.path.exists(leak), "what the student user wrote where everyone may write is removed after it"
