"""The book builds with warnings as errors, in the quick profile, and shows no solution."""
from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO


def _toc_files() -> list[str]:
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc["parts"]:
        for chapter in part["chapters"]:
            files.append(chapter["file"])
            files.extend(section["file"] for section in chapter.get("sections", []))
    return files


@pytest.fixture(scope="module")
def built_book(tmp_path_factory):
    out = tmp_path_factory.mktemp("book")
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    result = subprocess.run([str(jupyter_book), "build", "-W", "-n", "--keep-going", "--path-output", str(out), str(REPO)],
                            capture_output=True, text=True, timeout=1800)
    return result, out / "_build" / "html"


def test_book_builds_with_warnings_as_errors(built_book):
    result, _ = built_book
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]


def test_every_page_of_the_toc_is_built(built_book):
    _, site = built_book
    for name in _toc_files():
        assert (site / f"{name}.html").is_file(), name


def _text(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))


def test_pages_have_no_tracebacks_or_unresolved_numbers(built_book):
    _, site = built_book
    for name in _toc_files():
        text = _text(site / f"{name}.html")
        assert "Traceback (most recent call last)" not in text, name
        assert "{glue" not in text, name


def test_mathjax_is_served_from_the_build(built_book):
    _, site = built_book
    assert (site / "_static" / "mathjax" / "tex-chtml.js").is_file()
    assert (site / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2" / "MathJax_Main-Regular.woff").is_file()
    page = (site / "book" / "05-transformers" / "encoder-layer.html").read_text()
    assert re.search(r'<script[^>]+src="[./]*_static/mathjax/tex-chtml\.js', page), "the page does not load the local MathJax"
    for name in _toc_files():
        assert "cdn.jsdelivr.net/npm/mathjax" not in (site / f"{name}.html").read_text(), f"{name} loads MathJax from a CDN"


def test_exercise_pages_show_stubs_and_never_solutions(built_book):
    _, site = built_book
    for name in _toc_files():
        if not name.startswith("exercises/"):
            continue
        text = _text(site / f"{name}.html")
        assert "raise NotImplementedError()" in text
        for secret in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "MARK SCHEME", "_reference_attention"):
            assert secret not in text, f"{name} shows {secret}"
    assert not list(site.rglob("solutions/*")), "solutions/ must never be part of the site"
