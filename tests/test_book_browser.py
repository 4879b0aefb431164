"""The built book in a real browser: Debian's Chromium, driven by Playwright, on a loopback server.

Playwright downloads no browser here: it launches the system Chromium (``apt-get install
chromium``, which ``.ci/run`` does). Every request that leaves 127.0.0.1 is refused and
recorded, so a page that only works online (a CDN script, a web font) fails the test.
"""
from __future__ import annotations

import functools
import io
import json
import os
import re
import shutil
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urljoin, urlsplit

import pytest
import yaml
from playwright.sync_api import sync_playwright

from conftest import REPO, SOLUTION_MARKERS, diagram_figures, notebook_pages, toc_files


def chromium_executable() -> str:
    found = os.environ.get("NLPBOOK_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise RuntimeError("Chromium is not installed (apt-get install chromium; .ci/run does), "
                           "or set NLPBOOK_CHROMIUM to its path")
    return found


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # one line per request would bury pytest's report
        pass


@pytest.fixture(scope="module")
def base_url(built_book):
    site = built_book[1] / "_build" / "html"
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    # Chromium's sandbox refuses to start as root (CI containers run as root).
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_executable(), args=args)
        yield launched
        launched.close()


class Visit:
    """One page opened in a fresh browser context, with everything that went wrong on the way."""

    def __init__(self, browser, url: str, viewport: dict | None = None):
        self.console_errors: list[str] = []
        self.failed: list[str] = []
        self.outside: list[str] = []
        self.context = browser.new_context(viewport=viewport) if viewport else browser.new_context()
        self.context.route("**/*", self._only_loopback)
        self.page = self.context.new_page()
        self.page.on("console", lambda message: message.type == "error" and self.console_errors.append(message.text))
        self.page.on("pageerror", lambda error: self.console_errors.append(f"uncaught: {error}"))
        self.page.on("requestfailed", lambda request: self.failed.append(f"{request.url} ({request.failure})"))
        self.page.on("response", lambda response: response.status >= 400
                     and self.failed.append(f"{response.url} (HTTP {response.status})"))
        self.page.goto(url, wait_until="load")

    def _only_loopback(self, route):
        if urlsplit(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            self.outside.append(route.request.url)
            route.abort()

    def close(self):
        self.context.close()


@pytest.fixture
def visit(browser, base_url):
    opened: list[Visit] = []

    def open_page(name: str) -> Visit:
        """The page in a fresh context of its own, at Playwright's default size, for a test that
        navigates or needs nothing another test opened."""
        opened.append(Visit(browser, urljoin(base_url, f"{name}.html")))
        return opened[-1]

    yield open_page
    for page in opened:
        page.close()


# The tests of one page run one after another (each parametrizes ``name`` per module, so pytest
# groups them by page), and share the page opened once at each size: opening a page is most of
# a test's time.
DESKTOP = {"width": 1400, "height": 1000}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def shown(browser, base_url, name) -> Visit:
    """The page ``name`` at the width of a laptop screen, opened once for all of its tests."""
    opened = Visit(browser, urljoin(base_url, f"{name}.html"), DESKTOP)
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def on_phone(browser, base_url, name) -> Visit:
    """The page ``name`` opened at a phone's width (its layout is chosen as it loads)."""
    opened = Visit(browser, urljoin(base_url, f"{name}.html"), PHONE)
    yield opened
    opened.close()


def _wait_for_mathjax(page) -> None:
    # MathJax 3 typesets after load; its startup promise settles when the page is done.
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=30_000)
    page.evaluate("() => MathJax.startup.promise")


def _typeset(page):
    """The page once its maths, if it has any, is typeset: widths are measured on the result."""
    if page.locator(".math").count():
        _wait_for_mathjax(page)
    return page


