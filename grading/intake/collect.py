"""`python -m grading collect DOWNLOAD --lms canvas|moodle|gradescope|flat --out SUBMISSIONS`: an LMS's bulk download
of submissions as the folder autograde grades, SUBMISSIONS/<student>/<assignment>/<assignment>.ipynb.

An instructor's submissions arrive as the LMS packs them: Canvas renames every file after the student, Moodle puts
each student's files in a folder named after them, Gradescope numbers its folders and says whose each is in a YAML
file (grading.intake.downloads reads each of these, and a plain folder per student). Sorting a class of them by hand loses
submissions, and the time each was handed in. So this command does it, in the order `collect` lists:

1. read the download's files, refusing links, paths out of the download and files too large (grading.intake.downloads);
2. tell whose each file is, from the LMS's naming, and its submission time when the LMS gives one, and give every
   student a folder of their own: one that roster.csv knows by LMS id or email keeps their folder there, and two
   students whose folder names would be one (ignoring case, as macOS and Windows do) get a suffix each; a Moodle
   student's email comes from the assignment's grading worksheet, when given (grading.intake.worksheet);
3. tell which assignment each notebook is: from its file name (`04_elementwise.ipynb`, also `04_elementwise (1)`,
   `04_elementwise-1` as browsers and Canvas rename a repeated name), else from its cells' nbgrader grade ids, which
   are those of one course notebook;
4. keep the latest of two submissions of one student and assignment (by the LMS's time, else Canvas's upload order);
5. write each notebook with its modification time set to the submission time, which autograde's late policy reads
   (grading/reports/late.py); where the download has no such time (Canvas, Moodle) the file keeps the download's time and a
   warning says so. Nothing already in SUBMISSIONS is replaced unless `force` is given: without it, a notebook that
   differs stops the command before anything is written, with the files named;
6. add the students to SUBMISSIONS/roster.csv (the roster `export-grades` reads: student, name, email, lms_id, sis_id,
   login_id, section, moodle_participant), lines already there untouched but for the Moodle participant id of an
   assignment collected (the id of its offline grading worksheet) and a worksheet's email where a line has none;
   autograde skips files at the top of SUBMISSIONS;
7. write SUBMISSIONS/collect-report.csv (grading.intake.report): every file of the download, placed or not and why,
   hidden files and checkpoints as 'skipped' (rows of earlier collects of other downloads are kept).

Every file that is not placed is also one line on stderr (grading.cli.lms_commands.cmd_collect), so nothing is dropped
silently.
"""

import dataclasses
import hashlib
import json
import os
import re
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..common.errors import GradingError
from ..common.layout import COLLECT_TIME, DOWNLOAD_TIME
from ..common.notebooks import course_notebooks, identifying_ids, nbgrader_meta, read_notebook, write_atomic
from .downloads import (
    LIMIT,
    NO_TIMES,
    READERS,
    RENAMED_NOTE,
    Found,
    Member,
    folder_members,
    ignored,
    printable,
    zip_members,
)
from .folders import distinct_students
from .report import REPORT, Row, earlier_report, write_report
from .roster import Person, merged_roster, participants, read_roster, unlisted_warning, write_roster
from .worksheet import with_emails

FORMATS = tuple(READERS)
ROSTER = "roster.csv"
PLACED, UNCHANGED, SUPERSEDED, NOT_PLACED = "placed", "unchanged", "superseded", "not placed"
SKIPPED = "skipped"  # hidden files, Jupyter's checkpoints, macOS's extras: in the report, not an error
DOUBT = (
    "its Canvas name can be read as user {}'s file or as {}: a student can make their name read as another's, so "
    "it was not collected; check whose it is in Canvas, and copy it to SUBMISSIONS/<student>/<nb>/<nb>.ipynb"
)
RENAMED = re.compile(r"(?:\s*\(\d+\)|-\d+|[-_ ]copy\d*|-checkpoint)$")  # "x (1)", "x-1", "x-Copy1": the same name
UNREADABLE = "not a readable notebook: {}; autograde cannot grade it: ask the student to hand it in again"
LMS_NAMES = {"canvas": "Canvas", "moodle": "Moodle", "gradescope": "Gradescope", "flat": "the folder"}


@dataclass
class Placement:
    """A notebook to write: whose, which assignment, the SHA-256 of its bytes and the time to give it. The bytes are
    read again when it is written: a class's notebooks are never all in memory at once."""

    found: Found
    digest: str
    assignment: str
    note: str = ""
    time: datetime | None = None
    time_from: str = ""

    def row(self, status: str, note: str | None = None) -> Row:
        return Row(
            self.found.member.path,
            status,
            self.note if note is None else note,
            self.found.person.student,
            self.assignment,
            self.time.isoformat(timespec="seconds") if self.time else "",
            self.time_from,
        )


