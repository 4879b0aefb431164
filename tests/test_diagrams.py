"""The book's schematic diagrams: committed SVGs that diagrams/draw.py draws, each placed on a page.

The browser test (test_book_browser.py) checks that they load and show in both colour modes; this
file checks the sources, with no build: that the committed files are what the script draws (so
they never drift from it), that each scales (a viewBox, no fixed size), has lettering a reader can
read, carries its own light panel (an <img> cannot see the page's dark mode), asks the network
for nothing, and is placed on a page with a label, alt text and a caption.
"""
from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import REPO, diagram_figures, toc_files

SVG = "{http://www.w3.org/2000/svg}"
SCRIPT = REPO / "diagrams" / "draw.py"
COMMITTED = sorted((REPO / "book").glob("*/diagrams/*.svg"))


def _figures() -> list[tuple[str, str, dict[str, str], str]]:
    """(page, diagram path from the repository root, options, caption) of every diagram on a page of the book."""
    return [(name, *figure) for name in toc_files() for figure in diagram_figures(name)]


def test_the_committed_diagrams_are_what_the_script_draws(tmp_path):
    result = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    drawn = sorted(path.relative_to(tmp_path) for path in tmp_path.rglob("*.svg"))
    committed = [path.relative_to(REPO / "book") for path in COMMITTED]
    assert drawn == committed, ("run `python diagrams/draw.py` and commit book/*/diagrams/: "
                                f"drawn but not committed {sorted(set(drawn) - set(committed))}, "
                                f"committed but not drawn {sorted(set(committed) - set(drawn))}")
    stale = [str(name) for name in drawn
             if (tmp_path / name).read_bytes() != (REPO / "book" / name).read_bytes()]
    assert not stale, f"committed diagrams that differ from what diagrams/draw.py draws (run it): {stale}"


def test_there_are_diagrams_in_every_chapter_from_1_to_6():
    assert len(COMMITTED) >= 14, [path.name for path in COMMITTED]
    chapters = {path.parent.parent.name for path in COMMITTED}
    for number in range(1, 7):
        assert any(chapter.startswith(f"{number:02d}-") for chapter in chapters), f"chapter {number} has no diagram"


@pytest.mark.parametrize("path", COMMITTED, ids=lambda path: path.name)
def test_the_diagram_scales_is_legible_and_stands_on_its_own_panel(path):
    text = path.read_text(encoding="utf-8")
    root = ET.fromstring(text)
    assert root.tag == f"{SVG}svg"
    # Scales with the column: a viewBox and no fixed size.
    viewbox = [float(number) for number in root.get("viewBox", "").split()]
    assert len(viewbox) == 4 and viewbox[2] > 0 and viewbox[3] > 0, root.get("viewBox")
    assert root.get("width") is None and root.get("height") is None, "a fixed size does not scale on a phone"
    # Drawn for the width of the text column (768 px): a unit is a pixel there.
    assert 700 <= viewbox[2] <= 768, viewbox
    # One generic font stack, no web font, nothing fetched.
    assert root.get("font-family", "").endswith("sans-serif")
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)|@import|@font-face|<image|href=", text)
    # Lettering a reader can read: at least 13 px at the column's width, scripts at least 10 px.
    for element in root.iter(f"{SVG}text"):
        size = float(element.get("font-size", root.get("font-size")))
        assert size >= 13, f"{path.name}: {size} px text {''.join(element.itertext())!r}"
        for script in element.iter(f"{SVG}tspan"):
            assert float(script.get("font-size", size)) >= 10, f"{path.name}: {''.join(element.itertext())!r}"
    # Its own light panel under everything: an <img> does not see the page's dark mode.
    panel = root.find(f"{SVG}rect")
    assert panel is not None and panel.get("fill") == "#ffffff"
    assert float(panel.get("width")) >= viewbox[2] - 2 and float(panel.get("height")) >= viewbox[3] - 2
    assert root.find(f"{SVG}title") is not None, "a title for a reader who opens the file on its own"


def test_every_diagram_is_on_a_page_with_a_label_alt_text_and_a_caption():
    figures = _figures()
    placed = [diagram for _, diagram, _, _ in figures]
    assert sorted(placed) == sorted(str(path.relative_to(REPO)) for path in COMMITTED), (
        "each diagram is placed exactly once, and only diagrams that exist")
    labels = [options.get("name") for _, _, options, _ in figures]
    assert len(set(labels)) == len(labels) and all(labels), labels
    for page, diagram, options, caption in figures:
        assert options["name"].startswith("fig-"), (page, options)
        alt = options.get("alt", "")
        assert len(alt.split()) >= 15 and not alt.endswith(".svg"), f"{page}: alt text describing {diagram}"
        assert "#" not in alt, f"{page}: MyST reads '#' in a directive option as a comment"
        assert options.get("width") == "100%", f"{page}: {diagram} should fill the column"
        assert len(caption.split()) >= 15, f"{page}: a caption for {diagram}"
        text = (REPO / f"{page}.md").read_text()
        assert f"{{numref}}`{options['name']}`" in text, f"{page}: the text should point to {options['name']}"


def test_the_lstm_diagram_follows_pytorchs_gate_order():
    """The order of the blocks of z_t is torch.nn.LSTM's (and the page's): input, forget, candidate, output."""
    root = ET.parse(REPO / "book" / "03-lstms" / "diagrams" / "lstm-cell.svg").getroot()
    letters = [(float(text.get("x")), "".join(text.itertext())) for text in root.iter(f"{SVG}text")
               if "".join(text.itertext()) in {"i", "f", "g", "o"}]
    assert [letter for _, letter in sorted(letters)] == ["i", "f", "g", "o"]