@pytest.mark.parametrize("name", toc_files(), scope="module")
def test_page_loads_offline_with_no_errors_and_renders_its_maths_tables_and_images(shown, name):
    opened = shown
    page = opened.page
    maths = page.locator(".math").count()
    if maths:
        _wait_for_mathjax(page)
        assert page.locator("mjx-container").count() >= maths, f"{name}: MathJax typeset fewer formulas than the page has"
        errors = page.locator("mjx-merror").all_inner_texts()
        assert not errors, f"{name}: TeX errors {errors}"
    broken_images = page.evaluate(
        "() => [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)")
    assert not broken_images, f"{name}: images that did not load: {broken_images}"
    assert not opened.outside, f"{name} asks the network for {opened.outside}"
    raw_tables = _raw_table_rows(page)
    assert not raw_tables, f"{name}: Markdown tables printed as text, not rendered: {raw_tables}"
    assert not opened.failed, f"{name}: failed requests {opened.failed}"
    assert not opened.console_errors, f"{name}: console errors {opened.console_errors}"


# Text a reader should never meet (object reprs are test_book.py's): a Markdown escape shown as
# text (`max\_norm`), a float printed with all its digits (`1.1920928955078125e-07`).
STRAY_OUTPUTS = {
    "a visible Markdown escape": re.compile(r"\w\\_\w"),
    "an unformatted float": re.compile(r"\b\d\.\d{12,}(?:e[-+]?\d+)?\b"),
}


def _text_outside_code_and_maths(page) -> str:
    """What a reader reads on the page: its prose and printed outputs, not its code or maths."""
    return page.evaluate("""() => {
        const article = document.querySelector("main article").cloneNode(true);
        for (const hidden of article.querySelectorAll(".cell_input, .math, mjx-container, script")) hidden.remove();
        return article.innerText;
    }""")


@pytest.mark.parametrize("name", toc_files(), scope="module")
def test_page_has_captioned_figures_and_no_stray_outputs(shown, name):
    page = shown.page
    uncaptioned = page.evaluate("""() => [...document.querySelectorAll("main article img")]
        .filter(img => !img.closest("figure")?.querySelector("figcaption .caption-number"))
        .map(img => img.alt || img.src)""")
    assert not uncaptioned, f"{name}: figures without a numbered caption: {uncaptioned}"
    alt_is_a_path = page.eval_on_selector_all(
        "main article img", "imgs => imgs.map(img => img.alt).filter(alt => !alt || /\\.(png|svg|jpe?g)$/i.test(alt))")
    assert not alt_is_a_path, f"{name}: figures whose alt text is empty or a file name: {alt_is_a_path}"
    # A cell whose last expression is a string (a statement returned by a helper) prints it quoted.
    quoted = page.eval_on_selector_all(
        "main article .cell_output .text_plain",
        "outputs => outputs.map(o => o.innerText.trim()).filter(t => /^(['\"]).*\\1$/s.test(t))")
    assert not quoted, f"{name}: strings printed under cells: {quoted}"
    # A glued figure reads as part of its sentence, at the sentence's weight (myst-nb's own style
    # prints every one in bold; _static/book.css undoes that).
    bold_glue = page.eval_on_selector_all(
        "main article p span.pasted-text",
        """spans => spans.filter(s => getComputedStyle(s).fontWeight !== getComputedStyle(s.parentElement).fontWeight)
                         .map(s => s.innerText).slice(0, 5)""")
    assert not bold_glue, f"{name}: glued values set apart from their sentence: {bold_glue}"
    text = _text_outside_code_and_maths(page)
    for what, pattern in STRAY_OUTPUTS.items():
        found = [text[max(m.start() - 60, 0):m.end() + 20] for m in pattern.finditer(text)]
        assert not found, f"{name}: {what} in the page's text: {found}"


