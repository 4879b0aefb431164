"""The book's table of contents, ``_toc.yml``: which pages the book has, in which order.

The build reads it to order the book; the running-time tables (``nlpbook.running_times``), the scripts
that time the pages (``benchmarks/``) and the tests that visit every page read it here, so that a page
added to the book is a page they time and check::

    files()                      # ['book/intro', 'book/preface', 'book/01-word-vectors/index', ...]
    chapters()                   # ['01-word-vectors', ..., '07-adam']
    chapter_pages("07-adam")     # ['07-adam/momentum-rmsprop', '07-adam/adam', '07-adam/warmup']
"""
from __future__ import annotations

import re
from pathlib import Path

TOC = Path(__file__).resolve().parent.parent / "_toc.yml"
CHAPTER_OPENING = re.compile(r"book/(\d\d-[\w-]+)/index")


class TocError(RuntimeError):
    """The table of contents is missing or lacks what was asked of it."""


def _entries(toc: Path) -> tuple[str, list[dict]]:
    """The root page and the chapter entries (``file`` and their ``sections``) of every part."""
    import yaml

    if not toc.is_file():
        raise TocError(f"{toc}: no table of contents (is this the book's checkout?)")
    parsed = yaml.safe_load(toc.read_text(encoding="utf-8"))
    try:
        return parsed["root"], [entry for part in parsed["parts"] for entry in part["chapters"]]
    except (KeyError, TypeError) as error:
        raise TocError(f"{toc}: not a Jupyter Book table of contents with a root and parts ({error!r})") from None


def files(toc: Path = TOC) -> list[str]:
    """Every page of the book, as paths without suffix (``book/04-attention/index``), in the book's order."""
    root, entries = _entries(toc)
    pages = [root]
    for entry in entries:
        pages.append(entry["file"])
        pages.extend(section["file"] for section in entry.get("sections", []))
    return pages


def chapters(toc: Path = TOC) -> list[str]:
    """The numbered chapters' folders, in the book's order (``01-word-vectors``, ...)."""
    return [match[1] for entry in _entries(toc)[1] if (match := CHAPTER_OPENING.fullmatch(entry["file"]))]


def chapter_pages(chapter: str, toc: Path = TOC) -> list[str]:
    """The pages of a chapter that teach (``05-transformers/bpe``, ...), in the book's order: not its
    opening page and not its exercise page."""
    for entry in _entries(toc)[1]:
        if entry["file"] == f"book/{chapter}/index":
            pages = [section["file"].removeprefix("book/") for section in entry.get("sections", [])]
            pages = [page for page in pages if not page.endswith("/exercises")]
            if pages:
                return pages
    raise TocError(f"{toc}: no chapter book/{chapter}/index with pages")
