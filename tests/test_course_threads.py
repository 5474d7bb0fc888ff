"""nbgrader calls from several threads at once (autograde's jobs) leave the grader's sys.stderr as it was: a run whose
stderr got stuck on a buffer printed none of its `error:` lines, so bad files went unreported on the console."""

import sys
import threading
import time

from grading.authoring.course import Course


class SlowAPI:
    "Stands in for NbGraderAPI: each call takes a while and writes to stderr, as nbgrader's warnings do."

    def __init__(self, delay):
        self.delay = delay

    def generate_assignment(self, *args, **kwargs):
        print("a warning of nbgrader's", file=sys.stderr)
        time.sleep(self.delay)
        return {"success": True}


def test_calls_from_two_threads_leave_stderr_as_it_was(tmp_path):
    before = sys.stderr
    first, second = Course(tmp_path / "a"), Course(tmp_path / "b")
    first._api, second._api = SlowAPI(0.3), SlowAPI(0.5)
    threads = [threading.Thread(target=first.generate, args=("01",))]
    threads.append(threading.Thread(target=second.generate, args=("01",)))
    threads[0].start()
    # the first is inside its call when the second starts: the second would save the first's buffer and restore it last
    time.sleep(0.1)
    threads[1].start()
    for thread in threads:
        thread.join()
    assert sys.stderr is before
