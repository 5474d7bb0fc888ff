"""The student's feedback page (grading.reports.page): made by the grader from the verdict's one run of the notebook (what
came back from the sandbox is data), sanitised, with the verdict's score only, and its maths as MathML: no script, nothing
loaded from elsewhere, so a page uploaded on its own shows its formulas offline."""

import base64
import html
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from conftest import run_cli
from grading.cli import main
from grading.common.answers import solved
from grading.common.errors import GradingError
from grading.common.notebooks import nbgrader_meta, read_notebook, write_notebook
from grading.reports.feedback import publish
from grading.reports.maths import MATHS, formula, to_mathml
from grading.reports.page import (
    NOT_RUN,
    PLACEHOLDER,
    PageCache,
    plain_notebook,
    ran_notebook,
    render,
    sanitise,
    shared_cells,
)

ATTACKS = (
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    '<a href="javascript:alert(3)">javascript link</a>',
    '<a href=" JaVaScRiPt:alert(4)">spaced link</a>',
    '<iframe src="https://example.com/frame"></iframe>',
    '<iframe srcdoc="<script>alert(5)</script>"></iframe>',
    "<svg onload=alert(6)><circle r=1></circle></svg>",
    '<object data="https://example.com/x.swf"></object><embed src="https://example.com/y">',
    '<a href="data:text/html,<script>alert(7)</script>">data link</a>',
    '<img src="data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoOCk+">',
    '<meta http-equiv="refresh" content="0;url=https://example.com"><base href="https://example.com/">',
    '<link rel="stylesheet" href="https://example.com/x.css"><style>body { display: none }</style>',
    '<div style="background: url(javascript:alert(9))" onmouseover="alert(10)">styled</div>',
    '<form action="https://example.com"><button formaction="javascript:alert(11)">go</button></form>',
    "</div></div></main></body><script>alert(12)</script><div><table><tr><td>unclosed",
)
EVIL = "\n".join(ATTACKS)
BANNER = '<div id="tinytorch-score"><h2>13_embedding: 0 / 4</h2></div>'


def png():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1, 4, 9])
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


PNG = png()


def executed(*cells):
    "A notebook as it ran (JSON data), through plain_notebook as the grader reads it."
    return plain_notebook(json.loads(nbformat.writes(nbformat.v4.new_notebook(cells=list(cells)))))


def display(mime, value):
    return nbformat.v4.new_output("display_data", data={mime: value})


def attacked_notebook():
    "The attacks in every place a student's notebook can carry HTML, beside honest outputs."
    return executed(
        nbformat.v4.new_markdown_cell(
            "# Derivatives\nThe slope of $x^2$ is $2x$.\n\n| x | y |\n|---|---|\n| 1 | 2 |\n"
        ),
        nbformat.v4.new_markdown_cell(EVIL + "\n\n[markdown link](javascript:alert(13))"),
        nbformat.v4.new_code_cell(
            "show()",
            outputs=[
                nbformat.v4.new_output("stream", name="stdout", text="loss 0.25\n" + EVIL),
                display("text/html", EVIL + "<table><tr><th>epoch</th></tr><tr><td>honest table</td></tr></table>"),
                display("text/markdown", EVIL),
                display("text/latex", r"$$\href{javascript:alert(14)}{x}$$"),
                display("image/png", PNG),
                display("application/javascript", "alert(15)"),
                nbformat.v4.new_output("error", ename="ValueError", evalue=EVIL, traceback=["ValueError: " + EVIL]),
            ],
        ),
    )


class Elements(HTMLParser):
    "Every element of a page with its attributes, and the text inside each <script>."

    def __init__(self, page):
        super().__init__()
        self.elements, self.scripts, self._in_script = [], [], False
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag == "script":
            self.scripts.append([dict(attrs), ""])
            self._in_script = True

    def handle_endtag(self, tag):
        self._in_script = self._in_script and tag != "script"

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1][1] += data


