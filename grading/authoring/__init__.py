"""From the instructor's notebooks to the student kit: convention, release, manifest, pictures. See README.md."""