@dataclass
class Collected:
    "What a collect did: a Row per file, warnings for the instructor, and where the roster and the report are."

    rows: list[Row] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    roster: Path | None = None
    report: Path | None = None

    @property
    def not_placed(self) -> list[Row]:
        return [r for r in self.rows if r.status in (NOT_PLACED, SUPERSEDED)]

    @property
    def placed(self) -> list[Row]:
        return [r for r in self.rows if r.status in (PLACED, UNCHANGED)]


def collect(
    download: str | Path,
    lms: str,
    out: str | Path,
    *,
    force: bool = False,
    notebooks_dir: str | Path | None = None,
    worksheet: str | Path | None = None,
) -> Collected:
    """Turn an LMS's bulk download into OUT/<student>/<assignment>/<assignment>.ipynb, roster.csv and the report.

    Args:
        download: the zip file the LMS gave, or the folder it was unpacked into.
        lms: canvas, moodle, gradescope or flat (FORMATS): how the download names whose each file is.
        out: the submissions folder to write (made if missing); what is there already stays.
        force: replace a notebook in OUT that differs from the download's (else nothing is written).
        notebooks_dir: the instructor's notebooks, which say the assignments and their cells (default notebooks/).
        worksheet: Moodle only: the assignment's grading worksheet, which gives each student's email
            (grading.intake.worksheet).

    Returns:
        Collected: a Row per file of the download (placed, unchanged, superseded or not placed, and why), warnings.

    Raises:
        GradingError: an unknown --lms, a download that is missing or no zip, OUT inside the download folder (or the
            other way round), a link or a file in OUT where a folder belongs, a malformed roster.csv or report in
            OUT, or notebooks in OUT that would be replaced without `force` (named; nothing is written then).
    """
    if lms not in READERS:
        raise GradingError(f"--lms {lms!r}: expected one of {', '.join(FORMATS)}.")
    if worksheet is not None and lms != "moodle":
        raise GradingError(f"--worksheet is Moodle's grading worksheet; {lms}'s download says who is who itself.")
    download, out = Path(download), Path(out)
    check_places(download, out)
    known = known_assignments(notebooks_dir)
    roster, report = out / ROSTER, out / REPORT
    listed = read_roster(roster) if roster.exists() else []  # a malformed roster stops us before any write
    with members_of(download) as members:
        source = source_of(download, members)  # its rows of the report are replaced when it is collected again
        earlier = earlier_report(report, source)
        found, rows = read_download(members, lms, download)
        found = with_emails(found, worksheet) if worksheet is not None else found
        if not found:
            refuse_another_layout(members, lms, download)  # before anything is written
        found = distinct_students(found, listed)
        placements, unknown = identify(found, known)
        kept, older = latest(placements)
        unchanged = plan(kept, out, force)
        written = [write_notebook(p, out, unchanged) for p in kept]
    people, unlisted = merged_roster(listed, [item.person for item in found])
    people = with_participants(people, kept)
    rows = rows + unknown + written + older
    write_roster(roster, people)
    write_report(report, source, earlier, rows)
    return Collected(rows, warnings(lms, rows, worksheet is not None) + unlisted_warning(unlisted), roster, report)


def refuse_another_layout(members: list[Member], lms: str, download: Path) -> None:
    """Raise GradingError when no file of the download is named as `lms` names them but another LMS's naming places
    some: a Canvas zip collected with --lms moodle wrote an empty folder and a line per file."""
    fits = []
    for other in sorted(set(READERS) - {lms, "flat"}):  # (flat places any folder: it says nothing)
        try:
            found, _ = read_download(members, other, download)
        except GradingError:
            continue
        if found:
            fits.append(f"{other} ({len(found)} of them)")
    if fits:
        raise GradingError(
            f"{download}: none of its files is named as a {lms} download names them, but they are named as a "
            f"{' or a '.join(fits)} download names them: pass --lms {fits[0].split()[0]}. Nothing was written."
        )


def source_of(download: Path, members: list[Member]) -> str:
    """The download as the report's rows name it: its path and a digest of its files' names and times, so that the
    next assignment's download saved at the same path (Canvas names every one submissions.zip) is another source."""
    listing = "\n".join(f"{m.path}\0{m.time}" for m in members).encode("utf-8", "surrogateescape")
    return printable(f"{download.resolve()} ({hashlib.sha256(listing).hexdigest()[:12]})")  # as the report shows it


