"""Where a student's code runs: bubblewrap, cgroups, the worker and the wire. See README.md."""
