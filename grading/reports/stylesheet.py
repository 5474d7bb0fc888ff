"""The feedback page's stylesheet: nbconvert's (JupyterLab's, about 260 KB, most of it for JupyterLab's own widgets,
menus and icons), less every rule that cannot apply to a page and every custom property (`--jp-*`) nothing uses.

What can be on a page is read off a probe page (`every_kind_of_cell`, rendered as every page is) and the sanitiser's
allow-list: a rule stays if some selector of its list names only classes, ids, tags and attributes found there.
Dropping a rule that matches nothing, or a custom property no `var()` reads, leaves how a page looks unchanged.
A class a student writes into their own markdown loses JupyterLab's styling, except the few JupyterLab styles for
markdown's authors (`authored_classes`: its boxes, <div class="alert alert-info">).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from html.parser import HTMLParser

import nbformat
import tinycss2
from tinycss2.ast import Declaration, WhitespaceToken

STYLE = re.compile(r"<style[^>]*>(.*?)</style>", re.DOTALL)
VAR = re.compile(r"var\(\s*(--[\w-]+)")
GROUPS = ("media", "supports", "layer", "container", "keyframes")  # at-rules whose block holds rules
MATCHES_ANY_OF = ("is", "where", "has", "matches", "-webkit-any", "-moz-any")  # pseudo-classes taking selectors
RENDERED_HTML = "jp-RenderedHTMLCommon"  # the class of rendered markdown and HTML
ANIMATION = ("animation", "animation-name", "-webkit-animation", "-webkit-animation-name")

# -- The probe: every kind of cell and output a page can show ----------------------------------------------------------

PIXEL = {  # 1×1 pictures: a class depends on the output's type, not on its picture
    "image/png": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=",
    "image/jpeg": "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAP//////////////////////////////////////////////////////2wBD"
    "Af//////////////////////////////////////////////////////wAARCAABAAEDASIAAhEBAxEB/8QAFQABAQAAAAAAAAAAAAAAAAAA"
    "AAP/xAAUEAEAAAAAAAAAAAAAAAAAAAAA/8QAFAEBAAAAAAAAAAAAAAAAAAAAAP/EABQRAQAAAAAAAAAAAAAAAAAAAAD/2gAMAwEAAhEDEQA/"
    "AKAH/9k=",
    "image/gif": "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7",
}
SAMPLES = {  # one value for each type of output data a page shows (grading.reports.page.SHOWN_MIME_TYPES)
    "text/plain": "array([1., 2.])",
    "text/html": '<div><table border="1" class="dataframe"><thead><tr><th></th><th>loss</th></tr></thead>'
    "<tbody><tr><th>0</th><td>0.25</td></tr><tr><th>1</th><td>0.5</td></tr></tbody></table></div>",
    "text/markdown": "**bold** and `code`",
    "text/latex": r"$$\frac{1}{2}$$",
    **PIXEL,
}
MARKDOWN = """# Heading 1
## Heading 2
### Heading 3
#### Heading 4
##### Heading 5
###### Heading 6
Text with **bold**, *emphasis*, `code`, a [link](https://example.com), $x^2$ and ![a picture](attachment:p.png)

$$\\frac{\\partial L}{\\partial x}$$

> a quote

- a list
1. a numbered list

| x | y |
|---|---|
| 1 | 2 |
| 3 | 4 |

---

```python
def f(x):
    return x ** 2  # a comment
```

```
plain code
```
"""
CODE = 'import numpy as np\n\n@decorator\nclass A(B):\n    "doc"\n    def f(self, x=1.5, *a, **k):\n        return x'
ANSI = "".join(f"\x1b[{code}m{code}\x1b[0m" for code in (*range(30, 38), *range(40, 48), *range(90, 98), 1, 4, 7))
ANSI += "".join(f"\x1b[{code}m{code}\x1b[0m" for code in range(100, 108))


def every_kind_of_cell() -> dict:
    """A notebook, as JSON data from the sandbox, with every kind of cell and output a page shows: markdown (with
    headings, a table, maths, a picture, highlighted code), raw, a test cell, a code cell without outputs, and one
    with a stream of each name (in every ANSI colour), each type of data as a display and as a result, and an error."""
    alone = ({mime: value} for mime, value in SAMPLES.items() if mime != "image/gif")  # nbconvert shows no GIF alone
    data = [SAMPLES, *alone]
    outputs = [
        nbformat.v4.new_output("stream", name="stdout", text=ANSI),
        nbformat.v4.new_output("stream", name="stderr", text=ANSI),
        *(nbformat.v4.new_output("display_data", data=d) for d in data),
        *(nbformat.v4.new_output("execute_result", data=d, execution_count=1) for d in data),
        nbformat.v4.new_output("error", ename="ValueError", evalue="wrong", traceback=[ANSI, "ValueError: wrong"]),
    ]
    test = {"nbgrader": {"grade": True, "grade_id": "t", "points": 1}}
    cells = [
        nbformat.v4.new_markdown_cell(MARKDOWN, attachments={"p.png": {"image/png": PIXEL["image/png"]}}),
        nbformat.v4.new_raw_cell("raw text"),
        nbformat.v4.new_code_cell(CODE, execution_count=1, outputs=outputs),
        nbformat.v4.new_code_cell("assert f(1) == 1", execution_count=2, metadata=test, outputs=outputs[-1:]),
        nbformat.v4.new_code_cell("x = 1", execution_count=None),
    ]
    return json.loads(nbformat.writes(nbformat.v4.new_notebook(cells=cells)))


# -- What a page can hold ---------------------------------------------------------------------------------------------


@dataclass
class Found:
    "The tags, classes, ids and attribute names that elements of a page can have."

    tags: set[str] = field(default_factory=set)
    classes: set[str] = field(default_factory=set)
    ids: set[str] = field(default_factory=set)
    attributes: set[str] = field(default_factory=set)


class _Elements(HTMLParser):
    "Adds what each start tag of a page has to `found`."

    def __init__(self, found: Found) -> None:
        super().__init__()
        self.found = found

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.tags.add(tag)
        for name, value in attrs:
            self.found.attributes.add(name)
            if name == "class":
                self.found.classes.update((value or "").split())
            elif name == "id":
                self.found.ids.add(value or "")


def found_on(page: str, tags: Iterable[str] = (), attributes: Iterable[str] = ()) -> Found:
    "What the elements of `page` have, and the `tags` and `attributes` a student's own HTML may add."
    found = Found(tags=set(tags), attributes=set(attributes))
    _Elements(found).feed(page)
    return found


# -- Which rules can apply --------------------------------------------------------------------------------------------


@dataclass
class Rule:
    "A style rule or an at-rule with a block: its prelude (tokens) and what its block holds."

    prelude: list
    at: str | None  # the at-keyword ("media", "keyframes", ...), None for a style rule
    declarations: list[Declaration]
    rules: list[Rule]


def parsed(css: str | list) -> list[Rule]:
    "The rules of `css`, without comments; an at-rule without a block (@import, @charset) is left out."
    return [rule(node) for node in tinycss2.parse_stylesheet(css, True, True) if getattr(node, "content", None)]


def rule(node: tinycss2.ast.Node) -> Rule:
    "A rule of tinycss2's as a Rule: what its block holds parsed, as rules (@media) or declarations."
    at = getattr(node, "lower_at_keyword", None)
    if at in GROUPS:
        return Rule(node.prelude, at, [], parsed(node.content))
    body = tinycss2.parse_blocks_contents(node.content, skip_whitespace=True, skip_comments=True)
    nested = [n for n in body if n.type in ("qualified-rule", "at-rule") and n.content]
    return Rule(node.prelude, at, [d for d in body if d.type == "declaration"], [rule(n) for n in nested])


def selectors(tokens: list) -> list[list]:
    "A selector list's selectors, each as its tokens."
    listed = [[]]
    for token in tokens:
        if token.type == "literal" and token.value == ",":
            listed.append([])
        elif token.type != "comment":
            listed[-1].append(token)
    return listed


def can_match(selector: list, found: Found) -> bool:
    """Whether `selector` (tokens) names only what `found` holds: its classes, ids, tags and attributes, and for
    :is() and its kin at least one selector of theirs. :not() and other pseudo-classes are taken to match."""
    for before, token in zip([None, *selector], selector):
        mark = before.value if before is not None and before.type == "literal" else None
        if token.type == "ident" and mark == ".":
            if token.value not in found.classes:
                return False
        elif token.type == "ident" and mark != ":" and token.lower_value not in found.tags:
            return False
        elif token.type == "hash" and token.value not in found.ids:
            return False
        elif token.type == "[] block" and attribute(token) not in found.attributes:
            return False
        elif token.type == "function" and mark == ":" and token.lower_name in MATCHES_ANY_OF:
            if not any(can_match(s, found) for s in selectors(token.arguments)):
                return False
    return True


def attribute(block: tinycss2.ast.SquareBracketsBlock) -> str:
    "The attribute an attribute selector ([name='value']) tests."
    return next((t.lower_value for t in block.content if t.type == "ident"), "")


def applicable(rules: list[Rule], found: Found) -> list[Rule]:
    "The rules that can apply where `found` is what elements have; @media and @supports keep their applicable rules."
    kept = []
    for r in rules:
        if r.at is None and not any(can_match(s, found) for s in selectors(r.prelude)):
            continue
        if r.at in GROUPS and r.at != "keyframes":
            r = replace(r, rules=applicable(r.rules, found))
            if not r.rules:
                continue
        kept.append(r)
    return kept


def authored_classes(rules: list[Rule]) -> set[str]:
    """The classes that `rules` style inside rendered markdown (`.jp-RenderedHTMLCommon .alert-info`): JupyterLab's
    boxes, which a notebook's author writes (<div class="alert alert-info">)."""
    classes = set()
    for s in (s for r in every_rule(rules) if r.at is None for s in selectors(r.prelude)):
        if compact(s).startswith(f".{RENDERED_HTML} "):
            classes |= named_classes(s)
    return classes - {RENDERED_HTML}


def named_classes(selector: list) -> set[str]:
    "The classes a selector (tokens) names, those inside :not() and its kin left out."
    dots = (dot.type == "literal" and dot.value == "." for dot in selector)
    return {token.value for dot, token in zip(dots, selector[1:]) if dot and token.type == "ident"}


def every_rule(rules: list[Rule]) -> Iterator[Rule]:
    "`rules` and the rules inside them."
    for r in rules:
        yield r
        yield from every_rule(r.rules)


def without_unused_keyframes(rules: list[Rule]) -> list[Rule]:
    "`rules` less each @keyframes that no animation names."
    names = {
        token.value
        for r in every_rule(rules)
        for d in r.declarations
        if d.lower_name in ANIMATION
        for token in d.value
        if token.type == "ident"
    }
    return [r for r in rules if r.at != "keyframes" or tinycss2.serialize(r.prelude).strip() in names]


def used_properties(rules: list[Rule], elsewhere: str) -> set[str]:
    """The custom properties that the declarations of `rules` and the CSS `elsewhere` (the page's other stylesheet:
    pygments' colours for code) read with var(), and those that their values read in turn."""
    values, used = defaultdict(list), set(VAR.findall(elsewhere))
    for d in (d for r in every_rule(rules) for d in r.declarations):
        value = tinycss2.serialize(d.value)
        if d.name.startswith("--"):
            values[d.name].append(value)
        else:
            used.update(VAR.findall(value))
    todo = list(used)
    while todo:
        for value in values.pop(todo.pop(), []):
            new = set(VAR.findall(value)) - used
            used |= new
            todo += new
    return used


# -- The pruned stylesheet --------------------------------------------------------------------------------------------


def compact(tokens: list) -> str:
    "CSS tokens as text, each run of spaces between them one space."
    tokens = [WhitespaceToken(0, 0, " ") if t.type == "whitespace" else t for t in tokens if t.type != "comment"]
    return tinycss2.serialize(tokens).strip()


def written(rules: list[Rule], used: set[str]) -> str:
    "`rules` as CSS, one a line, less the custom properties not in `used` and the style rules left empty."
    lines = []
    for r in rules:
        kept = [d for d in r.declarations if not d.name.startswith("--") or d.name in used]
        body = ";".join(f"{d.name}:{compact(d.value)}{'!important' if d.important else ''}" for d in kept)
        body += written(r.rules, used)
        prelude = compact(r.prelude) if r.at is None else f"@{r.at} {compact(r.prelude)}".rstrip()
        if body:
            lines.append(f"{prelude}{{{body}}}\n")
    return "".join(lines)


def pruned(stylesheets: str, page: str, tags: Iterable[str] = (), attributes: Iterable[str] = ()) -> str:
    """`stylesheets` (<style> elements) with only what can apply on a page like `page` (a page without them) whose
    students' HTML may add `tags` and `attributes`: one <style> for each, in their order."""
    sheets = [parsed(css) for css in STYLE.findall(stylesheets)]
    found = found_on(page, tags, attributes)
    found.classes |= authored_classes([r for sheet in sheets for r in sheet])
    sheets = [without_unused_keyframes(applicable(sheet, found)) for sheet in sheets]
    used = used_properties([r for sheet in sheets for r in sheet], page)
    return "".join(f'<style type="text/css">\n{written(sheet, used)}</style>\n' for sheet in sheets)
