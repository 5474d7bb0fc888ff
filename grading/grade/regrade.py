"""Regrade planning: what a run grades again, and what it keeps of the earlier runs into OUT.

A result's fingerprint is the submission, the instructor's notebook less its tests, the student's variant and the
held-out digits it was measured on: a result with the same one is kept, and when only some test cells changed only
those tests are graded again (merge). Results of submissions not in this run, their late records, and the late policy
of the earlier runs are kept too.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..common.errors import GradingError
from ..common.layout import GRADEBOOK, RESULTS, UNFINISHED, late_policy_file
from ..common.notebooks import file_fingerprint, nbgrader_meta, write_atomic
from ..reports.feedback import publish as publish_feedback
from ..reports.late import Late, describe_policy, policy_of_record, policy_record
from .gradebook import feedback_path, kept_notebook, page_path, result_path
from .runner import load_result
from .spec import digest, manual_note
from .variant import variant_id

if TYPE_CHECKING:
    from nbformat import NotebookNode

    from ..reports.late import Policy
    from .gradebook import Row
    from .run import Found, Log, Run, Todo

GRADER_VERSION = "7"  # part of every result's fingerprint: bump it when grading itself changes


def setup_fingerprint(notebook: NotebookNode) -> str:
    "Everything in the instructor's notebook but its test cells: when it changes, every test is graded again."
    return digest(GRADER_VERSION + "".join(c.source for c in notebook.cells if not nbgrader_meta(c).get("grade")))


def plan(previous: dict | None, fingerprint: dict[str, str], tests: dict[str, tuple[float, str]]) -> str:
    "'skip', 'tests' (only some tests changed) or 'all', given the previous result (or None)."
    if previous is None or previous.get("fingerprint") != fingerprint or previous.get("problem"):
        return "all"  # new, changed, or not graded last time (a fault of the grader's)
    old = {t: r["fingerprint"] for t, r in previous["tests"].items()}
    return "skip" if old == {t: f for t, (_, f) in tests.items()} else "tests"


def merge(previous: dict, new: dict, tests: dict[str, tuple[float, str]]) -> dict:
    "Keep the previous score of every test whose cell did not change; take the new one for the others."
    regraded = []
    for test_id, (_, fingerprint) in tests.items():
        old = previous["tests"].get(test_id)
        if old is not None and old["fingerprint"] == fingerprint:
            new["tests"][test_id] = old
        else:
            regraded.append(test_id)
    new["score"] = sum(r["score"] for r in new["tests"].values())
    new["regraded"] = regraded
    return new


def older_than_its_result(path: Path, previous: dict | None, fingerprint: dict[str, str]) -> str:
    """A warning when the notebook at `path` differs from the one `previous` was graded from and was last changed
    before that grading: the result came from another notebook (a corrected one graded from another folder, say),
    which this run's grade of the older one replaces. "" otherwise (a new submission is newer than its last grade)."""
    if previous is None or previous.get("fingerprint", {}).get("submission") in (None, fingerprint["submission"]):
        return ""
    try:
        graded = datetime.fromisoformat(str(previous.get("graded_at")))
    except ValueError:
        return ""
    modified = datetime.fromtimestamp(path.stat().st_mtime)
    if modified >= graded:
        return ""
    return (
        f"warning: {previous.get('student')}/{previous.get('assignment')}: its result ({previous.get('score')} of "
        f"{previous.get('max_score')}) was graded at {graded:%Y-%m-%d %H:%M} from another notebook than {path}, "
        f"which is older (changed {modified:%Y-%m-%d %H:%M}): this run grades that one instead. If the result came "
        "from a corrected notebook graded from another folder, put that notebook here and run again."
    )


def plan_run(
    run: Run, found: list[Found], tests: dict[str, dict[str, tuple[float, str]]]
) -> tuple[dict[tuple[str, str], dict], list[Todo], list[str]]:
    """({(student, assignment): kept result}, [what to grade: (student, assignment, path, fingerprint, previous)],
    [warnings: a notebook older than the result it replaces])."""
    setup = {stem: setup_fingerprint(nb) for stem, nb in run.instructor.items()}
    done, todo, warnings = {}, [], []
    for student, assignment, path in found:
        fingerprint = {
            "submission": file_fingerprint(path),
            "setup": setup[assignment],
            "variant": variant_id(run.policies.secret, student, assignment),
            **held_out_part(run, assignment),
        }
        previous = load_result(result_path(run.out, student, assignment))
        action = plan(previous, fingerprint, tests[assignment])
        if action == "skip":
            done[(student, assignment)] = refeedback(run.out, previous, run.policies.feedback)
        else:
            warnings += [w for w in [older_than_its_result(Path(path), previous, fingerprint)] if w]
            todo.append((student, assignment, path, fingerprint, previous if action == "tests" else None))
    return done, todo, warnings


