"""The scan of a built kit for leaks: no answer line, answer expression, model answer or hidden test of a notebook
still open appears in any file of the kit (`release` runs it before the kit is put in place). A notebook whose
reference module is handed out (`--reference`) is no secret any more, and is left out of the scan."""

import keyword
import re
from collections.abc import Collection, Iterator
from pathlib import Path

from ..common.errors import GradingError
from ..common.notebooks import (
    HIDDEN_BEGIN,
    HIDDEN_END,
    SOLUTION_BEGIN,
    SOLUTION_END,
    NotebookNode,
    is_manual_answer,
    nbgrader_meta,
    read_notebook,
)
from .convention import model_answer

TOKEN = re.compile(r"\w+|[^\w\s]")


NOT_A_NAME = set(keyword.kwlist) | {"self", "None", "True", "False"}


MARKERS = (SOLUTION_BEGIN, SOLUTION_END, HIDDEN_BEGIN, HIDDEN_END)


EXPORTED_FROM = re.compile(r"File to edit: (?:\.\./)*(?:[\w.-]+/)*(?P<stem>[\w.-]+)\.ipynb")


def normalise(line: str) -> str:
    "A line as its tokens, one space apart: `a*b` and `a  *  b` read the same."
    return " ".join(TOKEN.findall(line))


def is_answer(line: str) -> bool:
    "Whether a solution line is specific enough to give an exercise away (not `return result`, an import or `pass`)."
    text = line.strip()
    if not text or text.startswith("#") or text in MARKERS or re.match(r"(?:import|from)\s", text):
        return False
    tokens = TOKEN.findall(text)
    names = [t for t in tokens if re.match(r"\w", t) and t not in NOT_A_NAME]
    return len(tokens) >= 3 and len(names) >= 3 and len("".join(tokens)) >= 10


def answer_parts(line: str) -> list[str]:
    "The line and, for `return X` or `name = X`, the expression X: a test message or a hint can quote just that."
    text = line.strip()
    parts = [text]
    value = re.match(r"return\s+(.+)$", text) or re.match(r"[\w.\[\](), ]+?\s*[-+*/@]?=(?!=)\s*(.+)$", text)
    if value and not re.match(r"(?:if|elif|while|assert|for|with|def|class|lambda)\b", text):
        expression = value[1].strip()
        one_tuple = re.fullmatch(r"\((.+),\s*\)", expression)
        parts.append(one_tuple[1] if one_tuple else expression)
    return [part for part in parts if is_answer(part)]


def regions(source: str) -> Iterator[tuple[str, str]]:
    "Split a cell's lines into (kind, line): kind is 'solution', 'hidden' or 'visible'."
    kind = "visible"
    for line in source.splitlines():
        marker = line.strip()
        if marker in (SOLUTION_BEGIN, HIDDEN_BEGIN):
            kind = "solution" if marker == SOLUTION_BEGIN else "hidden"
        elif marker in (SOLUTION_END, HIDDEN_END):
            kind = "visible"
        else:
            yield kind, line


class Secret:
    "A normalised answer (or hidden-test) line of one notebook, and what to say when it shows up."

    def __init__(self, pattern: str, line: str, stem: str, exercise: str, kind: str) -> None:
        self.pattern, self.line, self.stem, self.exercise, self.kind = pattern, line, stem, exercise, kind

    def describe(self) -> str:
        what = {
            "solution": f"the answer to exercise {self.exercise}",
            "hidden": f"hidden test {self.exercise}",
            "answer": f"the model answer to question {self.exercise}",
        }[self.kind]
        return f"{what} of {self.stem} ({self.line.strip()!r})"


ANSWER_WORDS = 6  # a sentence of a model answer this long is specific enough to give it away


def answer_sentences(cell: NotebookNode) -> Iterator[str]:
    "The sentences of a written answer's model answer that are long enough to give it away."
    for line in model_answer(cell.source).splitlines():
        for sentence in re.split(r"(?<=[.!?;:])\s+", line.strip()):
            if len(re.findall(r"\w+", sentence)) >= ANSWER_WORDS:
                yield sentence


