"""Grade export for learning management systems: `python -m grading export-grades`.

Reads the gradebook that `autograde` wrote (GRADING_DIR/gradebook.json, and GRADING_DIR/results/ for the per-test
scores of an entry that lacks them) and writes it in a layout the LMS imports as it is:

- canvas: the Canvas gradebook import CSV. Columns Student, ID, SIS User ID, SIS Login ID, Section, then one column
  per assignment (notebook); the second row is Canvas's "Points Possible" row, as in a file exported from Canvas.
- moodle: a CSV for Moodle's "Import grades: CSV file". Identifier columns (ID number, Email address, Full name) that
  the import maps to a user field, then one column per assignment that it maps to a grade item.
- gradescope: one Gradescope autograder results.json per student and assignment, OUT/<assignment>/<student>/
  results.json, with each test's name, score, max_score, status, visibility and output.

A roster (CSV with the header student,name,email and optionally lms_id,sis_id,login_id,section; `student` is the
submission folder name) maps submission folders to LMS identities. Graded students missing from the roster and
roster students without a graded submission are reported and still written, never dropped.

Standard library only (csv, json): the export runs wherever the grades were copied to.
"""

import csv
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import GradingError

FORMATS = ("canvas", "moodle", "gradescope")
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
ROSTER_COLUMNS = ("student", "name", "email")
ROSTER_OPTIONAL = ("lms_id", "sis_id", "login_id", "section")
CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_COLUMNS = ["ID number", "Email address", "Full name"]
HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"  # as in grading.notebooks, which needs nbformat; this module does not
REPO = Path(__file__).resolve().parent.parent


@dataclass
class Person:
    student: str  # the submission folder name
    name: str = ""
    email: str = ""
    lms_id: str = ""
    sis_id: str = ""
    login_id: str = ""
    section: str = ""
    in_roster: bool = False


@dataclass
class Export:
    "What an export wrote, and who the roster and the gradebook disagree about."

    written: list = field(default_factory=list)  # paths
    not_in_roster: list = field(default_factory=list)  # graded, but the roster does not know them
    not_graded: list = field(default_factory=list)  # in the roster, no graded submission
    warnings: list = field(default_factory=list)


# -- Reading ---------------------------------------------------------------------------------------------------------


def read_gradebook(grading_dir):
    "{student: {assignment: entry}} from GRADING_DIR/gradebook.json, checked for the shape autograde writes."
    grading_dir = Path(grading_dir)
    if not grading_dir.is_dir():
        raise GradingError(f"{grading_dir}: no such folder; give the --out folder of `python -m grading autograde`.")
    path = grading_dir / "gradebook.json"
    if not path.is_file():
        raise GradingError(
            f"{path}: no gradebook here; run `python -m grading autograde SUBMISSIONS --out {grading_dir}` first."
        )
    try:
        book = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise GradingError(f"{path}: not a readable gradebook ({error}).") from None
    if not isinstance(book, dict):
        raise GradingError(f"{path}: not a gradebook (expected an object of students).")
    for student, assignments in book.items():
        if not isinstance(assignments, dict):
            raise GradingError(f"{path}: student {student!r}: expected an object of assignments.")
        for assignment, entry in assignments.items():
            if not (isinstance(entry, dict) and number(entry.get("score")) and number(entry.get("max_score"))):
                raise GradingError(f"{path}: {student}/{assignment}: expected numbers score and max_score.")
            if "tests" not in entry:
                tests = load_result_tests(grading_dir, student, assignment)
                if tests is not None:
                    entry["tests"] = tests
    return book


def number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def load_result_tests(grading_dir, student, assignment):
    "The per-test scores of GRADING_DIR/results/<student>/<assignment>.json, or None."
    try:
        result = json.loads((Path(grading_dir) / "results" / student / f"{assignment}.json").read_text())
    except (OSError, ValueError):
        return None
    tests = result.get("tests") if isinstance(result, dict) else None
    return tests if isinstance(tests, dict) else None


