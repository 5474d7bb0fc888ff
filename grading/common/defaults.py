"""The grader's limits, in one place: the command-line defaults and every module that needs them read them here."""

CELL_TIMEOUT = 120  # CPU seconds one call of the student's code (or one of the instructor's cells) may use
NOTEBOOK_TIMEOUT = 900  # seconds (of a quiet machine: longer under load) one submission may take, both runs together
MEMORY_MB = 4096  # memory one student process may use
CHECK_TIMEOUT = 300  # seconds one cell may run in `python -m grading check`, on the student's machine
MAX_NOTEBOOK_MB = 50  # a submitted notebook larger than this is refused with a note (clear its outputs)
MAX_NAME_BYTES = 100  # a student or assignment folder name longer than this is refused with a note
GRADER_MEMORY_MB = 8192  # address space of one grading job (the grader's own process, not the student's)
