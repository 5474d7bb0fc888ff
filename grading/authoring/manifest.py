"""The release manifest: what `python -m grading release` wrote into a kit, so that a later release never deletes work.

A kit is where a student works: they change its notebooks, and add files and folders of their own. Releasing again
into it (a fixed notebook, the next notebooks of the course) must not throw that away, and the only way to tell the
student's work from the release's own files is to remember what the release wrote. So every release ends by writing
KIT/.release-manifest.json, {relative path: sha256} of each file it wrote; a later release compares the kit with it:

- changed: a file of the manifest whose content differs now (or that is now a link or a folder);
- extra: anything the manifest does not list (a file, a link, an empty folder), except what Python and pip make
  on their own and make again (`__pycache__`, `*.egg-info`, `.pytest_cache`);
- a file of the manifest that is gone is neither: the release may write it again.

Nothing is followed through a symbolic link: a link is looked at as a link, wherever it points.
"""

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..common.errors import GradingError

MANIFEST = ".release-manifest.json"
REGENERATED = ("__pycache__", ".pytest_cache")  # folders Python makes, and makes again: never the student's work
REGENERATED_SUFFIX = ".egg-info"  # `pip install -e .` makes tinytorch.egg-info


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def digest_or_none(path: Path) -> str | None:
    "The sha256 of a file, or None when it cannot be read (then it counts as changed: it is kept, not replaced)."
    try:
        return sha256(path)
    except OSError:
        return None


def regenerated(name: str) -> bool:
    return name in REGENERATED or name.endswith(REGENERATED_SUFFIX)


def kit_entries(root: Path) -> dict:
    """{relative path: kind} of everything under `root` but the manifest and regenerated folders; kind is "file",
    "link" (never followed) or "folder" (an empty one, written "path/")."""
    root = Path(root)
    entries = {}
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        for name in list(dirs):
            path = here / name
            if path.is_symlink():
                dirs.remove(name)  # os.walk does not descend into it either; it is an entry of its own
                entries[path.relative_to(root).as_posix()] = "link"
            elif regenerated(name):
                dirs.remove(name)
        for name in files:
            path = here / name
            relative = path.relative_to(root).as_posix()
            if relative != MANIFEST:
                entries[relative] = "link" if path.is_symlink() else "file"
        if here != root and not dirs and not files:
            entries[here.relative_to(root).as_posix() + "/"] = "folder"
    return entries


def hashes(root: Path) -> dict:
    "{relative path: sha256} of every file under `root` (what a release wrote there)."
    return {path: sha256(Path(root) / path) for path, kind in sorted(kit_entries(root).items()) if kind == "file"}


def write_manifest(root: Path, files: dict) -> None:
    "Write ROOT/.release-manifest.json for `files` ({relative path: sha256}), atomically."
    text = json.dumps(
        {
            "about": "what python -m grading release wrote here; a later release keeps every file that differs",
            "files": dict(sorted(files.items())),
        },
        indent=1,
    )
    tmp = Path(root) / f".{MANIFEST}.tmp"
    tmp.write_text(text + "\n")
    os.replace(tmp, Path(root) / MANIFEST)


def read_manifest(root: Path) -> dict[str, str] | None:
    "{relative path: sha256} from ROOT/.release-manifest.json, or None when there is none."
    path = Path(root) / MANIFEST
    if not path.exists() and not path.is_symlink():
        return None
    try:
        files = json.loads(path.read_text())["files"]
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
            raise ValueError("expected {path: sha256}")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise GradingError(
            f"{path}: not a release manifest ({error}); release into a new folder, or pass --force to replace "
            "everything in this one."
        ) from None
    return files


@dataclass
class KitState:
    "How a kit differs from what the release wrote into it (see the module docstring)."

    manifest: dict  # {relative path: sha256}, as the last release wrote it
    changed: list = field(default_factory=list)  # relative paths
    extra: list = field(default_factory=list)  # relative paths; an empty folder ends with "/"

    @property
    def work(self) -> list[str]:
        return self.changed + self.extra


def compare(root: Path, manifest: dict) -> KitState:
    "The kit at `root` against its manifest."
    entries = kit_entries(root)
    state = KitState(manifest)
    for path, kind in sorted(entries.items()):
        if path not in manifest:
            state.extra.append(path)
        elif kind != "file" or digest_or_none(Path(root) / path) != manifest[path]:
            state.changed.append(path)
    for path in manifest:
        if path not in entries and (Path(root) / path).is_dir():
            state.changed.append(path)  # a folder where the release wrote a file
    return state


def listing(paths: list, most: int = 8) -> str:
    "'a, b, c and 4 more': a list short enough for a one-line message."
    shown = ", ".join(paths[:most])
    return shown + (f" and {len(paths) - most} more" if len(paths) > most else "")
