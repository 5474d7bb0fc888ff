"""`python -m grading export-feedback GRADING_DIR --layout LAYOUT --out FOLDER`: the feedback pages, laid out for an LMS.

Each page is self-contained (grading.reports.page: no script, no file loaded from elsewhere, maths as MathML), so it
reads the same uploaded on its own. The page autograde wrote is used where it is such a page; a page of an older run
(which loaded MathJax from a sibling folder) is made again from the kept run (results/<student>/<nb>.json and the
notebook as it ran), as autograde does when the feedback policy changes. Then, where a late penalty applies, the page
says it and the final score, read from gradebook.json at export time (the penalty can change without grading again;
the marks of written answers are added with grading.lms.marked.add_marks). A submission autograde could not read
(invalid JSON, a truncated file) gets a page that says so and what to do.

The layouts, one per way an LMS takes a file for each student:
- moodle: OUT/<assignment>.zip per assignment, its folders named as Moodle's download names them, `<Full Name>_
  <participant id>_assignsubmission_file/`, for the assignment's "Upload multiple feedback files in a zip", which finds
  each student by the participant id alone (mod/assign/feedback/file/importziplib.php); the ids come from roster.csv's
  moodle_participant, which `collect --lms moodle` fills. A student without one is left out, and the command exits 1.
- canvas: OUT/<assignment>/<student>/<assignment>-feedback.html, to attach in SpeedGrader's comment box. Canvas's
  bulk "Re-Upload Submissions" would attach each page under the name of the student's own file (04_elementwise.ipynb)
  and needs Canvas's id of that file, so it is not used.
- gradescope: OUT/<email>/<assignment>-feedback.html: Gradescope takes no feedback files; each folder is named by the
  address Gradescope knows the student by (roster.csv's email), to send them.
- zip-per-student: OUT/<student>.zip with the student's pages, for any other way of handing them out.
"""

import html
import json
import re
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from nbformat.v4 import new_notebook

from ..common.errors import GradingError
from ..common.layout import state_folder
from ..common.notebooks import course_notebooks, read_notebook, write_atomic
from ..grade.gradebook import feedback_path, kept_notebook, page_path, result_path
from ..grade.spec import manual_note
from ..intake.roster import Person, read_roster
from ..reports.feedback import page_html
from ..reports.page import PageCache, render, shared_cells
from .entries import final_of, fmt, graded, manual_points, not_marked
from .export_grades import check_finished, choose_assignments
from .lms_input import check_export_path, number, read_gradebook
from .marked import add_marks

LAYOUTS = ("canvas", "moodle", "gradescope", "zip-per-student")
SUFFIX = "-feedback.html"  # 04_elementwise-feedback.html: what the student downloads
BANNER = 'id="tinytorch-score"'  # grading.reports.feedback.banner's box, where the late line goes
NOT_ON_DISK = re.compile(r'[/\\:*?"<>|\x00-\x1f]')  # characters a file name cannot hold on every disk
NOT_IN_NAME = re.compile(r'[_/\\:*?"<>|\x00-\x1f]')  # Moodle splits its folder names at "_" too


@dataclass
class FeedbackExport:
    "What export-feedback wrote, which pages it could not lay out or make, and what to tell the instructor."

    written: list = field(default_factory=list)  # paths
    pages: int = 0
    unreadable: list = field(default_factory=list)  # "student/assignment": the page says the file could not be read
    left_out: list = field(default_factory=list)  # "student/assignment: why": no page where the layout needs one
    warnings: list = field(default_factory=list)


# -- The pages -------------------------------------------------------------------------------------------------------


def late_line(entry: dict) -> str:
    "The page's line on the late penalty and the final score (gradebook.json's columns), or '' when none applies."
    penalty, final = final_of(entry)
    if penalty <= 0:
        return ""
    most = entry["max_score"] + manual_points(entry)
    hours = entry.get("late_by_hours")
    late = (
        f"handed in {fmt(round(hours, 1))} hours after the due date"
        if number(hours)
        else "handed in after the due date"
    )
    so_far = " so far" if not_marked(entry) else ""
    pending = (
        " Your written answers are not marked yet: their marks will be added, less the same penalty." if so_far else ""
    )
    return (
        f'<p id="tinytorch-late"><b>Final score{so_far}: {fmt(final)} / {fmt(most)}</b>. Your notebook was {late}: '
        f"the late penalty took {fmt(penalty)} of the {fmt(final + penalty)} points it earned.{pending}</p>"
    )


def with_late_line(page: str, entry: dict) -> str:
    "`page` with the late line under the banner's score (the first heading in the banner)."
    line = late_line(entry)
    if not line:
        return page
    banner = page.index(BANNER)
    heading = page.index("</h2>", banner) + len("</h2>")
    return page[:heading] + line + page[heading:]