# At the width of a laptop screen, nothing in the column may be wider than the column: a display
# equation or a table that overflows is cut off or scrolls sideways (_static/book.css makes them
# scroll inside their own box, so the test measures that box), nor a code box. A figure wider
# than the column is shrunk to it, lettering and all: every figure is drawn at most
# nlpbook.plot.COLUMN_WIDTH wide, so that the column shows it at its natural size.
@pytest.mark.parametrize("name", toc_files(), scope="module")
def test_equations_tables_and_code_fit_the_column_at_desktop_width(shown, name):
    page = _typeset(shown.page)
    overflowing = page.evaluate("""() => {
        // measured as a reader sees them opened: the collapsed checks of the text too
        const closed = [...document.querySelectorAll("main article details:not([open])")];
        closed.forEach(d => d.open = true);
        const wide = [];
        for (const [kind, selector] of [["equation", "main article mjx-container[display='true']"],
                                        ["table", "main article table"],
                                        ["code box", "main article .cell_input pre"]]) {
            for (const element of document.querySelectorAll(selector)) {
                if (element.scrollWidth > element.clientWidth + 2)
                    wide.push(`${kind} ${element.scrollWidth}px in ${element.clientWidth}px: ` +
                              element.innerText.replace(/\\s+/g, " ").slice(0, 80));
            }
        }
        closed.forEach(d => d.open = false);
        return wide;
    }""")
    assert not overflowing, f"{name}: wider than the column at 1400 px: {overflowing}"
    shrunk = page.evaluate("""() => [...document.querySelectorAll("main article img")]
        .filter(img => img.naturalWidth > 1.03 * img.clientWidth)
        .map(img => `${img.naturalWidth}px shown ${img.clientWidth}px: ${img.alt.slice(0, 60)}`)""")
    assert not shrunk, f"{name}: figures shrunk to fit the column at 1400 px: {shrunk}"


# On a phone the page itself must not scroll sideways: what is too wide (code, tables, equations)
# scrolls inside its own box, and long inline code names break (_static/book.css).
@pytest.mark.parametrize("name", toc_files(), scope="module")
def test_page_does_not_scroll_sideways_on_a_phone(on_phone, name):
    page = _typeset(on_phone.page)
    width, sticking_out = page.evaluate("""() => {
        const right = document.documentElement.clientWidth + 1, out = [];
        for (const element of document.querySelectorAll("main article *"))
            if (element.getBoundingClientRect().right > right
                    && !element.closest("pre, table, mjx-container, .cell_output, figure:has(img[src$='.svg'])"))
                out.push(`${element.tagName}: ${(element.innerText || "").slice(0, 60)}`);
        return [document.documentElement.scrollWidth, out.slice(0, 5)];
    }""")
    assert width <= PHONE["width"] + 1 and not sticking_out, (
        f"{name}: {width}px wide at {PHONE['width']} px; sticking out: {sticking_out}")


# The schematic diagrams (diagrams/draw.py) are SVG files in <img> tags, which cannot see the page's
# colour mode: each must load, be shown at the column's width, and stay legible on a dark page too.
DIAGRAM_PAGES = [name for name in toc_files() if diagram_figures(name)]


def _lightness(png: bytes) -> tuple[float, float]:
    """The mean grey level (0-255) of a screenshot, and the share of its pixels darker than 100 (ink)."""
    from PIL import Image, ImageStat

    image = Image.open(io.BytesIO(png)).convert("L")
    histogram = image.histogram()
    return ImageStat.Stat(image).mean[0], sum(histogram[:100]) / sum(histogram)


@pytest.mark.parametrize("name", DIAGRAM_PAGES, scope="module")
def test_diagrams_keep_legible_labels_on_a_phone(on_phone, name):
    # Drawn 760 units wide with labels of at least 10.5 units: at 680 px or more the smallest label is
    # 9.4 px; the figure scrolls sideways inside its own box (the page's width is checked above).
    page = on_phone.page
    for _, options, _ in diagram_figures(name):
        label = options["name"]
        state = page.locator(f"figure#{label}").evaluate("""figure => {
            const img = figure.querySelector("img");
            return {width: img.getBoundingClientRect().width, scrolls: figure.scrollWidth > figure.clientWidth,
                    overflow: getComputedStyle(figure).overflowX};
        }""")
        assert state["width"] >= 680 and state["scrolls"] and state["overflow"] == "auto", f"{name}: {label}: {state}"


def test_every_chapter_from_1_to_6_shows_a_diagram():
    chapters = {name.split("/")[1] for name in DIAGRAM_PAGES}
    assert all(any(chapter.startswith(f"{n:02d}-") for chapter in chapters) for n in range(1, 7)), chapters


