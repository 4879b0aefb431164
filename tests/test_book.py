"""The book builds with warnings as errors, in the quick profile; it shows no solution, and every link resolves."""
from __future__ import annotations

import html
import json
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import jupytext
import pytest
import yaml

from conftest import JUPYTER_BOOK, REPO, SOLUTION_MARKERS, notebook_pages, page_code, toc_files


@pytest.fixture(scope="module")
def site(built_book) -> Path:
    return built_book[1] / "_build" / "html"


def test_book_builds_with_warnings_as_errors(built_book):
    result, _ = built_book
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]


def test_every_page_of_the_toc_is_built(site):
    for name in toc_files():
        assert (site / f"{name}.html").is_file(), name


def _text(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))


def test_pages_have_no_tracebacks_or_unresolved_numbers(site):
    for name in toc_files():
        text = _text(site / f"{name}.html")
        assert "Traceback (most recent call last)" not in text, name
        assert "{glue" not in text, name


def test_pages_show_no_stray_object_reprs(site):
    """A cell whose last line returns an object (``seed_everything``'s generator, a figure
    handle) prints its repr under the code, e.g. ``<torch._C.Generator at 0x7f...>``."""
    stray = re.compile(r"<[\w.]+ (object )?at 0x[0-9a-f]+>")
    found = {name: stray.findall(_text(site / f"{name}.html")) for name in toc_files()}
    assert not {name: reprs for name, reprs in found.items() if reprs}


