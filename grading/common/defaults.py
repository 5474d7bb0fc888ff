"""The grader's limits, in one place: the command-line defaults and every module that needs them read them here."""

CELL_TIMEOUT = 120  # CPU seconds one call of the student's code (or one of the instructor's cells) may use
NOTEBOOK_TIMEOUT = 900  # seconds (of a quiet machine: longer under load) one submission may take, both runs together
MEMORY_MB = 4096  # memory one student process may use
FEEDBACK_CHOICES = (
    "full",
    "summary",
    "none",
)  # what the pages show (grading.reports.feedback.POLICIES); the first is the default
CHECK_TIMEOUT = 300  # seconds one cell may run in `python -m grading check`, on the student's machine
MAX_NOTEBOOK_MB = 50  # a submitted notebook larger than this is refused with a note (clear its outputs)
# JSON objects and lists in a notebook: the course's have a few hundred. 16 million empty ones (48 MB) took the grader
# 8 GB to parse, outside any sandbox (red team round 8); 100,000 take about 50 MB.
MAX_NOTEBOOK_CONTAINERS = 100_000
MAX_NAME_BYTES = 100  # a student or assignment folder name longer than this is refused with a note
GRADER_MEMORY_MB = 8192  # address space of one grading job (the grader's own process, not the student's)
# Gradescope's default container (its autograder documentation, "Troubleshooting"): the limits the zip is made for
GRADESCOPE_TIMEOUT = 600  # seconds a submission's whole run may take (the assignment's settings raise it, to 40 min)
GRADESCOPE_MEMORY_MB = 768  # the whole container's memory (Autograder Settings raise it)
GRADESCOPE_CPU = 0.5  # the container's share of a CPU (Autograder Settings raise it)
GRADESCOPE_MAX_TIMEOUT = 2400  # seconds: the most Gradescope's settings allow (40 minutes)
# A run there is the set-up and the reference check, then the submission: the solved 11, 12 and 16 took at most 120 s
# in all at 768 MB and half a CPU (benchmarks/gradescope_limits.py), so the zip keeps 180 s for the set-up and check
GRADESCOPE_SETUP = 180
GRADESCOPE_NOTEBOOK_TIMEOUT = GRADESCOPE_TIMEOUT - GRADESCOPE_SETUP  # the zip's notebook limit: the default fits