def dangers(page):
    "What in `page` could run code, load something from elsewhere or leave the page: should be nothing."
    found = []
    for tag, attrs in Elements(page).elements:
        if tag in ("iframe", "frame", "object", "embed", "svg", "base", "meta", "link", "form", "button", "style"):
            found.append(tag)
        for name, value in attrs.items():
            value = re.sub(r"\s", "", value or "").lower()
            if name.startswith("on") or name in ("style", "formaction", "srcdoc"):
                found.append(f"{tag} {name}")
            if name == "src" and not value.startswith("data:image/png;base64,"):
                found.append(f"{tag} src={value[:40]}")  # loads from elsewhere, or runs
            if (
                name in ("href", "action")
                and ":" in value
                and not value.startswith(("http:", "https:", "mailto:", "#"))
            ):
                found.append(f"{tag} {name}={value[:40]}")
    return found


def our_scripts(page):
    "The page's scripts (there should be none): (type or src, text) of each."
    return [(attrs.get("type") or attrs.get("src"), text) for attrs, text in Elements(page).scripts]


def test_no_attack_survives_in_any_part_of_the_notebook():
    page = render(attacked_notebook(), "13_embedding", BANNER)
    cells = page.split(BANNER)[1]
    assert dangers(cells) == []
    assert our_scripts(page) == []
    assert not re.search(r"<(script|iframe|svg|object|embed|style)\b", cells, re.I), "as elements, not as text"
    assert "alert(15)" not in page, "an application/javascript output is not shown at all"


def test_honest_outputs_still_show():
    page = render(attacked_notebook(), "13_embedding", BANNER)
    images = [a["src"] for tag, a in Elements(page).elements if tag == "img" and a.get("src")]
    assert images == [f"data:image/png;base64,{PNG}"], "the matplotlib picture, and only it"
    assert "honest table" in page and "<th>epoch</th>" in page and "<td>1</td>" in page, "HTML and markdown tables"
    assert "loss 0.25" in page and "ValueError" in page and "The slope of <math" in page
    assert page.index(BANNER) < page.index("Derivatives"), "the verdict comes first"


def test_the_page_has_no_script_and_loads_no_file_its_maths_is_mathml():
    page = render(attacked_notebook(), "13_embedding", BANNER)
    elements = Elements(page).elements
    assert [tag for tag, _ in elements if tag in ("script", "link", "iframe", "object", "embed")] == []
    assert [a["src"][:22] for _, a in elements if a.get("src")] == ["data:image/png;base64,"], (
        "only the picture, inline"
    )
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page.split(BANNER)[0]), "the head links nothing"
    mathml = [tag for tag, _ in elements if tag in ("math", "msup", "mi", "mn")]
    assert mathml.count("math") == 3 and "msup" in mathml, "$x^2$, $2x$ and the text/latex output, as MathML"


def test_a_formula_in_code_or_printed_output_stays_text_and_mathml_carries_no_link_or_markup():
    nb = executed(
        nbformat.v4.new_markdown_cell(
            "`$a$` and $\\text{bold} \\href{javascript:alert(2)}{x} + \\style{color:red}{y}$ and $x^$ and "
            "$\\text{<img src=x onerror=alert(1)>}$ $\\text{</math><script>alert(3)</script>}$"
        ),
        nbformat.v4.new_code_cell("x = '$b$'", outputs=[nbformat.v4.new_output("stream", name="stdout", text="$c$")]),
    )
    page = render(nb, "t", BANNER).split(BANNER)[1]
    assert "<code>$a$</code>" in page and "<pre>$c$</pre>" in page and "$b$" in page, "code and output as written"
    assert page.count("<math") == 3 and "$x^$" in page, "TeX it cannot read stays text"
    assert "<script" not in page and "alert" not in page
    maths = page[page.index("<math") : page.rindex("</math>")]
    assert "<mtext>bold</mtext>" in maths and not re.search(r"<img\b|href|style|onerror|javascript", maths)
    assert dangers(page) == []