def kept_page(grading_dir: Path, student: str, assignment: str) -> str | None:
    "The page autograde wrote, where it is self-contained and has its banner; None otherwise (made again then)."
    try:
        page = feedback_path(grading_dir, student, assignment).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return page if "<script" not in page and BANNER in page else None


def made_page(grading_dir: Path, student: str, assignment: str, caches: dict) -> str | None:
    "The page made again from the kept run, as autograde's refeedback does; None if the run is not kept."
    try:
        result = json.loads(result_path(grading_dir, student, assignment).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(result, dict) or "tests" not in result:
        return None
    notebook = kept_notebook(page_path(grading_dir, student, assignment))
    extra = manual_note(result.get("manual_points", 0))
    policy = result.get("feedback", "full")
    return page_html(notebook, assignment, result, policy, extra, page_cache(grading_dir, assignment, caches))


def page_cache(grading_dir: Path, assignment: str, caches: dict) -> PageCache | None:
    "autograde's cache of the release's cells (OUT/.grading/page-cache), where the run kept the release."
    if assignment not in caches:
        released = state_folder(grading_dir) / "master" / "release" / assignment / f"{assignment}.ipynb"
        try:
            caches[assignment] = PageCache(
                state_folder(grading_dir) / "page-cache", shared_cells(read_notebook(released))
            )
        except GradingError:
            caches[assignment] = None
    return caches[assignment]


UNREADABLE = (
    "<p>The grader could not read the file you handed in for {assignment}, so nothing in it was graded. What it found: "
    "{note}.</p><p><b>What to do:</b> open the notebook in JupyterLab. If it opens, save it (File &gt; Save Notebook), "
    "download it with File &gt; Download, and hand in the downloaded file again, without renaming or changing it. If "
    "it does not open, use File &gt; Revert Notebook to Checkpoint, or copy your answers into a fresh copy of the "
    "notebook, then download and hand in that one. Ask your instructor if the deadline has passed.</p>"
)


def unreadable_page(assignment: str, note: str) -> str:
    "The page of a submission autograde could not read: what was wrong, and how to hand it in again."
    banner = (
        f'<div {BANNER} style="border:2px solid #444;padding:8px;margin:8px"><h2>{html.escape(assignment)}: '
        f"not graded</h2>{UNREADABLE.format(assignment=html.escape(assignment), note=html.escape(note.rstrip('. ')))}</div>"
    )
    return render(new_notebook(), assignment, banner)  # nbconvert's page around it, as every page


def page_of(grading_dir: Path, student: str, assignment: str, entry: dict, caches: dict) -> tuple[str | None, str]:
    "(the page of one gradebook entry, '') or (None, why it has none)."
    if entry.get("graded") is False:
        return None, "not graded, a fault of the grader's, not the student's: run autograde again, which retries it"
    if not graded(entry):
        return unreadable_page(assignment, entry.get("note") or "no notebook"), ""
    if entry.get("feedback") == "none":
        return None, "autograde ran with --feedback none: run it again with --feedback summary or full (no regrading)"
    page = kept_page(grading_dir, student, assignment) or made_page(grading_dir, student, assignment, caches)
    if page is None:
        return (
            None,
            f"its kept run is not in {result_path(grading_dir, student, assignment).parent}: run autograde again",
        )
    return with_late_line(page, entry), ""


def pages_of(grading_dir: Path, book: dict, assignments: list, report: FeedbackExport) -> dict:
    "{(student, assignment): page} of every submission of `assignments` in the gradebook; the others in report."
    pages, caches = {}, {}
    for student, entries in sorted(book.items()):
        for assignment in [a for a in sorted(entries) if a in assignments]:
            page, why = page_of(grading_dir, student, assignment, entries[assignment], caches)
            if page is None:
                report.left_out.append(f"{student}/{assignment}: no page: {why}")
                continue
            pages[student, assignment] = page
            if not graded(entries[assignment]):
                report.unreadable.append(f"{student}/{assignment}")
    return pages


# -- The layouts -----------------------------------------------------------------------------------------------------


def write_zip(path: Path, files: dict) -> Path:
    "A zip of {name inside: text}, written beside and renamed, so an upload never takes half of one."
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in sorted(files.items()):
            member = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
            member.external_attr = 0o644 << 16  # readable by whoever unpacks it (zipfile's default is 0o600)
            archive.writestr(member, text, zipfile.ZIP_DEFLATED)
    tmp.replace(path)
    return path


def moodle_folder(person: Person | None, student: str, participant_id: str) -> str:
    "The folder name Moodle's download gives a student's files, which its feedback upload reads the id from."
    name = NOT_IN_NAME.sub(" ", (person.name if person else "") or student).strip() or "student"
    return f"{name}_{participant_id}_assignsubmission_file"


def lay_out_moodle(pages: dict, people: dict, out: Path, report: FeedbackExport) -> list:
    "OUT/<assignment>.zip each, a folder per student named as Moodle's download names it."
    zips = {}
    report.pages = 0
    for (student, assignment), page in pages.items():
        person = people.get(student)
        number = person.participant(assignment) if person else ""
        if not number:
            why = "not in the roster" if person is None else f"no participant id of {assignment} in moodle_participant"
            report.left_out.append(
                f"{student}/{assignment}: left out of {assignment}.zip: {why} (collect --lms moodle "
                "keeps it from the download's folder names)"
            )
            continue
        zips.setdefault(assignment, {})[f"{moodle_folder(person, student, number)}/{assignment}{SUFFIX}"] = page
        report.pages += 1
    return [write_zip(out / f"{assignment}.zip", files) for assignment, files in sorted(zips.items())]


def lay_out_files(
    pages: dict[tuple[str, str], str], folder_of: Callable[[str, str], str | Path], out: Path
) -> list[Path]:
    "OUT/<folder_of(student, assignment)>/<assignment>-feedback.html for every page."
    written = []
    for (student, assignment), page in sorted(pages.items()):
        path = out / folder_of(student, assignment) / f"{assignment}{SUFFIX}"
        write_atomic(path, page)
        written.append(path)
    return written


def lay_out(layout: str, pages: dict, people: dict, out: Path, report: FeedbackExport) -> list:
    "Write `pages` ({(student, assignment): page}) into OUT as `layout` says; return the files written."
    report.pages = len(pages)
    if layout == "moodle":
        return lay_out_moodle(pages, people, out, report)
    if layout == "canvas":
        return lay_out_files(pages, lambda student, assignment: Path(assignment) / student, out)
    if layout == "gradescope":
        unknown = []  # the students without an email address: one warning names them all
        written = lay_out_files(pages, lambda student, _: email_folder(people.get(student), student, unknown), out)
        if unknown:
            report.warnings.append(
                f"no email address in the roster for {', '.join(unknown)}: their folders are named by their "
                "submission folders, which Gradescope cannot match to a student; add their emails to the roster "
                "and export again"
            )
        return written
    per_student = {}
    for (student, assignment), page in pages.items():
        per_student.setdefault(student, {})[f"{assignment}{SUFFIX}"] = page
    return [write_zip(out / f"{student}.zip", files) for student, files in sorted(per_student.items())]


def email_folder(person: Person | None, student: str, unknown: list[str]) -> str:
    """A student's folder for Gradescope: the email address Gradescope knows them by, else the submission folder (and
    the student is added to `unknown`)."""
    email = person.email if person else ""
    if email and not NOT_ON_DISK.search(email) and not email.startswith("."):
        return email
    if student not in unknown:
        unknown.append(student)
    return student


# -- The command -----------------------------------------------------------------------------------------------------


def export_feedback(
    grading_dir: str | Path,
    layout: str,
    out: str | Path,
    *,
    roster: str | Path | None = None,
    notebooks_dir: str | Path | None = None,
    only: list[str] | None = None,
) -> FeedbackExport:
    """Write the feedback pages of GRADING_DIR into OUT, laid out for an LMS.

    Args:
        grading_dir: the --out folder of autograde (gradebook.json, results/, feedback/).
        layout: canvas, moodle, gradescope or zip-per-student (see the module's docstring).
        out: the folder to write; made if missing.
        roster: roster.csv (collect writes SUBMISSIONS/roster.csv); moodle needs it, for the participant ids.
        notebooks_dir: the instructor's notebooks, which say what an assignment is (default notebooks/).
        only: the assignments to export (default all).

    Returns:
        A FeedbackExport: the files written, the unreadable submissions' pages, the pages left out and why.

    Raises:
        GradingError: an unknown layout, moodle without a roster, a missing or malformed gradebook or roster, an
        autograde run that stopped before grading everyone, an unknown --assignment, an OUT that is a file.
    """
    if layout not in LAYOUTS:
        raise GradingError(f"--layout {layout!r}: choose one of {', '.join(LAYOUTS)}.")
    if layout == "moodle" and roster is None:
        raise GradingError(
            "--layout moodle needs --roster SUBMISSIONS/roster.csv: Moodle's feedback upload finds each student by "
            "the participant id that `collect --lms moodle` keeps there."
        )
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise GradingError(f"{out}: is a file; --out is the folder the pages are written into.")
    book = read_gradebook(grading_dir)
    check_export_path(out, grading_dir, folder=True)
    check_finished(grading_dir)
    people = {p.student: p for p in read_roster(roster)} if roster is not None else {}
    report = FeedbackExport()
    add_marks(book, grading_dir, report.warnings)
    assignments = choose_assignments(book, course_notebooks(notebooks_dir), only, report.warnings, layout)
    pages = pages_of(Path(grading_dir), book, assignments, report)
    report.written = lay_out(layout, pages, people, out, report)
    return report
