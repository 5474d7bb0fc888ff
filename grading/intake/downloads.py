"""What an LMS's bulk download of submissions holds: its files, read safely, and whose each file is.

`python -m grading collect` (grading.intake.collect) reads a download in two steps, both here. First its files: a zip file
or the folder it was unpacked into, as a list of Member, without ever following a symbolic link (a link in a
student's upload could point at any file of the grader's) and without building a path from a member's name (so a
member named `../../x` (zip slip) is refused by name and written nowhere), refusing what is larger than a notebook may
be (MAX_NOTEBOOK_MB, read with a cap, since a zip's declared size can lie). Then whose each file is, as each LMS names
its files, into Found: the student (a Person, as the roster holds them), the names that may say the assignment, and
the submission time when the LMS gives one.

- canvas, "Download Submissions" of an assignment: every file at the top, named `<name>[_LATE]_<user id>_<file id>_
  <file name>` (canvas-lms lib/content_zipper.rb: the name is the student's sortable name in lower case without
  spaces or punctuation, `anon_<id>` under anonymous grading; LATE when Canvas counted it late; a repeated file name
  gets `-1`, `-2`; a name holding `_<digits>_<digits>_` can be read two ways, says so in Found.ambiguous, and is
  not collected). The student folder is the name's slug and the Canvas user id, which the roster keeps as lms_id
  (Canvas ID). The zip holds no submission time: its member times are when Canvas made the zip.
- moodle, "Download all submissions": a folder per student `<Full Name>_<participant id>_assignsubmission_file[_]/`
  with the files as uploaded, or (with "Download submissions in folders" off) files named
  `<Full Name>_<participant id>_assignsubmission_file_<file name>` (mod/assign/classes/downloader.php). The participant
  id is the assignment's own number for the student and changes from one assignment to the next, so the student
  folder is the name's slug, with the id added only where two students of one download share a name; the id is kept
  (Found.participant) for the assignment's offline grading worksheet. No submission time, no email address.
- gradescope, "Export Submissions": `submission_metadata.yml` beside one folder `submission_<id>/` per submission; the
  YAML (Ruby symbols as keys: `:submitters:`, `:name:`, `:sid:`, `:email:`, `:created_at:`) says whose each folder is
  and when it was submitted. The student folder is the student id (sid), else the email address, as a slug; a group
  submission goes to each of its submitters.
- flat: a folder (or zip) of `<student>/<anything>.ipynb` or `<student>/<assignment>/<assignment>.ipynb`; the time is
  the file's own.
"""

import hashlib
import os
import re
import stat
import unicodedata
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from ..common.defaults import MAX_NAME_BYTES, MAX_NOTEBOOK_MB
from ..common.errors import GradingError
from ..common.names import name_problem, windows_device
from .roster import Person, plain

RENAMED_NOTE = "this student's folder is"  # a note's words where a student's folder is not their name's
LIMIT = MAX_NOTEBOOK_MB * 2**20  # bytes: the most collect reads of one file
READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)  # a link is never read through
JUNK = ("__MACOSX",)  # macOS's resource forks in a zip made on a Mac; names starting with '.' are skipped too
CANVAS = re.compile(
    r"(?P<name>.+?)(?:_(?P<late>(?i:late)))?_(?P<user>\d{1,20})_(?P<file>\d{1,20})_(?P<original>.+)", re.S
)
CANVAS_IDS = re.compile(r"(?=_([1-9]\d{0,19})_([1-9]\d{2,19})_.)", re.S)  # where ids could begin (below)
CANVAS_ANONYMOUS = re.compile(r"(?:(?P<late>(?i:late))_)?anon_(?P<anon>[^\W_]+)_(?P<file>\d+)_(?P<original>.+)", re.S)
MOODLE_FOLDER = re.compile(r"(?P<name>[^_]*)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z0-9]+)_?")
MOODLE_START = re.compile(r"[^_]*_\d+_assignsubmission_")  # the first folder so named is the student's
MOODLE_FILE = re.compile(r"(?P<name>[^_]*)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z0-9]+)_(?P<file>.+)", re.S)
GRADESCOPE_METADATA = "submission_metadata.yml"
RUBY_TIME = re.compile(
    r"(?P<date>\d{4}-\d\d-\d\d)[T ](?P<time>\d\d:\d\d:\d\d)(?P<fraction>\.\d+)?\s*(?P<zone>Z|[+-]\d\d:?\d\d)?"
)