def test_every_formula_in_the_course_notebooks_becomes_mathml():
    "A formula latex2mathml cannot read would show as raw TeX on every student's page."
    formulas = [
        formula(found)
        for path in sorted(Path("notebooks").glob("*.ipynb"))
        for cell in read_notebook(path).cells
        if cell.cell_type == "markdown"
        for found in MATHS.finditer(cell.source)
    ]
    assert len(formulas) > 100 and [tex for tex, display in formulas if to_mathml(tex, display) is None] == []


def test_hidden_test_code_is_replaced_and_a_traceback_cut_to_its_message():
    test = nbformat.v4.new_code_cell(
        "assert visible()\n### BEGIN HIDDEN TESTS\nassert secret_case()\n### END HIDDEN TESTS\n",
        metadata={"nbgrader": {"grade": True, "grade_id": "t", "points": 2}},
        outputs=[nbformat.v4.new_output("error", ename="AssertionError", evalue="wrong", traceback=["frame 1", "x"])],
    )
    page = render(executed(test), "01_tensor", BANNER)
    assert "secret_case" not in page and PLACEHOLDER[2:] in page
    assert "frame 1" not in page and "AssertionError: wrong" in page


def test_only_the_verdicts_score_is_on_the_page(tmp_path):
    "nbgrader's run gave the (empty) hidden test full points; the page has the verdict and no score of nbgrader's."
    hidden = nbformat.v4.new_code_cell(
        "# (hidden tests)", metadata={"nbgrader": {"grade": True, "grade_id": "h", "points": 2.0, "score": 2.0}}
    )
    result = {
        "tests": {"h": {"score": 0.0, "max_score": 2.0, "message": "wrong gradient", "hidden": True}},
        "score": 0.0,
        "max_score": 2.0,
        "note": "",
    }
    publish(tmp_path / "p.html", executed(hidden), "13_embedding", result, "full")
    page = (tmp_path / "p.html").read_text()
    assert "13_embedding: 0 / 2" in page and "wrong gradient" in page
    assert "Score:" not in page and not re.search(r"\b2(\.0)? / 2(\.0)?\b", page)
    # 10's and 12's measuring cells print the sandbox's times (450 ms for an optimizer step of 0.8 ms): say so
    assert "times and memory that cells measure are larger here than in your Jupyter" in page


def test_plain_notebook_keeps_only_what_a_page_shows():
    data = json.loads(nbformat.writes(attacked_notebook()))
    data["metadata"] = {"widgets": {"state": "<script>alert(16)</script>"}, "title": "<script>alert(17)</script>"}
    data["cells"][0]["attachments"] = {"x.png": {"image/png": PNG, "image/svg+xml": "<svg onload=alert(18)>"}}
    data["cells"][2]["outputs"].append({"output_type": "display_data", "data": {"text/html": ["<b>", "list"]}})
    data["cells"][2]["execution_count"] = 3
    nb = plain_notebook(data)
    assert nb.metadata == {"language_info": {"name": "python"}} and nb.cells[0].attachments == {
        "x.png": {"image/png": PNG}
    }
    assert nb.cells[2].execution_count == 3 and "In\xa0[3]:" in html.unescape(render(nb, "13_embedding", BANNER))
    mimes = {m for c in nb.cells for o in c.get("outputs", []) for m in o.get("data", {})}
    assert "application/javascript" not in mimes and nb.cells[2].outputs[-1].data["text/html"] == "<b>list"


