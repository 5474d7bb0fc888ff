"""What students and instructors read about a grade: feedback pages, late policy, hand marking. See README.md."""
