"""Helpers every part of the grader shares: errors, limits, notebooks, answers, CSV. See README.md."""
