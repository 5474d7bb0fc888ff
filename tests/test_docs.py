"""The user docs hold together: every relative link and anchor resolves, every quoted command exists, the README stays
a short guide, and every place the code sends a reader to is there."""

import argparse
import re

from conftest import REPO
from grading.cli import parser

DOCS = sorted(
    [REPO / "README.md", REPO / "CHANGELOG.md", REPO / "notebooks" / "README.md", REPO / "grading" / "README.md"]
    + list((REPO / "docs").glob("*.md"))
    + list((REPO / "grading").glob("*/README.md"))
)
FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.M | re.S)
LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)\)")
COMMAND = re.compile(r"python -m grading ([a-z][a-z-]*)")


def prose(text):
    "The text without code blocks and inline code, where a `[x](y)` is code, not a link."
    return re.sub(r"`[^`\n]*`", "", FENCE.sub("", text))


def slug(heading):
    "GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path):
    seen, found = {}, set()
    for line in FENCE.sub("", path.read_text()).splitlines():
        heading = re.match(r"#{1,6} (.*)", line)
        if heading:
            base = slug(heading.group(1))
            found.add(base if base not in seen else f"{base}-{seen[base]}")
            seen[base] = seen.get(base, 0) + 1
    return found


def commands():
    (sub,) = [a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return set(sub.choices)


def test_the_docs_are_found():
    names = {p.relative_to(REPO).as_posix() for p in DOCS}
    assert {"README.md", "CHANGELOG.md", "docs/design.md", "docs/instructor.md", "docs/student.md"} <= names
    assert "docs/benchmarks.md" in names and "grading/grade/README.md" in names


def test_every_relative_link_and_anchor_resolves():
    broken = []
    for doc in DOCS:
        for target in LINK.findall(prose(doc.read_text())):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            file = (doc.parent / path).resolve() if path else doc
            where = f"{doc.relative_to(REPO)}: {target}"
            if not file.exists():
                broken.append(f"{where}: no such file")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                broken.append(f"{where}: no heading with that anchor")
    assert broken == []


def test_every_quoted_command_exists():
    known = commands()
    unknown = [
        f"{doc.relative_to(REPO)}: python -m grading {name}"
        for doc in DOCS
        for name in COMMAND.findall(doc.read_text())
        if name not in known
    ]
    assert unknown == [], f"grading/cli has {sorted(known)}"


def test_the_readme_names_every_command_once_in_its_list():
    listed = re.findall(r"^- `python -m grading ([a-z-]+)`", (REPO / "README.md").read_text(), re.M)
    assert sorted(listed) == sorted(commands())


def test_the_readme_is_a_short_guide():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 170, f"README.md has {len(lines)} lines: move the details into docs/"


def test_no_placeholder_is_left_for_a_number():
    strays = [f"{doc.relative_to(REPO)}: {p}" for doc in DOCS for p in re.findall(r"\{\{\w+\}\}", doc.read_text())]
    assert strays == [], "write the number measured, with the command that prints it"


def test_commit_hashes_are_left_to_the_changelog():
    hashes = [
        f"{doc.relative_to(REPO)}: {h}"
        for doc in DOCS
        if doc.name != "CHANGELOG.md"
        for h in re.findall(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b", doc.read_text())
    ]
    assert hashes == []


def test_every_doc_the_code_cites_is_there_with_its_section():
    "Messages and comments that send a reader to the docs name a file and a heading that exist."
    cited = re.compile(r"(docs/\w+\.md)(?:, ['\"]([^'\"]+)['\"])?")
    missing = []
    for source in [
        *(REPO / "grading").rglob("*.py"),
        REPO / "grading" / "Dockerfile",
        *(REPO / "benchmarks").glob("*.py"),
    ]:
        text = source.read_text()
        assert "grading/README.md" not in text, f"{source.relative_to(REPO)} cites grading/README.md, now docs/"
        for name, section in cited.findall(text):
            doc = REPO / name
            headings = re.findall(r"^#{1,6} (.*)", FENCE.sub("", doc.read_text()), re.M) if doc.exists() else []
            if not doc.exists() or (section and not any(h.startswith(section) for h in headings)):
                missing.append(f"{source.relative_to(REPO)}: {name} {section}")
    assert missing == []


def test_the_design_maps_every_package_to_its_readme():
    from test_layout import MAY_IMPORT

    design = (REPO / "docs" / "design.md").read_text()
    linked = set(re.findall(r"\(\.\./grading/(\w+)/README\.md\)", design))
    assert linked == set(MAY_IMPORT)