def read_roster(path):
    "[Person] from a roster CSV; a malformed one is refused with the line that is wrong."
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark (Excel writes one) is fine
    except FileNotFoundError:
        raise GradingError(f"{path}: no such roster file.") from None
    except (OSError, UnicodeDecodeError) as error:
        raise GradingError(f"{path}: cannot read the roster ({error}); save it as UTF-8 CSV.") from None
    rows = list(csv.reader(io.StringIO(text)))
    expected = ",".join(ROSTER_COLUMNS) + " (optional: " + ",".join(ROSTER_OPTIONAL) + ")"
    if not rows:
        raise GradingError(f"{path}: the roster is empty; expected a header line {expected}.")
    header = [h.strip().lower() for h in rows[0]]
    missing = [c for c in ROSTER_COLUMNS if c not in header]
    unknown = [h for h in header if h not in ROSTER_COLUMNS + ROSTER_OPTIONAL]
    if missing or unknown or len(set(header)) != len(header):
        problem = (
            f"missing {', '.join(missing)}"
            if missing
            else f"unknown column {unknown[0]!r}"
            if unknown
            else "a column appears twice"
        )
        raise GradingError(f"{path} line 1: the header must be {expected}; {problem}.")
    people, seen = [], {}
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue  # blank lines are allowed
        if len(row) != len(header):
            raise GradingError(f"{path} line {line}: {len(row)} fields, the header has {len(header)}.")
        values = {h: cell.strip() for h, cell in zip(header, row, strict=True)}
        if not values["student"]:
            raise GradingError(f"{path} line {line}: the student id (the submission folder name) is empty.")
        if "/" in values["student"] or "\\" in values["student"]:
            raise GradingError(f"{path} line {line}: student id {values['student']!r} is not a folder name.")
        if values["email"] and "@" not in values["email"]:
            raise GradingError(f"{path} line {line}: {values['email']!r} is not an email address.")
        if values["student"] in seen:
            raise GradingError(
                f"{path} line {line}: student {values['student']!r} is already on line {seen[values['student']]}."
            )
        seen[values["student"]] = line
        people.append(Person(**values, in_roster=True))
    return people


def hidden_tests(notebooks_dir):
    "{assignment: set of test ids whose cell holds hidden tests}, from the instructor's notebooks (plain JSON)."
    found = {}
    for path in sorted(Path(notebooks_dir).glob("*.ipynb")):
        try:
            cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
        except (OSError, UnicodeDecodeError, ValueError, AttributeError):
            continue
        tests = {}
        for cell in cells:
            meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell, dict) else {}
            if meta.get("grade") and meta.get("grade_id") and cell.get("cell_type") == "code":  # not written answers
                source = cell.get("source", "")
                tests[meta["grade_id"]] = HIDDEN_BEGIN in ("".join(source) if isinstance(source, list) else source)
        found[path.stem] = tests
    return found


# -- What to write ---------------------------------------------------------------------------------------------------


def assignments_of(book, known):
    "The assignment columns: every gradebook key that was graded (has tests) or is a course notebook, in order."
    keys = {a for entries in book.values() for a, e in entries.items() if "tests" in e or a in known}
    return sorted(keys)


def people_of(book, roster):
    "Everyone to write: the roster in its order, then graded students it lacks; and the two lists of disagreements."
    if roster is None:
        return [Person(s) for s in sorted(book)], [], []
    listed = {p.student for p in roster}
    extra = [Person(s) for s in sorted(book) if s not in listed]
    not_graded = [p.student for p in roster if p.student not in book]
    return roster + extra, [p.student for p in extra], not_graded


def points_possible(book, assignment):
    return max([e[assignment]["max_score"] for e in book.values() if assignment in e] + [0])


def fmt(value):
    "A score as LMS imports read it: 24 not 24.0, 21.5 as is."
    value = round(float(value), 4)
    return str(int(value)) if value.is_integer() else repr(value)


def grade_cell(book, person, assignment, missing):
    entry = book.get(person.student, {}).get(assignment)
    if entry is None:
        return "0" if missing == "zero" else ""
    return fmt(entry.get("final_score", entry["score"]))  # after a late penalty, where there is one


def manual_pending(book, assignments):
    "The written answers of `assignments`, as '01_tensor (3 points), ...': points the gradebook does not count."
    points = {}
    for entries in book.values():
        for assignment, entry in entries.items():
            if assignment in assignments and number(entry.get("manual_points")) and entry["manual_points"] > 0:
                points[assignment] = max(points.get(assignment, 0), entry["manual_points"])
    listed = ", ".join(f"{a} ({fmt(p)} point{'' if p == 1 else 's'})" for a, p in sorted(points.items()))
    return f"written answers of {listed} are" if listed else ""


def write_atomic(path, text):
    "Write a file so a reader (or an LMS upload) never sees half of it."
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


def csv_text(rows):
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows(rows)
    return out.getvalue()


# -- The formats -----------------------------------------------------------------------------------------------------


