"""The Gradescope autograder (grading/lms/gradescope.py): the zip, and run_autograder run as Gradescope runs it, in a
folder laid out as Gradescope lays out /autograder (source/ = the unzipped zip, submission/, results/), with the
Python of this venv instead of the one setup.sh makes."""

import json
import os
import re
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
from grading.common.defaults import GRADESCOPE_NOTEBOOK_TIMEOUT, GRADESCOPE_SETUP, GRADESCOPE_TIMEOUT, MEMORY_MB
from grading.common.errors import GradingError
from grading.common.notebooks import nbgrader_meta, read_notebook, write_notebook
from grading.lms import gradescope, gradescope_metadata

# Its runs grade as Gradescope does where bubblewrap cannot run, the students' code as `nobody`: one at a time.
pytestmark = pytest.mark.usefixtures("student_user_turn")
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


ON_TIME = {
    "users": [{"email": "ada@example.edu", "name": "Ada", "id": 7}],
    "created_at": "2026-11-30T06:00:00+00:00",
    "assignment": {"due_date": "2026-12-01T00:00:00+00:00"},
}


def submit(root, files, metadata=None):
    "Gradescope's submission/ (flat: the files the student uploaded) and submission_metadata.json."
    shutil.rmtree(root / "submission")
    (root / "submission").mkdir(mode=0o755)
    for name, notebook in files.items():
        write_notebook(notebook, root / "submission" / name)
    (root / "submission_metadata.json").write_text(json.dumps(metadata or ON_TIME))


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
    assert config == {
        "assignments": [ASSIGNMENT],
        "late_penalty": "10%/day",
        "hidden_visibility": "after_published",
        "notebook_timeout": GRADESCOPE_NOTEBOOK_TIMEOUT,
        "memory_mb": MEMORY_MB,
    }
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
    assert gradescope_metadata.assignment_titled({"assignment": {"title": "02_function: Function"}}, assignments) == (
        "02_function"
    )
    assert gradescope_metadata.assignment_titled({"assignment": {"title": "Week 2"}}, assignments) is None
    assert gradescope_metadata.assignment_titled({}, assignments) is None


@pytest.mark.parametrize("name", [f"{ASSIGNMENT} (1).ipynb", f"{ASSIGNMENT}-2.ipynb", "01_Tensor.ipynb"])
def test_a_browsers_second_download_of_the_notebook_is_the_notebook(tmp_path, name):
    "collect takes '04_elementwise (1).ipynb' as 04_elementwise; Gradescope's run_autograder gave it 0."
    write_notebook(read_notebook(REPO / "notebooks" / f"{ASSIGNMENT}.ipynb"), tmp_path / name)
    assert gradescope.find_notebook(tmp_path, [ASSIGNMENT, "04_elementwise"]) == (ASSIGNMENT, tmp_path / name)


def test_the_results_say_that_written_answers_are_marked_by_hand(tmp_path):
    "An instructor's finding: Canvas counted 27 points for 04, Gradescope's results 24 and said nothing of the 3."
    from grading.intake.roster import Person

    test = {"score": 1.0, "max_score": 1.0, "message": ""}
    entry = {"score": 1.0, "max_score": 1.0, "note": "", "tests": {"add_backward": test}, "manual_points": 3.0}
    (tmp_path / "gradebook.json").write_text(json.dumps({"ada": {"04_elementwise": entry}}))
    results = gradescope.results_of(tmp_path, Person(student="ada"), "04_elementwise", {})
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
        assert results["output_format"] == "text"  # a file named <img src=x onerror=...>.ipynb is shown as text
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
    ],
)
def test_the_late_policy_uses_the_students_own_due_date_where_gradescope_gives_an_extension(tmp_path, users, due):
    "Gradescope puts a student's own dates (an extension included) under users[].assignment; the assignment's otherwise."
    metadata = {"users": users, "created_at": "2026-12-02T06:00:00+00:00"}
    metadata["assignment"] = {"due_date": "2026-12-01T00:00:00+00:00"}
    copy = tmp_path / "01_tensor" / "01_tensor.ipynb"
    copy.parent.mkdir()
    policy = gradescope_metadata.late_policy({"late_penalty": "10%/day"}, metadata, "01_tensor", copy)
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

    from grading.examples.edits import chained, inside, submission
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


# -- Issues 41.8 and 46.7: what Gradescope shows, the metadata it gives, the image it builds, trying the zip here ----


