"""Every student of a download in a folder of their own (`python -m grading collect`, grading.intake.collect).

An LMS's naming gives each student a folder name (grading.intake.downloads): Canvas's name and user id, Gradescope's
student id or email, Moodle's name, a flat download's folder. Two students can end up with one name: two Moodle
names that slug alike ("Anna B" of participant 5 and "Anna B 5"), a Gradescope student id and another student's email
("a-b-x" and "a.b@x"), names that differ in case only (one folder where the disk ignores case, as macOS's and
Windows' do), or a folder that roster.csv, from an earlier collect, gives to someone else. Their notebooks would
share a folder and the later would supersede the earlier. So, in `distinct_students`:

1. a student whom one line of roster.csv names by the same LMS id or email (a Moodle student: by the same name), and
   no other student of the download does, keeps that line's folder: their notebooks of every assignment stay together;
2. a folder that is two students' (ignoring case and Unicode normalisation), or that the roster gives to somebody
   else, gets a suffix for each of them but the one the roster gives it to: `-` and hex digits of a hash of who they
   are, the same in every collect;
3. step 2 is repeated, with a longer hash, until every folder is one student's: a student cannot pick a name that
   slugs to another's suffixed folder and take it.
"""

import dataclasses
import hashlib
import unicodedata
from collections import Counter, defaultdict

from ..common.defaults import MAX_NAME_BYTES
from ..common.errors import GradingError
from ..common.names import name_problem
from .downloads import RENAMED_NOTE, Found
from .roster import Person, identity, plain, shares_an_id

HASH_LENGTHS = (8, 16, 32, 64)  # hex digits of a suffix, longer in each round that still finds a shared folder


def folder_key(folder: str) -> str:
    "A folder name as a disk that ignores case and Unicode normalisation sees it."
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", folder).casefold())


def conflict(one: Person, other: Person) -> bool:
    """Whether two Persons are surely two students: an LMS id or email that both have differs, or, where one is known
    by name alone (Moodle's download has no id that lasts, nor an email), their names differ."""
    if not any(identity(one)) or not any(identity(other)):
        return bool(one.name and other.name and plain(one.name) != plain(other.name))
    return any(a and b and a != b for a, b in zip(identity(one), identity(other), strict=True))


def same_student(one: Person, other: Person) -> bool:
    """Whether two Persons are one student: an LMS id or email that both have agrees, and none differs; or, where one
    is known by name alone (Moodle), the same name."""
    agree = shares_an_id(one, other)
    if not any(identity(one)) or not any(identity(other)):
        agree = bool(one.name and plain(one.name) == plain(other.name))
    return agree and not conflict(one, other)


def who(person: Person) -> tuple[str, ...]:
    "One student of a download: their folder name as the LMS's naming gives it, ids, email and name."
    return (person.student, *identity(person), person.name)


def suffixed(person: Person, length: int) -> str:
    "<student>-<`length` hex digits of who they are>, within the bytes a folder name may have."
    digest = hashlib.sha256("\0".join(who(person)).encode("utf-8", "surrogateescape")).hexdigest()[:length]
    base = person.student.encode("utf-8", "surrogateescape")[: MAX_NAME_BYTES - length - 1]
    return f"{base.decode('utf-8', 'ignore')}-{digest}"


def distinct_students(found: list[Found], listed: list[Person]) -> list[Found]:
    "The Found of a download with every student in a folder of their own (see the module's docstring)."
    people = {}
    for item in found:
        people.setdefault(who(item.person), item.person)
    folder, owner = roster_folders(people, listed)
    roster = defaultdict(list)
    for line in listed:
        roster[folder_key(line.student)].append(line)
    notes = {}
    for length in HASH_LENGTHS:
        shared = Counter(folder_key(name) for name in folder.values())
        owned = Counter(folder_key(folder[key]) for key in people if owner[key] is not None)
        clashes = {key: why_not(folder[key], people[key], owner[key], shared, owned, roster) for key in people}
        clashes = {key: why for key, why in clashes.items() if why}
        if not clashes:
            break
        for key, why in clashes.items():
            folder[key] = suffixed(people[key], length)
            notes[key] = f"{why}: {RENAMED_NOTE} {folder[key]} instead"
    else:
        raise GradingError(
            f"collect could not give {len(clashes)} student(s) a folder of their own (a fault of the grader, not of "
            "the download): report it, with collect-report.csv; nothing was written."
        )
    result = []
    for item in found:
        key = who(item.person)
        note = "; ".join(n for n in (item.note, notes.get(key, "")) if n)
        person = dataclasses.replace(item.person, student=folder[key])
        result.append(dataclasses.replace(item, person=person, note=note))
    return result


def roster_folders(
    people: dict[tuple[str, ...], Person], listed: list[Person]
) -> tuple[dict[tuple[str, ...], str], dict[tuple[str, ...], Person | None]]:
    """({who: folder}, {who: the roster line whose folder it is, or None}): the roster's folder for a student it
    knows by LMS id or email when one line does and no other student of the download claims that line."""
    usable = [line for line in listed if name_problem(line.student) is None]  # an instructor may edit the roster
    matches = {key: [line for line in usable if same_student(line, person)] for key, person in people.items()}
    claims = Counter(match[0].student for match in matches.values() if len(match) == 1)
    folder, owner = {}, {}
    for key, person in people.items():
        match = matches[key]
        theirs = len(match) == 1 and claims[match[0].student] == 1
        folder[key], owner[key] = (match[0].student, match[0]) if theirs else (person.student, None)
    return folder, owner


def why_not(
    name: str, person: Person, owner: Person | None, shared: Counter, owned: Counter, roster: dict[str, list[Person]]
) -> str | None:
    """Why `person` cannot have the folder `name` (None when they can): another student of the download has it too
    (and the roster gives it to neither, or to that other one), or the roster gives it to someone else."""
    if shared[folder_key(name)] > 1 and (owner is None or owned[folder_key(name)] > 1):
        return f"another student of this download also has the folder {name}"
    lines = [line for line in roster.get(folder_key(name), []) if line is not owner]
    if any(line.student != name or conflict(line, person) for line in lines):
        return f"roster.csv gives the folder {lines[0].student} to another student"
    return None