def course_secrets(notebooks: dict[str, Path], handed_out: Collection[str] = ()) -> dict[str, Secret]:
    """{normalised pattern: Secret}: every notebook's answer lines and expressions, except those the notebook itself
    shows in its text or given code (not in a test: a test's message must not give the answer away), its hidden-test
    lines, except those shown anywhere in the course, and the sentences of its model answers to the questions marked
    by hand, except those the notebook shows. The answer and hidden-test lines of the notebooks whose reference module
    is `handed_out` are no secret (their deadline has passed); their model answers still are."""
    read = {stem: read_notebook(path) for stem, path in notebooks.items()}

    def shown(nb: NotebookNode, tests: bool) -> str:
        return " \n ".join(
            normalise(line)
            for cell in nb.cells
            if not is_manual_answer(cell) and (tests or not nbgrader_meta(cell).get("grade"))
            for kind, line in regions(cell.source)
            if kind == "visible"
        )

    taught = {stem: f" {shown(nb, tests=False)} " for stem, nb in read.items()}
    everywhere = " \n ".join(shown(nb, tests=True) for nb in read.values())
    secrets = {}
    for stem, nb in read.items():
        for cell in nb.cells:
            exercise = nbgrader_meta(cell).get("grade_id", "").removeprefix("solution-") or cell.get("id")
            if is_manual_answer(cell):
                for sentence in answer_sentences(cell):
                    pattern = normalise(sentence)
                    if f" {pattern} " not in taught[stem] and pattern not in secrets:
                        secrets[pattern] = Secret(pattern, sentence, stem, exercise, "answer")
                continue
            for kind, line in regions(cell.source):
                if kind == "visible" or stem in handed_out:  # (its hidden tests check what its reference shows)
                    continue
                public = taught[stem] if kind == "solution" else f" {everywhere} "
                for part in answer_parts(line):
                    pattern = normalise(part)
                    if f" {pattern} " not in public and pattern not in secrets:
                        secrets[pattern] = Secret(pattern, line, stem, exercise, kind)
    return secrets


def kit_lines(file: Path) -> Iterator[tuple[str, str]]:
    "(where, line) for every line of text in a kit file: a notebook's cell sources and outputs, or the file's lines."
    if file.suffix == ".ipynb":
        for index, cell in enumerate(read_notebook(file).cells):
            texts = [cell.source] + [
                str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in cell.get("outputs", [])
            ]
            for text in texts:
                for line in text.splitlines():
                    yield f"cell {index + 1} ({cell.get('id')})", line
        return
    try:
        text = file.read_text()
    except UnicodeDecodeError:
        return
    for number, line in enumerate(text.splitlines(), 1):
        yield f"line {number}", line


def shown_in(file: Path, kit: Path) -> str:
    "The notebook a kit file belongs to (its folder, or the notebook an exported module is made from), else the file."
    relative = file.relative_to(kit)
    if file.suffix == ".ipynb":
        return file.stem
    if file.suffix == ".py":
        head = file.read_text(errors="replace")[:500]
        match = EXPORTED_FROM.search(head)
        if match:
            return match["stem"]
    return str(relative)


def find_leaks(
    kit: str | Path, notebooks: dict[str, Path], handed_out: Collection[str] = ()
) -> Iterator[tuple[Path, str, str, Secret]]:
    """Yield (file, where, line, secret) for each line of the kit that shows an answer or hidden-test line of any
    notebook (but the answer and hidden-test lines of those whose reference module is `handed_out`)."""
    kit = Path(kit)
    secrets = course_secrets(notebooks, handed_out)
    for file in sorted(p for p in kit.rglob("*") if p.is_file()):
        for where, line in kit_lines(file):
            text = f" {normalise(line)} "
            secret = next((secret for pattern, secret in secrets.items() if f" {pattern} " in text), None)
            if secret:
                yield file, where, line, secret


def scan_for_solutions(kit: str | Path, notebooks: dict[str, Path], handed_out: Collection[str] = ()) -> None:
    """Fail, in one line, if any file of the kit contains an answer line of any notebook (or a hidden-test line),
    but those of the notebooks whose reference module is `handed_out`."""
    for file, where, line, secret in find_leaks(kit, notebooks, handed_out):
        text = line.strip()
        text = text if len(text) <= 160 else text[:160] + "..."
        raise GradingError(
            f"{file.relative_to(kit)}, {where}: {shown_in(file, kit)} gives away {secret.describe()} "
            f"in the line {text!r}; the kit was not released. Rewrite that line so it does not show "
            "the answer (import the module instead, or use another example)."
        )
