"""The bundled example: two students — alice solved everything, bob handed in the untouched release."""

import copy
from pathlib import Path

from .notebooks import course_notebooks, nbgrader_meta, read_notebook, strip_markers, write_notebook


def solved(release_nb, source_nb, edit=None):
    "The release notebook with each exercise filled in from the instructor's solution (optionally edited)."
    answers = {
        nbgrader_meta(c).get("grade_id"): strip_markers(c.source)
        for c in source_nb.cells
        if nbgrader_meta(c).get("solution")
    }
    nb = copy.deepcopy(release_nb)
    for cell in nb.cells:
        grade_id = nbgrader_meta(cell).get("grade_id")
        if nbgrader_meta(cell).get("solution") and grade_id in answers:
            cell.source = edit(grade_id, answers[grade_id]) if edit else answers[grade_id]
    return nb


def make_submissions(release_dir, submissions_dir, notebooks_dir=None):
    "alice: every exercise solved; bob: the release as it came."
    release_dir, submissions_dir = Path(release_dir), Path(submissions_dir)
    for stem, path in course_notebooks(notebooks_dir).items():
        release_nb = read_notebook(release_dir / stem / f"{stem}.ipynb")
        write_notebook(solved(release_nb, read_notebook(path)), submissions_dir / "alice" / stem / f"{stem}.ipynb")
        write_notebook(release_nb, submissions_dir / "bob" / stem / f"{stem}.ipynb")
