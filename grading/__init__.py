"""Course tooling: derive nbgrader metadata, export, release the student kit, autograde, check a notebook."""

import sys

# jsonschema (under nbformat) imports rfc3987_syntax where it is installed, and that import compiles about 35 Lark
# grammars: a second of every grading process's start (jsonschema issue 1428). They check the formats iri and
# iri-reference, which no notebook schema uses, so every process of the grader goes without that module.
sys.modules.setdefault("rfc3987_syntax", None)