def check_places(download: Path, out: Path) -> None:
    "The download must exist, and a folder download and OUT must not hold each other (collect would read its output)."
    if not download.exists():
        raise GradingError(
            f"{download}: no such file or folder; pass the zip file the LMS gave, or the folder it was unpacked into."
        )
    if download.is_dir():
        here, there = download.resolve(), out.resolve()
        if there == here or there.is_relative_to(here) or here.is_relative_to(there):
            raise GradingError(f"--out {out}: is inside the download {download} (or holds it); choose another folder.")
    if out.exists() and not out.is_dir():
        raise GradingError(f"--out {out}: is a file; give a folder for the submissions.")


def known_assignments(notebooks_dir: str | Path | None) -> dict[str, set[str]]:
    "{assignment: the grade ids of its cells}, from the instructor's notebooks."
    notebooks = course_notebooks(notebooks_dir)
    known = {}
    for stem, path in notebooks.items():
        known[stem] = identifying_ids(read_notebook(path))
    return known


@contextmanager
def members_of(download: Path) -> Iterator[list[Member]]:
    "The download's files (grading.intake.downloads.Member), readable while the context lasts."
    if download.is_dir():
        yield folder_members(download)
        return
    try:
        archive = zipfile.ZipFile(download)
    except Exception as error:  # noqa: BLE001  (BadZipFile, OSError, and ValueError for a malformed header)
        raise GradingError(
            f"{download}: not a readable zip file ({error}); download it again, or unpack it and pass the folder."
        ) from None
    with archive:
        yield zip_members(archive)


def read_download(members: list[Member], lms: str, download: Path) -> tuple[list[Found], list[Row]]:
    "([Found], [Row]): whose each file is, and a row for each that is refused or that the LMS's naming does not place."
    rows = [Row(m.path, NOT_PLACED, m.problem) for m in members if m.problem]  # before `ignored`: '..' starts with '.'
    skipped = [m for m in members if not m.problem and ignored(m)]
    rows += [
        Row(m.path, SKIPPED, "a hidden file, Jupyter's checkpoint or macOS's extra: not collected") for m in skipped
    ]
    readable = [m for m in members if not m.problem and not ignored(m)]
    found, unplaced = READERS[lms](readable, download)
    rows += [Row(u.path, NOT_PLACED, u.note) for u in unplaced]
    doubtful = [item for item in found if item.ambiguous]  # never placed, nor put in the roster: whose is not sure
    rows += [Row(item.member.path, NOT_PLACED, DOUBT.format(item.person.lms_id, item.ambiguous)) for item in doubtful]
    return [item for item in found if not item.ambiguous], rows


def identify(found: list[Found], known: dict[str, set[str]]) -> tuple[list[Placement], list[Row]]:
    "([Placement], [Row]): each notebook with its assignment and time; a row for every file that is not one."
    placements, rows, read = [], [], {}
    for item in found:
        person = item.person.student
        suffix = os.path.splitext(item.name)[1].lower()
        if suffix != ".ipynb":
            why = f"not a notebook ({suffix or 'no extension'}): only .ipynb files are collected"
            rows.append(Row(item.member.path, NOT_PLACED, why, person))
            continue
        if id(item.member) not in read:  # a group submission's file is read once for all its submitters
            read[id(item.member)] = summary(item.member)
        digest, ids, why = read[id(item.member)]
        if digest is None:
            rows.append(Row(item.member.path, NOT_PLACED, why, person))
            continue
        assignment, note = assignment_of(item, ids, known)
        if assignment is None:
            rows.append(Row(item.member.path, NOT_PLACED, note, person))
            continue
        if ids is None:  # placed, so that the student's row says it: autograde cannot grade it
            note = UNREADABLE.format(why)
        time, time_from = item.submitted, "the LMS's submission time"
        if time is None and item.member.time is not None:
            time, time_from = datetime.fromtimestamp(item.member.time).astimezone(), DOWNLOAD_TIME
        elif time is None:
            time_from = COLLECT_TIME
        note = "; ".join(n for n in (item.note, note) if n)
        placements.append(Placement(item, digest, assignment, note, time, time_from))
    return placements, rows


def summary(member: Member) -> tuple[str | None, set[str] | None, str]:
    """(SHA-256, grade ids, '') of a file of the download; (SHA-256, None, why) when it is no notebook's JSON (a
    truncated file); (None, None, why not) when it cannot be read. Its bytes are not kept."""
    data, why = member.read()
    if data is None:
        return None, None, why
    ids, why = grade_ids(data)
    return hashlib.sha256(data).hexdigest(), ids, why


