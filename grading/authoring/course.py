"""A thin layer over nbgrader's Python API: one course folder, the calls we need, and their failures as errors."""

import contextlib
import io
import logging
import shutil
import sys
import threading
import warnings
from pathlib import Path

from traitlets.config import Config

from ..common.errors import GradingError


def config(root):
    c = Config()
    c.CourseDirectory.root = str(root)
    c.CourseDirectory.db_url = f"sqlite:///{Path(root) / 'gradebook.db'}"
    return c


def alembic_head():
    """nbgrader's `get_alembic_version`, in this process. nbgrader starts the `alembic` command by name, which PATH
    finds only in an activated environment (a venv run as venv/bin/python, from cron or a Makefile, has none)."""
    from alembic.config import Config as AlembicConfig
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    settings = AlembicConfig()
    settings.set_main_option("script_location", ALEMBIC_DIR)
    return ScriptDirectory.from_config(settings).get_current_head()


def _use_alembic_in_process():
    import nbgrader.api

    nbgrader.api.get_alembic_version = alembic_head


@contextlib.contextmanager
def gradebook(db_url):
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

    def __init__(self, root, print_logs=True):
        "`print_logs`: print nbgrader's log when a call fails (else it is only on the GradingError, as `.log`)."
        self.root, self.print_logs = Path(root), print_logs
        self.root.mkdir(parents=True, exist_ok=True)
        self._config = config(self.root)
        self._api = None

    @property
    def api(self):
        if self._api is None:
            from nbgrader.apps import NbGraderAPI

            _use_alembic_in_process()
            logging.getLogger("traitlets").setLevel(logging.ERROR)
            self._api = NbGraderAPI(config=self._config)
        return self._api

    def _call(self, what, method, *args, **kwargs):
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

    def add_source(self, assignment, notebook_path):
        target = self.root / "source" / assignment / f"{assignment}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(notebook_path, target)

    def generate(self, assignment):
        self._call(f"make the student version of {assignment}", "generate_assignment", assignment, force=True)
        return self.root / "release" / assignment / f"{assignment}.ipynb"

    def add_assignments(self, notebooks):
        "Add every {stem: path} notebook as an assignment and make its student version; return {stem: release path}."
        for stem, path in notebooks.items():
            self.add_source(stem, path)
        return {stem: self.generate(stem) for stem in notebooks}
