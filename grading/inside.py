"""The feedback run, inside the sandbox: `main(assignment, student, cell_timeout)`.

The sandbox holds the student version of the course (`/course`: the release notebooks and their gradebook, with no
solutions and no hidden tests), the student's notebook (`/submission.ipynb`) and package (`/student`). nbgrader runs
the notebook here, kernel included, in a private /tmp, and this prints one JSON line: the notebook as it ran (JSON,
not HTML: the grader makes the page, grading.page) and nbgrader's score per test. Whatever the student's code does to
this process can only change that line, which is shown to that student and never counted.
"""

import json
import shutil
import sys
from pathlib import Path


def main(argv=None):
    assignment, student, cell_timeout = (argv or sys.argv[1:])[:3]
    from .course import Course

    root = Path("/tmp/course")
    shutil.copytree("/course", root)
    course = Course(root, cell_timeout=int(cell_timeout), sandboxed=True)
    course.submit(student, assignment, Path("/submission.ipynb"))
    course.autograde(assignment, student)
    tests, _ = course.scores(assignment, student)
    notebook = json.loads(course.autograded(assignment, student).read_text())
    print(json.dumps({"notebook": notebook, "tests": tests}))
    return 0
