"""Reading notebooks safely, and the layout of the course."""

import contextlib
import hashlib
import json
import os
import re
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from .defaults import MAX_NOTEBOOK_CONTAINERS
from .errors import GradingError, nearest

try:
    import fcntl
except ImportError:  # Windows, where a student's kit may be: one export at a time is then the student's to keep
    fcntl = None

REPO = Path(__file__).resolve().parents[2]
SOLUTION_BEGIN, SOLUTION_END = "### BEGIN SOLUTION", "### END SOLUTION"
HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
DEFINITION = re.compile(r"^(?:class|def)\s+([A-Za-z_]\w*)", re.MULTILINE)  # a top-level class or function
DEMO_HEADER = re.compile(r"^#\s*demo:")  # a demonstration's first line (grading.authoring.convention)


def read_notebook(path: str | Path) -> NotebookNode:
    "Read a notebook, turning every way it can be broken into one GradingError that names the file."
    path = Path(path)
    if not path.exists():
        raise GradingError(f"{path}: no such file{did_you_mean_path(path)}.")
    if path.is_dir():
        raise GradingError(f"{path}: is a folder, expected a .ipynb notebook file.")
    return parse_notebook(path.read_bytes(), path)


def parse_notebook(text: bytes, path: str | Path) -> NotebookNode:
    "A notebook from its bytes (read from `path`), checked as far as the grader relies on it."
    if not text.strip():
        raise GradingError(f"{path}: the file is empty; save the notebook from Jupyter again.")
    if too_many_containers(text):
        raise GradingError(
            f"{path}: not a notebook as Jupyter saves one (more than {MAX_NOTEBOOK_CONTAINERS:,} JSON objects and "
            "lists; a notebook has a few thousand at most). Save it from Jupyter again, with its outputs cleared."
        )
    try:
        raw = json.loads(text)
        if LONE_SURROGATE_ESCAPE.search(text):  # a lone surrogate, perhaps: see valid_text
            raw = valid_text(raw)
            text = json.dumps(raw).encode()
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as error:
        raise GradingError(
            f"{path}: not a valid notebook (not valid JSON: {str(error)[:200]}). "
            "Re-download it or restore it from Jupyter's checkpoint."
        ) from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list) or raw.get("nbformat") != 4:
        raise GradingError(f"{path}: valid JSON but not a Jupyter notebook (nbformat 4).")
    try:
        nb = nbformat.reads(text.decode("utf-8"), as_version=4)
    except Exception as error:  # noqa: BLE001  (nbformat raises many kinds for a broken file)
        raise GradingError(f"{path}: not a valid notebook ({type(error).__name__}: {str(error)[:200]}).") from None
    for number, cell in enumerate(nb.cells, 1):
        if not (
            isinstance(cell, dict)
            and cell.get("cell_type") in ("code", "markdown", "raw")
            and isinstance(cell.get("source"), str)
            and isinstance(cell.get("metadata", {}), dict)
        ):
            raise GradingError(
                f"{path}: not a valid notebook (cell {number} is not a cell as Jupyter saves one). "
                "Re-download it or restore it from Jupyter's checkpoint."
            )
    if not isinstance(nb.get("metadata", {}), dict):
        raise GradingError(f"{path}: not a valid notebook (its metadata is not what Jupyter saves).")
    return nb


def did_you_mean_path(path: Path) -> str:
    "' (did you mean PATH?)' for the name in the same folder nearest to a mistyped file or folder `path`, or ''."
    path = Path(path)
    try:
        found = nearest(path.name, [p.name for p in path.parent.iterdir() if not p.name.startswith(".")])
    except OSError:  # its folder is missing too, or cannot be listed
        return ""
    return f" (did you mean {str(path.with_name(found))!r}?)" if found else ""


def course_notebooks(notebooks_dir: str | Path | None = None) -> dict[str, Path]:
    "The course's notebooks, in order: {stem: path}."
    notebooks_dir = Path(notebooks_dir or REPO / "notebooks")
    if not notebooks_dir.is_dir():
        raise GradingError(f"{notebooks_dir}: the notebooks folder does not exist{did_you_mean_path(notebooks_dir)}.")
    found = {p.stem: p for p in sorted(notebooks_dir.glob("*.ipynb")) if not p.name.startswith(("_", "."))}
    if not found:
        nested = sorted(p.parent.name for p in notebooks_dir.glob("*/*.ipynb"))
        kit = f" It holds notebooks in folders ({', '.join(nested[:3])}, ...): a student kit?" if nested else ""
        raise GradingError(
            f"{notebooks_dir}: contains no notebooks.{kit} Give the instructor's notebooks folder, whose notebooks "
            "(with their solutions and hidden tests) lie directly in it."
        )
    return found


def nbgrader_meta(cell: object) -> dict:
    "A cell's nbgrader metadata; {} where a student's file has something else there (a string, a list, no grade_id)."
    metadata = cell.get("metadata") if isinstance(cell, dict) else None
    meta = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("grade_id", ""), str):
        return {}
    return meta