@pytest.mark.parametrize(
    "data",
    [
        None,
        {"cells": "not a list"},
        {"cells": [{"cell_type": "widget", "source": ""}]},
        {"cells": [{"cell_type": "code", "source": 7}]},
        {"cells": [{"cell_type": "code", "source": "", "outputs": [{"output_type": "update_display_data"}]}]},
        {"cells": [{"cell_type": "code", "source": "", "outputs": [{"output_type": "display_data", "data": []}]}]},
        {"cells": [{"cell_type": "code", "source": "", "outputs": [{"output_type": "stream", "text": {"a": 1}}]}]},
    ],
)
def test_plain_notebook_refuses_what_is_not_a_notebook(data):
    with pytest.raises(GradingError, match="the notebook run returned"):
        plain_notebook(data)


def test_the_page_cache_keeps_only_the_releases_cells_and_changes_no_page(tmp_path):
    nb = plain_notebook(json.loads(nbformat.writes(attacked_notebook())))
    release = nbformat.v4.new_notebook(cells=[nb.cells[0]])  # the student wrote the second markdown cell
    cache = PageCache(tmp_path / "cache", shared_cells(release))
    without_ids = lambda page: re.sub(r'id="cell-id=[^"]*"', "", page)  # noqa: E731 - nbformat's random cell ids
    pages = [without_ids(render(nb, "13_embedding", BANNER, c)) for c in (None, cache, cache)]
    assert pages[0] == pages[1] == pages[2], "a page made from kept cells is the page made without them"
    assert len(list((tmp_path / "cache").iterdir())) == 1, "only the release's cell is kept, not the student's"


def test_sanitise_keeps_links_to_the_web_and_to_the_page():
    kept = sanitise('<a href="https://example.com/docs">docs</a> <a href="#Derivatives">up</a> <h2 id="x">x</h2>')
    assert kept == '<a href="https://example.com/docs">docs</a> <a href="#Derivatives">up</a> <h2 id="x">x</h2>'
    assert sanitise('<div id="tinytorch-score">fake</div>') == "<div>fake</div>", "a student's div takes no id"


# -- In a browser, offline ---------------------------------------------------------------------------------------------

