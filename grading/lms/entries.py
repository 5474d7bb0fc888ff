"""What one gradebook entry puts into an LMS's import file: its grade cell, the maximum it is out of, and its note.

The grade is the final score, grading.reports.late.penalised of the autograded score and the marks (the one
definition grades.csv uses too), in points or scaled to the maximum the instructor names (--scale-to). A submission
that was not graded gets no cell at all by default (MISSING `keep`): every platform reads an empty cell as "no
grade" and erases what it holds (Moodle's grade import and its feedback, Canvas's "24 → blank"), so only an
instructor who asks for it (`blank`) gets one.
"""

from dataclasses import dataclass

from ..intake.roster import Person
from .lms_input import number

MISSING = ("keep", "zero", "excused", "blank")  # --missing: what a submission that was not graded gets
MISSING_CELL = {"keep": None, "zero": "0", "excused": "EX", "blank": ""}  # None: no cell; EX: Canvas's excused
MISSING_WORDS = {
    "keep": "nothing: no cell, so the LMS keeps what it has",
    "zero": "0",
    "excused": "excused (EX)",
    "blank": "an empty grade (which erases the grade the LMS holds)",
}
NOT_MARKED = "written answers not marked yet"


def graded(entry: dict) -> bool:
    """Whether autograde graded the submission: not a row it could not read (a note, no tests, no points), nor one
    the grader failed on for a reason of its own ("graded": false: never exported as a 0; autograde retries it)."""
    if entry.get("graded") is False:
        return False
    return "tests" in entry or not entry.get("note") or bool(entry.get("max_score"))


def grader_fault(entry: dict | None) -> bool:
    "Whether autograde could not grade the submission for a reason of its own (it retries it at its next run)."
    return entry is not None and entry.get("graded") is False


def fmt(value: float) -> str:
    "A score as LMS imports read it: 24 not 24.0, 21.5 as is."
    value = round(float(value), 4)
    return str(int(value)) if value.is_integer() else repr(value)


def manual_points(entry: dict) -> float:
    return entry["manual_points"] if number(entry.get("manual_points")) else 0


def not_marked(entry: dict) -> bool:
    "Whether an entry has written answers that are not all marked (manual_score is set once every one is)."
    return manual_points(entry) > 0 and entry.get("manual_score") is None


def points_possible(book: dict, assignment: str) -> float:
    "The tests' points and the written answers'."
    return max(
        [e[assignment]["max_score"] + manual_points(e[assignment]) for e in book.values() if assignment in e] + [0]
    )


def final_of(entry: dict) -> tuple[float, float]:
    """(points taken for lateness, final score) of a graded entry: as autograde wrote them, or as the marks made since
    put them (grading.lms.marked.mark_entry); both by the one definition, grading.reports.late.penalised."""
    penalty = entry["penalty"] if number(entry.get("penalty")) else 0.0
    final = entry["final_score"] if number(entry.get("final_score")) else entry["score"]
    return penalty, final


@dataclass
class Grades:
    "The grades of one export: the gradebook, what --missing says, and the maximum of --scale-to (None: points)."

    book: dict
    missing: str = "keep"
    scale_to: float | None = None

    def entry(self, person: Person, assignment: str) -> dict | None:
        return self.book.get(person.student, {}).get(assignment)

    def maximum(self, assignment: str) -> float:
        "What the LMS's grade item must be out of."
        return self.scale_to if self.scale_to is not None else points_possible(self.book, assignment)

    def value(self, person: Person, assignment: str) -> float | None:
        "The final score as the LMS holds it (scaled with --scale-to), or None when nothing was graded."
        entry = self.entry(person, assignment)
        if entry is None or not graded(entry):
            return None
        final = final_of(entry)[1]
        if self.scale_to is None:
            return final
        most = points_possible(self.book, assignment)
        return final * self.scale_to / most if most else 0.0

    def cell(self, person: Person, assignment: str) -> str | None:
        """The grade cell: the value, or what --missing says (None: no cell at all). A submission the grader failed
        on for a reason of its own gets no cell whatever --missing says: it is not the student's 0."""
        if grader_fault(self.entry(person, assignment)):
            return None
        value = self.value(person, assignment)
        return MISSING_CELL[self.missing] if value is None else fmt(value)

    def note(self, person: Person, assignment: str) -> str:
        "What the student reads next to one grade: autograde's note, the late penalty and the final score."
        entry = self.entry(person, assignment)
        if entry is None:
            return f"No submission of {assignment} was graded."
        parts = [entry.get("note") or ""]
        penalty, final = final_of(entry) if graded(entry) else (0, 0)
        if penalty > 0 and number(entry.get("late_by_hours")):
            most = points_possible(self.book, assignment)
            parts.append(
                f"handed in {fmt(entry['late_by_hours'])} hours late: {fmt(penalty)} of {fmt(penalty + final)} points "
                f"taken, final score {fmt(final)} of {fmt(most)}"
            )
        if not_marked(entry):
            parts.append(NOT_MARKED)
        return "; ".join(part for part in parts if part)

    def feedback(self, person: Person, assignment: str) -> str:
        """The note, never empty: an empty feedback cell erases the feedback Moodle holds, so a grade without a note
        gets the line that says it."""
        note = self.note(person, assignment)
        value = self.value(person, assignment)
        if note or value is None:
            return note
        return f"{fmt(value)} of {fmt(self.maximum(assignment))} points."