def normal(name: str) -> str:
    "A file or folder name as an assignment's: no .ipynb, lower case, without a browser's or Canvas's ' (1)' or '-1'."
    stem = name[:-6] if name.lower().endswith(".ipynb") else name
    stem = stem.strip().lower()
    while (shorter := RENAMED.sub("", stem)) != stem:
        stem = shorter
    return stem


def assignment_of(item: Found, ids: set[str] | None, known: dict[str, set[str]]) -> tuple[str | None, str]:
    "(assignment or None, note): by the file's (or its folders') name, else by its cells' grade ids (None: no JSON)."
    lower = {name.lower(): name for name in known}
    stems = [stem for hint in item.hints for stem in (hint.lower().removesuffix(".ipynb"), normal(hint))]
    named = next((lower[stem] for stem in stems if stem in lower), None)
    matched = best_match(ids, known) if ids else None
    if named:
        if ids is not None and not ids & known[named]:
            whose = f"{matched}'s" if matched else "no course notebook's"
            return named, f"named {named}, but its cells are {whose}: autograde will say so"
        return named, ""
    if matched:
        return matched, f"{matched} told by its cells ({printable(item.name)} names no assignment)"
    if ids is None:
        return None, f"not a readable notebook, and its name {printable(item.name)!r} names no assignment"
    return None, f"its name names no assignment and its cells are no course notebook's ({', '.join(known)})"


def grade_ids(data: bytes) -> tuple[set[str] | None, str]:
    "(the nbgrader grade ids of a notebook's cells, ''), or (None, why) when it is not a notebook's JSON."
    try:
        cells = json.loads(data).get("cells")
    except (ValueError, RecursionError) as error:
        return None, f"not valid JSON ({str(error)[:100]}): the file is cut short or was not saved by Jupyter"
    except AttributeError:
        cells = None
    if not isinstance(cells, list):
        return None, "valid JSON but not a Jupyter notebook"
    return {nbgrader_meta(cell).get("grade_id") for cell in cells} - {None, ""}, ""


def best_match(ids: set[str], known: dict[str, set[str]]) -> str | None:
    "The one assignment most of whose grade ids the notebook has; None when none or two share the most."
    counts = sorted(((len(ids & theirs), name) for name, theirs in known.items()), reverse=True)
    if not counts or counts[0][0] == 0 or (len(counts) > 1 and counts[1][0] == counts[0][0]):
        return None
    return counts[0][1]


def latest(placements: list[Placement]) -> tuple[list[Placement], list[Row]]:
    "([Placement] to write, [Row] for the others): of one student's submissions of one assignment, the latest."
    groups = {}
    for p in placements:
        groups.setdefault((p.found.person.student, p.assignment), []).append(p)
    kept, rows = [], []
    for group in groups.values():
        group.sort(key=lambda p: (p.time.timestamp() if p.time else float("-inf"), p.found.order, p.found.member.path))
        last = group[-1]
        kept.append(last)
        for other in group[:-1]:
            tie = (other.time, other.found.order) == (last.time, last.found.order)
            why = (
                f"as late as {last.found.member.path}, which was kept (the last by name): check which one was meant"
                if tie
                else f"an earlier submission than {last.found.member.path} by {last.time_from}, which was kept"
                + ("" if last.found.submitted is not None else ": check which one was meant")  # (no LMS time)
            )
            rows.append(other.row(SUPERSEDED, why))
    return kept, rows


def target(p: Placement, out: Path) -> Path:
    return out / p.found.person.student / p.assignment / f"{p.assignment}.ipynb"


def plan(kept: list[Placement], out: Path, force: bool) -> set[int]:
    "The ids of placements already in OUT as they are; raises when a link is in the way or, without force, a change."
    unchanged, changed = set(), []
    for p in kept:
        path = target(p, out)
        for folder in (path.parent.parent, path.parent):
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                raise GradingError(
                    f"{folder}: is a {'symbolic link' if folder.is_symlink() else 'file'} where collect writes a "
                    "folder (it never writes through a link); move it away, or collect into a new folder."
                )
        if not (path.is_symlink() or path.exists()):
            continue
        if not path.is_symlink() and path.is_file() and same_bytes(path, p.digest):
            unchanged.add(id(p))
        elif path.is_dir() and not path.is_symlink():
            raise GradingError(f"{path}: is a folder where collect writes a notebook; move it away.")
        else:
            changed.append(path)
    if changed and not force:
        names = ", ".join(str(path) for path in changed[:5]) + (
            f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        )
        raise GradingError(
            f"--out {out}: {len(changed)} notebook(s) there differ from the download's and would be replaced: {names}; "
            "nothing was written. Pass --force to replace them, or collect into a new folder."
        )
    return unchanged


