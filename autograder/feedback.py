"""The HTML exporter for students' feedback: nbconvert's, without its slowest step.

nbconvert's ``HTMLExporter`` renders the page, then parses all of it again with
BeautifulSoup's pure-Python parser only to add two accessibility attributes:
an ``alt`` text on images that lack one and ``tabindex="0"`` on cell inputs and
outputs.  On a graded notebook that second pass costs more than the rendering.
:class:`FeedbackExporter` renders the same page and adds the same attributes
with two regular expressions over the tags nbconvert's own template writes.
It also keeps the compiled templates for the life of the grading worker
(:class:`CompiledTemplates`): nbconvert compiles them again for every exporter.
"""
from __future__ import annotations

import re

from jinja2 import BytecodeCache, pass_context
from nbconvert.exporters import HTMLExporter
from nbconvert.exporters.templateexporter import TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

MISSING_ALT = "No description has been provided for this image"
IMAGE_WITHOUT_ALT = re.compile(r"<img(?![^>]*\salt=)")
FOCUSABLE = re.compile(r'(<div class="[^"]*\b(?:jp-Cell-inputWrapper|jp-OutputArea-output)\b[^"]*")')


def accessible(html: str) -> str:
    """What ``HTMLExporter`` adds after rendering: alt texts and keyboard focus on inputs and outputs."""
    html = IMAGE_WITHOUT_ALT.sub(f'<img alt="{MISSING_ALT}"', html)
    return FOCUSABLE.sub(r'\1 tabindex="0"', html)


class CompiledTemplates(BytecodeCache):
    """Jinja's compiled templates, kept in memory for every exporter of this process.

    nbgrader makes a new exporter, hence a new Jinja environment, for every student, and
    the environment compiled the feedback page's 9 templates again: 0.35 s of a student's
    0.8 s of feedback in a profile taken on a busy machine.  Jinja checks a template's source
    against the one its code was compiled from before it uses the code, so a changed template
    is compiled again.
    """

    def __init__(self):
        self.code: dict[str, bytes] = {}

    def load_bytecode(self, bucket) -> None:
        if bucket.key in self.code:
            bucket.bytecode_from_string(self.code[bucket.key])

    def dump_bytecode(self, bucket) -> None:
        self.code[bucket.key] = bucket.bytecode_to_string()


COMPILED_TEMPLATES = CompiledTemplates()


class FeedbackExporter(HTMLExporter):
    """``HTMLExporter`` with :func:`accessible` in place of its BeautifulSoup pass, and its
    templates compiled once per process (:data:`COMPILED_TEMPLATES`).

    The HTML a Markdown cell holds is shown as text, not rendered: a student can add Markdown
    cells, and a feedback page is opened by teaching assistants and instructors as well, whose
    browsers must run nothing of the student's (the outputs are disarmed before, by
    :class:`autograder.preprocessors.DisarmOutputs`)."""

    @pass_context
    def markdown2html(self, context, source):
        cell = context.get("cell", {})
        renderer = IPythonRenderer(
            escape=True, attachments=cell.get("attachments", {}), embed_images=self.embed_images,
            path=context.get("resources", {}).get("metadata", {}).get("path", ""),
            anchor_link_text=self.anchor_link_text, exclude_anchor_links=self.exclude_anchor_links,
            **self.lexer_options)
        return MarkdownWithMath(renderer=renderer).render(source)

    def _create_environment(self):
        environment = super()._create_environment()
        environment.bytecode_cache = COMPILED_TEMPLATES
        return environment

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