def held_out_part(run: Run, assignment: str) -> dict[str, str]:
    "The fingerprint's part for the instructor's held-out digits: their hash where the notebook uses them."
    found = run.held_out_digest(assignment)
    return {"held_out": found} if found else {}


def refeedback(out: Path, result: dict, policy: str) -> dict:
    "A kept result whose feedback page was written under another policy: write the page again, from the kept run."
    if result.get("feedback", "full") == policy or result.get("problem"):
        return result
    student, assignment = result["student"], result["assignment"]
    notebook = kept_notebook(page_path(out, student, assignment))
    extra = manual_note(result.get("manual_points", 0))
    publish_feedback(feedback_path(out, student, assignment), notebook, assignment, result, policy, extra=extra)
    result = dict(result, feedback=policy)
    write_atomic(result_path(out, student, assignment), json.dumps(result, indent=1))
    return result


def earlier_results(out: Path, found: list[Found], problems: list[Row], log: Log) -> dict[tuple[str, str], dict]:
    """{(student, assignment): result} of OUT/results that this run does not grade: another class graded into OUT, or
    an assignment collected into another SUBMISSIONS folder. They stay in the table and the gradebook (a run used to
    drop them from both without a word); the warning names their students."""
    graded = {(s, a) for s, a, _ in found} | {(p.student, p.assignment) for p in problems}
    kept = {}
    for path in sorted((out / RESULTS).glob("*/*.json")):
        result = load_result(path)
        key = (path.parent.name, path.stem)
        if key not in graded and result is not None and (result.get("student"), result.get("assignment")) == key:
            kept[key] = result
    if kept:
        here = {s for s, _ in graded}
        absent = sorted({s for s, _ in kept if s not in here})
        named = (
            f"; of {len(absent)} students not in it: {', '.join(absent[:10])}{' and more' if len(absent) > 10 else ''}"
        )
        log(
            f"warning: {out} holds {len(kept)} earlier results of submissions not in this SUBMISSIONS folder"
            + (named if absent else "")
            + f". They are kept in grades.csv and gradebook.json (export-grades exports them too); to drop a "
            f"student's, delete {out / 'results' / '<student>'} and run again."
        )
    return kept


def earlier_late(out: Path, kept: dict[tuple[str, str], dict]) -> dict[tuple[str, str], Late]:
    "{(student, assignment): grading.reports.late.Late} of the kept results, as the gradebook of their run says."
    try:
        book = json.loads((out / GRADEBOOK).read_text())
    except (OSError, ValueError):
        return {}
    late = {}
    for student, assignment in kept:
        entry = (book.get(student) or {}).get(assignment) if isinstance(book, dict) else None
        if isinstance(entry, dict) and "penalty_fraction" in entry:
            late[(student, assignment)] = Late(
                entry.get("submitted_at", ""),
                entry.get("late_by_hours"),
                entry.get("penalty_fraction", 0.0),
                entry.get("late_note", ""),
            )
    return late


def mark_unfinished(state: Path, todo: list[Todo], done: dict[tuple[str, str], dict]) -> int:
    "Write which submissions of `todo` are not graded yet (state/UNFINISHED); return how many."
    left = [[student, assignment] for student, assignment, *_ in todo if (student, assignment) not in done]
    write_atomic(state / UNFINISHED, json.dumps({"left": left}))
    return len(left)


def remembered_policy(out: Path, log: Log) -> Policy | None:
    """The late policy of the last run into OUT that was given one (None if none was): a run without late options keeps
    it, so that grading again after a fix does not drop every penalty without a word (an instructor's finding)."""
    path = late_policy_file(out)
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        raise GradingError(
            f"{path}: not the late policy an earlier run saved; delete it, and pass the options"
        ) from None
    policy = policy_of_record(record)
    if policy.due or policy.released:
        log(f"late policy of the earlier runs into {out}: {describe_policy(policy)} (--late-penalty none to drop it)")
    return policy


def remember_policy(out: Path, policy: Policy) -> None:
    "Keep the late policy the options gave for the next runs into OUT (remembered_policy)."
    late_policy_file(out).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(late_policy_file(out), json.dumps(policy_record(policy), indent=1))
