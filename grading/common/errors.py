class GradingError(Exception):
    "A problem the user can fix; the command line prints it as one line and exits non-zero."


class GraderFault(GradingError):
    """The grader could not run a submission for a reason of its own (its Python does not start in the sandbox, the
    host ran out of memory): the row is *not graded*, never a 0, and the next run grades it again."""
