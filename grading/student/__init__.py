"""The student kit's commands: check and export. See README.md."""