@dataclass
class Member:
    "One file of the download: its path there ('/' between folders), its time there, and how to read it."

    path: str
    time: float | None = None  # seconds since the epoch: the zip member's time, or the file's
    opener: Callable[[], BinaryIO] | None = None  # returns a binary file; None when `problem` says why it is not read
    problem: str = ""

    def read(self) -> tuple[bytes | None, str]:
        "(its bytes, '') or (None, why not): never more than LIMIT bytes, whatever the zip declares."
        try:
            with self.opener() as file:
                data = file.read(LIMIT + 1)
        except (OSError, EOFError, ValueError, RuntimeError, zipfile.BadZipFile, zlib.error) as error:
            return None, f"cannot be read ({error}); download the submissions again"
        except NotImplementedError as error:  # a compression Python's zipfile lacks (Deflate64 of Windows' zip tool)
            return None, f"cannot be unpacked here ({error}); unpack the download with another tool and pass the folder"
        if len(data) > LIMIT:
            return None, too_large()
        return data, ""


@dataclass
class Found:
    "A file of one student's submission, as the LMS's download names it."

    member: Member
    person: Person
    name: str  # the file's own name, as the student uploaded it
    hints: list[str] = field(default_factory=list)  # names that may say the assignment: the file's, then its folders'
    submitted: datetime | None = None  # the LMS's submission time, when it gives one
    order: int = 0  # the LMS's upload order where it has no time (Canvas's file id grows with each upload)
    note: str = ""
    ambiguous: str = ""  # other readings of its name (a Canvas name holding _<id>_<id>_): it is not collected
    participant: str = ""  # Moodle's participant id of the student in this assignment (its offline worksheet's)


@dataclass
class Unplaced:
    "A file of the download that is nobody's submission as far as the LMS's naming says, and why."

    path: str
    note: str


def too_large() -> str:
    return f"larger than the {MAX_NOTEBOOK_MB} MB a notebook may be: refused"


def printable(text: str) -> str:
    "A name from the download as a report line may show it (unprintable characters and undecodable bytes as '?')."
    text = text.encode("utf-8", "replace").decode("utf-8")
    return "".join(c if c.isprintable() else "?" for c in text)


