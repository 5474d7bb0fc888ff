"""The maths of a feedback page as MathML, made here, so that a page shows it with no script and no other file.

A browser draws MathML itself (Chromium since 109, Firefox, Safari), so a page uploaded on its own to an LMS shows its
formulas offline. `with_mathml` finds TeX in the text of a sanitised cell (grading.reports.page.sanitise) where MathJax
would: `$...$`, `$$...$$`, `\\(...\\)`, `\\[...\\]` and `\\begin{env}...\\end{env}`, never inside `<pre>` or `<code>`
(code, printed output, tracebacks). latex2mathml turns it into MathML, which is sanitised again with a MathML list of
its own: the TeX is the student's, and latex2mathml copies `\\text{...}` and `\\href` into its output as they are.
TeX it cannot read stays as text, as the page showed it before.
"""

import html
import re

SKIPPED = ("pre", "code")  # where MathJax did not look either (its skipTags)
TAG = re.compile(r'<(/?)([a-zA-Z][a-zA-Z0-9]*)(?:[^>"]|"[^"]*")*>')  # sanitised HTML quotes attributes with "
MATHS = re.compile(
    r"\$\$(?P<display>.+?)\$\$"
    r"|\\\[(?P<bracket>.+?)\\\]"
    r"|\\\((?P<paren>.+?)\\\)"
    r"|(?P<environment>\\begin\{(?P<name>[a-zA-Z*]+)\}.+?\\end\{(?P=name)\})"
    r"|(?<!\\)\$(?P<inline>[^$]+?)(?<!\\)\$",
    re.DOTALL,
)
MATHML_TAGS = {
    *("math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msub", "msup", "msubsup", "mfrac", "msqrt"),
    *("mroot", "mover", "munder", "munderover", "mtable", "mtr", "mtd", "mstyle", "mpadded", "mphantom", "menclose"),
}
MATHML_ATTRIBUTES = {
    *("display", "xmlns", "mathvariant", "stretchy", "fence", "separator", "lspace", "rspace", "accent"),
    *("accentunder", "movablelimits", "largeop", "symmetric", "minsize", "maxsize", "linethickness", "displaystyle"),
    *("scriptlevel", "rowspacing", "columnspacing", "columnalign", "rowalign", "columnlines", "rowlines", "frame"),
    *("width", "height", "depth", "notation", "form", "mathsize"),
}


def with_mathml(fragment: str) -> str:
    "`fragment` (sanitised HTML) with the TeX in its text, outside <pre> and <code>, written as MathML."
    if "$" not in fragment and "\\" not in fragment:
        return fragment  # most cells: nothing to look for
    parts, at, skipping = [], 0, 0
    for tag in TAG.finditer(fragment):
        text = fragment[at : tag.start()]
        parts.append(text if skipping else text_with_mathml(text))
        parts.append(tag[0])
        if tag[2].lower() in SKIPPED and not tag[0].endswith("/>"):
            skipping = max(0, skipping + (-1 if tag[1] else 1))
        at = tag.end()
    rest = fragment[at:]
    parts.append(rest if skipping else text_with_mathml(rest))
    return "".join(parts)


def text_with_mathml(text: str) -> str:
    "One text of the HTML (escaped, as it is there) with each formula in it as MathML."
    if not text or ("$" not in text and "\\" not in text):
        return text
    plain = html.unescape(text)
    parts, at = [], 0
    for found in MATHS.finditer(plain):
        tex, display = formula(found)
        mathml = to_mathml(tex, display)
        if mathml is None:
            continue  # left as text: the reader sees the TeX as written
        parts += [html.escape(plain[at : found.start()], quote=False), mathml]
        at = found.end()
    if not parts:
        return text
    return "".join(parts) + html.escape(plain[at:], quote=False)


def formula(found: re.Match) -> tuple[str, bool]:
    "(the TeX of a match of MATHS, whether it is shown as a block)."
    if found["inline"] is not None:
        return found["inline"], False
    if found["paren"] is not None:
        return found["paren"], False
    return found["display"] or found["bracket"] or found["environment"], True


def to_mathml(tex: str, display: bool) -> str | None:
    "The sanitised MathML of `tex`, or None where latex2mathml cannot read it."
    import nh3
    from latex2mathml.converter import convert

    try:
        made = convert(tex.strip(), display="block" if display else "inline")
    except Exception:  # noqa: BLE001  (latex2mathml raises many kinds on TeX it does not know; the text stays)
        return None
    return nh3.clean(
        made,
        tags=MATHML_TAGS,
        clean_content_tags={"script", "style"},
        attributes={tag: MATHML_ATTRIBUTES for tag in MATHML_TAGS},
        url_schemes=set(),
        strip_comments=True,
        link_rel=None,
    )
