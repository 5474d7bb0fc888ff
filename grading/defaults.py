"""The grader's limits, in one place: the command-line defaults and every module that needs them read them here."""

CELL_TIMEOUT = 120  # seconds one cell may run when grading
NOTEBOOK_TIMEOUT = 900  # seconds one submission may take, both runs together
MEMORY_MB = 4096  # memory one student process may use
CHECK_TIMEOUT = 300  # seconds one cell may run in `python -m grading check`, on the student's machine
MAX_NOTEBOOK_MB = 50  # a submitted notebook larger than this is refused with a note (clear its outputs)
MAX_NAME_BYTES = 100  # a student or assignment folder name longer than this is refused with a note
