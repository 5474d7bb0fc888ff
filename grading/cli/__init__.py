"""python -m grading <command>: the course's instructor and student commands."""

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from ..common.environment import shared_with_the_kit
from ..common.errors import GradingError
from . import authoring_commands, grading_commands, kit_commands, lms_commands

KIT_DOC = "python -m grading <command>: your TinyTorch kit's commands (run them in the kit's folder)."
# The student kit ships grading/ without its instructor packages (STUDENT_KIT in grading/authoring/release.py).
IN_KIT = not (Path(__file__).parents[1] / "grade").is_dir()
# The commands whose modules stay with the instructor, in the order `--help` lists them: only their functions import
# those modules, so that the kit's copy of this package works without them.
INSTRUCTOR_COMMANDS = (
    authoring_commands.add_metadata,
    authoring_commands.add_pictures,
    authoring_commands.add_release,
    grading_commands.add_autograde,
    lms_commands.add_collect,
    grading_commands.add_class,
    lms_commands.add_export_grades,
    lms_commands.add_export_feedback,
    lms_commands.add_gradescope,
    grading_commands.add_leaderboard,
    grading_commands.add_demo,
)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m grading", description=KIT_DOC if IN_KIT else __doc__)
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    kit_commands.add_kit_commands(sub)
    if not IN_KIT:
        add_instructor_commands(sub)
    return top


def instructor_commands() -> set[str]:
    "The names of the commands that are not in the student kit (their modules stay with the instructor)."
    sub = argparse.ArgumentParser().add_subparsers()
    add_instructor_commands(sub)
    return set(sub.choices)


def stop_on_sigterm() -> None:
    "SIGTERM (kill, a scheduler ending the job) stops a run as Ctrl-C does: its jobs end, nothing graded is lost."
    import signal

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt()

    signal.signal(signal.SIGTERM, interrupt)


def add_instructor_commands(sub: argparse._SubParsersAction) -> None:
    "The instructor's commands, each declared by its module."
    for add in INSTRUCTOR_COMMANDS:
        add(sub)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if IN_KIT and argv and argv[0] in instructor_commands():
        print(
            f"error: '{argv[0]}' is an instructor's command and is not part of the student kit; "
            "use check and export here.",
            file=sys.stderr,
        )
        return 2
    args = parser().parse_args(argv)
    clash = shared_with_the_kit()
    if clash:
        print(f"error: {clash}", file=sys.stderr)
        return 2
    stop_on_sigterm()
    try:
        return args.run(args)
    except GradingError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
