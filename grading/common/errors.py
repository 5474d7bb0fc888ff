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
