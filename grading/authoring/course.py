"""A thin layer over nbgrader's Python API: one course folder, the calls we need, and their failures as errors."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import shutil
import stat
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from traitlets.config import Config

from ..common.errors import GradingError

if TYPE_CHECKING:  # nbgrader is imported when a course is first used: it is slow to import
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI


def config(root: str | Path) -> Config:
    c = Config()
    c.CourseDirectory.root = str(root)
    c.CourseDirectory.db_url = f"sqlite:///{Path(root) / 'gradebook.db'}"
    return c


def alembic_head() -> str:
    """nbgrader's `get_alembic_version`, in this process. nbgrader starts the `alembic` command by name, which PATH
    finds only in an activated environment (a venv run as venv/bin/python, from cron or a Makefile, has none)."""
    from alembic.config import Config as AlembicConfig
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    settings = AlembicConfig()
    settings.set_main_option("script_location", ALEMBIC_DIR)
    return ScriptDirectory.from_config(settings).get_current_head()


def _use_alembic_in_process() -> None:
    import nbgrader.api

    nbgrader.api.get_alembic_version = alembic_head


class CompiledSchemas:
    """What nbgrader's cell check calls as `jsonschema.validate`, the same check with each schema's validator made once:
    jsonschema.validate checks the schema itself at every call, a third of generate_assignment's time."""

    def __init__(self) -> None:
        self.made = {}

    def validate(self, instance: object, schema: dict) -> None:
        import jsonschema

        key = json.dumps(schema, sort_keys=True)
        validator = self.made.get(key)
        if validator is None:
            kind = jsonschema.validators.validator_for(schema)
            kind.check_schema(schema)
            validator = self.made[key] = kind(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
        if error is not None:
            raise error


def _validate_with_compiled_schemas() -> None:
    from nbgrader.nbgraderformat import common

    if not isinstance(common.jsonschema, CompiledSchemas):
        common.jsonschema = CompiledSchemas()


@contextlib.contextmanager
def gradebook(db_url: str) -> Iterator[Gradebook]:
    "nbgrader's Gradebook at `db_url`, opened without starting the alembic command and without its ORM warnings."
    from nbgrader.api import Gradebook

    _use_alembic_in_process()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbgrader's own SQLAlchemy warnings (its ORM use), nothing of ours
        with Gradebook(db_url) as gb:
            yield gb


NBGRADER_CALL = threading.Lock()


class Course:
    "An nbgrader course folder: source/<assignment>/<assignment>.ipynb, the gradebook, release/."

    def __init__(self, root: str | Path, print_logs: bool = True) -> None:
        "`print_logs`: print nbgrader's log when a call fails (else it is only on the GradingError, as `.log`)."
        self.root, self.print_logs = Path(root), print_logs
        self.root.mkdir(parents=True, exist_ok=True)
        self._config = config(self.root)
        self._api = None

    @property
    def api(self) -> NbGraderAPI:
        if self._api is None:
            from nbgrader.apps import NbGraderAPI

            _use_alembic_in_process()
            _validate_with_compiled_schemas()
            logging.getLogger("traitlets").setLevel(logging.ERROR)
            self._api = NbGraderAPI(config=self._config)
        return self._api

    def _call(self, what: str, method: str, *args: object, **kwargs: object) -> dict:
        # redirect_stderr swaps the process's sys.stderr: two threads doing it at once could leave it swapped for good
        with NBGRADER_CALL, contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # nbgrader's own SQLAlchemy warnings (its ORM use), nothing of ours
            result = getattr(self.api, method)(*args, **kwargs)
        if not result.get("success"):
            log = (result.get("error") or "") + "\n" + (result.get("log") or "")
            if self.print_logs:
                print(f"nbgrader could not {what}; its log:\n{log}", file=sys.__stderr__)  # the job's log file
            causes = [line.strip() for line in log.splitlines() if "Error" in line and "Please see" not in line]
            detail = causes[-1] if causes else (log.strip().splitlines() or ["no detail given"])[-1]
            error = GradingError(f"nbgrader could not {what}: {detail[:300]}")
            error.log = log
            raise error
        return result

    def add_source(self, assignment: str, notebook_path: str | Path) -> None:
        target = self.root / "source" / assignment / f"{assignment}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(notebook_path, target)

    def generate(self, assignment: str) -> Path:
        self._call(f"make the student version of {assignment}", "generate_assignment", assignment, force=True)
        return self.root / "release" / assignment / f"{assignment}.ipynb"

    def add_assignments(self, notebooks: dict[str, Path]) -> dict[str, Path]:
        "Add every {stem: path} notebook as an assignment and make its student version; return {stem: release path}."
        for stem, path in notebooks.items():
            self.add_source(stem, path)
        return {stem: self.generate(stem) for stem in notebooks}


# -- Made courses, kept between runs ---------------------------------------------------------------------------------

CACHE_VARIABLE = "TINYTORCH_GRADING_CACHE"  # where made courses are kept; set to "" to keep none
COMPLETE = ".complete"  # written last into a kept course: one without it was being made, or was cut short
KEPT_COURSES = 16  # the newest kept (a grading folder's state is kept beside its course); older ones are removed
COURSE_FORMAT = "1"  # bump when a made course's layout changes


def cache_root() -> Path | None:
    "Where made courses are kept: $TINYTORCH_GRADING_CACHE, else $XDG_CACHE_HOME or ~/.cache; None when turned off."
    value = os.environ.get(CACHE_VARIABLE)
    if value is not None:
        return Path(value) if value else None
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tinytorch-grading"


def course_key(notebooks: dict[str, Path]) -> str:
    "What a made course depends on: each notebook's name and bytes, and nbgrader's version."
    key = hashlib.sha256(f"{COURSE_FORMAT}\0{metadata.version('nbgrader')}".encode())  # without importing it
    for stem in sorted(notebooks):
        key.update(b"\0" + stem.encode() + b"\0" + hashlib.sha256(Path(notebooks[stem]).read_bytes()).digest())
    return key.hexdigest()[:32]


def private_folder(path: Path) -> Path | None:
    """`path` with its links resolved, made if missing, if it is a folder of this user's that nobody else may write to
    or move; else None. Another user who could write there, or could rename it or a folder above it (and put their
    own in its place while a course is made), could leave a course of their own making for the grader to use."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.lstat()
        path = Path(os.path.realpath(path))  # used from now on: a link above it cannot be pointed elsewhere later
        above = [folder.stat() for folder in path.parents]
    except OSError:
        return None
    mine = stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
    if not mine or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None
    return path if all(_cannot_be_moved_by_others(folder) for folder in above) else None


def _cannot_be_moved_by_others(folder: os.stat_result) -> bool:
    "A folder's entries can be renamed only by its owner (this user or root), or, where it is sticky, by theirs."
    owner_is_trusted = folder.st_uid in (0, os.getuid())
    others_may_write = folder.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    return owner_is_trusted and (not others_may_write or folder.st_mode & stat.S_ISVTX)  # /tmp: sticky


def made_course(notebooks: dict[str, Path], root: Path) -> dict[str, Path]:
    """The nbgrader course at `root` with each notebook of {stem: path} as an assignment and its student version made
    by generate_assignment; return {stem: release path}. generate_assignment takes about a third of a second per
    notebook, and every new grading folder and every release needs all of them: so a course made once is kept (see
    cache_root) and copied while its notebooks and nbgrader are unchanged. Without a usable cache folder it is made
    in `root` each time."""
    made_or_kept(course_key(notebooks), lambda folder: Course(folder).add_assignments(notebooks), root)
    return {stem: root / "release" / stem / f"{stem}.ipynb" for stem in notebooks}


def made_or_kept(key: str, make: Callable[[Path], object], root: Path) -> None:
    """Fill the new folder `root` as `make(folder)` fills an empty one: a copy of the kept folder named `key` in the
    cache (made there first if there is none; `key` must name everything the folder depends on), or, without a
    usable cache folder, `make(root)` itself."""
    cache = cache_root()
    cache = private_folder(cache) if cache is not None else None
    kept = _kept(key, make, cache) if cache is not None else None
    if kept is None:
        make(root)
        return
    try:
        shutil.copytree(kept, root, ignore=shutil.ignore_patterns(COMPLETE), dirs_exist_ok=True)
    except OSError:  # removed by another run's clean-up meanwhile, or a full disk: make it here
        shutil.rmtree(root, ignore_errors=True)
        make(root)


def _kept(key: str, make: Callable[[Path], object], cache: Path) -> Path | None:
    "The kept folder `key`, made now if there is none; None if it cannot be kept."
    entry = cache / key
    if (entry / COMPLETE).exists():
        with contextlib.suppress(OSError):  # removed by another run's clean-up meanwhile: the copy then fails over
            os.utime(entry / COMPLETE)  # recently used: kept longest
        return entry
    try:
        making = Path(tempfile.mkdtemp(prefix=".making-", dir=cache))
    except OSError:
        return None
    try:
        make(making)  # a refusal (nbgrader's, say) is raised as it would be without the cache
        (making / COMPLETE).touch()
        if entry.exists() and not (entry / COMPLETE).exists():
            shutil.rmtree(entry, ignore_errors=True)  # being removed by a clean-up, or damaged: replaced
        making.rename(entry)  # whole or not at all; a run that made the same folder first keeps its own
    except OSError:
        pass
    finally:
        shutil.rmtree(making, ignore_errors=True)
    _remove_old(cache)
    return entry if (entry / COMPLETE).exists() else None


def _remove_old(cache: Path) -> None:
    "Keep the KEPT_COURSES most recently used courses; remove what a killed run left half made (an hour old)."
    used = {}
    for marker in cache.glob(f"*/{COMPLETE}"):
        with contextlib.suppress(OSError):  # another run's clean-up may remove it meanwhile
            used[marker] = marker.stat().st_mtime
    for marker in sorted(used, key=used.get, reverse=True)[KEPT_COURSES:]:
        marker.unlink(missing_ok=True)  # first, so that no run takes it while it is being removed
        shutil.rmtree(marker.parent, ignore_errors=True)
    for making in cache.glob(".making-*"):
        with contextlib.suppress(OSError):
            if time.time() - making.stat().st_mtime > 3600:
                shutil.rmtree(making, ignore_errors=True)