CHROMIUM = Path("/usr/bin/chromium")


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (apt-get install chromium)")
def test_in_a_browser_offline_nothing_runs_the_maths_is_drawn_and_the_picture_shows(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    path = tmp_path / "feedback" / "ada" / "13_embedding.html"
    path.parent.mkdir(parents=True)
    path.write_text(render(attacked_notebook(), "13_embedding", BANNER))  # alone: no file beside it
    dialogs, remote = [], []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            page.route(re.compile(r"^https?://"), lambda route: (remote.append(route.request.url), route.abort()))
            page.goto(path.as_uri())
            page.wait_for_timeout(500)
            # the browser lays MathML out itself: a fraction is taller than a line of text, a superscript sits higher
            heights = page.evaluate("[...document.querySelectorAll('math')].map(m => m.getBoundingClientRect().height)")
            raised = page.evaluate(
                "(() => { const s = document.querySelector('msup'); const [b, e] = s.children;"
                " return b.getBoundingClientRect().top - e.getBoundingClientRect().top; })()"
            )
            links = page.locator("a[href^='javascript' i]").count()
            picture_width = page.evaluate("[...document.images].filter(i => i.src.startsWith('data:'))[0].naturalWidth")
        finally:
            browser.close()
    assert dialogs == [] and remote == []
    assert len(heights) == 3 and min(heights) > 0 and raised > 0 and picture_width > 100 and links == 0


def test_the_page_shows_the_submission_with_the_given_cells_as_released_and_the_verdicts_outputs():
    "An edited test is shown as released, a deleted given cell is put back, an added cell is shown but not run."
    meta = {"given": {"locked": True}, "answer": {"solution": True}, "test": {"grade": True, "points": 1}}
    cells = {
        name: nbformat.v4.new_code_cell(f"{name} as released", metadata={"nbgrader": dict(m, grade_id=name)})
        for name, m in meta.items()
    }
    released = nbformat.v4.new_notebook(cells=list(cells.values()))
    answer, test = (nbformat.from_dict(dict(cells[n], source=f"{n} as handed in")) for n in ("answer", "test"))
    submitted = nbformat.v4.new_notebook(cells=[answer, nbformat.v4.new_code_cell("print('mine')"), test])
    stream = nbformat.v4.new_output("stream", name="stdout", text="loss 0.25\n")
    nb = ran_notebook(released, submitted, {"given": [stream], "test": [stream]})
    shown = [(c.source, [o.get("text") for o in c.outputs], c.execution_count) for c in nb.cells]
    assert shown == [
        ("given as released", ["loss 0.25\n"], 1),
        ("answer as handed in", [], 2),
        ("print('mine')", [NOT_RUN], None),
        ("test as released", ["loss 0.25\n"], 3),
    ]


# -- One real run: the verdict's run of the notebook, the grader makes the page ---------------------------------------

COUNTED = """
    _CALLS.append(1)
    print(f"unbroadcast call {len(_CALLS)}")"""


@pytest.fixture(scope="module")
def attacked_run(kit, tmp_path_factory):
    """mallory hands in 13_embedding untouched, with a markdown cell and a scratch cell that print the attacks, and an
    exercise that prints them when her module is imported; ned solves 04_elementwise with an unbroadcast that counts
    its calls and prints the count."""
    root = tmp_path_factory.mktemp("page")
    nb = read_notebook(kit / "13_embedding" / "13_embedding.ipynb")
    exercise = next(c for c in nb.cells if nbgrader_meta(c).get("solution") and c.cell_type == "code")
    exercise.source += f"\n\nprint({EVIL!r})\n"
    nb.cells.append(nbformat.v4.new_markdown_cell(EVIL + "\n\nMaths: $\\nabla f$"))
    nb.cells.append(nbformat.v4.new_code_cell(f"from IPython.display import HTML, display\ndisplay(HTML({EVIL!r}))"))
    write_notebook(nb, root / "submissions" / "mallory" / "13_embedding" / "13_embedding.ipynb")

    def counted(grade_id, source):
        if "def unbroadcast" not in source:
            return source
        counting = source.replace('NumPy broadcasting."', 'NumPy broadcasting."' + COUNTED, 1)
        return counting.replace("def unbroadcast", "_CALLS = []\n\n\ndef unbroadcast", 1)  # after '#| export'

    E = "04_elementwise"
    ned = solved(read_notebook(kit / E / f"{E}.ipynb"), read_notebook(Path("notebooks") / f"{E}.ipynb"), counted)
    write_notebook(ned, root / "submissions" / "ned" / E / f"{E}.ipynb")
    out = root / "grades"
    result = run_cli("autograde", root / "submissions", "--out", out)
    assert result.returncode == 0, result.stderr
    return out


def test_a_graded_page_is_sanitised_and_shows_the_verdict_only(attacked_run):
    out = attacked_run
    page = (out / "feedback" / "mallory" / "13_embedding.html").read_text()
    book = json.loads((out / "gradebook.json").read_text())["mallory"]["13_embedding"]
    assert book["score"] == 0 and f"13_embedding: 0 / {book['max_score']:g}" in page
    assert "Score:" not in page and not re.search(r"\d\.0 / \d+\.0", page), "no score of nbgrader's run"
    cells = page.split('id="tinytorch-score"')[1]
    assert dangers(cells) == [] and "javascript link" in cells and "Maths: <math" in cells and "∇" in cells
    assert our_scripts(page) == [] and not (out / "feedback" / ".mathjax").exists(), "no script, no MathJax folder"
    kept = nbformat.reads((out / "results" / "mallory" / "13_embedding.notebook.ipynb").read_text(), 4)
    printed = [c for c in kept.cells if any(EVIL in o.get("text", "") for o in c.get("outputs", []))]
    assert len(printed) == 1 and nbgrader_meta(printed[0]) == {}, "what her module printed, under her exercise"
    assert [o.text for o in kept.cells[-1].outputs] == [NOT_RUN], "the notebook as it ran is kept, as JSON"
    assert not list(out.rglob("*.notebook.html")), "no page comes out of the sandbox"
    assert "### BEGIN HIDDEN TESTS" not in page


def test_export_feedback_hands_out_the_pages_autograde_made_as_they_are(attacked_run, tmp_path):
    "The pages of a real run are self-contained already: export-feedback lays them out unchanged (no late penalty)."
    assert main(["export-feedback", str(attacked_run), "--layout", "canvas", "--out", str(tmp_path / "c")]) == 0
    for student, assignment in (("mallory", "13_embedding"), ("ned", "04_elementwise")):
        exported = (tmp_path / "c" / assignment / student / f"{assignment}-feedback.html").read_text()
        assert exported == (attacked_run / "feedback" / student / f"{assignment}.html").read_text()
        assert our_scripts(exported) == [] and dangers(exported.split('id="tinytorch-score"')[1]) == []


def test_the_page_shows_what_the_students_code_printed_and_nothing_of_the_hidden_tests(attacked_run):
    "ned's unbroadcast counts its calls: the page's counts run 1, 2, 3 ... with no gap where a hidden test ran."
    book = json.loads((attacked_run / "gradebook.json").read_text())["ned"]["04_elementwise"]
    assert book["score"] == book["max_score"]
    kept = nbformat.reads((attacked_run / "results" / "ned" / "04_elementwise.notebook.ipynb").read_text(), 4)
    counts, hidden_after_a_count = [], False
    for cell in kept.cells:
        text = "".join(o.get("text", "") for o in cell.get("outputs", []))
        counts += [int(n) for n in re.findall(r"unbroadcast call (\d+)", text)]
        if cell.source.startswith("# test:") and "hidden" in cell.source.splitlines()[0]:
            assert cell.outputs == [], "a hidden test's cell shows nothing"
            hidden_after_a_count = hidden_after_a_count or bool(counts)
    assert hidden_after_a_count and counts == list(range(1, len(counts) + 1)) and len(counts) > 5
    page = (attacked_run / "feedback" / "ned" / "04_elementwise.html").read_text()
    assert "unbroadcast call 1" in page


def test_a_pasted_image_shows_and_a_missing_one_breaks_nothing():
    """JupyterLab keeps an image dragged into a markdown cell in the cell (`attachment:NAME`); a reference to one that
    is not there made nbconvert refuse the notebook, and the job lost its score (an attacker helper's finding)."""
    nb = {"cells": [{"cell_type": "markdown", "source": "![plot](attachment:plot.png) ![gone](attachment:gone.png)"}]}
    nb["cells"][0]["attachments"] = {"plot.png": {"image/png": PNG}, "bad": "not a bundle"}
    page = render(plain_notebook(nb), "01_tensor", BANNER)
    assert f'src="data:image/png;base64,{PNG}' in page and "gone.png" not in page


@pytest.mark.parametrize("opened", ["<style>", "<script>", "<script>alert(19)", "<style>p {color: red}"])
def test_an_unclosed_script_or_style_cell_leaves_the_other_cells_on_the_page(opened):
    "nbconvert's re-parse let an unclosed tag swallow the page's markers: each cell is then rendered on its own."
    cells = [
        nbformat.v4.new_markdown_cell("# Before"),
        nbformat.v4.new_markdown_cell(opened),
        nbformat.v4.new_code_cell("x = 1", outputs=[display("text/html", opened)]),
        nbformat.v4.new_markdown_cell("# After"),
    ]
    page = render(plain_notebook(json.loads(nbformat.writes(nbformat.v4.new_notebook(cells=cells)))), "t", BANNER)
    shown = html.unescape(re.sub(r"<[^>]*>", "", page))  # the code's text, highlighted or as escaped text
    assert "Before" in page and "After" in page and BANNER in page and "x = 1" in shown
    assert "<script>alert" not in page  # (a cell that loses the markers even alone is shown as escaped text)
