"""Issue 41, point 2: the student kit never replaces the instructor's grader. The kit is the distribution
tinytorch-student (nbdev's export no longer renames it tinytorch), its `pip install -e .` refuses an environment that
already provides tinytorch or grading, the course refuses to run beside an installed kit, and the kit's --help lists
only the commands it has."""

import os
import shutil
import subprocess
import sys
import tomllib

import pytest

from conftest import REPO
from grading import cli
from grading.authoring.release import KIT_FILES, kit_settings
from grading.student import backend


def fake_distribution(site, name, packages):
    "An installed distribution's metadata (what pip leaves in site-packages), providing `packages`."
    info = site / f"{name.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    (info / "top_level.txt").write_text("\n".join(packages) + "\n")
    return info


def test_an_export_in_the_kit_keeps_the_kits_own_distribution_name(tmp_path, monkeypatch):
    from nbdev.config import add_init, get_config

    (tmp_path / "settings.ini").write_text(kit_settings(REPO / "settings.ini"))
    shutil.copyfile(KIT_FILES / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "tinytorch").mkdir()
    monkeypatch.chdir(tmp_path)
    get_config.cache_clear()
    try:
        add_init(tmp_path / "tinytorch")  # what nbdev_export does last, in the kit
    finally:
        get_config.cache_clear()
    project = tomllib.loads((tmp_path / "pyproject.toml").read_text())["project"]
    assert project["name"] == "tinytorch-student"


def test_installing_the_kit_beside_the_course_is_refused_with_what_to_do(tmp_path):
    fake_distribution(tmp_path, "tinytorch", ["grading", "tinytorch"])
    fake_distribution(tmp_path, "numpy", ["numpy"])
    found = backend.rivals([str(tmp_path)])
    assert [(name, version) for name, version, _ in found] == [("tinytorch", "0.1.0")]
    message = backend.refusal(found)
    assert "python3 -m venv .venv && . .venv/bin/activate && pip install -e ." in message
    assert "Nothing was installed." in message


def test_the_kit_may_be_installed_again_over_itself(tmp_path):
    fake_distribution(tmp_path, "tinytorch-student", ["grading", "tinytorch"])
    assert backend.rivals([str(tmp_path)]) == []


def test_the_course_refuses_to_run_beside_an_installed_kit(tmp_path, monkeypatch, capsys):
    fake_distribution(tmp_path, "tinytorch-student", ["grading", "tinytorch"])
    monkeypatch.syspath_prepend(str(tmp_path))
    assert cli.main(["metadata", "--check"]) == 2
    error = capsys.readouterr().err
    assert "the student kit (tinytorch-student from" in error and "pip uninstall tinytorch-student" in error


def test_the_kits_help_lists_only_the_kits_commands(monkeypatch, capsys):
    monkeypatch.setattr(cli, "IN_KIT", True)
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    shown = capsys.readouterr().out
    assert "export" in shown and "check" in shown and "your TinyTorch kit's commands" in shown
    assert not [name for name in cli.instructor_commands() if f"    {name} " in shown], shown


def test_an_instructors_command_in_the_kit_says_it_is_not_in_the_kit(monkeypatch, capsys):
    monkeypatch.setattr(cli, "IN_KIT", True)
    assert cli.main(["autograde", "subs", "--out", "grades"]) == 2
    assert "'autograde' is an instructor's command and is not part of the student kit" in capsys.readouterr().err


def test_the_instructor_has_every_command_and_the_kits_are_a_part_of_them(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    shown = capsys.readouterr().out
    assert {"release", "autograde", "collect", "export-grades"} <= cli.instructor_commands()
    assert all(f"    {name}" in shown for name in [*cli.instructor_commands(), "export", "check"])


def venv_python(folder):
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=300)
    return folder / "bin" / "python"


def pip_install(python, kit):
    """`pip install -e KIT` as the kit's README says (pip fetches setuptools for its isolated build from the package
    index this machine uses), without the kit's dependencies: the test runs only the command line."""
    command = [str(python), "-m", "pip", "install", "--no-deps", "-e", str(kit)]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_kit_installs_into_a_venv_of_its_own_and_refuses_one_with_the_course(kit, tmp_path):
    mine = tmp_path / "kit"
    shutil.copytree(kit, mine)  # pip writes tinytorch_student.egg-info into the folder it installs
    python = venv_python(tmp_path / "venv")
    site = next((tmp_path / "venv").glob("lib/python3*/site-packages"))
    course = fake_distribution(site, "tinytorch", ["grading", "tinytorch"])
    refused = pip_install(python, mine)
    assert refused.returncode != 0 and "Give the kit a venv of its own" in refused.stdout + refused.stderr
    assert not list(site.glob("tinytorch_student*")), "nothing of the kit is installed"
    shutil.rmtree(course)
    installed = pip_install(python, mine)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    run = lambda *args: subprocess.run(
        [str(python), "-m", "grading", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    shown = run("--help")
    assert shown.returncode == 0 and "    export" in shown.stdout and "autograde" not in shown.stdout, shown.stdout
    assert "not part of the student kit" in run("release", "--out", "x").stderr
    listed = subprocess.run([str(python), "-m", "pip", "list"], capture_output=True, text=True, timeout=120).stdout
    assert "tinytorch-student" in listed
