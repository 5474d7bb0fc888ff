"""What a grading job's process is held to, set in the process itself before it grades (grading.grade.runner starts
it, or grading.grade.forkserver forks it): its memory, and its death with the grader that started it."""

import resource
import signal

from ..common.defaults import GRADER_MEMORY_MB


def limit_memory() -> None:
    """The job's own memory (the grader's process: the instructor's cells run there, on data from the student's code)
    is capped, so that whatever a student's request makes it compute fails that call, not the machine."""
    limit = GRADER_MEMORY_MB * 2**20
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or hard > limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def die_with_parent() -> None:
    "If the grader that started this job is killed, the job is killed too (Linux: PR_SET_PDEATHSIG)."
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
