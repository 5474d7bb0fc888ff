"""The feedback page's stylesheet (grading.reports.stylesheet): JupyterLab's, pruned to what can apply on a page, so
that a page is a fraction of its former size and looks the same, still one file that loads nothing."""

import functools
import io
import json
import re
from pathlib import Path

import nbformat
import pytest
import soupsieve
import tinycss2
from bs4 import BeautifulSoup

from grading.reports.page import ALLOWED_TAGS, nbconvert_css, page_css, plain_notebook, render, unstyled
from grading.reports.stylesheet import STYLE, VAR, every_kind_of_cell

CHROMIUM = Path("/usr/bin/chromium")
STUDENT_HTML = (  # what a student's own markdown may hold: every tag the sanitiser lets through
    "<table><caption>c</caption><colgroup><col></colgroup><thead><tr><th>h</th></tr></thead>"
    "<tbody><tr><td>d</td></tr></tbody><tfoot><tr><td>f</td></tr></tfoot></table>\n\n"
    + "".join(f"<{tag}>{tag}</{tag}>" for tag in sorted(ALLOWED_TAGS) if tag not in ("table", "col", "colgroup"))
    + '<div class="alert alert-info"><p>JupyterLab\'s box for a note</p><hr></div>'
)


def executed(*cells):
    return plain_notebook(json.loads(nbformat.writes(nbformat.v4.new_notebook(cells=list(cells)))))


@functools.cache
def notebooks():
    "The probe (every kind of cell and output) and a student's HTML of every allowed tag."
    return {
        "probe": plain_notebook(every_kind_of_cell()),
        "student HTML": executed(nbformat.v4.new_markdown_cell(STUDENT_HTML)),
    }


def style_rules(css_html):
    "The selector list of every style rule of the <style> elements `css_html`, inside @media and @supports too."
    todo = [node for css in STYLE.findall(css_html) for node in tinycss2.parse_stylesheet(css, True, True)]
    while todo:
        node = todo.pop()
        if node.type == "qualified-rule":
            yield " ".join(tinycss2.serialize(node.prelude).split())
        elif node.type == "at-rule" and node.lower_at_keyword in ("media", "supports") and node.content:
            todo += tinycss2.parse_stylesheet(node.content, True, True)


# The states a still page is not in, and parts of elements: a rule that has them styles its element at some time
UNSEEN = re.compile(r"::?(hover|focus|focus-visible|focus-within|active|visited|before|after|selection|placeholder)\b")


@functools.cache
def styling(css_html, page):
    "The selector lists of the rules that style an element of `page`, found by soupsieve (BeautifulSoup's selectors)."
    soup, found = BeautifulSoup(page, "html.parser"), set()
    for selector_list in style_rules(css_html):
        try:
            if soup.select_one(UNSEEN.sub("", selector_list)) is not None:
                found.add(selector_list)
        except (soupsieve.SelectorSyntaxError, NotImplementedError):  # ::-webkit-scrollbar and kin: not judged here
            pass
    return found


def test_the_stylesheet_is_a_fraction_of_jupyterlabs():
    "Measured: 21 KB of nbconvert's 257 KB (python benchmarks/run.py pages)."
    assert len(page_css()) < 40_000 < 200_000 < len(nbconvert_css())


@pytest.mark.parametrize("name", ["probe", "student HTML"])
def test_every_rule_that_styles_an_element_of_a_page_is_kept(name):
    head, rest = unstyled(notebooks()[name], name, "", None)
    styled = styling(nbconvert_css(), head + rest)
    assert len(styled) > 20 and styled - set(style_rules(page_css())) == set()


def test_every_class_that_nbconvert_puts_on_a_page_and_jupyterlab_styles_there_keeps_its_styling():
    head, rest = unstyled(notebooks()["probe"], "probe", "", None)
    on_page = {c for element in BeautifulSoup(head + rest, "html.parser").select("[class]") for c in element["class"]}

    def styled(css_html):
        named = {c for found in styling(css_html, head + rest) for c in re.findall(r"\.(-?[A-Za-z_][\w-]*)", found)}
        return named & on_page

    assert {"jp-Cell", "jp-RenderedText", "ansi-red-fg", "jp-RenderedHTMLCommon"} <= styled(nbconvert_css())
    assert styled(nbconvert_css()) == styled(page_css())


def test_every_custom_property_the_page_reads_is_defined_in_it():
    page = render(plain_notebook(every_kind_of_cell()), "probe", "")
    defined = set(re.findall(r"(--[\w-]+)\s*:", page_css()))
    assert set(VAR.findall(page)) <= defined and len(defined) > 20
    assert "--jp-mirror-editor-keyword-color" in defined, "pygments' colours for code, outside page_css, read it"


def test_the_page_is_still_one_file_with_no_script_that_loads_nothing():
    page = render(plain_notebook(every_kind_of_cell()), "probe", "")
    assert not re.search(r"<script|<link|@import", page, re.I)
    assert re.findall(r"url\(\s*['\"]?(?!data:)", page) == []
    assert page.count(page_css()) == 1


VIEWS = [("screen", 1200), ("screen", 600), ("print", 1200)]  # 600: JupyterLab's layout for a narrow screen


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (apt-get install chromium)")
def test_in_a_browser_the_pruned_page_looks_like_the_full_one_wide_narrow_and_in_print(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    from matplotlib.image import imread

    head, rest = unstyled(notebooks()["probe"], "probe", '<div id="tinytorch-score"><h2>t: 1 / 2</h2></div>', None)
    paths = {kind: tmp_path / f"{kind}.html" for kind in ("full", "pruned")}
    paths["full"].write_text(head + nbconvert_css() + rest)
    paths["pruned"].write_text(head + page_css() + rest)
    shots = {}
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            for media, width in VIEWS:
                page.emulate_media(media=media)
                page.set_viewport_size({"width": width, "height": 800})
                for kind, path in paths.items():
                    page.goto(path.as_uri())
                    shots[media, width, kind] = imread(io.BytesIO(page.screenshot(full_page=True)), format="png")
        finally:
            browser.close()
    for view in VIEWS:
        full, pruned = shots[(*view, "full")], shots[(*view, "pruned")]
        assert full.shape == pruned.shape and (full != pruned).sum() == 0, view
