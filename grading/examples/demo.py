"""The bundled example: two students — alice solved everything, bob handed in the untouched release."""

from pathlib import Path

from ..common.answers import solved
from ..common.notebooks import course_notebooks, read_notebook, write_notebook


def make_submissions(
    release_dir: str | Path, submissions_dir: str | Path, notebooks_dir: str | Path | None = None
) -> None:
    "alice: every exercise solved; bob: the release as it came."
    release_dir, submissions_dir = Path(release_dir), Path(submissions_dir)
    for stem, path in course_notebooks(notebooks_dir).items():
        release_nb = read_notebook(release_dir / stem / f"{stem}.ipynb")
        write_notebook(solved(release_nb, read_notebook(path)), submissions_dir / "alice" / stem / f"{stem}.ipynb")
        write_notebook(release_nb, submissions_dir / "bob" / stem / f"{stem}.ipynb")