def slug(text: str, lower: bool = True) -> str:
    "A safe student folder name from a name or an id: letters and digits (accents dropped), '-' between words."
    text = unicodedata.normalize("NFKD", text.encode("utf-8", "replace").decode("utf-8"))
    text = "".join(c for c in text if not unicodedata.combining(c))
    words = re.split(r"[^\w]+|_", text.lower() if lower else text)
    result = "-".join(w for w in words if w).encode()[: MAX_NAME_BYTES * 3 // 5].decode(errors="ignore").strip("-")
    if windows_device(result):
        result = f"student-{result}"  # a student called Con keeps their name, in a folder Windows can hold
    return result if result and name_problem(result) is None else ""


def member_name(info: zipfile.ZipInfo) -> str:
    """A member's name as its zip meant it. Without the UTF-8 flag, zipfile reads the name's bytes as CP437 (the zip
    format's old default), but Info-ZIP, Windows and LMS downloads write UTF-8 there: "José" then read "Jos├⌐", and a
    student's folder and roster name differed from those of the same download unpacked. Bytes that are UTF-8 are read
    as UTF-8; others stay CP437."""
    if info.flag_bits & 0x800:
        return info.filename
    try:
        return info.filename.encode("cp437").decode("utf-8")
    except UnicodeError:
        return info.filename


def zip_members(archive: zipfile.ZipFile) -> list[Member]:
    "The files of a zip as Members; a member that leads out of the download, a link, or too large has a problem."
    members = []
    for info in archive.infolist():
        if info.is_dir():
            continue
        name = member_name(info).replace("\\", "/")  # some Windows tools write backslashes
        parts = [p for p in name.split("/") if p not in ("", ".")]
        problem = ""
        if name.startswith("/") or re.match(r"[A-Za-z]:", name) or ".." in parts:
            problem = "its path leads out of the download (zip slip): refused"
        elif stat.S_ISLNK(info.external_attr >> 16):
            problem = "a symbolic link: refused (only the files themselves are collected)"
        elif info.flag_bits & 0x1:
            problem = "encrypted: refused; download the submissions again without a password"
        elif info.file_size > LIMIT:
            problem = too_large()
        try:
            time = datetime(*info.date_time).timestamp()  # a zip's times are the local time of the machine
        except ValueError:
            time = None
        opener = (lambda info=info: archive.open(info)) if not problem else None
        members.append(Member("/".join(parts) if not problem else info.filename, time, opener, problem))
    return members


def folder_members(top: str | Path) -> list[Member]:
    "The files under the folder `top` as Members, walked without entering a linked folder or reading a linked file."
    members = []

    def unreadable(error: OSError) -> None:  # os.walk would skip a folder it cannot list without a word
        where = os.path.relpath(error.filename, top).replace(os.sep, "/")
        members.append(Member(where, problem=f"cannot be read ({error.strerror}): refused"))

    for root, dirs, files in os.walk(top, onerror=unreadable):  # followlinks=False: a linked folder is not entered
        relative = os.path.relpath(root, top)
        prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
        dirs.sort()
        for name in list(dirs):
            if os.path.islink(os.path.join(root, name)):
                members.append(Member(prefix + name, problem="a symbolic link: refused"))
                dirs.remove(name)
        for name in sorted(files):
            path = os.path.join(root, name)
            try:
                info = os.lstat(path)
            except OSError as error:
                members.append(Member(prefix + name, problem=f"cannot be read ({error.strerror}): refused"))
                continue
            problem = ""
            if stat.S_ISLNK(info.st_mode):
                problem = "a symbolic link: refused (only the files themselves are collected)"
            elif not stat.S_ISREG(info.st_mode):
                problem = "not a plain file: refused"
            elif info.st_size > LIMIT:
                problem = too_large()
            opener = (lambda path=path: os.fdopen(os.open(path, READ_FLAGS), "rb")) if not problem else None
            members.append(Member(prefix + name, info.st_mtime, opener, problem))
    return members


def ignored(member: Member) -> bool:
    """Files that are nobody's submission: hidden files, Jupyter's checkpoints, macOS's extras (a report row says so).
    A top folder is the LMS's student folder: a Moodle name starting with '.' is no hidden folder."""
    parts = member.path.split("/")
    named = parts[1:] if len(parts) > 1 else parts
    return any(part in JUNK for part in parts) or any(part.startswith(".") for part in named)


def other_readings(name: str, match: re.Match) -> list[tuple[str, str]]:
    """The other (user id, file id) that a Canvas file name can be read as, where CANVAS read `match`. A student
    who can set their sortable name to end in `_<a classmate's user id>` (or more) has files that CANVAS reads as
    the classmate's: `ada_1001_2002_600_x.ipynb` is user 1001's file `600_x.ipynb`, or user 2002's file `x.ipynb`
    of a student named `ada_1001`. Readings from the file id on count; not those whose file id has a leading zero
    or fewer than 3 digits, which Canvas's never have (its ids count every file of the instance): so a course
    notebook's name, `10_optimizers.ipynb`, gives no second reading."""
    after_user = match.start("file") - 1  # the '_' before the file id: readings from there on
    return [(m[1], m[2]) for m in CANVAS_IDS.finditer(name, after_user)]


def canvas(members: list[Member], download: Path) -> tuple[list[Found], list[Unplaced]]:
    "Found and Unplaced of a Canvas download (see the module's docstring)."
    found, unplaced = [], []
    for member in members:
        name = member.path.rsplit("/", 1)[-1]
        match = CANVAS_ANONYMOUS.fullmatch(name) or CANVAS.fullmatch(name)
        if not match:
            unplaced.append(
                Unplaced(
                    member.path,
                    "not named as Canvas names a submitted file (<name>_<user id>_"
                    "<file id>_<file name>): is this a Canvas download?",
                )
            )
            continue
        groups = match.groupdict()
        if groups.get("anon"):
            person = Person(student=f"anon-{slug(groups['anon'], lower=False)}")
        else:
            person = Person(
                student=f"{slug(groups['name']) or 'student'}-{groups['user']}",
                name=printable(groups["name"]),
                lms_id=groups["user"],
            )
        note = "Canvas marked it LATE" if groups["late"] else ""
        original = groups["original"]
        others = other_readings(name, match) if not groups.get("anon") else []
        ambiguous = " or ".join(f"user {user}'s file {file}" for user, file in others)
        found.append(
            Found(member, person, original, [original], order=int(groups["file"]), note=note, ambiguous=ambiguous)
        )
    return found, unplaced


def moodle(members: list[Member], download: Path) -> tuple[list[Found], list[Unplaced]]:
    "Found and Unplaced of a Moodle download (see the module's docstring)."
    seen, unplaced = [], []
    for member in members:
        parts = member.path.split("/")
        index = next((i for i, part in enumerate(parts[:-1]) if MOODLE_START.match(part)), None)
        if index is not None and not MOODLE_FOLDER.fullmatch(parts[index]):  # a folder a student made to look so
            unplaced.append(Unplaced(member.path, f"{printable(parts[index])!r} is not a folder Moodle names"))
            continue
        if index is not None:
            match, rest = MOODLE_FOLDER.fullmatch(parts[index]), parts[index + 1 :]
        elif match := MOODLE_FILE.fullmatch(parts[-1]):
            rest = [match["file"]]
        else:
            why = "not in a folder named as Moodle names a submission (<Full Name>_<participant id>_assignsubmission_file)"
            unplaced.append(Unplaced(member.path, why + ": is this a Moodle download?"))
            continue
        if match["plugin"] != "file":
            unplaced.append(Unplaced(member.path, f"Moodle's {match['plugin']} submission, not an uploaded file"))
            continue
        seen.append((member, printable(match["name"]).strip(), match["id"], rest))
    ids = {}
    for _, name, participant, _ in seen:
        ids.setdefault(plain(name), set()).add(participant)
    found = []
    for member, name, participant, rest in seen:
        base = slug(name) or "student"
        shared = len(ids[plain(name)]) > 1  # two students of this download have one name: their ids tell them apart
        person = Person(student=f"{base}-{participant}" if shared else base, name=name)
        note = f"two students of this download are named {name}: {RENAMED_NOTE} {person.student}" if shared else ""
        hints = [rest[-1], *reversed(rest[:-1])]
        found.append(Found(member, person, rest[-1], hints, note=note, participant=participant))
    return found, unplaced


def gradescope(members: list[Member], download: Path) -> tuple[list[Found], list[Unplaced]]:
    "Found and Unplaced of a Gradescope export (see the module's docstring)."
    metadata = [m for m in members if m.path.rsplit("/", 1)[-1] == GRADESCOPE_METADATA and not m.problem]
    if not metadata:
        raise GradingError(
            f"{download}: has no {GRADESCOPE_METADATA}, which Gradescope's Export Submissions puts beside the "
            "submission folders; pass that export, or choose the --lms that made this download."
        )
    meta = min(metadata, key=lambda m: m.path.count("/"))
    root = meta.path.rsplit("/", 1)[0] + "/" if "/" in meta.path else ""
    submissions = read_gradescope_metadata(meta, f"{download}: {meta.path}")
    found, unplaced = [], []
    for member in members:
        if member is meta:
            continue
        rest = member.path[len(root) :].split("/") if member.path.startswith(root) else []
        if len(rest) < 2 or rest[0] not in submissions:
            unplaced.append(Unplaced(member.path, f"not in a submission folder that {GRADESCOPE_METADATA} names"))
            continue
        people, submitted = submissions[rest[0]]
        if not people:
            unplaced.append(Unplaced(member.path, f"{rest[0]} has no submitters in {GRADESCOPE_METADATA}"))
            continue
        hints = [rest[-1], *reversed(rest[1:-1])]
        note = f"a group submission of {', '.join(p.name or p.student for p in people)}" if len(people) > 1 else ""
        found += [Found(member, person, rest[-1], hints, submitted, note=note) for person in people]
    return found, unplaced


def read_gradescope_metadata(meta: Member, where: str) -> dict[str, tuple[list[Person], datetime | None]]:
    "{submission folder: ([Person], created_at or None)} from Gradescope's submission_metadata.yml."
    data, why = meta.read()
    if data is None:
        raise GradingError(f"{where}: {why}; download the export again.")
    try:
        import yaml  # noqa: PLC0415  (PyYAML: needed for Gradescope only)
    except ModuleNotFoundError:
        raise GradingError(f"{where}: reading it needs PyYAML; run: pip install pyyaml") from None

    class Loader(yaml.SafeLoader):
        "SafeLoader that reads Ruby's object tags (!ruby/hash:..., which Rails may write) as plain data."

    def plain(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> object:
        if isinstance(node, yaml.MappingNode):
            return loader.construct_mapping(node, deep=True)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node, deep=True)
        return loader.construct_scalar(node)

    Loader.add_multi_constructor("!", plain)
    Loader.add_multi_constructor("tag:yaml.org,2002:ruby/", plain)
    try:
        raw = unsymbol(yaml.load(data, Loader=Loader))  # noqa: S506  (a SafeLoader subclass)
    except yaml.YAMLError as error:
        raise GradingError(f"{where}: not readable YAML ({str(error).splitlines()[0]}); download it again.") from None
    except (ValueError, TypeError) as error:  # a timestamp that is no date (2026-02-30), read by PyYAML
        raise GradingError(f"{where}: not readable YAML ({error}); download it again.") from None
    except RecursionError:  # an alias inside itself (&a ... *a): no export of Gradescope's is one
        raise GradingError(f"{where}: refers to itself (a YAML alias in a loop); download it again.") from None
    if not isinstance(raw, dict):
        raise GradingError(f"{where}: expected one entry per submission folder (submission_<id>: ...).")
    submissions = {}
    for folder, entry in raw.items():
        entry = entry if isinstance(entry, dict) else {}
        people = []
        submitters = entry.get("submitters") or []
        if not isinstance(submitters, list):
            raise GradingError(f"{where}: {printable(str(folder))}'s submitters are not a list; download it again.")
        for who in submitters:
            who = who if isinstance(who, dict) else {}
            values = (who.get(key) for key in ("name", "sid", "email"))
            name, sid, email = ("" if v is None else printable(str(v)).strip() for v in values)  # a sid 0 is a sid
            email = email if "@" in email else ""  # what roster.csv refuses is not written there
            student = slug(sid, lower=False) or slug(email) or f"{slug(name) or 'student'}-{slug(str(folder))}"
            person = Person(student=student, name=name, email=email, sis_id=sid)
            if person not in people:  # a submitter listed twice in one group
                people.append(person)
        submissions[str(folder)] = (people, parse_time(entry.get("created_at")))
    return submissions


def unsymbol(value: object) -> object:
    "Gradescope's YAML with its Ruby symbol keys (':name') as plain ones ('name')."
    if isinstance(value, dict):
        return {(k[1:] if isinstance(k, str) and k.startswith(":") else k): unsymbol(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unsymbol(v) for v in value]
    return value


def parse_time(value: object) -> datetime | None:
    "An aware datetime from YAML's timestamp (naive means UTC there) or from Ruby's text of one; None if neither."
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    match = RUBY_TIME.fullmatch(value.strip()) if isinstance(value, str) else None
    if not match:
        return None
    fraction = (match["fraction"] or ".0")[:7]  # Ruby writes nanoseconds, Python reads microseconds
    zone = match["zone"] or "+00:00"
    try:
        return datetime.fromisoformat(f"{match['date']}T{match['time']}{fraction}{'+00:00' if zone == 'Z' else zone}")
    except ValueError:
        return None


OWN_FILES = ("roster.csv", "collect-report.csv")  # what collect writes beside the students' folders (collect.py)


def flat(members: list[Member], download: Path) -> tuple[list[Found], list[Unplaced]]:
    "Found and Unplaced of a folder of <student>/<anything>.ipynb (see the module's docstring)."
    found, unplaced = [], []
    folders = {member.path.split("/")[0] for member in members}
    for member in members:
        parts = member.path.split("/")
        if len(parts) < 2:
            unplaced.append(Unplaced(member.path, "not in a student folder: expected <student>/<assignment>.ipynb"))
            continue
        student, note = parts[0], ""
        if name_problem(student) or student.lower() in OWN_FILES:
            student = slug(student) or "student"
            if student in folders or student.lower() in OWN_FILES:  # another student's folder: never merged with it
                student += "-" + hashlib.sha256(parts[0].encode("utf-8", "surrogateescape")).hexdigest()[:8]
            note = f"the folder name {printable(parts[0])!r} cannot name a student's folder: {student} instead"
        found.append(Found(member, Person(student=student), parts[-1], [parts[-1], *reversed(parts[1:-1])], note=note))
    return found, unplaced


READERS = {"canvas": canvas, "moodle": moodle, "gradescope": gradescope, "flat": flat}
NO_TIMES = {"canvas", "moodle"}  # downloads whose files carry the time of the download, not of the submission
