"""Red team: a class of 63 generated submissions (grading/examples/classroom.py), good, partial, broken and cheating, graded
in one command; every student gets the score their honest work earns, and nothing of the grader's is lost.

The class is graded twice at the same time: once by this process's user (root on the CI machine) and once by an
unprivileged user (`TINYTORCH_REDTEAM_USER`, which .ci/run creates), each into its own folder; both tables must be
exactly as expected. Then the same class is graded again by a run killed halfway and restarted (same table), and
again after a hidden test was changed (only that test's scores change)."""

import csv
import glob
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, run_cli
from grading.common.notebooks import read_notebook, write_notebook
from grading.examples.attacks import DAEMON_MARK, EXPORT_TARGET, REDTEAM_PORT
from grading.examples.cheats import LEAKS, spell_leak
from grading.examples.classroom import ACTIVATIONS, ELEMENTWISE, NEEDS_SANDBOX, compare, make_class
from grading.grade.gradebook import Row
from grading.sandbox.sandbox import problem

pytestmark = pytest.mark.slow
SANDBOX = problem() is None
OTHER_USER = os.environ.get("TINYTORCH_REDTEAM_USER")
OPTIONS = ["--cell-timeout", "5", "--notebook-timeout", "120"]  # 5 s: the endless loops end sooner
NEW_ATTACKS = ["axel", "bea", "cole", "dora", "mallory"]  # on the grader's process and its checks
SANDBOX_ATTACKS = ["fay", "gus", "hal", "iris"]  # on the machine: files, processes, network


def read_rows(grades):
    with open(Path(grades) / "grades.csv") as f:
        return [
            Row(r["student"], r["assignment"], r["notebook"], float(r["score"] or 0), float(r["max_score"]), r["note"])
            for r in csv.DictReader(f)
        ]


class Listener:
    "A TCP server on the grading machine that iris tries to reach from inside the sandbox."

    def __init__(self):
        self.socket = socket.socket()
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind(("127.0.0.1", REDTEAM_PORT))
        self.socket.listen()
        self.socket.settimeout(0.5)
        self.connections, self.running = 0, True
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while self.running:
            try:
                self.socket.accept()[0].close()
                self.connections += 1
            except OSError:
                pass

    def close(self):
        self.running = False
        self.thread.join()
        self.socket.close()


def other_user_command(args):
    "The same autograde command, run as the unprivileged user (root can switch to it)."
    return ["runuser", "-u", OTHER_USER, "--", sys.executable, "-m", "grading", *map(str, args)]


