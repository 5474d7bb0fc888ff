"""Grade one submission (one student, one notebook) in a process of its own: `python -m grading.job SPEC.json`.

The orchestrator (grading.autograde) starts one such process per submission, several at a time, and kills it if it
outlives its time limit. What it does, in a fresh scratch folder:

1. exports the student's exercise cells, inside the instructor's given code, into a package of their own;
2. runs the notebook with nbgrader in the sandboxed kernel, for the feedback the student reads;
3. runs the clean room (grading.cleanroom), whose verdicts are the score;
4. writes the feedback and the result (a JSON file, written to a temporary name and renamed).
"""
import copy
import hashlib
import json
import os
import re
import secrets
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .cleanroom import exported_sources, plan_cells
from .errors import GradingError
from .notebooks import nbgrader_meta, read_notebook, write_atomic, write_notebook
from .sandbox import ENV as SANDBOX_ENV, Limits


@dataclass
class Spec:
    student: str
    assignment: str
    submitted: str            # the student's notebook
    instructor: str           # the instructor's notebook (solutions and hidden tests)
    released: str             # the student version (stubs), for exercise cells a student deleted
    master: str               # the nbgrader course with the gradebook made by generate_assignment
    reference: str            # folder holding the reference tinytorch/ and settings.ini
    module_file: str          # e.g. tinytorch/core/elementwise.py
    module: str               # e.g. tinytorch.core.elementwise
    earlier_modules: list     # reference modules of the notebooks before this one
    scratch: str              # where the job makes its folder
    result: str               # where the result JSON goes
    feedback: str             # where the feedback HTML goes
    kernelspec: str           # folder with kernels/tinytorch-sandbox
    cell_timeout: int = 120
    notebook_timeout: int = 900
    uid: int | None = None
    memory_mb: int = 4096
    hide: list = field(default_factory=list)
    fingerprint: dict = field(default_factory=dict)

    @classmethod
    def load(cls, path):
        return cls(**json.loads(Path(path).read_text()))

    def save(self, path):
        write_atomic(path, json.dumps(asdict(self), indent=1))


def digest(text):
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# -- 1. The student's package ----------------------------------------------------------------------------------------

def restored_notebook(instructor, submitted, released):
    """The instructor's notebook with the student's exercise cells put in: given code, setup and tests are the
    instructor's whatever the student did to them; an exercise cell the student deleted is the release's stub."""
    answers = {nbgrader_meta(c).get("grade_id"): c.source for c in released.cells if nbgrader_meta(c).get("solution")}
    answers.update({nbgrader_meta(c).get("grade_id"): c.source for c in submitted.cells
                    if nbgrader_meta(c).get("solution") and nbgrader_meta(c).get("grade_id") in answers})
    nb = copy.deepcopy(instructor)
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if meta.get("solution"):
            cell.source = answers.get(meta.get("grade_id"), cell.source)
    return nb


def build_package(spec, nb, target):
    "Reference modules of every other notebook, plus this notebook's module exported from `nb` (the answer removed)."
    from .release import export_package
    shutil.copytree(Path(spec.reference) / "tinytorch", target / "tinytorch")
    shutil.copyfile(Path(spec.reference) / "settings.ini", target / "settings.ini")
    (target / spec.module_file).unlink(missing_ok=True)
    write_notebook(nb, target / "nbs" / f"{spec.assignment}.ipynb")
    try:
        export_package(target)
    except GradingError:
        # nbdev cannot parse a cell with a syntax error; a module of the raw cells fails to import in the same way,
        # and the clean room then runs the cells one by one
        (target / spec.module_file).write_text("\n\n".join(exported_sources(nb)) + "\n")
    finally:
        shutil.rmtree(target / "nbs")            # it holds the hidden tests
    if not (target / spec.module_file).exists():
        raise GradingError(f"the notebook exported no {spec.module_file}: is its '#| default_exp' cell intact?")


# -- 2. nbgrader, for the feedback -----------------------------------------------------------------------------------

