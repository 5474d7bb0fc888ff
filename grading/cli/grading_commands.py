"""The commands that autograde: `autograde` itself, and `demo` and `class`, which grade a generated class
(grading.grade, grading.examples); the grade table they print."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..common.defaults import CELL_TIMEOUT, FEEDBACK_CHOICES, MEMORY_MB, NOTEBOOK_TIMEOUT

if TYPE_CHECKING:  # the student kit's copy has neither package: only a type checker reads these
    from ..grade.gradebook import Row
    from ..reports.late import Policy


def print_table(rows: list[Row]) -> None:
    rows = sorted(rows, key=lambda r: (r.student, r.assignment))
    width = max([len(r.assignment) for r in rows] + [10])
    names = max([len(r.student) for r in rows] + [10])  # a long folder name (ada-lovelace-501) keeps the columns
    print(f"{'student':<{names}} {'assignment':<{width}} {'score':>6} {'max':>5}  note")
    for r in rows:
        score = f"{r.score:>6g}" if r.graded else f"{'-':>6}"  # not graded: no score, as in grades.csv
        print(f"{r.student:<{names}} {r.assignment:<{width}} {score} {r.max_score:>5g}  {r.note}")


def _progress() -> Callable[..., Iterable]:
    from tqdm.auto import tqdm

    return lambda items, **kw: tqdm(items, disable=None, **kw)


def cmd_autograde(args: argparse.Namespace) -> int:
    from ..grade.autograde import autograde
    from ..grade.settings import Settings

    warn_if_unsafe(args)
    settings = Settings(
        notebooks_dir=args.notebooks,
        cell_timeout=args.cell_timeout,
        notebook_timeout=args.notebook_timeout,
        memory_mb=args.memory_mb,
        workers=args.workers,
        unsafe_no_sandbox=args.unsafe_no_sandbox,
        student_user=args.student_user,
        cluster=args.cluster,
        secret_file=args.secret_file,
        feedback=args.feedback,
        late=late_policy(args),
        held_out_digits=args.held_out_digits,
    )
    rows = autograde(args.submissions, args.out, settings=settings, progress=_progress(), log=console)
    print_table(rows)
    failed = [r for r in rows if r.problem]
    for r in failed:
        print(f"error: {r.student}/{r.assignment}: {r.note}", file=sys.stderr)
    print_outputs(Path(args.out))
    return 1 if failed else 0


def console(line: str) -> None:
    "A line of a run's log: a warning goes to stderr, with the errors; the rest to stdout."
    print(line, file=sys.stderr if line.startswith("warning: ") else sys.stdout)


def late_policy(args: argparse.Namespace) -> Policy | None:
    "The late policy of --due, --due-file, --released, --late-penalty and --trust-timestamps (grading.reports.late)."
    from ..reports.late import make_policy

    options = (args.due, args.due_file, args.late_penalty, args.released, args.trust_timestamps or None)
    if all(option is None for option in options):
        return None  # none given: the late policy of the earlier runs into OUT, if any (regrade.remembered_policy)
    return make_policy(args.due or (), args.due_file, args.late_penalty or "none", args.released, args.trust_timestamps)


def warn_if_unsafe(args: argparse.Namespace) -> None:
    from ..sandbox.sandbox import problem

    if args.unsafe_no_sandbox and problem() is not None:
        print(
            f"warning: --unsafe-no-sandbox: {problem()}, so submissions run with your permissions and could read "
            "or change your files. The verdict is still computed outside the students' processes. Grade code you "
            "do not trust only in a sandbox (see docs/design.md).",
            file=sys.stderr,
        )


def print_outputs(out: Path) -> None:
    print(
        f"grade table: {out / 'grades.csv'}; gradebook: {out / 'gradebook.json'}; "
        f"distribution: {out / 'distribution.png'}; feedback: {out / 'feedback'}"
    )


def cmd_demo(args: argparse.Namespace) -> int:
    from ..authoring.release import export_package, release
    from ..common.notebooks import REPO
    from ..examples.demo import make_submissions
    from ..grade.autograde import autograde
    from ..grade.settings import Settings

    out = Path(args.out)
    print("1/4 exporting the notebooks into tinytorch/")
    export_package(REPO)
    print(f"2/4 releasing the student kit into {out / 'release'}")
    release(out / "release")
    print(f"3/4 making two submissions in {out / 'submissions'}: alice (solved), bob (untouched release)")
    make_submissions(out / "release", out / "submissions")
    print(f"4/4 autograding into {out / 'grades'}")
    from ..sandbox.sandbox import problem

    if problem() is not None:
        print(
            f"note: {problem()}: the demo grades its own two generated notebooks without the sandbox; grading "
            "students' code needs it (see docs/design.md)"
        )
    settings = Settings(unsafe_no_sandbox=True)
    rows = autograde(out / "submissions", out / "grades", settings=settings, progress=_progress(), log=print)
    print_table(rows)
    print_outputs(out / "grades")
    wrong = demo_mismatches(rows)
    for line in wrong:
        print(f"error: the demo's table is not what the README promises: {line}", file=sys.stderr)
    return 1 if wrong else 0


def demo_mismatches(rows: list[Row]) -> list[str]:
    "How the demo's table differs from the README's promise (alice full marks, bob 0, in every graded notebook)."
    from ..grade.autograde import graded_assignments

    expected = graded_assignments()
    wrong = [f"{r.student}/{r.assignment}: not graded ({r.note})" for r in rows if r.problem]
    for student, full in (("alice", True), ("bob", False)):
        mine = {r.assignment: r for r in rows if r.student == student and not r.problem}
        wrong += [f"{student}/{a}: no row" for a in expected if a not in mine]
        for a, r in sorted(mine.items()):
            want = r.max_score if full else 0
            if r.max_score <= 0 or r.score != want:
                wrong.append(
                    f"{student}/{a}: {r.score:g}/{r.max_score:g}, expected {want:g}"
                    + (f" ({r.note})" if r.note else "")
                )
    return wrong


def cmd_class(args: argparse.Namespace) -> int:
    from ..authoring.release import release
    from ..examples.classroom import NEEDS_SANDBOX, compare, make_class
    from ..grade.autograde import autograde
    from ..grade.settings import Settings

    out = Path(args.out)
    print(f"1/3 releasing the student kit into {out / 'kit'}")
    release(out / "kit")
    print(f"2/3 generating the red-team class (good, partial, broken, cheating, attacking) in {out / 'submissions'}")
    expected = make_class(out / "kit", out / "submissions", grades=out / "grades")
    print(f"3/3 autograding into {out / 'grades'}")
    warn_if_unsafe(args)
    settings = Settings(
        cell_timeout=args.cell_timeout,
        notebook_timeout=args.notebook_timeout,
        workers=args.workers,
        unsafe_no_sandbox=args.unsafe_no_sandbox,
    )
    rows = autograde(out / "submissions", out / "grades", settings=settings, progress=_progress(), log=print)
    print_table(rows)
    from ..sandbox.sandbox import problem

    if problem() is not None:
        for student in sorted(NEEDS_SANDBOX):
            print(
                f"{student}: not checked: reading or writing the grader's files is stopped by the sandbox, "
                "which cannot run here (see docs/design.md)"
            )
            expected.pop(student)
    wrong = compare(rows, expected)
    for student, want, got in wrong:
        print(f"error: {student}: expected {want}, got {got}", file=sys.stderr)
    print(f"{len(expected) - len(wrong)} of {len(expected)} submissions got the expected score")
    return 1 if wrong else 0


def add_autograde(sub: argparse._SubParsersAction) -> None:
    "The autograde command's arguments."
    p = sub.add_parser("autograde", help="grade SUBMISSIONS/<student>/<assignment>/<assignment>.ipynb")
    p.add_argument("submissions", help="folder with one folder per student")
    p.add_argument("--out", required=True, help="folder for grades.csv and feedback/")
    p.add_argument(
        "--cell-timeout",
        type=int,
        default=None,
        help=f"CPU seconds one call of the student's code (or one test cell) may use (default {CELL_TIMEOUT})",
    )
    p.add_argument(
        "--notebook-timeout",
        type=int,
        default=NOTEBOOK_TIMEOUT,
        help=f"seconds one submission may take in all, both runs, stretched on a busy machine (default {NOTEBOOK_TIMEOUT})",
    )
    p.add_argument("--workers", type=int, default=None, help="submissions graded at once (default: one per core)")
    p.add_argument(
        "--cluster",
        default=None,
        metavar="ADDRESS",
        help="grade on a Dask cluster instead: its scheduler's address (tcp://HOST:8786), or local:N for N workers "
        'on this machine; each worker grades in its own sandbox (needs pip install "dask[distributed]")',
    )
    p.add_argument(
        "--notebooks", default=None, help="the instructor's notebooks (default: notebooks/ of this repository)"
    )
    p.add_argument(
        "--memory-mb",
        type=int,
        default=MEMORY_MB,
        help=f"memory of one sandbox, all its processes and its /tmp together where cgroups exist (default {MEMORY_MB})",
    )
    p.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="grade even where bubblewrap cannot run (students' code then runs with your permissions)",
    )
    p.add_argument(
        "--student-user",
        default=None,
        metavar="USER",
        help="where bubblewrap cannot run, grade as root with students' code run as this unprivileged user, one "
        "submission at a time (for a machine that grades nothing else, such as Gradescope's container)",
    )
    p.add_argument(
        "--secret-file",
        default=None,
        help="the course secret the hidden tests' per-student inputs come from (default OUT/.grading-secret, "
        "made on first use); keep it to regrade with the same inputs",
    )
    p.add_argument(
        "--held-out-digits",
        default=None,
        metavar="FILE.npz",
        help="your own 8x8 digits, kept outside the repository, which the capstone's held-out accuracy is measured "
        "on instead of a part of the shipped digits (np.savez(FILE, X=images, y=labels): X (n, 64) in [0, 1], y "
        "integers 0-9); read only by the grader, never by students' code; see docs/instructor.md",
    )
    p.add_argument(
        "--feedback",
        default=FEEDBACK_CHOICES[0],
        choices=FEEDBACK_CHOICES,
        help="what the students' feedback pages show: full (every test's message), summary (the total, the "
        "visible tests, the hidden tests as a count) or none (no pages); the grade table is the same",
    )
    p.add_argument(
        "--due",
        action="append",
        default=None,
        metavar="[ASSIGNMENT=]DATE",
        help="due date, e.g. 2026-12-01T23:59 (every assignment) or 09_nn=2026-12-01T23:59 (repeatable)",
    )
    p.add_argument("--due-file", default=None, help='JSON {"<assignment>": "<due>" or {"due": ..., "released": ...}}')
    p.add_argument("--released", default=None, metavar="DATE", help="when the assignments were released")
    p.add_argument(
        "--late-penalty",
        default=None,
        help="none (default), zero, or P%%/day or P%%/hour with an optional cap: 10%%/day,max=50%%; a run given none "
        "of these late options keeps those of the last run into OUT that was (none: drop them)",
    )
    p.add_argument(
        "--trust-timestamps",
        action="store_true",
        help="take a submission's time from the timestamp.txt in its folder (what nbgrader's collect writes); by "
        "default it is the notebook file's time as received, since a student can put any timestamp.txt there",
    )
    p.set_defaults(run=cmd_autograde)


def add_class(sub: argparse._SubParsersAction) -> None:
    "The class command's arguments."
    p = sub.add_parser(
        "class",
        help="grade the generated red-team class (good, partial, broken, cheating, attacking) and check each score",
    )
    p.add_argument("--out", default="class-output", help="folder for everything it makes (default class-output)")
    p.add_argument("--workers", type=int, default=None, help="submissions graded at once (default: one per core)")
    p.add_argument("--cell-timeout", type=int, default=10, help="seconds one cell may run (default 10)")
    p.add_argument("--notebook-timeout", type=int, default=120, help="seconds one submission may take (default 120)")
    p.add_argument("--unsafe-no-sandbox", action="store_true", help="as for autograde")
    p.set_defaults(run=cmd_class)


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from ..reports import leaderboard

    out = Path(args.out)
    leaderboard.write(out)
    print((out / leaderboard.TABLE).read_text(), end="")
    print(f"written: {out / leaderboard.TABLE} and {out / leaderboard.PICTURE}")
    return 0


def add_leaderboard(sub: argparse._SubParsersAction) -> None:
    "The leaderboard command's arguments."
    p = sub.add_parser("leaderboard", help="rank the capstone's models of a graded class: a table and a picture")
    p.add_argument("out", help="the --out folder of an autograde run that graded the capstone")
    p.set_defaults(run=cmd_leaderboard)


def add_demo(sub: argparse._SubParsersAction) -> None:
    "The demo command's arguments."
    p = sub.add_parser("demo", help="the bundled example: export, release, two students, autograde, grade table")
    p.add_argument("--out", default="demo-output", help="folder for everything it makes (default demo-output)")
    p.set_defaults(run=cmd_demo)
