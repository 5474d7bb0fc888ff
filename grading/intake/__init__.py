"""Submissions in: an LMS\x27s download as the folder autograde grades, and the roster."""
