import difflib
from collections.abc import Iterable


def nearest(name: str, choices: Iterable[str]) -> str | None:
    "The choice nearest to a mistyped `name`, or None when none is near."
    close = difflib.get_close_matches(name, sorted(choices), n=1)
    return close[0] if close else None


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    "' (did you mean X?)' for the choice nearest to a mistyped `name`, or ''."
    found = nearest(name, choices)
    return f" (did you mean {found!r}?)" if found else ""


class GradingError(Exception):
    "A problem the user can fix; the command line prints it as one line and exits non-zero."


class GraderFault(GradingError):
    """The grader could not run a submission for a reason of its own (its Python does not start in the sandbox, the
    host ran out of memory): the row is *not graded*, never a 0, and the next run grades it again."""


class Refusal(BaseException):
    """The grader refuses what the student's code returned (a gradient by finite differences or float32 roundings, an
    input changed in place, an empty gradient): the call fails, and so does the test that made it. A BaseException,
    so that no test's `except` can catch it and call it something else (12's checker read one as a shape mistake);
    the page names it as the ValueError it stands for."""

    kind = "ValueError"