def points_of(assignment):
    "{test id: points} of the instructor's notebook, in its order."
    cells = read_notebook(REPO / "notebooks" / f"{assignment}.ipynb").cells
    tests = [nbgrader_meta(c) for c in cells if nbgrader_meta(c).get("grade") and not nbgrader_meta(c).get("solution")]
    return {meta["grade_id"]: meta["points"] for meta in tests}  # (a graded solution cell is a written answer)


def test_export_grades_says_why_the_score_is_not_the_tests_sum_and_when_hidden_tests_show(tmp_path):
    """Issue 46.7: export-grades --format gradescope wrote 19.2 with tests summing to 24 and no word of the penalty,
    and nothing said that students see only the visible tests' points until the grades are published."""
    from grading.lms.export_grades import export_grades
    from grading.lms.lms_input import hidden_tests

    points = points_of("04_elementwise")
    tests = {name: {"score": p, "max_score": p, "message": ""} for name, p in points.items()}
    entry = {"score": 24.0, "max_score": 24.0, "note": "", "tests": tests, "late_by_hours": 30.0}
    entry.update(penalty=4.8, penalty_fraction=0.2, final_score=19.2)
    (tmp_path / "grades").mkdir()
    (tmp_path / "grades" / "gradebook.json").write_text(json.dumps({"ada": {"04_elementwise": entry}}))
    export_grades(tmp_path / "grades", "gradescope", tmp_path / "gs")
    results = json.loads((tmp_path / "gs" / "04_elementwise" / "ada" / "results.json").read_text())
    assert sum(points.values()) == 24 and results["score"] == 19.2
    hidden = hidden_tests(REPO / "notebooks")["04_elementwise"]
    unseen = sum(p for name, p in points.items() if hidden[name])
    assert 0 < unseen < 24
    assert "Submitted 30 hours late: 4.8 points taken (24 before the penalty, 19.2 counted)." in results["output"]
    assert f"hidden tests ({unseen:g} of the 24 points) are shown when your instructor publishes" in results["output"]
    assert results["output_format"] == results["test_output_format"] == results["test_name_format"] == "text"


@pytest.mark.parametrize(
    "visibility, words",
    [("after_due_date", "is shown after the due date"), ("hidden", "is shown to your instructor only")],
)
def test_the_output_says_when_each_visibility_shows_the_hidden_tests(visibility, words):
    from grading.intake.roster import Person
    from grading.lms.gradescope_results import gradescope_results

    tests = {"seen": {"score": 1, "max_score": 1}, "unseen": {"score": 0, "max_score": 2}}
    entry = {"score": 1.0, "max_score": 3.0, "tests": tests}
    results = gradescope_results(Person(student="ada"), "x", entry, {"seen": False, "unseen": True}, visibility)
    assert "1 hidden test (2 of the 3 points)" in results["output"] and words in results["output"]
    everything = gradescope_results(Person(student="ada"), "x", entry, {"seen": False, "unseen": False}, visibility)
    assert everything["output"] == ""  # nothing hidden, nothing to say


def test_a_run_without_submission_metadata_grades_nobody_and_says_so(tmp_path, capsys):
    "Issue 41.8: without submission_metadata.json the student was called 'student' and any late penalty dropped."
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    (root / "submission").mkdir()
    (root / "source" / gradescope.CONFIG).write_text(json.dumps({"assignments": [ASSIGNMENT]}))
    write_notebook(
        read_notebook(REPO / "notebooks" / f"{ASSIGNMENT}.ipynb"), root / "submission" / f"{ASSIGNMENT}.ipynb"
    )
    assert gradescope.run(root) == 1
    said = capsys.readouterr().out
    assert f"Not graded: there is no {root / 'submission_metadata.json'}, which Gradescope writes" in said
    assert not (root / "results" / "results.json").exists()
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"name": "Ada"}]}))
    assert gradescope.run(root) == 1
    assert "names no student" in capsys.readouterr().out


@pytest.mark.parametrize(
    "change, field",
    [
        ({"created_at": "yesterday"}, "created_at"),
        ({"created_at": None}, "created_at"),
        ({"assignment": {"due_date": "Friday"}}, "assignment.due_date"),
        ({"users": [{"email": "a@x.edu", "assignment": {"due_date": "not a date"}}]}, "users[].assignment.due_date"),
    ],
)
def test_a_time_the_late_penalty_cannot_read_is_said_not_dropped(tmp_path, change, field):
    "Issue 41.8: an unparseable created_at gave no penalty and no word; an extension that cannot be read is no 0."
    metadata = {**ON_TIME, **change}
    with pytest.raises(GradingError, match=re.escape(field)):
        gradescope_metadata.late_policy({"late_penalty": "10%/day"}, metadata, ASSIGNMENT, tmp_path / "nb.ipynb")
    assert (
        gradescope_metadata.late_policy({"late_penalty": "none"}, metadata, ASSIGNMENT, tmp_path / "nb.ipynb").due == {}
    )


