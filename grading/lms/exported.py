"""What one `export-grades` run did (Export): the files it wrote, who the roster and the gradebook disagree about,
and what to tell the instructor. Filled by the command (grading.lms.export_grades) and its writers
(grading.lms.csv_export, grading.lms.gradescope_results); the command line prints it."""

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Export:
    "What an export wrote, who the roster and the gradebook disagree about, and what to tell the instructor."

    written: list[Path] = field(default_factory=list)  # paths
    not_in_roster: list[str] = field(default_factory=list)  # graded, but the roster does not know them
    not_graded: list[str] = field(default_factory=list)  # in the roster, no graded submission
    grader_faults: list[str] = field(
        default_factory=list
    )  # "student/assignment" autograde could not grade: no cell, exit 1
    left_out: list[str] = field(
        default_factory=list
    )  # students not in the import file (canvas, moodle): see the side file
    notes: int = 0  # notes on grades written to the side file (canvas)
    warnings: list[str] = field(default_factory=list)
    howto: list[str] = field(
        default_factory=list
    )  # how to import the file: which column to map by, which maximum to set
