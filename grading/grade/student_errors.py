"""An error of the student's code as the grader's process holds it, and how the page tells it.

No exception object crosses the trust boundary: an error comes back as its kind and message (grading.sandbox.wire) and
is rebuilt here as one of the grader's (exception_of), marked as the student's (students). A hidden test's message
never quotes text the student's code wrote (describe_hidden): that code saw the hidden inputs.
"""

from __future__ import annotations

import re
import sys

from ..common.errors import Refusal
from ..reports.feedback import NOT_SHOWN
from ..sandbox import wire


class StudentError(RuntimeError):
    """Something the student's code did (a crash, an error type the grader does not pass on) failed the call. Its
    text is in the student's words; `kind` is the name the page gives it (the student's exception's, or "Error"),
    never this class's, which is the grader's."""

    def __init__(self, message: str, kind: str = "Error") -> None:
        super().__init__(message)
        self.kind = kind


# Python's own exceptions that the worker sends by name only (not in wire.EXCEPTIONS): a hidden test may name them,
# as it names those (their names are Python's, not chosen by the student's code).
NAMED_ERRORS = ("NameError", "UnboundLocalError", "ImportError", "ModuleNotFoundError", "EOFError", "OSError")


def students(error: BaseException, qualname: str | None, summary: str | None = None) -> BaseException:
    """Mark `error` as caused by the student's `qualname` (it raised, or sent back what the grader cannot check): in a
    hidden test its text is not shown, only `summary` or the error's kind (see describe_hidden)."""
    error.raised_by_student, error.raised_in, error.summary = True, qualname, summary
    return error


def exception_of(reply: dict, qualname: str | None = None) -> BaseException:
    "The exception the student's code raised, as one of the grader's, marked as the student's (see run_cell)."
    kind, message = reply.get("type"), str(reply.get("message", ""))
    if kind == "GradcheckError" and "tinytorch.core.gradcheck" in sys.modules:
        error = sys.modules["tinytorch.core.gradcheck"].GradcheckError(message)
    elif kind in wire.EXCEPTIONS:
        error = wire.EXCEPTIONS[kind](message)
    else:
        raised = str(reply.get("raised", "Error"))
        error = StudentError(f"{raised}: {message}" if message else raised, kind=raised)
    raised, what = reply.get("raised"), f"your {qualname}" if qualname else "your code"
    # the worker's own words (grading.sandbox.wire), checked word for word: a hidden test may show them
    if raised == "CallTimeout" and message == wire.CALL_TIMEOUT:
        return students(StudentError(timed_out_text(qualname), kind="Timeout"), qualname, timed_out_text(qualname))
    if raised in ("SystemExit", "KeyboardInterrupt"):  # what it did, not the exception's name (its message hidden)
        did = "called sys.exit({})" if raised == "SystemExit" else "raised KeyboardInterrupt{}"
        said = message if raised == "SystemExit" else f" ({message})" if message else ""
        error = StudentError(f"{what} {did.format(said)}: a function graded here returns its result", kind=raised)
        return students(error, qualname, f"{what} {did.format('')}")
    if kind == "MemoryError":
        error = MemoryError(f"{what} ran out of memory ({message})")
        return students(error, qualname, f"{what} ran out of memory")
    if raised in NAMED_ERRORS:
        return students(error, qualname, f"{raised} from {what}")
    name = (qualname or "").split(".")[0]
    if name and message == wire.not_defined(name):
        return students(
            error, qualname, f"{name} is not defined in your module: its cell did not run, or named it otherwise"
        )
    return students(error, qualname)


def timed_out_text(qualname: str | None) -> str:
    return f"your {qualname} {wire.CALL_TIMEOUT} (an endless loop, or much too slow)"


# Text a hidden test's own message may quote that the student's code chose: the repr of a string it returned (perhaps
# cut short, so a quote may run to the end, even where the cut leaves an escape's backslash last). An apostrophe
# inside a word ("the rule's") opens no quote.
QUOTED = re.compile(
    r"""(?<!\w)'(?:[^'\\]|\\(?:.|$))*?(?:'(?!\w)|$)|(?<!\w)"(?:[^"\\]|\\(?:.|$))*?(?:"(?!\w)|$)""", re.DOTALL
)


# What differs while a notebook is graded, said by the course's own code in the student's process: the one message of
# its that a hidden test may name, in the grader's words (the student's code could raise the same words with more).
GRADING_ONLY = {
    "The digits data is not at": (
        "load_digits() found no data: while a notebook is graded there is none, and a function gets the digits only "
        "as the arrays it is passed (the capstone's held-out images are digits too)"
    ),
}


def describe_hidden(error: BaseException, source: str = "") -> str:
    """A failing hidden test's message for the page, with no text in it that the student's code wrote: that code had
    the hidden inputs, and could spell them out (in digits or in words) in its error, in a string it returned or in a
    class's name. An error of the student's code is named by its kind and the function it came from; the test's own
    message is shown with quoted text blanked, but for a quote the test's `source` holds as it is (a section's name,
    'The step', or padding='same'): the instructor wrote that. The numbers the test's message gives (which input, the shapes, the
    worst element's two values) stay: a rule that fails on purpose can put a few of its numbers there, and
    `--feedback summary` shows none (docs/instructor.md, "What the students see")."""
    if getattr(error, "raised_by_student", False):
        kind = "an error of its own class" if isinstance(error, StudentError) else type(error).__name__
        where = f"your {error.raised_in}" if getattr(error, "raised_in", None) else "your code"
        summary = getattr(error, "summary", None) or f"{kind} from {where}"
        hidden = "" if summary == str(error) else f" ({NOT_SHOWN})"  # (a timeout: the grader's words, all shown)
        message = f"{summary} in a hidden test{hidden}"  # why, and what to do: once, on the page (WHY_NOT_SHOWN)
        message += "".join(f"; {text}" for phrase, text in GRADING_ONLY.items() if phrase in str(error))
        message += "".join(f"; it was {note}" for note in notes_of(error))
        if isinstance(error, RecursionError):
            message += (
                "; a function that calls itself once per node fails on a deep graph (Python allows about 1,000 "
                "nested calls): walk the graph with a loop and an explicit stack instead"
            )
        return message
    return QUOTED.sub(lambda quote: quote[0] if _in_source(quote[0], source) else "'…'", describe(error))


def _in_source(quote: str, source: str) -> bool:
    "Whether the test's source holds this quoted text, in either kind of quotes (repr writes 'he' for \"he\")."
    inner = quote[1:-1] if len(quote) >= 2 and quote[0] == quote[-1] else None
    return quote in source or (inner is not None and any(f"{q}{inner}{q}" in source for q in "'\""))


def notes_of(error: BaseException) -> list[str]:
    """The notes the course's own code added to an error as it passed (03's check_backward names the call a rule
    raised in). Only the grader's process adds them: an error of the student's code arrives here as a new exception,
    built from its kind and message alone (exception_of)."""
    notes = getattr(error, "__notes__", None)
    return [note for note in notes if isinstance(note, str)] if isinstance(notes, list) else []


def error_name(error: BaseException) -> str:
    "The name the page gives an error: a student's error its own kind, never a class of the grader's."
    return error.kind if isinstance(error, StudentError | Refusal) else type(error).__name__


def describe(error: BaseException) -> str:
    text = str(error) if isinstance(error, StudentError) else f"{error_name(error)}: {error}"
    text += "".join(f" ({note})" for note in notes_of(error) if note.removeprefix("in the case ") not in text)
    return text if len(text) < 2000 else text[:2000] + " ..."