def nbgrader_run(spec, course_root, package):
    from .course import Course, patched_environ
    course = Course(course_root, cell_timeout=spec.cell_timeout, sandboxed=True)
    course.submit(spec.student, spec.assignment, Path(spec.submitted))
    hide = spec.hide + [str(course_root / "source"), str(course_root / "gradebook.db")]
    with patched_environ(sandbox_env(spec, hide, package, course_root.parent / "home-kernel")):
        try:
            course.autograde(spec.assignment, spec.student)
        except GradingError:
            kill_uid(spec.uid)       # once more: a kernel that was slow to start on a busy machine fails the run
            course.autograde(spec.assignment, spec.student)
    tests, _ = course.scores(spec.assignment, spec.student)
    return course, tests


def sandbox_env(spec, hide, pythonpath, home):
    "Environment for processes started inside: the sandbox's limits and hidden paths, and where tinytorch is."
    limits = Limits(memory_mb=spec.memory_mb, cpu_seconds=max(600, 20 * spec.cell_timeout), uid=spec.uid, hide=hide,
                    home=str(home))
    return {SANDBOX_ENV: limits.to_env(), "JUPYTER_PATH": spec.kernelspec, "PYTHONPATH": str(pythonpath),
            "TINYTORCH_QUIET": "1"}


# -- 3. The clean room -----------------------------------------------------------------------------------------------

GRACE = 5             # seconds, beyond the cell timeout, that the grader waits for a cell's result
RESTARTS = 5          # times the clean room is started again after a crash or a hang


class Room:
    "One clean-room process, fed one cell at a time."

    def __init__(self, spec, workdir, env, header):
        child_in, self.to_child = os.pipe()          # (read end, write end)
        from_child, child_out = os.pipe()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "grading.sandbox", "--", sys.executable, str(workdir / "runner" / "cleanroom.py"),
             str(child_in), str(child_out)],
            pass_fds=(child_in, child_out), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=None if os.environ.get("TINYTORCH_DEBUG_CLEANROOM") else subprocess.DEVNULL,
            env=env, cwd=workdir / "cwd", start_new_session=True)
        os.close(child_in)
        os.close(child_out)
        self.reader = Reader(from_child)
        self.timeout = spec.cell_timeout + GRACE
        self.imported = self.send(header, self.timeout + 30)

    def send(self, message, timeout=None):
        "Send a cell (or the header); return the result record, or None when the process died or hung."
        try:
            os.write(self.to_child, (json.dumps(message) + "\n").encode())
        except OSError:
            return None
        return self.reader.next(time.time() + (timeout or self.timeout))

    def close(self):
        try:
            os.write(self.to_child, b'{"event": "end"}\n')
        except OSError:
            pass
        os.close(self.to_child)
        stop(self.process)
        self.reader.close()


