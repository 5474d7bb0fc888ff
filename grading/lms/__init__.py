"""Learning management systems: collect submissions, export grades, the Gradescope autograder. See README.md."""