HOURS_SPENT = "hours_spent"  # the grade id of every notebook's optional last cell (grading.authoring.convention)


def identifying_ids(nb: NotebookNode) -> set[str]:
    "The grade ids that tell which assignment a notebook is: all but the hours cell, which every notebook has."
    return {nbgrader_meta(c).get("grade_id") for c in nb.cells} - {None, "", HOURS_SPENT}


def is_demo(cell: dict) -> bool:
    """A demonstration: a code cell whose first line is `# demo: <what it shows>`. It runs in the student's notebook;
    the grader does not run it (a timing or a training run, shown across the sandbox, costs seconds and shows nothing
    of the student's), and no later cell may use a name it sets (grading.authoring.convention checks)."""
    source = cell.get("source") if isinstance(cell, dict) else None
    return cell.get("cell_type") == "code" and isinstance(source, str) and bool(DEMO_HEADER.match(source.lstrip()))


def is_manual_answer(cell: dict) -> bool:
    "Whether a cell is a written answer marked by hand (nbgrader's manually graded answer), not an autograded test."
    meta = nbgrader_meta(cell)
    return cell.get("cell_type") == "markdown" and bool(meta.get("grade")) and bool(meta.get("solution"))


def strip_markers(source: str) -> str:
    "A solution cell's code without the solution markers: what a student who solved it would have written."
    return "\n".join(line for line in source.splitlines() if line.strip() not in (SOLUTION_BEGIN, SOLUTION_END))


def solution_lines(notebooks: Iterable[NotebookNode]) -> list[str]:
    "Code lines that appear only between solution or hidden-test markers, nowhere in the visible text of any notebook."
    secret, public = set(), []
    for cell in (cell for nb in notebooks for cell in nb.cells):
        inside = False
        for line in cell.source.splitlines():
            marker = line.strip()
            if marker in (SOLUTION_BEGIN, HIDDEN_BEGIN):
                inside = True
            elif marker in (SOLUTION_END, HIDDEN_END):
                inside = False
            elif inside and marker and not marker.startswith("#"):
                secret.add(marker)
            elif not inside:
                public.append(line)
    public_text = "\n".join(public)
    return sorted(line for line in secret if line not in public_text)


STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')  # a JSON string, its escapes included
LONE_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")  # JSON's escape of a UTF-16 surrogate (a pair's too)


def too_many_containers(text: bytes) -> bool:
    "Whether the JSON `text` has more than MAX_NOTEBOOK_CONTAINERS objects and lists (those inside strings aside)."
    if text.count(b"{") + text.count(b"[") <= MAX_NOTEBOOK_CONTAINERS:  # the usual answer, without a regex
        return False
    outside = STRING.sub(b"", text)
    return outside.count(b"{") + outside.count(b"[") > MAX_NOTEBOOK_CONTAINERS


def valid_text(value: object) -> object:
    """`value`, as json.loads made it, with each lone UTF-16 surrogate of its strings as U+FFFD: JSON may hold one
    ("\\ud800"), UTF-8 cannot, and the grader writes UTF-8 (a student's text, or a message their code raised, made
    the grader fail: red team round 8)."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [valid_text(item) for item in value]
    if isinstance(value, dict):
        return {valid_text(key): valid_text(item) for key, item in value.items()}
    return value


def write_atomic(path: str | Path, data: str | bytes, mtime: float | None = None) -> None:
    """Write text (as UTF-8) or bytes so that a reader, a restart after a kill or an LMS upload sees the old file or the
    new one, never half of one; with `mtime`, the new file has that modification time. The one way files that others
    read are written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    if tmp.is_symlink():
        tmp.unlink()
    try:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        if mtime is not None:
            os.utime(tmp, (mtime, mtime))
        os.replace(tmp, path)  # replaces a link at `path` itself, never what it points at
    except BaseException:
        tmp.unlink(missing_ok=True)  # (a folder at `path`, a full disk: nothing is left beside it)
        raise


@contextlib.contextmanager
def package_lock(root: Path, shared: bool = False) -> Iterator[None]:
    """Hold the lock of the checkout (or kit) `root` while its tinytorch/ is written (exclusive) or read (shared). It is
    a flock on the folder itself: nothing is left in the checkout, and a killed process lets go of it."""
    if fcntl is None:
        yield
        return
    fd = os.open(root, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # lets go of the lock


def write_notebook(nb: NotebookNode, path: str | Path) -> None:
    text = nbformat.writes(nb)
    write_atomic(path, text if text.endswith("\n") else text + "\n")  # as nbformat.write ends it


def file_fingerprint(path: str | Path) -> str:
    "A short digest of a file's bytes (a submission, an instructor's notebook): what a result or a stamp records."
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def given_cell_name(source: str) -> str:
    "How a message names a given cell: by its first line, which the student sees in the notebook."
    first = next((line.strip() for line in source.splitlines() if line.strip()), "")
    return f"given cell '{first if len(first) <= 60 else first[:57] + '...'}'"
