"""Which names can name a student's or an assignment's files everywhere: the one check of a folder name that
`collect` (grading.intake) and `autograde` (grading.grade.submissions) both make."""

import unicodedata

from .defaults import MAX_NAME_BYTES

NAME_PUNCTUATION = " ._-+@"  # besides letters, digits and accents (any script's, NFC or NFD): a folder name may hold


# Names Windows keeps for devices, with or without an extension ("con", "Aux.ipynb"): such a folder cannot be unpacked
# there, so a class's feedback zip holding one would stop at it.
WINDOWS_DEVICES = {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"} | {
    f"{port}{n}" for port in ("COM", "LPT") for n in (*"0123456789", "\u00b9", "\u00b2", "\u00b3")
}


def windows_device(name: str) -> bool:
    "Whether Windows reads `name` as a device (CON, NUL, COM1, ...) rather than a file or folder."
    return name.split(".")[0].rstrip(" ").upper() in WINDOWS_DEVICES


def name_problem(name: str) -> str | None:
    "Why `name` cannot name a student's or an assignment's files (None when it can)."
    if len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        return f"the name is {len(name.encode('utf-8', 'surrogateescape'))} bytes long (at most {MAX_NAME_BYTES})"
    if not name.isprintable() or "\\" in name or name.startswith(("-", ".", " ")) or name.endswith((" ", ".")):
        return (
            "the name has characters that cannot name a file everywhere (control characters, a backslash, a leading "
            "'-' or '.', or a space or '.' at either end, which Windows drops)"
        )
    if windows_device(name):
        return (
            f"the name {name.split('.')[0]!r} is one Windows keeps for a device (CON, PRN, AUX, NUL, COM1..9, LPT1..9): "
            "a folder of that name cannot be unpacked there; rename the folder (e.g. add the student's initials)"
        )
    if not all(c.isalnum() or c in NAME_PUNCTUATION or unicodedata.category(c).startswith("M") for c in name):
        return (
            f"the name has characters other than letters, digits, spaces and {' '.join(NAME_PUNCTUATION.strip())}: "
            "it becomes the student's id in nbgrader's marking pages, which show it as HTML unescaped (a name holding "
            "a tag would run there as script); rename the folder"
        )
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "the name is not valid UTF-8"
    return None
