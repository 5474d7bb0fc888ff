"""The student kit's build backend: setuptools', refusing a Python environment that already has `tinytorch` or `grading`.

The kit and the instructor's course both provide the packages `tinytorch` and `grading`. In one environment one hides
the other: the kit's stubs grade as the answer key, or the instructor's commands vanish. So `pip install -e .` of the
kit stops before installing anything when another distribution there provides either, and says to give the kit a venv
of its own. It imports only the standard library, setuptools and grading.common.environment: pip runs it in an
isolated build, whose sys.prefix is still the environment being installed into.
"""

import importlib.metadata
import sysconfig

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403 - every other hook pip may call, as setuptools defines it

from ..common.environment import KIT, installed_from

PACKAGES = {"tinytorch", "grading"}


def provided(dist: importlib.metadata.Distribution) -> set[str]:
    "The top-level packages of an installed distribution."
    top_level = dist.read_text("top_level.txt")
    if top_level is not None:
        return set(top_level.split())
    return {file.parts[0].removesuffix(".py") for file in dist.files or [] if file.parts}


def rivals(paths: list[str] | None = None) -> list[tuple[str, str, str]]:
    """[(name, version, where)]: the distributions installed in `paths` (default: the target environment's
    site-packages), other than the kit, that provide tinytorch or grading."""
    paths = paths or sorted({sysconfig.get_path("purelib"), sysconfig.get_path("platlib")})
    found = []
    for dist in importlib.metadata.distributions(path=paths):
        name = dist.metadata["Name"] or "?"
        if name.lower().replace("_", "-") != KIT and provided(dist) & PACKAGES:
            found.append((name, dist.version, installed_from(dist)))
    return found


def refusal(found: list[tuple[str, str, str]]) -> str:
    "The one-paragraph message of a refused install."
    listed = ", ".join(f"{name} {version} (from {where})" for name, version, where in found)
    return (
        f"error: this Python environment already has {listed}, which provides tinytorch or grading too (the "
        "TinyTorch course, or a kit installed before); installing the kit here would hide one with the other. Give "
        "the kit a venv of its own, in the kit's folder:\n"
        "    python3 -m venv .venv && . .venv/bin/activate && pip install -e .\n"
        f"(If that is an older kit of yours, run pip uninstall {found[0][0]} first.) Nothing was installed."
    )


def refuse_a_shared_environment() -> None:
    found = rivals()
    if found:
        raise SystemExit(refusal(found))


def get_requires_for_build_editable(config_settings: dict | None = None) -> list[str]:
    refuse_a_shared_environment()
    return build_meta.get_requires_for_build_editable(config_settings)


def get_requires_for_build_wheel(config_settings: dict | None = None) -> list[str]:
    refuse_a_shared_environment()
    return build_meta.get_requires_for_build_wheel(config_settings)


def build_editable(
    wheel_directory: str, config_settings: dict | None = None, metadata_directory: str | None = None
) -> str:
    refuse_a_shared_environment()
    return build_meta.build_editable(wheel_directory, config_settings, metadata_directory)


def build_wheel(
    wheel_directory: str, config_settings: dict | None = None, metadata_directory: str | None = None
) -> str:
    refuse_a_shared_environment()
    return build_meta.build_wheel(wheel_directory, config_settings, metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory: str, config_settings: dict | None = None) -> str:
    refuse_a_shared_environment()  # the first hook pip calls without build isolation
    return build_meta.prepare_metadata_for_build_editable(metadata_directory, config_settings)


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: dict | None = None) -> str:
    refuse_a_shared_environment()
    return build_meta.prepare_metadata_for_build_wheel(metadata_directory, config_settings)