def clean_room(spec, cells, package, workdir, hide, deadline, exported):
    """Run the instructor's cells against the student's module in the sandbox; return ({test id: (passed, message)},
    notes). A crash or a hang fails the cell that caused it; a new process then replays the setup and goes on."""
    runner = workdir / "runner"
    runner.mkdir()
    shutil.copyfile(Path(__file__).with_name("cleanroom.py"), runner / "cleanroom.py")
    (workdir / "cwd").mkdir()
    env = dict(os.environ, MPLBACKEND="Agg", **sandbox_env(spec, hide, package, workdir / "home-clean"))
    header = {"package": str(package), "cwd": str(workdir / "cwd"), "module": spec.module, "exported": exported,
              "earlier_modules": spec.earlier_modules, "cell_timeout": spec.cell_timeout}
    results, notes, room, restarts, position, setup_failed = {}, [], None, 0, 0, False
    try:
        while position < len(cells):
            cell = cells[position]
            if time.time() > deadline or restarts > RESTARTS:
                why = "not run: the time limit for this notebook was reached" if time.time() > deadline else \
                    f"not run: the code crashed or hung {restarts} times"
                results.update({c["id"]: (False, why) for c in cells[position:] if c["kind"] == "test"})
                notes.append(why)
                break
            if room is None:
                room = Room(spec, workdir, env, header)
                if restarts == 0:
                    notes.append(describe_import(room.imported))
                replayed = [room.send(c) for c in cells[:position] if c["kind"] != "test"]
                if room.imported is None or None in replayed:
                    restarts += 1
                    room.close()
                    room = None
                    continue
            record = room.send(cell)
            if record is None:
                why = room.reader.why(cell)
                if cell["kind"] == "test":
                    results[cell["id"]] = (False, why)
                notes.append(why)
                room.close()
                room, restarts = None, restarts + 1
            elif record.get("kind") == "test":
                results[record["id"]] = (record["passed"], record["message"])
            elif not record.get("passed"):
                # Only the first failure says something: later ones follow from it. An exercise not done yet is no
                # news either: its tests say so.
                if not setup_failed and "NotImplementedError" not in record["message"]:
                    notes.append(f"{'your exercise' if record.get('kind') == 'solution' else 'the given cell'} "
                                 f"{record['id']} failed: {record['message'][:300]}")
                setup_failed = True
            if record is not None and record.get("kind") != "test" and record.get("changed"):
                notes.append(f"while {record['id']} ran, your code replaced {', '.join(record['changed'][:3])} "
                             "(put back)")
            position += 1
    finally:
        if room is not None:
            room.close()
    return results, "; ".join(n for n in notes if n)


def describe_import(record):
    if record is None:
        return "your module did not finish importing (an endless loop, os._exit or a crash at import time)"
    if record.get("error"):
        return (f"your module could not be imported ({record['error']}); each of your exercise cells was run on its "
                "own instead, as in the notebook")
    if record.get("changed"):
        return f"on import your code replaced {', '.join(record['changed'][:3])}: put back before the tests ran"
    return ""


class Reader:
    "JSON lines from the child, each awaited no longer than a deadline."

    def __init__(self, fd):
        self.fd, self.buffer, self.eof, self.timed_out = fd, b"", False, False

    def next(self, deadline):
        while b"\n" not in self.buffer:
            if self.eof:
                return None
            ready, _, _ = select.select([self.fd], [], [], max(0.0, deadline - time.time()))
            if not ready:
                self.timed_out = True
                return None
            chunk = os.read(self.fd, 65536)
            self.eof = not chunk
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            return None

    def why(self, cell):
        if self.timed_out:
            return f"{cell['id']} did not finish in time (an endless loop that ignores interrupts?)"
        return f"the process ended while {cell['id']} ran (os._exit, a crash, or a memory or CPU limit)"

    def close(self):
        try:
            os.close(self.fd)
        except OSError:
            pass


def stop(process):
    "End the process and everything it started."
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        pass