def write_canvas(book, people, assignments, out, missing):
    rows = [CANVAS_COLUMNS + assignments]
    rows.append(["Points Possible", "", "", "", ""] + [fmt(points_possible(book, a)) for a in assignments])
    for p in people:
        login = p.login_id or p.email
        rows.append(
            [p.name or p.student, p.lms_id, p.sis_id, login, p.section]
            + [grade_cell(book, p, a, missing) for a in assignments]
        )
    write_atomic(out, csv_text(rows))
    return [Path(out)]


def write_moodle(book, people, assignments, out, missing):
    rows = [MOODLE_COLUMNS + assignments]
    for p in people:
        rows.append([p.sis_id, p.email, p.name or p.student] + [grade_cell(book, p, a, missing) for a in assignments])
    write_atomic(out, csv_text(rows))
    return [Path(out)]


def gradescope_results(person, assignment, entry, hidden, visibility):
    "One Gradescope results.json, as a dict: the total, and each test with its visibility."
    extra = {"student": person.student, "assignment": assignment}
    extra.update({k: getattr(person, k) for k in ("email", "lms_id", "sis_id") if getattr(person, k)})
    if entry is None:
        return {
            "score": 0.0,
            "output": f"No submission of {assignment} was graded.",
            "tests": [],
            "extra_data": extra,
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
                "output": str(test.get("message") or ""),
            }
        )
    return {
        "score": float(entry.get("final_score", entry["score"])),
        "output": entry.get("note") or "",
        "tests": listed,
        "extra_data": extra,
    }


def write_gradescope(book, people, assignments, out, hidden, visibility):
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise GradingError(f"{out}: is a file; for --format gradescope, --out is a folder (one results.json each).")
    written = []
    for assignment in assignments:
        for p in people:
            entry = book.get(p.student, {}).get(assignment)
            results = gradescope_results(p, assignment, entry, hidden.get(assignment), visibility)
            path = out / assignment / p.student / "results.json"
            write_atomic(path, json.dumps(results, indent=1) + "\n")
            written.append(path)
    return written


def export_grades(
    grading_dir,
    fmt_name,
    out,
    roster=None,
    notebooks_dir=None,
    only=None,
    missing="blank",
    hidden_visibility="after_published",
):
    "Write the gradebook of GRADING_DIR in the layout of an LMS; return an Export saying what was written."
    if fmt_name not in FORMATS:
        raise GradingError(f"unknown format {fmt_name!r}; choose one of {', '.join(FORMATS)}.")
    if hidden_visibility not in VISIBILITIES:
        raise GradingError(f"unknown visibility {hidden_visibility!r}; choose one of {', '.join(VISIBILITIES)}.")
    if missing not in ("blank", "zero"):
        raise GradingError(f"--missing must be blank or zero, not {missing!r}.")
    book = read_gradebook(grading_dir)
    people = read_roster(roster) if roster is not None else None
    notebooks_dir = Path(notebooks_dir) if notebooks_dir else REPO / "notebooks"
    if not notebooks_dir.is_dir():
        raise GradingError(f"{notebooks_dir}: no such folder of instructor notebooks.")
    hidden = hidden_tests(notebooks_dir)
    report = Export()
    assignments = assignments_of(book, hidden)
    if only:
        unknown = [a for a in only if a not in assignments]
        if unknown:
            raise GradingError(f"assignment {unknown[0]!r} is not in the gradebook; it has {', '.join(assignments)}.")
        assignments = [a for a in assignments if a in only]
    for student, entries in sorted(book.items()):
        for key, entry in sorted(entries.items()):
            if key not in assignments and not only:
                report.warnings.append(f"{student}/{key}: not an assignment, left out of the export: {entry['note']}")
    everyone, report.not_in_roster, report.not_graded = people_of(book, people)
    pending = manual_pending(book, assignments)
    if pending:
        report.warnings.append(
            f"{pending} marked by hand and not in this export (the scores are the autograded ones); mark them in "
            f"formgrader ({Path(grading_dir) / 'marking'}, see grading/README.md) and add them in the LMS"
        )
    if people is None:
        report.warnings.append(
            "no --roster: rows carry only the submission folder name, which the LMS cannot match to its students"
        )
    if fmt_name == "gradescope":
        unknown = sorted(a for a in assignments if a not in hidden)
        if unknown:
            report.warnings.append(
                f"{', '.join(unknown)}: no instructor notebook in {notebooks_dir}, so every test is given "
                f"visibility {hidden_visibility}"
            )
        report.written = write_gradescope(book, everyone, assignments, out, hidden, hidden_visibility)
    elif fmt_name == "canvas":
        report.written = write_canvas(book, everyone, assignments, out, missing)
    else:
        report.written = write_moodle(book, everyone, assignments, out, missing)
    return report
