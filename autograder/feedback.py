"""The HTML exporter for students' feedback: nbconvert's, without its slowest step.

nbconvert's ``HTMLExporter`` renders the page, then parses all of it again with
BeautifulSoup's pure-Python parser only to add two accessibility attributes:
an ``alt`` text on images that lack one and ``tabindex="0"`` on cell inputs and
outputs.  On a graded notebook that second pass costs more than the rendering.
:class:`FeedbackExporter` renders the same page and adds the same attributes
with two regular expressions over the tags nbconvert's own template writes.
"""
from __future__ import annotations

import re

from nbconvert.exporters import HTMLExporter
from nbconvert.exporters.templateexporter import TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

MISSING_ALT = "No description has been provided for this image"
IMAGE_WITHOUT_ALT = re.compile(r"<img(?![^>]*\salt=)")
FOCUSABLE = re.compile(r'(<div class="[^"]*\b(?:jp-Cell-inputWrapper|jp-OutputArea-output)\b[^"]*")')


def accessible(html: str) -> str:
    """What ``HTMLExporter`` adds after rendering: alt texts and keyboard focus on inputs and outputs."""
    html = IMAGE_WITHOUT_ALT.sub(f'<img alt="{MISSING_ALT}"', html)
    return FOCUSABLE.sub(r'\1 tabindex="0"', html)


class FeedbackExporter(HTMLExporter):
    """``HTMLExporter`` with :func:`accessible` in place of its BeautifulSoup pass."""

    def from_notebook_node(self, nb, resources=None, **kw):
        language = nb.metadata.get("language_info", {})
        lexer = language.get("pygments_lexer", language.get("name", None))
        self.register_filter("highlight_code",
                             self.filters.get("highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self)))
        resources = self._init_resources(resources)
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata,
                                                                       parent=self, resources=resources))
        html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        return accessible(html), resources
