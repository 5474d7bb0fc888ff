"""Where an autograde run keeps its own files inside its output folder OUT: written by grading.grade.autograde, read
by the commands that take OUT afterwards (regrading, leaderboard, marking, export-grades, export-feedback)."""

from pathlib import Path

STATE = ".grading"  # OUT/.grading: the run's courses, jobs, reference check and marker files
UNFINISHED = "unfinished.json"  # in STATE while a run grades: the submissions its table still lacks
LATE_POLICY = "late-policy.json"  # in STATE: the due dates and penalty of the last run that was given any

# OUT's own files and folders, which autograde (and leaderboard) write and the later commands read; an export's --out
# may be none of them (grading.lms.lms_input.check_export_path)
GRADES_TABLE = "grades.csv"  # a row per student and notebook
GRADEBOOK = "gradebook.json"  # {student: {assignment: entry}}, what the exports read
TIME_SPENT = "time_spent.csv"
DISTRIBUTION = "distribution.png"
LEADERBOARD_TABLE, LEADERBOARD_PICTURE = "leaderboard.md", "leaderboard.png"
SECRET_FILE = ".grading-secret"  # outside STATE, which is remade when the notebooks change
LOCK_FILE = ".grading.lock"  # one run at a time into OUT
RESULTS = "results"  # RESULTS/<student>/<assignment>.json and .notebook.ipynb: each submission's result
FEEDBACK = "feedback"  # FEEDBACK/<student>/<assignment>.html: the pages students are handed
MARKING = "marking"  # nbgrader's course for marking written answers by hand
OUT_FILES = (
    *(GRADES_TABLE, GRADEBOOK, TIME_SPENT, DISTRIBUTION, LEADERBOARD_TABLE, LEADERBOARD_PICTURE),
    *(SECRET_FILE, LOCK_FILE),
)
OUT_FOLDERS = (RESULTS, FEEDBACK, MARKING, STATE)

# What collect (grading.intake) writes beside the students' folders of SUBMISSIONS, which autograde reads: its report,
# and the report's time_from where a download held no submission times (Canvas's, Moodle's)
COLLECT_REPORT = "collect-report.csv"
DOWNLOAD_TIME, COLLECT_TIME = "the file's time in the download", "none in the download: the time of collect"


def state_folder(out: str | Path) -> Path:
    "OUT/.grading."
    return Path(out) / STATE


def unfinished_marker(out: str | Path) -> Path:
    "The marker a run leaves in OUT while submissions remain ungraded (export-grades refuses such a table)."
    return state_folder(out) / UNFINISHED


def late_policy_file(out: str | Path) -> Path:
    "The late policy of the last run into OUT that was given one (a run without late options keeps it)."
    return state_folder(out) / LATE_POLICY
