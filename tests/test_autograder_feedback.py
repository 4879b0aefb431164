"""The feedback exporter writes the page nbconvert's HTMLExporter writes, with the same accessibility attributes."""
from __future__ import annotations

import base64
import re
from html import unescape

import nbformat
from nbconvert.exporters import HTMLExporter
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from autograder.feedback import MISSING_ALT, FeedbackExporter

PIXEL = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082")).decode()


def _notebook():
    code = new_code_cell("x = 1\nprint(x)", outputs=[new_output("stream", name="stdout", text="1\n"),
                                                    new_output("display_data", data={"image/png": PIXEL})])
    return new_notebook(cells=[new_markdown_cell("# Feedback\n\nSome *maths*: $a^2$"), code,
                               new_code_cell("y = 2")], metadata={"language_info": {"name": "python"}})


def _tags(html: str, pattern: str) -> int:
    return len(re.findall(pattern, html))


def test_the_same_page_with_the_same_attributes():
    ours, _ = FeedbackExporter().from_notebook_node(_notebook())
    theirs, _ = HTMLExporter().from_notebook_node(_notebook())
    assert _tags(ours, r'tabindex="0"') == _tags(theirs, r'tabindex="0"') == 5  # 3 inputs, 2 outputs
    assert _tags(ours, f'alt="{MISSING_ALT}"') == _tags(theirs, f'alt="{MISSING_ALT}"') == 1
    # The same words on the page (BeautifulSoup writes entities such as &nbsp; as characters).
    text = lambda html: re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html))).strip()  # noqa: E731
    assert text(ours) == text(theirs)


def test_an_image_that_has_a_description_keeps_it():
    notebook = _notebook()
    notebook.cells[0].source = '![the loss curve](a.png)'
    ours, _ = FeedbackExporter().from_notebook_node(notebook)
    assert 'alt="the loss curve"' in ours and ours.count(f'alt="{MISSING_ALT}"') == 1
    assert nbformat.validate(notebook) is None


def test_a_second_exporter_compiles_no_template_and_writes_the_same_page(monkeypatch):
    from jinja2 import Environment

    import copy

    uuids = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # fresh in every page
    notebook = _notebook()
    first, _ = FeedbackExporter().from_notebook_node(copy.deepcopy(notebook))
    compiled = []
    original = Environment.compile
    monkeypatch.setattr(Environment, "compile", lambda self, *args, **kw: compiled.append(args) or
                        original(self, *args, **kw))
    second, _ = FeedbackExporter().from_notebook_node(notebook)
    assert compiled == []
    assert re.sub(uuids, "", second) == re.sub(uuids, "", first)


def test_a_students_html_runs_in_no_readers_browser():
    # Markdown cells (a student can add them) show their HTML as text; outputs lose what a browser
    # would run, keeping the plain or PNG form IPython sends beside it.
    from autograder.preprocessors import DisarmOutputs

    notebook = _notebook()
    notebook.cells[0].source = 'An answer <img src=x onerror="stolen()"> and *emphasis*'
    notebook.cells[1].outputs = [
        new_output("display_data", data={"text/html": "<script>stolen()</script>", "text/plain": "<HTML object>"}),
        new_output("display_data", data={"application/javascript": "stolen()"}),
        new_output("display_data", data={"image/svg+xml": "<svg onload='stolen()'/>"}),
        new_output("execute_result", data={"image/png": PIXEL, "image/svg+xml": "<svg onload='stolen()'/>"},
                   execution_count=1),
    ]
    for cell in notebook.cells:
        DisarmOutputs().preprocess_cell(cell, {}, 0)
    page, _ = FeedbackExporter().from_notebook_node(notebook)
    assert "<script>stolen" not in page and 'onerror="stolen()"' not in page and "onload='stolen()'" not in page
    assert "stolen()</script>" not in page and "<em>emphasis</em>" in page and "&lt;HTML object&gt;" in page
    assert _tags(page, f'src="data:image/png;base64,{PIXEL[:20]}') == 1  # the PNG beside an SVG stays


def test_an_outputs_metadata_and_mermaid_add_no_attribute_or_tag_to_the_page():
    # nbconvert writes an image's width and height unquoted into its tag, its address from
    # "filenames", and a Mermaid output unescaped: each would put the student's HTML in the page.
    from autograder.preprocessors import DisarmOutputs

    notebook = _notebook()
    notebook.cells[1].outputs = [
        new_output("display_data", data={"image/png": PIXEL},
                   metadata={"image/png": {"width": "1 onerror=stolen()", "height": 7},
                             "filenames": {"image/png": "https://tracker.example/pixel.png"}}),
        new_output("display_data", data={"image/jpeg": PIXEL},
                   metadata={"image/jpeg": {"width": 12, "height": True, "unconfined": "x onload=stolen()"}}),
        new_output("display_data", data={"text/vnd.mermaid": "</pre><img src=x onerror=stolen()>"}),
    ]
    for cell in notebook.cells:
        DisarmOutputs().preprocess_cell(cell, {}, 0)
    page, _ = FeedbackExporter().from_notebook_node(notebook)
    assert not re.search(r"<[^>]*onerror", page) and "tracker.example" not in page
    assert "&lt;/pre&gt;&lt;img src=x onerror=stolen()&gt;" in page  # the Mermaid, as text
    assert "height=7" in page and "width=12" in page  # whole-number sizes stay
    assert [output.metadata for output in notebook.cells[1].outputs] == [
        {"image/png": {"height": 7}}, {"image/jpeg": {"width": 12}}, {}]