def test_setup_sh_names_the_base_image_to_pick_where_no_python_3_11_can_be_installed(tmp_path):
    """Issue 46.7: setup.sh installed python3.11 with apt, which fails on Gradescope's Ubuntu 18.04 and 20.04 images.
    Here a base image whose python3 is 3.8 and whose apt has no python3.11: the build stops and says what to pick."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fakes = {
        "apt-get": 'case "$*" in *python3.11*) echo "E: Unable to locate package python3.11" >&2; exit 100;; esac',
        "python3": 'echo "Python 3.8.10"; exit 1',  # the version check: too old
    }
    for name, body in fakes.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    (tmp_path / "setup.sh").write_text(gradescope.SETUP_SH)
    done = subprocess.run(
        ["/bin/bash", str(tmp_path / "setup.sh")], env={"PATH": str(bin_dir)}, capture_output=True, text=True
    )
    assert done.returncode == 1, done.stderr
    assert "needs Python 3.11 or newer" in done.stderr and "choose the base image Ubuntu 22.04" in done.stderr


def test_try_summary_says_what_students_see_before_the_grades_are_published():
    from grading.lms.gradescope_try import summary

    tests = [
        {"name": "a", "score": 9, "max_score": 9, "status": "passed", "visibility": "visible"},
        {
            "name": "b",
            "score": 10,
            "max_score": 15,
            "status": "failed",
            "visibility": "after_published",
            "output": "AssertionError: 2 != 3\nmore",
        },
    ]
    lines = summary({"score": 15.2, "output": "Submitted 30 hours late", "tests": tests})
    assert lines[0] == "score: 15.2 of 24 (the tests sum to 19)"
    assert "tests: 1 of 2 passed" in lines and "  failed: b: AssertionError: 2 != 3" in lines
    assert any(
        line.startswith("  after_published: 1 tests, 15 points, shown to students once you publish") for line in lines
    )
    assert any("students see 9 of the 24 points and not their total" in line for line in lines)
    assert lines[-1] == "  Submitted 30 hours late"


def test_try_estimates_the_time_at_gradescopes_half_cpu_and_says_when_the_default_timeout_is_too_short():
    from grading.lms.gradescope_try import timing

    quick = timing(30, 20)
    assert "at least 20 CPU seconds: 40 s or more at Gradescope's default 0.5 CPU" in quick and "raise" not in quick
    assert "raise the assignment's autograder timeout" in timing(300, GRADESCOPE_SETUP)


def test_gradescope_needs_out_or_try_and_metadata_only_with_try(tmp_path, capsys):
    from grading.cli import main

    assert main(["gradescope", "--assignment", ASSIGNMENT]) == 2
    assert "needs --out autograder.zip" in capsys.readouterr().err
    assert main(["gradescope", "--out", str(tmp_path / "a.zip"), "--metadata", str(tmp_path / "m.json")]) == 2
    assert "--metadata is for --try" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_try_runs_the_built_zip_as_gradescope_would_and_prints_the_summary(tmp_path, capsys):
    """Issue 41.8: `gradescope --try NOTEBOOK` builds the zip, runs its run_autograder in a folder laid out as
    /autograder (not /autograder itself), and prints what Gradescope would show; the instructor's notebook earns
    full marks."""
    from grading.cli import main

    notebook = tmp_path / f"{ASSIGNMENT}.ipynb"
    shutil.copyfile(REPO / "notebooks" / f"{ASSIGNMENT}.ipynb", notebook)
    before = set(Path(tempfile.gettempdir()).glob("gradescope-try-*"))
    assert main(["gradescope", "--assignment", ASSIGNMENT, "--late-penalty", "10%/day", "--try", str(notebook)]) == 0
    said = capsys.readouterr().out
    most = sum(points_of(ASSIGNMENT).values())
    assert f"score: {most:g} of {most:g} (the tests sum to {most:g})" in said, said
    assert "no --metadata: tried as Try Student" in said and "after_published: " in said
    assert "run_autograder took" in said
    assert set(Path(tempfile.gettempdir()).glob("gradescope-try-*")) == before  # its folder is removed


def test_the_zips_default_limits_fit_gradescopes_default_timeout_and_more_says_what_to_set(tmp_path):
    """Issue 41.8: the zip let a notebook run 900 s, and Gradescope stops a run at 10 minutes by default, with no
    score: by default the notebook's limit and the set-up fit; a longer limit names the setting and the minutes."""
    said = []
    gradescope.build(tmp_path / "a.zip", [ASSIGNMENT], log=said.append)
    assert GRADESCOPE_NOTEBOOK_TIMEOUT + GRADESCOPE_SETUP <= GRADESCOPE_TIMEOUT
    assert any("Gradescope's default autograder timeout (10 minutes) holds it" in line for line in said), said
    assert any("hidden tests are after_published: before then students see" in line for line in said), said
    said.clear()
    gradescope.build(tmp_path / "b.zip", [ASSIGNMENT], notebook_timeout=900, log=said.append)
    expected = -(-(900 + GRADESCOPE_SETUP) // 60)
    assert any(f"raise the assignment's autograder timeout (its Settings) to {expected} minutes" in x for x in said)
    with pytest.raises(GradingError, match="--notebook-timeout 5000: expected 1 to"):
        gradescope.build(tmp_path / "c.zip", [ASSIGNMENT], notebook_timeout=5000, log=said.append)
    assert not (tmp_path / "c.zip").exists()


def test_run_grades_with_the_limits_the_zip_was_made_with(tmp_path, monkeypatch):
    import grading.grade.autograde

    given = {}

    def autograde(*args, settings, **kwargs):
        given.update(vars(settings))
        raise GradingError("stopped here by the test")

    monkeypatch.setattr(grading.grade.autograde, "autograde", autograde)
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    (root / "submission").mkdir()
    config = {"assignments": [ASSIGNMENT], "notebook_timeout": 123, "memory_mb": 456}
    (root / "source" / gradescope.CONFIG).write_text(json.dumps(config))
    write_notebook(
        read_notebook(REPO / "notebooks" / f"{ASSIGNMENT}.ipynb"), root / "submission" / f"{ASSIGNMENT}.ipynb"
    )
    (root / "submission_metadata.json").write_text(json.dumps(ON_TIME))
    assert gradescope.run(root) == 1
    assert given["notebook_timeout"] == 123 and given["memory_mb"] == 456


def test_the_course_and_the_zips_setup_sh_ask_for_one_python_minimum():
    "Issue 41.8: pyproject said 3.10+, setup.sh 3.11+ (nbgrader 0.9.6 needs 3.11: so does the course)."
    import tomllib

    required = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    major, minor = (int(part) for part in required.removeprefix(">=").split("."))
    assert f"sys.version_info < ({major}, {minor})" in gradescope.SETUP_SH
    assert f"needs Python {major}.{minor} or newer" in gradescope.SETUP_SH
    kit = tomllib.loads((REPO / "grading" / "authoring" / "kit" / "pyproject.toml").read_text())["project"]
    assert kit["requires-python"] == required, "the student kit asks for the same Python"
    assert f"min_python = {major}.{minor}\n" in (REPO / "settings.ini").read_text()
    for readme in ["README.md", "grading/authoring/kit/README.md"]:
        assert f"Python {major}.{minor} or newer" in (REPO / readme).read_text(), readme


def test_try_lays_out_a_folder_as_gradescope_lays_out_autograder_and_refuses_a_missing_submission(tmp_path):
    from grading.lms.gradescope_try import TRY_USER, lay_out

    zipped = gradescope.build(tmp_path / "a.zip", [ASSIGNMENT], log=lambda message: None)
    upload = tmp_path / "upload"
    (upload / "extra").mkdir(parents=True)
    (upload / f"{ASSIGNMENT}.ipynb").write_text("{}")
    (upload / "extra" / "notes.txt").write_text("mine")
    root, said = tmp_path / "root", []
    root.mkdir()
    lay_out(root, zipped, upload, None, said.append)
    assert (root / "submission" / f"{ASSIGNMENT}.ipynb").is_file() and (root / "submission" / "extra").is_dir()
    assert os.access(root / "source" / "run_autograder", os.X_OK) and (root / "results").is_dir()
    metadata = json.loads((root / "submission_metadata.json").read_text())
    assert metadata["users"] == [TRY_USER] and "no --metadata" in said[0]
    with pytest.raises(GradingError, match="no such notebook or folder"):
        lay_out(tmp_path / "other", zipped, tmp_path / "nothing.ipynb", None, said.append)
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "again").mkdir()
    with pytest.raises(GradingError, match="--metadata .*bad.json: cannot be read as JSON"):
        lay_out(tmp_path / "again", zipped, upload, tmp_path / "bad.json", said.append)
