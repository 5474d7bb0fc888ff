"""export-grades --format gradescope: one Gradescope autograder results.json per student and assignment, OUT/
<assignment>/<student>/results.json, with each test's name, score, max_score, status, visibility and output, every
string plain text. The Gradescope autograder (grading.lms.gradescope) writes the same results.json in the container."""

import json
from pathlib import Path

from ..common.errors import GradingError
from ..common.notebooks import write_atomic
from ..intake.roster import Person
from ..reports.feedback import NOT_SHOWN, WHY_NOT_SHOWN
from .entries import grader_fault
from .exported import Export
from .lms_input import Gradebook, HiddenTests, number

GRADESCOPE_TEXT = {"output_format": "text", "test_output_format": "text", "test_name_format": "text"}  # never HTML


SHOWN = {  # when students see a test of each Gradescope visibility (its autograder specifications)
    "after_due_date": "after the due date; until then Gradescope shows their results and your total to your instructor",
    "after_published": (
        "when your instructor publishes the grades; until then Gradescope shows their results and your total to your "
        "instructor"
    ),
    "hidden": "to your instructor only, as your total is",
}


def test_output(message: str) -> str:
    """A test's message as Gradescope shows it, in a box of its own: a hidden test that does not quote an error says
    why in its box (the page says it once, above the tests), not in the submission's output, shown before the hidden
    tests are published."""
    return f"{message}. {WHY_NOT_SHOWN}" if NOT_SHOWN in message else message


def gradescope_results(
    person: Person, assignment: str, entry: dict | None, hidden: dict[str, bool] | None, visibility: str
) -> dict:
    """One Gradescope results.json, as a dict: the total, each test with its visibility, and an output (plain text,
    as every string in it: Gradescope renders the top-level output as HTML by default) that says what the score
    holds: the late penalty, the written answers, the points of the hidden tests and when they are shown."""
    extra = {"student": person.student, "assignment": assignment}
    extra.update({k: getattr(person, k) for k in ("email", "lms_id", "sis_id") if getattr(person, k)})
    if entry is None or entry.get("graded") is False:
        return {
            "score": 0.0,
            "output": f"No submission of {assignment} was graded." + (f" {entry['note']}" if entry else ""),
            "tests": [],
            "extra_data": extra,
            **GRADESCOPE_TEXT,
        }
    tests = entry.get("tests") or {}
    order = list(hidden) if hidden is not None else []
    names = [t for t in order if t in tests] + sorted(t for t in tests if t not in order)
    listed = []
    for name in names:
        test = tests[name]
        is_hidden = True if hidden is None or name not in hidden else hidden[name]  # unknown: do not reveal it
        listed.append(
            {
                "name": name,
                "score": float(test.get("score", 0)),
                "max_score": float(test.get("max_score", 0)),
                "status": "passed" if test.get("score", 0) >= test.get("max_score", 0) else "failed",
                "visibility": visibility if is_hidden else "visible",
                "output": test_output(str(test.get("message") or "")),
            }
        )
    lines = [entry.get("note") or ""] + score_notes(entry) + [hidden_note(listed, visibility)]
    return {
        "score": float(entry.get("final_score", entry["score"])),
        "output": "\n".join(line for line in lines if line),
        "tests": listed,
        "extra_data": extra,
        **GRADESCOPE_TEXT,
    }


def score_notes(entry: dict) -> list[str]:
    "What makes the score differ from the tests' sum: the late penalty, the written answers marked by hand."
    lines = []
    manual, marked = entry.get("manual_points"), entry.get("manual_score")
    if number(manual) and manual and number(marked) and not entry.get("manual_unmarked"):
        lines.append(f"Your written answers earned {marked:g} of {manual:g} points (marked by hand): in this score.")
    elif number(manual) and manual:
        lines.append(f"Your written answers ({manual:g} points) are marked by hand: they are not in this score.")
    if number(entry.get("late_by_hours")) and entry["late_by_hours"] > 0 and number(entry.get("penalty")):
        final = float(entry.get("final_score", entry["score"]))
        lines.append(
            f"Submitted {entry['late_by_hours']:g} hours late: {entry['penalty']:g} points taken "
            f"({final + entry['penalty']:g} before the penalty, {final:g} counted)."
        )
    return lines


def hidden_note(listed: list[dict], visibility: str) -> str:
    "The sentence that says how many points are in tests students do not see yet, and when they will."
    unseen = [t for t in listed if t["visibility"] != "visible"]
    if not unseen:
        return ""
    points, total = sum(t["max_score"] for t in unseen), sum(t["max_score"] for t in listed)
    tests = "1 hidden test" if len(unseen) == 1 else f"{len(unseen)} hidden tests"
    return (
        f"{tests} ({points:g} of the {total:g} points) {'is' if len(unseen) == 1 else 'are'} shown {SHOWN[visibility]}."
    )


def write_gradescope(
    book: Gradebook, people: list[Person], assignments: list[str], out: str | Path, hidden: HiddenTests, visibility: str
) -> list[Path]:
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise GradingError(f"{out}: is a file; for --format gradescope, --out is a folder (one results.json each).")
    written = []
    for assignment in assignments:
        for p in people:
            entry = book.get(p.student, {}).get(assignment)
            if grader_fault(entry):  # not the student's 0: no results.json until autograde grades it
                continue
            results = gradescope_results(p, assignment, entry, hidden.get(assignment), visibility)
            path = out / assignment / p.student / "results.json"
            write_atomic(path, json.dumps(results, indent=1) + "\n")
            written.append(path)
    return written


def write_gradescope_export(
    book: Gradebook,
    everyone: list[Person],
    assignments: list[str],
    out: str | Path,
    hidden: HiddenTests,
    report: Export,
    *,
    visibility: str,
    no_roster: bool,
) -> None:
    "Write a results.json per student and assignment into the folder OUT; fill the report's written and warnings."
    if no_roster:
        report.warnings.append("no --roster: the results carry only the submission folder name")
    unknown = sorted(a for a in assignments if a not in hidden)
    if unknown:
        report.warnings.append(
            f"{', '.join(unknown)}: no instructor notebook, so every test is given visibility {visibility}"
        )
    report.written = write_gradescope(book, everyone, assignments, out, hidden, visibility)


VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
