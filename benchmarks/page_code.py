"""How much of the book pages' code a reader never sees, page by page.

    python benchmarks/page_code.py [--top N]

For every MyST page under ``book/`` it prints the non-blank code lines, how many of
them sit in cells hidden from the reader (tagged ``remove-cell`` or ``remove-input``),
the ``glue(`` calls, and the results tables still written as Markdown strings
(``Markdown(`` with a ``|`` row in the same cell). Issue 39 tracks these counts.
"""

import argparse
import re
from pathlib import Path

import jupytext

BOOK = Path(__file__).resolve().parents[1] / "book"
HIDDEN_TAGS = {"remove-cell", "remove-input"}


def page_counts(path):
    """(code lines, hidden code lines, glue calls, Markdown-string tables) of one page."""
    notebook = jupytext.read(path)
    code = hidden = glues = tables = 0
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        lines = [line for line in cell.source.splitlines() if line.strip()]
        code += len(lines)
        if HIDDEN_TAGS & set(cell.metadata.get("tags", [])):
            hidden += len(lines)
        glues += len(re.findall(r"\bglue\(", cell.source))
        if "Markdown(" in cell.source and re.search(r"\|\s*-{3}", cell.source):
            tables += 1
    return code, hidden, glues, tables


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=0, help="only the N pages with most hidden lines")
    args = parser.parse_args()
    rows = []
    for path in sorted(BOOK.glob("*/*.md")):
        text = path.read_text(encoding="utf-8")
        if not text.startswith("---") or "jupytext" not in text.split("---")[1]:
            continue
        rows.append((path.relative_to(BOOK).as_posix(), *page_counts(path)))
    totals = [sum(row[i] for row in rows) for i in range(1, 5)]
    shown = sorted(rows, key=lambda row: -row[2])[: args.top] if args.top else rows
    print(f"{'page':42} {'code':>6} {'hidden':>7} {'share':>6} {'glue':>5} {'md tables':>9}")
    for name, code, hidden, glues, tables in shown:
        share = hidden / code if code else 0.0
        print(f"{name:42} {code:6} {hidden:7} {share:6.0%} {glues:5} {tables:9}")
    code, hidden, glues, tables = totals
    print(f"{'all ' + str(len(rows)) + ' pages':42} {code:6} {hidden:7} {hidden / code:6.1%} {glues:5} {tables:9}")


if __name__ == "__main__":
    main()
