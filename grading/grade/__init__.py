"""Autograding: the orchestrator, the jobs, the verdict. See README.md."""
