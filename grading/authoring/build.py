"""setuptools hook (pyproject.toml, [tool.setuptools.cmdclass]): a built wheel of tinytorch has no nbgrader markers.

The committed tinytorch/ is exactly what nbdev_export writes, markers included, because the notebooks are the single
source and `grading` finds each exercise by its `### BEGIN SOLUTION` region there. Whoever `pip install`s the package
reads the code without them; the lines are comments, so nothing else changes.
"""

from pathlib import Path

from setuptools.command.build_py import build_py

MARKER_LINES = ("### BEGIN SOLUTION", "### END SOLUTION")


def without_markers(source: str) -> str:
    """The source with every line that is only a solution marker removed. (grading.common.notebooks.strip_markers does the
    same for cell sources, but importing it needs nbformat, which a wheel's isolated build does not have.)"""
    kept = [line for line in source.splitlines(keepends=True) if line.strip() not in MARKER_LINES]
    return "".join(kept)


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        for path in sorted(Path(self.build_lib, "tinytorch").rglob("*.py")):
            source = path.read_text()
            if any(marker in source for marker in MARKER_LINES):
                path.write_text(without_markers(source))