@pytest.fixture(scope="module")
def graded_class(kit, tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    expected = make_class(kit, root / "submissions", grades=root / "grades")
    # Each run's temporary files go to a folder of its own, which must be empty afterwards: other tests running at
    # the same time (pytest-xdist) make and remove temporary folders of their own in /tmp.
    temp = root / "tmp"
    temp.mkdir()
    listener = Listener()
    other, timings = None, [root / "timings.jsonl"]  # each job's split and how its late calls ended, for a failure
    if OTHER_USER:
        other_root = Path(tempfile_for(OTHER_USER))
        shutil.copytree(root / "submissions", other_root / "submissions")
        (other_root / "tmp").mkdir()
        subprocess.run(["chown", "-R", OTHER_USER, str(other_root)], check=True)
        other = subprocess.Popen(
            other_user_command(["autograde", other_root / "submissions", "--out", other_root / "grades", *OPTIONS]),
            cwd=REPO,
            env=dict(
                os.environ,
                PYTHONPATH=str(REPO),
                HOME=str(other_root),
                TMPDIR=str(other_root / "tmp"),
                TINYTORCH_TIMINGS=str(other_root / "timings.jsonl"),
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    started = time.time()
    times = {"TMPDIR": str(temp), "TINYTORCH_TIMINGS": str(timings[0])}
    result = run_cli("autograde", root / "submissions", "--out", root / "grades", *OPTIONS, env=times)
    seconds = time.time() - started
    other_rows = None
    if other is not None:
        out, err = other.communicate(timeout=1800)
        assert other.returncode in (0, 1), err[-2000:]
        other_rows = read_rows(other_root / "grades")
        timings.append(other_root / "timings.jsonl")
    time.sleep(1)
    listener.close()
    leftovers = set(glob.glob(f"{temp}/*"))
    if other is not None:
        leftovers |= set(glob.glob(f"{other_root}/tmp/*"))
        leftovers |= set(sandbox_cgroups_left(os.environ.get("TINYTORCH_CGROUP", ""), OTHER_USER))
    return {
        "root": root,
        "expected": expected,
        "result": result,
        "rows": read_rows(root / "grades"),
        "seconds": seconds,
        "other_rows": other_rows,
        "connections": listener.connections,
        "leftovers": leftovers,
        "timings": timings,
    }


def sandbox_cgroups_left(delegated, user):
    """The cgroups `user`'s sandboxes left in the cgroup .ci/run delegates (every test's sandboxes are made there;
    only this run's are that user's): each is removed when its sandbox is stopped (axel and fay, whose workers fail
    their start, left theirs)."""
    if not delegated:
        return []
    name, uid = delegated.strip("/"), pwd.getpwnam(user).pw_uid
    made = glob.glob(f"/sys/fs/cgroup/*/{name}/tinytorch-*") + glob.glob(f"/sys/fs/cgroup/{name}/tinytorch-*")
    return [path for path in made if owner(path) == uid]


def owner(path):
    try:
        return os.stat(path).st_uid
    except FileNotFoundError:  # another test's sandbox, stopped meanwhile
        return None


def tempfile_for(user):
    import tempfile

    folder = tempfile.mkdtemp(prefix="redteam-other-")
    os.chmod(folder, 0o755)
    return folder


def test_the_class_has_71_submissions_of_every_kind(graded_class):
    expected, rows = graded_class["expected"], graded_class["rows"]
    assert len(expected) == 71 and {r.student for r in rows} == set(expected)
    assert sum("problem" in e for e in expected.values()) == 6


@pytest.mark.parametrize("student", ["alice", "bob", "carol", "dan", "rosa", "tara", "uma"])
def test_good_partial_and_wrong_work_scores_what_it_earns(graded_class, student):
    check(graded_class, student)


@pytest.mark.parametrize("student", ["erin", "frank", "gina", "hank", "ivy", "jack", "kim", "liam", "maya"])
def test_broken_code_costs_only_the_tests_that_need_it(graded_class, student):
    "A syntax error, endless loops, os._exit, a segfault, a memory bomb, 20 MB of output, sys.exit, input()."
    check(graded_class, student)


@pytest.mark.parametrize("student", ["nick", "olga", "pete", "quinn", "sam", "tim"])
def test_bad_files_are_named_in_the_table_and_cost_no_one_else(graded_class, student):
    check(graded_class, student)
    assert f"error: {student}/" in graded_class["result"].stderr


@pytest.mark.parametrize("student", ["vic", "wes", "xena", "yuri", "zoe"])
def test_patching_what_the_tests_rely_on_earns_nothing(graded_class, student):
    "Scratch cells patching check_backward and np.allclose; patched checkers on import and during a test; a"
    "replaced builtin; Tensor.backward replaced in notebook 07."
    check(graded_class, student)


def test_a_change_carried_by_a_callback_is_checked_as_a_reply_is(graded_class):
    """rex zeroes the test's vectors and parameters, then calls the test's loss_fn: its message carried the change
    before the reply (which then had nothing to refuse), and every H·v and its expected value became 0 (5 of 6)."""
    check(graded_class, "rex")


@pytest.mark.parametrize("student", ["sol", "tom", "uli", "vera"])
def test_an_empty_array_is_not_close_to_the_answer(graded_class, student):
    """np.allclose finds an empty array close to anything of up to four axes. sol's SquareBackward returns one as its
    gradient (4 of 4 before), tom's optimizers give every parameter one as its data (7 of 9 with nothing computed),
    uli's SquareBackward hides one inside a Tensor's data (4 of 4), vera's run_backward hands one to every leaf (8 of
    19, against 2 with run_backward undone): a rule's gradient may not be empty where the reference's is not, an
    array of the grader's objects keeps its shape, a Tensor's data is an array, and while a notebook is graded
    np.allclose finds an empty array close only to an empty one (verdict.strict_allclose)."""
    check(graded_class, student)


@pytest.mark.parametrize("student", NEW_ATTACKS)
def test_attacking_the_grader_process_earns_nothing(graded_class, student):
    "A forged result channel, patched NumPy internals, a swapped checker module, frame walking and sys.settrace."
    check(graded_class, student)


@pytest.mark.skipif(not SANDBOX, reason="the sandbox (bubblewrap) cannot run here")
@pytest.mark.parametrize("student", sorted(NEEDS_SANDBOX))
def test_attacking_the_machine_earns_nothing(graded_class, student):
    "The answer key by path, the instructor's files, the grades; the runner's files, symlinks and .pth files,"
    "daemons that outlive the job, the network and /proc."
    check(graded_class, student)


@pytest.mark.skipif(not SANDBOX, reason="the sandbox (bubblewrap) cannot run here")
def test_a_callback_past_the_graders_limit_is_refused(graded_class):
    """hugo asks a test's fn to broadcast 128 MB: refused, her numerical_grad goes on honestly (full marks); had the
    grader computed it, her attack would have returned no gradients."""
    check(graded_class, "hugo")


@pytest.mark.parametrize("student", ["fern", "gwen"])
def test_a_fork_bomb_or_a_full_tmp_costs_nobody_else(graded_class, student):
    "400 sleeping processes; /tmp and home filled and six processes of 600 MB: the sandbox's limits, nobody else's."
    check(graded_class, student)
    symptoms = ("Can't fork", "Resource temporarily unavailable", "bwrap:")
    for rows in (graded_class["rows"], graded_class["other_rows"] or []):
        hurt = [r for r in rows if r.student not in ("fern", "gwen") and any(s in r.note for s in symptoms)]
        assert not hurt, f"another student paid for {student}'s attack: {hurt}"


def endings(graded_class, student):
    "How each run ended the student's calls that ran out of time (TINYTORCH_TIMINGS), for a failure's message."
    found = []
    for path in graded_class["timings"]:
        for line in Path(path).read_text().splitlines() if Path(path).exists() else []:
            entry = json.loads(line)
            if entry["submission"].startswith(f"{student}/") and "endings" in entry:
                found.append((Path(path).parent.name, entry["endings"]))
    return found


def check(graded_class, student):
    expected, rows = graded_class["expected"], graded_class["rows"]
    late = endings(graded_class, student)
    assert not compare(rows, {student: expected[student]}), ([r for r in rows if r.student == student], late)
    if graded_class["other_rows"] is not None:
        assert not compare(graded_class["other_rows"], {student: expected[student]}), ("as the ordinary user", late)


@pytest.mark.skipif(not OTHER_USER, reason="TINYTORCH_REDTEAM_USER is not set (.ci/run sets it)")
def test_two_runs_at_once_as_root_and_as_an_ordinary_user_give_the_same_table(graded_class):
    assert os.geteuid() == 0, "the CI machine runs the red team as root, and the second run as the ordinary user"
    mine = {(r.student, r.assignment): (r.score, r.max_score) for r in graded_class["rows"]}
    theirs = {(r.student, r.assignment): (r.score, r.max_score) for r in graded_class["other_rows"]}
    assert mine == theirs


@pytest.mark.skipif(not SANDBOX, reason="the sandbox (bubblewrap) cannot run here")
def daemons():
    "The pids of hal's daemons now running on this machine."
    return subprocess.run(["pgrep", "-f", DAEMON_MARK], capture_output=True, text=True).stdout.split()


def test_nothing_survives_the_job_or_leaves_the_sandbox(graded_class):
    # Another test may be grading hal at this moment (test_cluster, on the other worker): its daemons live as long as
    # that job does. A daemon that survived this class's job never ends, so waiting for the others still finds it.
    deadline = time.monotonic() + 90
    while (alive := daemons()) and time.monotonic() < deadline:
        time.sleep(1)
    assert not alive, f"hal's daemons survived the job: pids {alive}"
    assert graded_class["connections"] == 0, "iris reached a server on the grading machine"
    assert not os.path.exists("/tmp/pwned") and not any(
        glob.glob(os.path.join(p, "zz-redteam.pth")) for p in __import__("site").getsitepackages()
    )
    assert not [p for p in graded_class["leftovers"] if "tinytorch" in p], graded_class["leftovers"]  # and cgroups


@pytest.mark.skipif(not SANDBOX, reason="the sandbox (bubblewrap) cannot run here")
def test_the_grader_files_survive_an_attack(graded_class):
    root = graded_class["root"]
    alice = json.loads((root / "grades" / "results" / "alice" / f"{ELEMENTWISE}.json").read_text())
    assert alice["score"] == alice["max_score"] == 24
    book = json.loads((root / "grades" / "gradebook.json").read_text())
    assert book["kate"][ELEMENTWISE]["score"] == 0 and book["alice"][ELEMENTWISE]["score"] == 24
    assert book["fay"][ELEMENTWISE]["score"] == 0 and book["iris"][ELEMENTWISE]["score"] == 0


def test_a_students_nbdev_directives_write_nothing_outside_the_package(graded_class):
    """nadia's cells tell nbdev, which the grader runs outside the sandbox, to append one to a file beside her
    notebook and to write the module into the grades folder: her cells keep the instructor's directives
    (tests/test_export_directives.py), nothing is written, and her solved notebook earns full marks."""
    root = graded_class["root"]
    check(graded_class, "nadia")
    target = root / "submissions" / "nadia" / ELEMENTWISE / EXPORT_TARGET[0]
    assert "." not in str(target.parent), "nbdev makes the dots of a path folders: the attack would aim nowhere"
    assert target.read_text() == EXPORT_TARGET[1] and not (root / "grades" / "nadia.py").exists()


@pytest.mark.parametrize("student", ["suri", "ines"])
def test_text_that_utf8_cannot_hold_is_graded_not_a_fault_of_the_grader(graded_class, student):
    """A lone UTF-16 surrogate in a notebook's JSON (suri) or in the error of a module that fails its import (ines)
    made the job fail writing UTF-8: "not graded, a fault of the grader" at every run. Each is U+FFFD now."""
    check(graded_class, student)
    page = graded_class["root"] / "grades" / "feedback" / student / f"{ELEMENTWISE}.html"
    assert page.read_text(encoding="utf-8")


def test_the_package_a_student_runs_with_holds_no_answer_of_a_later_notebook(graded_class):
    "lena prints every module of the package her code runs with into her feedback page."
    root = graded_class["root"]
    lena = (root / "grades" / "feedback" / "lena" / f"{ELEMENTWISE}.html").read_text()
    assert "LEAKED" in lena and "activations.py" in lena, "the attack did not run"
    assert "grad_output * (1 - t * t)" not in lena, "07's answer (TanhBackward) reached a 04 submission"
    assert "stack.append((tensor, True))" not in lena, "06's answer (topological_order) reached a 04 submission"


@pytest.mark.parametrize("student", sorted(LEAKS))
def test_a_rule_cannot_write_the_hidden_inputs_onto_its_page(graded_class, student):
    """leo raises them spelled in letters, mia returns them as a string (which the check quoted), noa as the name of a
    class it sends back. Each loses the leaking rule's tests only, and neither the page nor the gradebook holds the
    first value its hidden test drew for this student (grading.grade.variant), in digits or in letters."""
    from grading.grade.variant import seed_of

    check(graded_class, student)
    rule, _, _, letters = LEAKS[student]
    grades = graded_class["root"] / "grades"
    entry = json.loads((grades / "gradebook.json").read_text())[student][ELEMENTWISE]
    shown = entry["tests"][rule]["message"]  # a visible test shows its own inputs; a returned string, its type only
    assert "LEAK" in shown or "it returned a value of type str" in shown, "the attack did not run"
    assert "LEAK" not in entry["tests"][f"{rule}_hidden"]["message"]
    first = np.random.default_rng(seed_of(f"{rule}_hidden", entry["variant"])).normal()  # as the hidden test draws it
    secret = spell_leak(first, letters)
    page = (grades / "feedback" / student / f"{ELEMENTWISE}.html").read_text()
    assert secret not in page and secret not in json.dumps(entry), f"{student} wrote a hidden input, {first}"


def test_a_rule_cannot_write_the_hidden_inputs_in_the_digits_of_what_it_returns(graded_class):
    """quin's NegBackward returns its first saved value as a float, her MulBackward a dict of them: the check named
    what a rule returned by its repr, digits and all (red team, round 3). It names the type: neither the page nor the
    gradebook holds the first value either hidden test drew for her."""
    from grading.grade.variant import seed_of

    check(graded_class, "quin")
    grades = graded_class["root"] / "grades"
    entry = json.loads((grades / "gradebook.json").read_text())["quin"][ELEMENTWISE]
    assert "it returned a value of type float" in entry["tests"]["neg_backward"]["message"], "the attack did not run"
    assert "it returned a value of type dict" in entry["tests"]["mul_backward"]["message"]
    page = (grades / "feedback" / "quin" / f"{ELEMENTWISE}.html").read_text()
    for rule in ("neg_backward", "mul_backward"):
        first = np.random.default_rng(seed_of(f"{rule}_hidden", entry["variant"])).normal()
        digits = repr(first)[:8]  # its first digits as the repr wrote them: rounding to 4 places would change them
        assert digits not in page and digits not in json.dumps(entry), f"quin wrote {rule}_hidden's input {first}"


def test_a_forged_reply_whose_array_shape_holds_the_inputs_quotes_none_of_them(graded_class):
    """yara's NegBackward replaces her worker's wire.pack to add an array whose shape holds her inputs, with two
    dimensions of 2**32 that wrapped NumPy's element count to 0: reshape's error quoted the shape, and so the hidden
    test's inputs, onto the page (red team round 5). Refused as a malformed message, quoting nothing."""
    from grading.grade.variant import seed_of

    check(graded_class, "yara")
    grades = graded_class["root"] / "grades"
    entry = json.loads((grades / "gradebook.json").read_text())["yara"][ELEMENTWISE]
    assert "not plain data" in entry["tests"]["neg_backward"]["message"], "the attack did not run"
    first = np.random.default_rng(seed_of("neg_backward_hidden", entry["variant"])).normal()
    encoded = str(int(round((first + 10) * 1e6)))  # as the attack writes it into the shape
    page = (grades / "feedback" / "yara" / f"{ELEMENTWISE}.html").read_text()
    assert encoded not in page and encoded not in json.dumps(entry), f"yara wrote the hidden input {first}"
    assert "4294967296" not in page


def test_an_elementwise_rule_by_differences_with_each_elements_own_step_is_refused(graded_class):
    """rhea's MulBackward and NegBackward step each element by its own size: exact on the tests' inputs and on mixed
    magnitudes, refused by the probe's infinite values (red team, round 3)."""
    check(graded_class, "rhea")
    entry = json.loads((graded_class["root"] / "grades" / "gradebook.json").read_text())["rhea"][ELEMENTWISE]
    for rule in ("mul_backward", "neg_backward"):
        assert "when some saved values are infinite" in entry["tests"][rule]["message"], rule


def test_the_hidden_tests_worker_cannot_hand_its_inputs_to_the_pages_worker_through_a_module_flag(graded_class):
    """pia's ReLU rule sets a module-level flag to a string of its inputs (in the hidden test, the hidden ones), and her
    sigmoid rule prints the flag in a visible test: the flags travel with every call, but the grader takes no string
    and no new type from the student's code, and puts them back after each hidden cell."""
    from grading.grade.variant import seed_of

    check(graded_class, "pia")
    grades = graded_class["root"] / "grades"
    entry = json.loads((grades / "gradebook.json").read_text())["pia"][ACTIVATIONS]
    page = (grades / "feedback" / "pia" / f"{ACTIVATIONS}.html").read_text()
    assert "FLAG" in page, "the attack did not run (a visible test prints the flag)"
    # the page's worker prints what its own visible ReLU test wrote (the visible inputs: hers to see); her flag is a
    # constant, which no longer travels at all (round 4), and nothing of the hidden worker's reaches the page's
    first = np.random.default_rng(seed_of("relu_backward_hidden", entry["variant"])).normal()
    assert spell_leak(first, False) not in page and not entry["note"]  # (her code is)


def test_a_constant_changed_by_the_students_code_does_not_change_the_graders_reference(graded_class):
    """sage's BCE rule is finite differences and sets the module's BCE_EPS to 0.5, which once travelled back into the
    grader's copy of the module with the flags: the reference rule, clipped there, was too far off to judge, and the
    test's own comparison passed the differences (13 of 14, red team round 4). Constants no longer travel."""
    check(graded_class, "sage")
    entry = json.loads((graded_class["root"] / "grades" / "gradebook.json").read_text())["sage"]["08_losses"]
    for test in ("bce_backward", "bce_backward_hidden"):
        assert "finite differences" in entry["tests"][test]["message"], (test, entry["tests"][test]["message"])


def test_a_class_named_after_a_path_to_numpys_types_is_refused_not_made(graded_class):
    """wren's SquareBackward sends back, on the hidden test's shape, an object whose class names a path through the
    module's imports to a NumPy type whose __new__ crashed the grader: the row was "not graded" at every run (red team
    round 4). The name is refused: the hidden test fails, the row is graded, nobody's run stops."""
    check(graded_class, "wren")
    entry = json.loads((graded_class["root"] / "grades" / "gradebook.json").read_text())["wren"]["02_function"]
    assert "sent back something the grader cannot check" in entry["tests"]["square_backward_hidden"]["message"]


def test_feedback_is_written_and_bounded(graded_class):
    root = graded_class["root"]
    kim = (root / "grades" / "feedback" / "kim" / f"{ELEMENTWISE}.html").read_text()
    assert "output truncated" in kim and len(kim) < 2_000_000, "20 MB of prints must not reach the feedback"
    vic = (root / "grades" / "feedback" / "vic" / f"{ELEMENTWISE}.html").read_text()
    assert 'id="tinytorch-score"' in vic and f"{ELEMENTWISE}: 0 / 24" in vic
    assert "BROADCAST_PAIRS + [((2, 1, 3), (4, 1))]" not in vic, "hidden test code must not appear in feedback"


def test_distribution_plot_and_gradebook_are_written(graded_class):
    root, rows, seconds = graded_class["root"], graded_class["rows"], graded_class["seconds"]
    png = root / "grades" / "distribution.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    book = json.loads((root / "grades" / "gradebook.json").read_text())
    assert book["carol"][ELEMENTWISE]["tests"]["mul_backward_hidden"]["score"] == 0
    graded = sum(1 for r in rows if r.max_score)
    print(
        f"\nclass of {len(rows)}: {graded} notebooks graded in {seconds:.0f} s "
        f"({graded / (seconds / 60):.1f} per minute, {os.cpu_count()} workers)"
    )


def test_killed_run_restarts_to_the_same_table(graded_class, tmp_path):
    "A run killed after its first results, then started again, ends with the table of the uninterrupted run."
    root, rows = graded_class["root"], graded_class["rows"]
    subs = tmp_path / "submissions"
    for student in ["alice", "carol", "dan", "nick", "hank", "wes"]:
        shutil.copytree(root / "submissions" / student, subs / student)
    out = tmp_path / "grades"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    process = subprocess.Popen(
        [sys.executable, "-m", "grading", "autograde", str(subs), "--out", str(out), "--workers", "1", *OPTIONS],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 600
    while not list((out / "results").glob("*/*.json")) and time.time() < deadline:
        time.sleep(0.5)
    process.send_signal(signal.SIGKILL)
    process.wait()
    finished = len(list((out / "results").glob("*/*.json")))
    assert 1 <= finished < 5, "the kill must land halfway"
    again = run_cli("autograde", subs, "--out", out, *OPTIONS)
    assert f"{finished} submissions already graded" in again.stdout
    uninterrupted = {
        (r.student, r.assignment): r.values()
        for r in rows
        if r.student in {"alice", "carol", "dan", "nick", "hank", "wes"}
    }
    assert {(r.student, r.assignment): r.values() for r in read_rows(out)} == uninterrupted


def test_regrading_after_a_hidden_test_is_fixed_changes_only_that_test(graded_class, tmp_path):
    root = graded_class["root"]
    subs = tmp_path / "submissions"
    for student in ["alice", "carol"]:
        shutil.copytree(root / "submissions" / student, subs / student)
    shutil.copytree(REPO / "notebooks", tmp_path / "notebooks")
    out = tmp_path / "grades"
    first = run_cli("autograde", subs, "--out", out, *OPTIONS, "--notebooks", tmp_path / "notebooks")
    assert first.returncode == 0, first.stderr
    before = json.loads((out / "gradebook.json").read_text())
    path = tmp_path / "notebooks" / f"{ELEMENTWISE}.ipynb"
    nb = read_notebook(path)
    (cell,) = [
        c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "add_backward_hidden"
    ]
    source = cell.source
    # a "fix" that the instructor's own solution fails is refused by the reference check: nobody is re-graded
    cell.source = source.replace("### END HIDDEN TESTS", "assert False, 'a stricter check'\n### END HIDDEN TESTS")
    write_notebook(nb, path)
    refused = run_cli("autograde", subs, "--out", out, *OPTIONS, "--notebooks", tmp_path / "notebooks")
    assert refused.returncode == 2 and "add_backward_hidden: AssertionError: a stricter check" in refused.stderr
    assert json.loads((out / "gradebook.json").read_text()) == before
    # the instructor fixes add_backward_hidden: a check that every solution passes, but a changed cell
    cell.source = source.replace("### END HIDDEN TESTS", "assert True, 'a stricter check'\n### END HIDDEN TESTS")
    write_notebook(nb, path)
    again = run_cli("autograde", subs, "--out", out, *OPTIONS, "--notebooks", tmp_path / "notebooks")
    assert "re-graded add_backward_hidden; other tests kept their scores" in again.stdout, again.stdout
    after = json.loads((out / "gradebook.json").read_text())
    for student in ["alice", "carol"]:
        old, new = before[student][ELEMENTWISE]["tests"], after[student][ELEMENTWISE]["tests"]
        assert new["add_backward_hidden"]["score"] == old["add_backward_hidden"]["score"]
        assert {t: v for t, v in new.items() if t != "add_backward_hidden"} == {
            t: v for t, v in old.items() if t != "add_backward_hidden"
        }


def test_the_verdict_is_the_graders_whatever_the_worker_says(graded_class):
    "xena patched the checkers inside her process: her wrong rule still fails, with the checker's own message."
    book = json.loads((graded_class["root"] / "grades" / "gradebook.json").read_text())
    tests = book["xena"][ELEMENTWISE]["tests"]
    assert tests["mul_backward"]["score"] == 0 and "wrong gradient at index" in tests["mul_backward"]["message"]
    assert tests["add_backward"]["score"] == 1
    axel = book["axel"][ELEMENTWISE]
    assert axel["score"] == 0 and "did not finish importing" in axel["note"], "a forged reply ends the worker"


def gradebook_entry(graded_class, student, notebook):
    return json.loads((graded_class["root"] / "grades" / "gradebook.json").read_text())[student][notebook]


def test_a_hidden_input_cannot_reach_the_page_through_locks_on_shared_files(graded_class):
    """Issue 44, point 1: lou's MulBackward holds flock locks on NumPy's files that spell its first saved value, bit
    by bit, and her NegBackward reads them in a visible test and prints what they hold. The hidden tests' worker ran
    alongside the page's and the page showed a hidden input. Now the page's run has ended before the hidden tests'
    begins, and no sandbox may lock a file (grading.sandbox.seccomp): she earns what her honest work earns."""
    import re

    check(graded_class, "lou")
    page = (graded_class["root"] / "grades" / "feedback" / "lou" / f"{ELEMENTWISE}.html").read_text()
    assert "LOCKS none" in page, "the attack did not run"
    assert not re.search(r"LOCKS -?[0-9]", page)


def test_a_float32_conv_rule_is_refused_saying_what_was_measured_not_a_shape_mistake(graded_class):
    "Issue 44, point 3: 12's checker caught the refusal of flo's float32 rows and called it a shape mistake."
    check(graded_class, "flo")
    tests = gradebook_entry(graded_class, "flo", "12_conv")["tests"]
    for test in ("conv2d_backward", "conv2d_backward_weight_hidden", "conv2d_backward_input_hidden"):
        assert "rounded to float32" in tests[test]["message"] and "another shape" not in tests[test]["message"], test


def test_central_differences_pasted_into_the_hvp_fail_when_graded_with_the_words_they_fail_with_at_home(graded_class):
    """Issue 44, point 4: paz pasted 14's visible central differences; they passed at home and failed when graded,
    blamed on create_graph. Now both fail, in the same words (tests/test_second_derivatives.py runs them at home)."""
    from grading.grade.ownership import moved_tensor

    check(graded_class, "paz")
    tests = gradebook_entry(graded_class, "paz", "14_higher_order")["tests"]
    said = "ValueError: " + moved_tensor("hessian_vector_product", {1: "params[0]", 2: "loss_fn"}, 1, 2)
    assert tests["second_derivative"]["message"] == said and tests["hvp_mlp"]["message"] == said