@pytest.mark.parametrize("name", DIAGRAM_PAGES, scope="module")
def test_diagrams_load_and_show_in_light_and_dark_mode(shown, name):
    page = shown.page
    labels = [options["name"] for _, options, _ in diagram_figures(name)]
    before = page.evaluate("() => [document.documentElement.dataset.mode, document.documentElement.dataset.theme]")
    try:
        for theme in ("light", "dark"):
            # What the theme's switch does (pydata-sphinx-theme's setTheme): its CSS keys on data-theme.
            page.evaluate("theme => { document.documentElement.dataset.mode = theme;"
                          " document.documentElement.dataset.theme = theme; }", theme)
            background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
            page_lightness = sum(map(int, re.findall(r"\d+", background)[:3])) / 3
            assert (page_lightness < 80) == (theme == "dark"), f"{name}: the {theme} theme did not apply ({background})"
            for label in labels:
                image = page.locator(f"figure#{label} img")
                assert image.count() == 1, f"{name}: no image in figure {label}"
                state = image.evaluate("""img => {
                    const box = img.getBoundingClientRect(), style = getComputedStyle(img);
                    // The column a figure may fill: the theme caps figures at its text width (768 px at
                    // desktop width, nlpbook.plot.COLUMN_WIDTH), narrower than the article's box.
                    const column = Math.min(img.closest("article").clientWidth, 768);
                    return {loaded: img.complete && img.naturalWidth > 0, width: box.width, height: box.height,
                            column, visible: img.checkVisibility({opacityProperty: true, visibilityProperty: true}),
                            filter: style.filter};
                }""")
                assert state["loaded"], f"{name} ({theme}): {label} did not load"
                assert state["visible"] and state["height"] > 50, f"{name} ({theme}): {label} is hidden: {state}"
                assert state["width"] >= 0.95 * state["column"], f"{name} ({theme}): {label} narrower than the column: {state}"
                assert "invert" not in state["filter"], f"{name} ({theme}): {label} is inverted: {state}"
                # Legible: the light panel under dark lines and letters, whatever the page's colour.
                mean, ink = _lightness(image.screenshot())
                assert mean > 170 and ink > 0.005, f"{name} ({theme}): {label} mean grey {mean:.0f}, ink {ink:.3f}"
    finally:
        page.evaluate("([mode, theme]) => { document.documentElement.dataset.mode = mode;"
                      " document.documentElement.dataset.theme = theme; }", before)


def test_chapter_pages_have_maths_and_figures(visit):
    """The per-page test above passes vacuously on a page with neither; the chapters have both."""
    opened = visit("book/05-transformers/encoder-layer")
    _wait_for_mathjax(opened.page)
    assert opened.page.locator("mjx-container").count() >= 10
    assert opened.page.evaluate("() => document.images.length") >= 2


def _repository() -> tuple[str, str, str]:
    config = yaml.safe_load((REPO / "_config.yml").read_text())
    org, repo = urlsplit(config["repository"]["url"]).path.strip("/").split("/")[:2]
    return org, repo, config["repository"].get("branch", "main")


def _hrefs(page, selector: str) -> list[str]:
    return page.eval_on_selector_all(selector, "links => links.map(a => a.href)")


EXERCISES = [name for name in toc_files() if name.startswith("exercises/")]
NOTEBOOK_PAGES = notebook_pages()


@pytest.mark.parametrize("name", EXERCISES, scope="module")
def test_exercise_page_shows_stubs_never_solutions_and_offers_its_notebook(shown, name):
    opened = shown
    page = opened.page
    text = page.inner_text("main")
    assert "raise NotImplementedError()" in text
    for secret in SOLUTION_MARKERS:
        assert secret not in text, f"{name} shows {secret}"

    # The download button hands out exactly the release notebook in exercises/.
    downloads = [href for href in _hrefs(page, ".dropdown-download-buttons a") if href.endswith(".ipynb")]
    assert len(downloads) == 1, downloads
    response = opened.context.request.get(downloads[0])
    assert response.ok, downloads[0]
    assert json.loads(response.body()) == json.loads((REPO / f"{name}.ipynb").read_text())

    org, repo, branch = _repository()
    launches = _hrefs(page, ".dropdown-launch-buttons a")
    assert f"https://colab.research.google.com/github/{org}/{repo}/blob/{branch}/{name}.ipynb" in launches, launches
    assert f"https://mybinder.org/v2/gh/{org}/{repo}/{branch}?urlpath=lab/tree/{name}.ipynb" in launches, launches


