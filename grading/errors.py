class GradingError(Exception):
    "A problem the user can fix; the command line prints it as one line and exits non-zero."
