"""The table of contents as the course's code reads it (``nlpbook.toc``)."""
from pathlib import Path

import pytest

from conftest import REPO
from nlpbook import toc
from nlpbook.toc import TocError

TINY = """\
format: jb-book
root: book/intro
parts:
  - caption: Chapters
    chapters:
      - file: book/01-first/index
        sections:
          - file: book/01-first/one
          - file: book/01-first/two
          - file: book/01-first/exercises
      - file: book/02-second/index
  - caption: More
    chapters:
      - file: exercises/01-first/first
      - file: book/references
"""


@pytest.fixture
def tiny(tmp_path) -> Path:
    path = tmp_path / "_toc.yml"
    path.write_text(TINY)
    return path


def test_files_are_every_page_in_the_order_of_the_contents(tiny):
    assert toc.files(tiny) == ["book/intro", "book/01-first/index", "book/01-first/one", "book/01-first/two",
                               "book/01-first/exercises", "book/02-second/index", "exercises/01-first/first",
                               "book/references"]


def test_chapters_are_the_numbered_opening_pages_folders(tiny):
    assert toc.chapters(tiny) == ["01-first", "02-second"]


def test_a_chapters_pages_are_its_sections_without_the_exercise_page(tiny):
    assert toc.chapter_pages("01-first", tiny) == ["01-first/one", "01-first/two"]
    with pytest.raises(TocError, match=r"_toc\.yml: no chapter book/02-second/index with pages"):
        toc.chapter_pages("02-second", tiny)  # an opening page without pages
    with pytest.raises(TocError, match="no chapter book/99-none/index"):
        toc.chapter_pages("99-none", tiny)


def test_a_missing_or_malformed_table_of_contents_is_named(tmp_path):
    with pytest.raises(TocError, match=r"/nonexistent/_toc\.yml: no table of contents"):
        toc.files(Path("/nonexistent/_toc.yml"))
    broken = tmp_path / "_toc.yml"
    broken.write_text("format: jb-book\nchapters: []\n")
    with pytest.raises(TocError, match=r"_toc\.yml: not a Jupyter Book table of contents"):
        toc.chapters(broken)


def test_the_books_contents_name_pages_that_exist_and_seven_chapters():
    assert toc.chapters() == sorted(folder.name for folder in (REPO / "book").glob("0*-*") if folder.is_dir())
    assert len(toc.chapters()) == 7
    missing = [name for name in toc.files() if not any((REPO / name).with_suffix(suffix).is_file()
                                                         for suffix in (".md", ".ipynb"))]
    assert not missing, missing
    assert toc.chapter_pages("07-adam")[0] == "07-adam/momentum-rmsprop"