@pytest.mark.parametrize("name", NOTEBOOK_PAGES, scope="module")
def test_notebook_page_offers_its_executed_notebook_and_binder(shown, name):
    opened = shown
    downloads = [href for href in _hrefs(opened.page, ".dropdown-download-buttons a") if href.endswith(".ipynb")]
    assert len(downloads) == 1, downloads
    response = opened.context.request.get(downloads[0])
    assert response.ok, downloads[0]
    notebook = json.loads(response.body())
    assert any(cell["cell_type"] == "code" for cell in notebook["cells"]), downloads[0]
    # Binder opens the MyST source, which the book's jupytext opens as a notebook.
    assert (REPO / f"{name}.md").is_file()
    org, repo, branch = _repository()
    assert f"https://mybinder.org/v2/gh/{org}/{repo}/{branch}?urlpath=lab/tree/{name}.md" in _hrefs(
        opened.page, ".dropdown-launch-buttons a")


# A Markdown table that was not parsed as one leaves its separator row as text: `|---|---|`, or
# `|—|—|` once Sphinx's smart quotes have turned `---` into an em dash (and `--` into an en dash).
RAW_TABLE_ROW = re.compile(r"\|\s*:?(?:-{2,}|[—–])[-—–]*:?\s*\|")
# The pages whose code shows results tables: nlpbook.results.Table objects, which IPython shows as
# Markdown pipe tables, among them a recorded run's tables (RecordedRun.table) and the running-time tables
# of the opening pages and the preface (nlpbook.running_times).
RESULTS_TABLE_PAGES = [name for name in NOTEBOOK_PAGES
                       if re.search(r"\bTable\(|\bgpu\.table\(|\brunning_times\.(chapter_times|preface_table)\(",
                                    (REPO / f"{name}.md").read_text())]


def _raw_table_rows(page) -> list[str]:
    """Each raw table separator row in the page's visible text (code and maths left out), with the text around it.

    The code and maths are hidden while the text is read, then shown again: the page is shared with its other tests."""
    text = page.evaluate("""() => {
        const hidden = [...document.querySelectorAll("pre, code, .math, mjx-container")];
        const before = hidden.map(element => element.style.display);
        for (const element of hidden) element.style.display = "none";
        const text = document.body.innerText;
        hidden.forEach((element, i) => { element.style.display = before[i]; });
        return text;
    }""")
    return [line[max(found.start() - 100, 0):found.end() + 100].strip()
            for line in text.splitlines() if (found := RAW_TABLE_ROW.search(line))]


def _output_table_body_rows(page) -> list[int]:
    """The number of body rows of each HTML table in the cell outputs of the page's article."""
    return page.eval_on_selector_all("main article .cell_output table",
                                      "tables => tables.map(table => table.querySelectorAll('tbody tr').length)")


def test_the_results_table_pages_are_found_in_the_sources():
    known = ["book/01-word-vectors/counting", "book/01-word-vectors/word2vec", "book/02-rnns/char-lm",
             "book/04-attention/positions", "book/07-adam/warmup", "book/preface", "book/05-transformers/index"]
    assert set(known) <= set(RESULTS_TABLE_PAGES), sorted(set(known) - set(RESULTS_TABLE_PAGES))


@pytest.mark.parametrize("name", RESULTS_TABLE_PAGES, scope="module")
def test_results_tables_render_as_html_tables(shown, name):
    """myst-nb renders Markdown outputs as CommonMark unless told otherwise (_config.yml), and CommonMark has no tables."""
    page = shown.page
    rows = _output_table_body_rows(page)
    outputs = page.eval_on_selector_all("main article .cell_output", "outputs => outputs.map(o => o.innerText)")
    assert max(rows, default=0) >= 2, (f"{name}: output tables with body rows {rows}; outputs with pipes: "
                                       f"{[text.strip()[:200] for text in outputs if '|' in text]!r}")


def test_search_finds_the_attention_chapter(visit):
    opened = visit("search")
    opened.page.goto(opened.page.url + "?q=attention", wait_until="load")
    results = opened.page.locator("#search-results ul.search li")
    results.first.wait_for(timeout=30_000)
    links = _hrefs(opened.page, "#search-results ul.search li a")
    assert results.count() >= 5
    assert any("/book/04-attention/" in link for link in links), links
    assert not opened.console_errors and not opened.outside
