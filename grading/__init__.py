"""Course tooling: derive nbgrader metadata, export, release the student kit, autograde, check a notebook."""