def same_bytes(path: Path, digest: str) -> bool:
    with open(path, "rb") as file:
        return hashlib.sha256(file.read(LIMIT + 1)).hexdigest() == digest


def write_notebook(p: Placement, out: Path, unchanged: set[int]) -> Row:
    "Write one placement (its file's time set to the submission's) and return its Row."
    if id(p) in unchanged:
        return p.row(UNCHANGED)
    data, why = p.found.member.read()
    if data is None or hashlib.sha256(data).hexdigest() != p.digest:
        why = why or "changed in the download while collect read it: collect it again"
        return p.row(NOT_PLACED, "; ".join(n for n in (p.note, why) if n))
    path = target(p, out)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data, p.time.timestamp() if p.time else None)
    return p.row(PLACED)


def warnings(lms: str, rows: list[Row], emails: bool = False) -> list[str]:
    "What the instructor must know about this LMS's download before grading it (`emails`: Moodle's worksheet gave them)."
    lines = []
    if lms in NO_TIMES and any(r.status == PLACED for r in rows):
        lines.append(
            f"{LMS_NAMES[lms]}'s download holds no submission times: each notebook has the time of the download, so "
            "autograde's --due would count them all late. Apply the late policy in the LMS"
            + (" (Canvas's LATE marks are in the report's notes)" if lms == "canvas" else "")
            + "."
        )
    unreadable = [
        f"{r.student}/{r.assignment}" for r in rows if r.status in (PLACED, UNCHANGED) and UNREADABLE[:24] in r.note
    ]
    if unreadable:
        lines.append(
            f"{len(unreadable)} notebook(s) placed are not readable notebooks (cut short, or not saved by Jupyter): "
            f"{', '.join(unreadable[:5])}{' and more' if len(unreadable) > 5 else ''}; autograde cannot grade them: "
            "download them again, or ask the students to hand them in again (collect-report.csv says why)."
        )
    renamed = sorted({r.student for r in rows if RENAMED_NOTE in r.note})
    if renamed:
        lines.append(
            f"{len(renamed)} student folder(s) have a suffix, so that two students never share a folder: "
            f"{', '.join(renamed[:5])}{' and more' if len(renamed) > 5 else ''}; collect-report.csv's notes say why."
            + (
                " Moodle's participant ids, which make those suffixes, differ from one assignment's download to the "
                "next: collect each download with its assignment's grading worksheet (--worksheet), whose emails "
                "keep each student's folder, or move another assignment's notebooks into these folders by hand."
                if lms == "moodle" and not emails
                else ""
            )
        )
    if lms == "moodle" and not emails and any(r.status in (PLACED, UNCHANGED) for r in rows):
        lines.append(
            "Moodle's download holds no email addresses: roster.csv keeps each student's participant id "
            "(moodle_participant), by which `export-grades --format moodle-worksheet --assignment NAME` writes the "
            "assignment's offline grading worksheet; for Moodle's gradebook import (--format moodle), collect with "
            "the assignment's grading worksheet (--worksheet), which gives the emails, or fill in the email, sis_id "
            "(ID number) or login_id (username) column of roster.csv."
        )
    return lines


def with_participants(people: list[Person], kept: list[Placement]) -> list[Person]:
    """The roster with each Moodle student's participant id of each assignment collected (moodle_participant): the id
    by which the assignment's offline grading worksheet finds them (export-grades --format moodle-worksheet); and the
    email a grading worksheet gave (--worksheet) where a line has none and no other line has it."""
    ids, emails = {}, {}
    for p in kept:
        if p.found.participant:
            ids.setdefault(p.found.person.student, {})[p.assignment] = p.found.participant
            emails[p.found.person.student] = p.found.person.email  # from the assignment's worksheet, if given
    taken = {person.email.lower() for person in people if person.email}
    result = []
    for person in people:
        email = emails.get(person.student, "")
        if email and not person.email and email.lower() not in taken:  # a line of an earlier collect without one
            person = dataclasses.replace(person, email=email)
        new = ids.get(person.student)
        if new:
            pairs = {**participants(person.moodle_participant), **new}
            person = dataclasses.replace(
                person, moodle_participant=" ".join(f"{a}={n}" for a, n in sorted(pairs.items()))
            )
        result.append(person)
    return result
