"""autograde is told what to do by one typed Settings (grading/grade/settings.py), whose defaults and choices the
command line reads: the two cannot disagree (issue 42: autograde took 17 parameters, none keyword-only)."""

import dataclasses
import inspect

import pytest

from grading.cli import parser
from grading.common.defaults import FEEDBACK_CHOICES
from grading.grade.autograde import autograde
from grading.grade.settings import Settings
from grading.reports.feedback import POLICIES


def test_autograde_takes_two_folders_and_everything_else_by_name():
    parameters = inspect.signature(autograde).parameters.values()
    positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    assert positional == ["submissions", "out"]
    assert {p.name for p in parameters if p.kind == p.KEYWORD_ONLY} == {"settings", "progress", "log"}


def test_the_command_lines_defaults_are_the_settings_defaults():
    args = parser().parse_args(["autograde", "SUBS", "--out", "OUT"])
    for field in dataclasses.fields(Settings):
        option = {"notebooks_dir": "notebooks", "late": None, "now": None}.get(field.name, field.name)
        if option is not None:
            assert getattr(args, option) == field.default, field.name


def test_the_feedback_choices_are_the_policies_the_pages_know():
    assert set(FEEDBACK_CHOICES) == set(POLICIES)
    with pytest.raises(SystemExit):
        parser().parse_args(["autograde", "SUBS", "--out", "OUT", "--feedback", "everything"])


def test_settings_are_frozen_and_named():
    with pytest.raises(TypeError):
        Settings(None)  # every setting is given by name
    with pytest.raises(dataclasses.FrozenInstanceError):
        Settings().workers = 3
