"""The author's commands: `metadata`, `pictures` and `release` (grading.authoring)."""

import argparse
from pathlib import Path


def cmd_metadata(args: argparse.Namespace) -> int:
    from ..authoring.convention import apply_convention, mismatches
    from ..common.notebooks import course_notebooks

    paths = [Path(p) for p in args.notebooks] or list(course_notebooks().values())
    if args.check:
        stale = {p.name: mismatches(p) for p in paths}
        stale = {name: cells for name, cells in stale.items() if cells}
        for name, cells in stale.items():
            print(f"{name}: nbgrader metadata of cells {cells} is out of date; run: python -m grading metadata")
        if not stale:
            print(f"nbgrader metadata of {len(paths)} notebooks agrees with the authoring convention")
        return 1 if stale else 0
    for path in paths:
        print(f"{path.name}: {apply_convention(path)} cells updated")
    return 0


def cmd_pictures(args: argparse.Namespace) -> int:
    from ..authoring.pictures import keep_pictures

    counts = keep_pictures()
    print("pictures kept: " + ", ".join(f"{stem} {n}" for stem, n in counts.items()) + " (commit the notebooks)")
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    from ..authoring.release import release

    references = [stem.strip() for value in args.reference or () for stem in value.split(",") if stem.strip()]
    assignments = release(args.out, update=args.update, force=args.force, references=references, log=print)
    print(f"student kit with {len(assignments)} assignments {'updated in' if args.update else 'written to'} {args.out}")
    return 0


def add_metadata(sub: argparse._SubParsersAction) -> None:
    "The metadata command's arguments."
    p = sub.add_parser("metadata", help="derive nbgrader metadata from the authoring convention (notebooks/README.md)")
    p.add_argument("notebooks", nargs="*", help="notebooks to update (default: all of notebooks/)")
    p.add_argument("--check", action="store_true", help="only report notebooks whose metadata is out of date")
    p.set_defaults(run=cmd_metadata)


def add_pictures(sub: argparse._SubParsersAction) -> None:
    "The pictures command's arguments."
    p = sub.add_parser(
        "pictures", help="run the notebooks with pictures and keep those outputs (for a reader on the web)"
    )
    p.set_defaults(run=cmd_pictures)


def add_release(sub: argparse._SubParsersAction) -> None:
    "The release command's arguments."
    p = sub.add_parser("release", help="build the student kit: no solutions, no hidden tests, its own tinytorch/")
    p.add_argument(
        "--out",
        required=True,
        help="folder for the kit: new, empty, or an earlier kit, replaced only if the student changed nothing in it",
    )
    p.add_argument(
        "--update",
        action="store_true",
        help="write into an earlier kit: add the new notebooks, refresh the files the student did not change, keep "
        "every changed notebook and every file of the student's",
    )
    p.add_argument(
        "--force", action="store_true", help="replace the --out folder whatever it holds (the student's work is lost)"
    )
    p.add_argument(
        "--reference",
        action="append",
        default=None,
        metavar="NOTEBOOK[,NOTEBOOK...]",
        help="hand out this notebook's reference module (after its deadline), so that later notebooks run on a "
        "working engine: it goes into the kit's references/ and tinytorch/, and the kit's export keeps it; the "
        "notebook itself stays the student's (repeatable)",
    )
    p.set_defaults(run=cmd_release)