def test_mathjax_is_served_from_the_build(site):
    assert (site / "_static" / "mathjax" / "tex-chtml.js").is_file()
    assert (site / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2" / "MathJax_Main-Regular.woff").is_file()
    page = (site / "book" / "05-transformers" / "encoder-layer.html").read_text()
    assert re.search(r'<script[^>]+src="[./]*_static/mathjax/tex-chtml\.js', page), "the page does not load the local MathJax"
    for name in toc_files():
        assert "cdn.jsdelivr.net/npm/mathjax" not in (site / f"{name}.html").read_text(), f"{name} loads MathJax from a CDN"


def test_exercise_pages_show_stubs_and_never_solutions(site):
    for name in toc_files():
        if not name.startswith("exercises/"):
            continue
        text = _text(site / f"{name}.html")
        assert "raise NotImplementedError()" in text
        for secret in SOLUTION_MARKERS:
            assert secret not in text, f"{name} shows {secret}"
    assert not list(site.rglob("solutions/*")), "solutions/ must never be part of the site"


@pytest.fixture(scope="module")
def linkcheck(built_book) -> list[dict]:
    """Sphinx's linkcheck builder over the same output folder (so no page runs again), with
    external addresses ignored: CI has no network, and the issue is our own links."""
    _, out = built_book
    config = yaml.safe_load((REPO / "_config.yml").read_text())
    config["sphinx"]["config"]["linkcheck_ignore"] = [r"https?://"]
    # Relative to the configuration file, which now lives elsewhere.
    config["sphinx"]["local_extensions"] = {name: str(REPO / folder)
                                            for name, folder in config["sphinx"]["local_extensions"].items()}
    config_file = out / "_config.linkcheck.yml"
    config_file.write_text(yaml.safe_dump(config))
    result = subprocess.run([str(JUPYTER_BOOK), "build", "--builder", "linkcheck", "--config", str(config_file),
                             "--path-output", str(out), str(REPO)], capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    report = out / "_build" / "html" / "output.json"  # Jupyter Book gives linkcheck the html folder
    return [json.loads(line) for line in report.read_text().splitlines() if line.strip()]


def test_sphinx_linkcheck_finds_no_broken_internal_link(linkcheck):
    broken = [f"{entry['filename']}:{entry['lineno']}: {entry['uri']} ({entry['info']})"
              for entry in linkcheck if entry["status"] == "broken"]
    assert not broken, "\n".join(broken)


class _Links(HTMLParser):
    """Every href and src of a page, and every id it defines."""

    def __init__(self):
        super().__init__()
        self.targets: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.targets.append(value)
            elif name == "id" and value:
                self.ids.add(value)


def _parse(page: Path) -> _Links:
    parser = _Links()
    parser.feed(page.read_text())
    return parser


def test_every_internal_link_and_anchor_of_the_site_resolves(site):
    """What Sphinx's linkcheck does not look at: the links as written in the HTML (theme,
    navigation, glossary and section references), down to the #anchor."""
    # _static holds the theme's Jinja templates, not pages.
    pages = {page.resolve(): _parse(page) for page in site.rglob("*.html") if "_static" not in page.relative_to(site).parts}
    broken, checked = [], 0
    for page, links in pages.items():
        for target in links.targets:
            parts = urlsplit(target)
            if parts.scheme or parts.netloc or target.startswith(("mailto:", "javascript:", "data:")):
                continue
            checked += 1
            file = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if file.is_dir():
                file = file / "index.html"
            if not file.is_file():
                broken.append(f"{page.relative_to(site.resolve())}: {target} (no file {file})")
            elif parts.fragment and file.suffix == ".html":
                ids = pages[file].ids if file in pages else _parse(file).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{page.relative_to(site.resolve())}: {target} (no id {parts.fragment!r})")
    assert checked > 5 * len(toc_files()), checked  # navigation alone gives every page several
    assert not broken, "\n".join(broken[:50])


def test_the_preface_names_the_gpu_times_of_the_recorded_full_runs():
    """The sentence under the table says what nlpbook.recorded holds, no more (the table's GPU column is
    made from the same record, nlpbook.running_times.preface_table)."""
    from nlpbook.recorded import full_profile_runs

    text = (REPO / "book" / "preface.md").read_text()
    for run in full_profile_runs():
        assert f"{{doc}}`{run.page}` ({run.seconds / 60:.1f} min)" in text, run.page
        assert run.gpu in text and run.date in text, run.page


# A page trains a model when its code builds an optimizer or runs a training loop.
TRAINS = re.compile(r"torch\.optim\.|nlpbook\.train\(|Word2Vec\(")
# Pages that train but have nothing a GPU would scale, with the reason.
NOTHING_TO_SCALE = {
    "book/07-adam/momentum-rmsprop": "its optimizers descend two-variable functions in closed form",
}


def _choose_calls(code: str) -> list[str]:
    """The argument text of every nlpbook.choose(...) call, parentheses balanced."""
    calls = []
    for match in re.finditer(r"nlpbook\.choose\(", code):
        depth, end = 1, match.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(code[end], 0)
            end += 1
        calls.append(code[match.end():end - 1])
    return calls


def _sets_full(call: str) -> bool:
    """Whether the argument text of an nlpbook.choose call gives the full profile a value."""
    return re.search(r"\bfull\s*=", call) is not None


def test_every_page_that_trains_sets_the_full_profile():
    """The full (GPU) profile must be a choice a page makes, not standard by default."""
    trains, missing = [], []
    for name in toc_files():
        page = REPO / f"{name}.md"
        code = page_code(page) if page.exists() else ""
        if not TRAINS.search(code) or name in NOTHING_TO_SCALE:
            continue
        trains.append(name)
        if not any(_sets_full(call) for call in _choose_calls(code)):
            missing.append(name)
    assert len(trains) >= 15, trains  # the detector still sees the training pages
    assert not missing, f"pages that train without a full= setting: {missing}"


def test_every_solution_notebook_that_trains_sets_the_full_profile():
    """A solution notebook's settings are graded in full too: each training setting says what full runs."""
    trains, missing = [], []
    for notebook in sorted((REPO / "solutions").glob("*/*.ipynb")):
        code = "\n".join("".join(cell["source"]) for cell in json.loads(notebook.read_text())["cells"]
                         if cell["cell_type"] == "code")
        if not TRAINS.search(code):
            continue
        trains.append(notebook.parent.name)
        missing += [f"{notebook.relative_to(REPO)}: choose({' '.join(call.split())[:60]}...)"
                    for call in _choose_calls(code) if not _sets_full(call)]
    assert len(trains) >= 5, trains  # the detector still sees the notebooks that train
    assert not missing, "solution settings without a full= value:\n" + "\n".join(missing)


# The code box of a page is about 95 characters wide at 1400 px; a longer line scrolls sideways.
CODE_WIDTH = 88
# Cells a reader never sees, even on request.
NEVER_SHOWN = {"remove-cell", "remove-input"}


def test_the_code_a_reader_sees_fits_its_box():
    # The book's pages and the exercise notebooks it shows (the browser test measures the boxes;
    # this finds the line in a second)
    pages = [REPO / f"{name}.md" for name in notebook_pages()] + sorted(REPO.glob("exercises/*/*.ipynb"))
    long_lines = []
    for page in pages:
        name = page.relative_to(REPO).with_suffix("")
        for cell in jupytext.read(page).cells:
            if cell.cell_type != "code" or NEVER_SHOWN & set(cell.metadata.get("tags", [])):
                continue
            long_lines += [f"{name}: {line}" for line in cell.source.splitlines() if len(line) > CODE_WIDTH]
    assert not long_lines, f"{len(long_lines)} code lines over {CODE_WIDTH} characters:\n" + "\n".join(long_lines)


def test_a_reader_can_open_every_check_of_the_text():
    """The claims that check a page's sentences sit in cells a reader can open (collapsed,
    ``hide-input``), never in the cells that are never shown: the checks are the evidence."""
    buried = []
    for name in notebook_pages():
        for cell in jupytext.read(REPO / f"{name}.md").cells:
            if cell.cell_type == "code" and NEVER_SHOWN & set(cell.metadata.get("tags", [])):
                buried += [f"{name}: {line.strip()[:70]}" for line in cell.source.splitlines()
                           if re.match(r"\s*(nlpbook\.)?claim\(", line)]
    assert not buried, "claims in cells a reader cannot open:\n" + "\n".join(buried)


def test_pages_that_draw_show_their_imports_and_use_the_book_style():
    """A reader sees what a page imports, and every figure has the book's lettering and width."""
    drawing, hidden, unstyled = [], [], []
    for name in notebook_pages():
        code = [c for c in jupytext.read(REPO / f"{name}.md").cells if c.cell_type == "code"]
        if not code:
            continue
        first = code[0]
        # The opening pages' and the preface's cells only make tables of running times from the record
        # (nlpbook.running_times): nothing to read there, so they are hidden.
        bookkeeping = name.endswith("/index") or name == "book/preface"
        if NEVER_SHOWN & set(first.metadata.get("tags", [])) and not bookkeeping:
            hidden.append(name)
        if any("matplotlib" in cell.source for cell in code):
            drawing.append(name)
            if "nlpbook.use_book_style()" not in first.source:
                unstyled.append(name)
    assert len(drawing) >= 25, drawing  # the detector still sees the pages with figures
    assert not hidden, f"pages whose import cell is hidden: {hidden}"
    assert not unstyled, f"pages that draw without nlpbook.use_book_style() in their first cell: {unstyled}"