def kill_uid(uid):
    "As root: end every process left running under the grading slot's user id (a kernel's children, say)."
    if uid is None or os.geteuid() != 0:
        return
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        match = re.search(r"^Uid:\s+(\d+)", text, re.MULTILINE)
        if match and int(match[1]) == uid:
            try:
                os.kill(int(status.parent.name), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


# -- 4. Putting it together ------------------------------------------------------------------------------------------

def test_cells(instructor):
    "{test id: (points, fingerprint of its source)} for every graded test cell."
    return {nbgrader_meta(c)["grade_id"]: (float(nbgrader_meta(c).get("points", 0)), digest(c.source))
            for c in instructor.cells if nbgrader_meta(c).get("grade")}


def grade(spec):
    instructor = read_notebook(spec.instructor)
    submitted = read_notebook(spec.submitted)
    released = read_notebook(spec.released)
    tests = test_cells(instructor)
    workdir = Path(spec.scratch) / secrets.token_hex(16)
    workdir.mkdir(mode=0o700)
    if spec.uid is not None and os.geteuid() == 0:
        os.chown(workdir, spec.uid, spec.uid)     # the student's user may read and enter it, nobody else: not even
        workdir.chmod(0o500)                      # that user may write in it (root still can)
    deadline = time.time() + spec.notebook_timeout / 2
    try:
        package = workdir / "env"
        restored = restored_notebook(instructor, submitted, released)
        build_package(spec, restored, package)
        answers = {nbgrader_meta(c)["grade_id"]: c.source for c in restored.cells if nbgrader_meta(c).get("solution")}
        verdicts, note = clean_room(spec, plan_cells(instructor, answers), package, workdir,
                                    spec.hide + [str(workdir / "course")], deadline, exported_sources(restored))
        kill_uid(spec.uid)
        result = score(spec, tests, verdicts, {}, [note])
        write_atomic(spec.result, json.dumps(result, indent=1))      # the score is known: a kill from here on loses none
        shutil.copytree(spec.master, workdir / "course", ignore=shutil.ignore_patterns("submitted", "autograded",
                                                                                       "feedback", "release"))
        try:
            course, nbgrader_tests = nbgrader_run(spec, workdir / "course", package)
        except GradingError as error:
            course, nbgrader_tests = None, {}
            note = "; ".join(n for n in [note, f"no feedback: nbgrader could not run the notebook ({error})"] if n)
        result = score(spec, tests, verdicts, nbgrader_tests, [note])
        if course is not None:
            write_feedback(course, spec, result)
    finally:
        kill_uid(spec.uid)
        shutil.rmtree(workdir, ignore_errors=True)
    write_atomic(spec.result, json.dumps(result, indent=1))
    return result


def score(spec, tests, verdicts, nbgrader_tests, notes):
    rows, disagreements = {}, []
    for test_id, (points, fingerprint) in tests.items():
        passed, message = verdicts.get(test_id, (False, "did not run"))
        rows[test_id] = {"score": points if passed else 0.0, "max_score": points, "fingerprint": fingerprint,
                         "message": message}
        notebook_score = nbgrader_tests.get(test_id, (None,))[0]
        if notebook_score and not passed:
            disagreements.append(test_id)
    notes = [n for n in notes if n]
    if disagreements:
        notes.append(f"{', '.join(disagreements)} passed in your notebook but not in the clean re-run of the "
                     "instructor's cells (see the feedback)")
    return {"student": spec.student, "assignment": spec.assignment, "tests": rows,
            "score": sum(r["score"] for r in rows.values()), "max_score": sum(r["max_score"] for r in rows.values()),
            "note": "; ".join(notes), "fingerprint": spec.fingerprint,
            "isolation": "full" if spec.uid is not None else "limits only",   # the grader gives a uid only then
            "graded_at": time.strftime("%Y-%m-%dT%H:%M:%S")}


def write_feedback(course, spec, result):
    "nbgrader's feedback HTML, with the authoritative scores of the clean room at the top."
    import html
    try:
        page = Path(course.feedback(spec.assignment, spec.student)).read_text()
    except GradingError:
        return
    lines = "".join(
        f"<li>{'✔' if r['score'] == r['max_score'] else '✘'} <b>{html.escape(t)}</b> {r['score']:g}/{r['max_score']:g}"
        + (f": {html.escape(r['message'])}" if r["message"] and r["score"] < r["max_score"] else "") + "</li>"
        for t, r in result["tests"].items())
    banner = (f'<div id="tinytorch-score" style="border:2px solid #444;padding:8px;margin:8px">'
              f"<h2>{html.escape(spec.assignment)}: {result['score']:g} / {result['max_score']:g}</h2>"
              f"<p>Scores come from a clean re-run of the instructor's cells with your exported code.</p>"
              f"<ul>{lines}</ul>{'<p>' + html.escape(result['note']) + '</p>' if result['note'] else ''}</div>")
    page = page.replace("<body>", "<body>" + banner, 1) if "<body>" in page else banner + page
    write_atomic(spec.feedback, page)


def die_with_parent():
    "If the grader that started this job is killed, the job is killed too (Linux: PR_SET_PDEATHSIG)."
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def main(argv=None):
    die_with_parent()
    spec = Spec.load((argv or sys.argv[1:])[0])
    try:
        grade(spec)
    except GradingError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
