"""The student kit's commands, which the instructor has too: `export` and `check` (grading.student)."""

import argparse
from pathlib import Path


def cmd_export(args: argparse.Namespace) -> int:
    from ..student.check import package_root
    from ..student.export import export_package

    root = package_root(Path.cwd())
    export_package(root, mine=args.mine)
    print(f"exported the notebooks of {root} into {root / 'tinytorch'}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from ..student.check import HIDDEN, run_tests, unfinished_earlier

    results, broken = run_tests(args.notebook)
    for name, error, given in broken:
        if given:
            print(f"{'ERROR':<6}  the {name} raised {error}: it runs your code above it, so fix that first")
            continue
        print(
            f"{'ERROR':<6}  the cell of {name} raised {error}: fix it first, the tests below that use it fail with it"
        )
    for name, points, status, message in results:
        mark = "HIDDEN" if status == HIDDEN else "PASS" if status else "FAIL"
        unit = "point" if points == 1 else "points"
        print(f"{mark:<6}  {name} ({points:g} {unit})" + (f": {message}" if message and status != HIDDEN else ""))
    for advice in unfinished_earlier(results, Path(args.notebook).stem):
        print(f"{'NOTE':<6}  {advice}")
    manual = written_answers(args.notebook)
    unanswered = [name for name, _, answered in manual if not answered]
    for name, points, answered in manual:
        unit = "point" if points == 1 else "points"
        todo = "" if answered else "not answered yet (the cell still says YOUR ANSWER HERE), "
        print(f"{'MANUAL':<6}  {name}: {todo}marked by hand ({points:g} {unit})")
    visible = [status for _, _, status, _ in results if status != HIDDEN]
    failed = visible.count(False)
    hidden = len(results) - len(visible)
    print(
        f"{len(visible) - failed} passed, {failed} failed"
        + (f" ({hidden} hidden test{'s' * (hidden != 1)} run when graded)" if hidden else "")
        + (f"; {len(manual)} written answer{'s' * (len(manual) != 1)} marked by hand" if manual else "")
        + (f", {len(unanswered)} not answered yet" if unanswered else "")
    )
    return 1 if failed else 0


UNANSWERED = ("", "YOUR ANSWER HERE")  # what the release leaves in a written answer's cell


def written_answers(notebook: str | Path) -> list[tuple[str, float, bool]]:
    "[(name, points, answered)] of the notebook's written answers, which the instructor marks by hand."
    from ..common.notebooks import is_manual_answer, nbgrader_meta, read_notebook

    cells = read_notebook(notebook).cells
    return [
        (nbgrader_meta(c)["grade_id"], float(nbgrader_meta(c).get("points", 0)), c.source.strip() not in UNANSWERED)
        for c in cells
        if is_manual_answer(c)
    ]


def add_kit_commands(sub: argparse._SubParsersAction) -> None:
    "The commands of the student kit, which the instructor has too."
    p = sub.add_parser("export", help="nbdev_export the notebooks of this repository (or student kit) into tinytorch/")
    p.add_argument(
        "--mine",
        action="store_true",
        help="in a kit with reference modules (its references/ folder): export your own notebooks for those too",
    )
    p.set_defaults(run=cmd_export)
    p = sub.add_parser("check", help="run the visible tests of one notebook and print each test's result")
    p.add_argument("notebook", help="path to the .ipynb")
    p.set_defaults(run=cmd_check)
