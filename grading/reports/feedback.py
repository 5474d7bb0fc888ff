"""Feedback shows the student what failed, never the hidden tests' code; how much it shows is the instructor's
policy (`--feedback full|summary|none`)."""

import html
from pathlib import Path

from nbformat.v4 import new_notebook

from ..common.errors import GradingError
from ..common.notebooks import write_atomic
from .page import render

# -- The feedback page a student reads ------------------------------------------------------------------------------

# A hidden test names an error of the student's code but does not quote it (grading.grade.student_errors.describe_hidden);
# the page says why once, not under each test.
NOT_SHOWN = "its message is not shown"
WHY_NOT_SHOWN = (
    "A hidden test does not show the message of an error your code raised in it: your code had the test's inputs and "
    "could write them into the message. To see it, call your function on inputs like the test's (the test's name "
    "says what it checks)."
)

POLICIES = {
    "full": "every test's score and message",
    "summary": "the notebook's total, which visible tests passed, and the hidden tests as a count",
    "none": "no feedback pages for the students",
}


def banner(assignment, result, policy, extra=""):
    "The verdict at the top of the page: every test (full), or visible tests and a count of the hidden ones (summary)."
    shown = [(t, r) for t, r in result["tests"].items() if policy == "full" or not r.get("hidden")]
    hidden = [r for r in result["tests"].values() if r.get("hidden")] if policy != "full" else []

    def line(test_id, r):
        passed = r["score"] == r["max_score"]
        message = r["message"] if policy == "full" and r["message"] and not passed else ""
        return (
            f"<li>{'✔' if passed else '✘'} <b>{html.escape(test_id)}</b> {r['score']:g}/{r['max_score']:g}"
            + (f": {html.escape(message)}" if message else "")
            + "</li>"
        )

    lines = "".join(line(t, r) for t, r in shown)
    why = any(NOT_SHOWN in r["message"] and r["score"] != r["max_score"] for _, r in shown)
    if hidden:
        passed = sum(r["score"] == r["max_score"] for r in hidden)
        lines += f"<li>hidden tests: {passed} of {len(hidden)} passed (their details are released later)</li>"
    note = result["note"]
    return (
        f'<div id="tinytorch-score" style="border:2px solid #444;padding:8px;margin:8px">'
        f"<h2>{html.escape(assignment)}: {result['score']:g} / {result['max_score']:g}</h2>"
        f"<p>Scores come from the grader's run of the instructor's tests against your exported code; below is "
        f"your notebook as it ran (visible tests only). Your functions ran in the grader's sandbox, one call at a "
        f"time: times and memory that cells measure are larger here than in your Jupyter.</p>"
        f"<ul>{lines}</ul>{'<p>' + html.escape(WHY_NOT_SHOWN) + '</p>' if why else ''}"
        f"{'<p>' + html.escape(note) + '</p>' if note else ''}{extra}</div>"
    )


def publish(path, notebook, assignment, result, policy, extra="", cache=None):
    """Write the student's feedback page at `path` under `policy` ('full', 'summary' or 'none': no page, and an
    earlier run's page is removed). `notebook` is the notebook as the verdict ran it (grading.reports.page.ran_notebook), or
    None when there is none; `extra` is HTML put at the end of the banner; `cache` is grading.reports.page.render's. The page
    shows the verdict's scores only: nbgrader's own score of the run is not on it."""
    path = Path(path)
    page = page_html(notebook, assignment, result, policy, extra, cache)
    if page is None:
        path.unlink(missing_ok=True)
        return
    write_atomic(path, page)


def page_html(notebook, assignment: str, result: dict, policy: str, extra: str = "", cache=None) -> str | None:
    "The feedback page `publish` writes, as text; None under the policy 'none'."
    if policy not in POLICIES:
        raise GradingError(f"--feedback {policy!r}: expected one of {', '.join(POLICIES)}.")
    if policy == "none":
        return None
    top = banner(assignment, result, policy, extra)
    return render(notebook if notebook is not None else new_notebook(), assignment, top, cache)
