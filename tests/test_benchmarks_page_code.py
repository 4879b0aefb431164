"""benchmarks/page_code.py: the code a reader never sees, counted on a page made for the test."""
from __future__ import annotations

import sys

from conftest import MYST_HEADER, REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import page_code  # noqa: E402

PAGE_HEADER = MYST_HEADER + "\n# A page\n\n"
PAGE = PAGE_HEADER + '''```{code-cell} ipython3
x = 1

y = 2
```

```{code-cell} ipython3
:tags: [remove-cell]
glue("x", x, display=False)
glue("y", y, display=False)
```

```{code-cell} ipython3
---
tags: [remove-input]
mystnb:
  figure:
    name: fig-a
---
Markdown("| a |\\n| --- |\\n| 1 |")
```

Some prose with `glue(` in it, which is not code.
'''


def test_a_page_counts_its_hidden_lines_its_glue_calls_and_its_markdown_tables(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(PAGE, encoding="utf-8")
    # 2 visible lines (the blank one does not count), 2 hidden by remove-cell, 1 by remove-input
    # (tagged in the cell's YAML header); 2 glue calls in code; 1 table written as a string.
    assert page_code.page_counts(page) == (5, 3, 2, 1)


def test_the_book_is_counted_page_by_page(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["page_code.py", "--top", "3"])
    page_code.main()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["page", "code", "hidden"]
    assert len(lines) == 1 + 3 + 1  # header, the three pages with most hidden lines, the total
    assert lines[-1].startswith("all ") and lines[-1].split()[1].isdigit()


def test_the_totals_are_of_every_page_and_the_top_is_by_hidden_lines(tmp_path, monkeypatch, capsys):
    book = tmp_path / "book"
    (book / "01-a").mkdir(parents=True)
    (book / "01-a" / "hides.md").write_text(PAGE_HEADER + "```{code-cell} ipython3\nx = 1\n```\n\n"
                                            "```{code-cell} ipython3\n:tags: [remove-cell]\nglue('x', x)\ny = 2\n```\n")
    (book / "01-a" / "shows.md").write_text(PAGE_HEADER + "```{code-cell} ipython3\n"
                                            + "".join(f"z{i} = {i}\n" for i in range(9))
                                            + "s = '| a |\\n| --- |'\n```\n")
    monkeypatch.setattr(page_code, "BOOK", book)
    monkeypatch.setattr(sys, "argv", ["page_code.py", "--top", "1"])
    page_code.main()
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[1:-1]] == ["01-a/hides.md"]
    # every page: 13 code lines, 2 hidden (15.4%), 1 glue call, no Markdown table
    assert lines[-1].split() == ["all", "2", "pages", "13", "2", "15.4%", "1", "0"]
