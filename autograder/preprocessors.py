"""The nbgrader preprocessors this course uses for autograding and feedback."""
from __future__ import annotations

import traceback

import jsonschema
from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor
from nbformat.v4 import new_output
from nbgrader import utils
from nbgrader.api import Gradebook
from nbgrader.nbgraderformat import MetadataValidator
from nbgrader.nbgraderformat.common import BaseMetadataValidator
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    ClearHiddenTests,
    ClearOutput,
    DeduplicateIds,
    GetGrades,
    LimitOutput,
    NbGraderPreprocessor,
    OverwriteCells,
    OverwriteKernelspec,
    SaveAutoGrades,
)
from traitlets import Bool

from autograder.execute import SandboxedExecute
from autograder.verdicts import HIDDEN_BEGIN, HIDDEN_END, TrustedVerdicts, hidden_delimiters, verdict_alone

STDERR_HEADER = "[stderr, not counted against the grade]\n"
SCRUBBED = "[a line of the hidden tests was removed here]"


class KeepStderrVisible(NbGraderPreprocessor):
    """Turn stderr output of test cells into stdout, so that it does not zero the cell.

    nbgrader scores a test cell 0 when it writes anything to stderr, so a correct
    solution that makes PyTorch print a warning loses the points.  A test fails
    by its verdict, never by printing, so the text is kept (marked) for the
    feedback and the score depends on the verdict alone.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code" and utils.is_grade(cell):
            for output in cell.outputs:
                if output.output_type == "stream" and output.name == "stderr":
                    output.name = "stdout"
                    output.text = STDERR_HEADER + output.text
        return cell, resources


class ForgetForgedCells(NbGraderPreprocessor):
    """Make ordinary cells of nbgrader cells the instructor never wrote, and of repeated ids.

    A student can give a cell nbgrader metadata with a new grade id (a "bonus"
    test worth 100 points) or copy a test cell's id onto a cell of their own.
    nbgrader stops with an error on both, and the whole notebook would score 0.
    Here the first cell with a known id keeps it (nbgrader then restores its
    source and points from the gradebook); every other such cell loses its
    nbgrader metadata and runs as the student's own code, worth nothing.
    """

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gradebook:
            notebook = gradebook.find_notebook(info["notebook"], info["assignment"])
            self._known = {cell.name for cell in notebook.source_cells}
        self._seen: set[str] = set()
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        if not isinstance(cell.metadata.get("nbgrader", {}), dict):  # nbformat lets "nbgrader": "x" pass
            self.log.warning("cell %d: nbgrader metadata that is not a mapping; graded as an ordinary cell",
                             cell_index)
            del cell.metadata["nbgrader"]
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if "nbgrader" in cell.metadata and (grade_id not in self._known or grade_id in self._seen):
            self.log.warning("cell %d: nbgrader id %r %s; graded as an ordinary cell", cell_index, grade_id,
                             "repeats an earlier cell's" if grade_id in self._seen else "is not the instructor's")
            del cell.metadata["nbgrader"]
        elif grade_id is not None:
            self._seen.add(grade_id)
        return cell, resources


# nbgrader's metadata schema version -> its validator, the schema checked once: nbgrader reads the
# schema of a version from its own package, so the version names it.
_COMPILED: dict[int, jsonschema.protocols.Validator] = {}


class _CompiledSchemaCheck(BaseMetadataValidator):
    """The schema part of nbgrader's cell check, with the schema compiled once (see below)."""

    def validate_cell(self, cell) -> None:
        meta = cell.metadata.get("nbgrader")
        if meta is None:
            return
        if meta.get("schema_version", 0) != self.schema_version:
            return super().validate_cell(cell)  # nbgrader's own error for an older or newer schema
        if self.schema_version not in _COMPILED:
            validator = jsonschema.validators.validator_for(self.schema)
            validator.check_schema(self.schema)
            _COMPILED[self.schema_version] = validator(self.schema)
        error = jsonschema.exceptions.best_match(_COMPILED[self.schema_version].iter_errors(meta))
        if error is not None:
            raise error


class CompiledMetadataValidator(MetadataValidator, _CompiledSchemaCheck):
    """nbgrader's check of the cells' nbgrader metadata, with its JSON schema compiled once.

    ``jsonschema.validate`` checks the schema itself against JSON Schema's metaschema before
    every cell it validates: nbgrader's check takes 23 ms on chapter 4's notebook of 31 cells
    on a quiet core, this one 2 to 3 ms, and it runs twice per hand-in.  nbgrader's own checks run
    unchanged (grade ids, points, cell types); its schema check, which they call through
    ``super()``, resolves to :class:`_CompiledSchemaCheck`, which raises the error
    ``jsonschema.validate`` would (its best match) from one validator object.
    """


class CheckCompiledCellMetadata(CheckCellMetadata):
    """nbgrader's ``CheckCellMetadata`` (unique grade ids, valid metadata) with
    :class:`CompiledMetadataValidator`: the same verdicts and messages, a tenth of the time."""

    def preprocess(self, nb, resources):
        try:
            CompiledMetadataValidator().validate_nb(nb)
        except jsonschema.ValidationError:
            self.log.error(traceback.format_exc())
            msg = "Notebook failed to validate; the nbgrader metadata may be corrupted."
            self.log.error(msg)
            raise jsonschema.ValidationError(msg) from None
        return nb, resources


def sanitize_preprocessors() -> list[type]:
    """nbgrader's steps that restore the instructor's cells, after :class:`ForgetForgedCells`."""
    return [ClearOutput, ForgetForgedCells, DeduplicateIds, OverwriteKernelspec, OverwriteCells,
            CheckCompiledCellMetadata]


def autograde_preprocessors() -> list[type]:
    """nbgrader's autograde steps, in nbgrader's order, with four changes.

    - :class:`SandboxedExecute` runs the notebook in a sandboxed kernel;
    - :class:`TrustedVerdicts` decides each test cell from its records, in the grader;
    - :class:`KeepStderrVisible` takes the place of nbgrader's ``IgnorePattern``;
    - :class:`CheckCompiledCellMetadata` checks the metadata as ``CheckCellMetadata`` does, faster.
    """
    return [
        SandboxedExecute,
        TrustedVerdicts,
        KeepStderrVisible,
        ClearMetadataPreprocessor,
        LimitOutput,
        SaveAutoGrades,
        AssignLatePenalties,
        CheckCompiledCellMetadata,
    ]


def hidden_lines(nb, begin: str = HIDDEN_BEGIN, end: str = HIDDEN_END) -> set[str]:
    """Every line of hidden test code in ``nb`` that is long enough to be recognised, the block
    marked as nbgrader marks it: from a line holding ``begin`` to one holding ``end``."""
    lines = set()
    for cell in nb.cells:
        inside = False
        for line in cell.source.splitlines():
            stripped = line.strip()
            if begin in stripped:
                inside = True
            elif end in stripped:
                inside = False
            elif inside and len(stripped) >= 12:
                lines.add(stripped)
    return lines


def scrub(text: str, lines: set[str]) -> str:
    return "\n".join(SCRUBBED if any(hidden in line for hidden in lines) else line for line in text.split("\n"))


class DisarmOutputs(NbGraderPreprocessor):
    """Keep nothing in the feedback that a browser would run: the outputs are the student's code's.

    JavaScript and widget outputs are dropped; HTML, SVG and Mermaid (which nbconvert writes
    into the page unescaped) give way to the plain-text or PNG form IPython sends beside them,
    or, alone, are shown as text. Images, plain text and LaTeX stay as they are. An output's
    metadata keeps only an image's whole-number width and height: nbconvert writes those into
    the ``<img>`` tag without quotes (a width of ``1 onerror=...`` adds an event handler), and
    takes an image's address from ``filenames``.
    """

    DROPPED = ("application/javascript", "text/javascript", "application/vnd.jupyter.widget-view+json")
    ACTIVE = ("text/html", "image/svg+xml", "text/vnd.mermaid")
    IMAGES = ("image/png", "image/jpeg")

    def preprocess(self, nb, resources):
        nb.metadata.pop("widgets", None)  # the page would write the widgets' saved state out as it is
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if "metadata" in output:
                output["metadata"] = self.image_sizes(output["metadata"])
            data = output.get("data")
            if not data:
                continue
            for mime in self.DROPPED:
                data.pop(mime, None)
            for mime in self.ACTIVE:
                if mime in data:
                    text = data.pop(mime)
                    if not (data.keys() & {"text/plain", "image/png", "image/jpeg"}):
                        data["text/plain"] = "".join(text) if isinstance(text, list) else text
            if not data:
                data["text/plain"] = "[an output the feedback does not show]"
        return cell, resources

    @classmethod
    def image_sizes(cls, metadata) -> dict:
        """Of an output's metadata, the images' sizes that are whole numbers, and nothing else."""
        kept = {}
        for mime in cls.IMAGES:
            given = metadata.get(mime) if isinstance(metadata, dict) else None
            sizes = {key: value for key, value in (given.items() if isinstance(given, dict) else ())
                     if key in ("width", "height") and type(value) is int and value >= 0}
            if sizes:
                kept[mime] = sizes
        return kept


class ScrubHiddenTests(NbGraderPreprocessor):
    """Remove every quotation of hidden test code from the outputs of every cell.

    Hidden test cells already show only their verdict (:class:`TrustedVerdicts`),
    but student code that runs later can print what it saw of them (IPython
    keeps the source of every cell it ran).  nbgrader's ``ClearHiddenTests``
    cleans sources only (nbgrader #917, #1363).
    """

    def preprocess(self, nb, resources):
        self._lines = hidden_lines(nb, *hidden_delimiters(self.config))
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type != "code" or not self._lines:
            return cell, resources
        for output in cell.outputs:
            if output.output_type == "stream":
                output.text = scrub(output.text, self._lines)
            elif output.output_type == "error":
                output.evalue = scrub(output.evalue, self._lines)
                output.traceback = [scrub(line, self._lines) for line in output.traceback]
            else:
                for mime, value in output.get("data", {}).items():
                    if isinstance(value, str):
                        output.data[mime] = scrub(value, self._lines)
                    elif isinstance(value, list):
                        output.data[mime] = [scrub(v, self._lines) for v in value]
        return cell, resources


WITHHELD = ("[outputs not shown: this cell ran after a hidden test, which code running here could have printed "
            "in disguise; your own notebook shows what it prints]")
PASSED = "This test passed."


class WithholdLateOutputs(NbGraderPreprocessor):
    """With ``enabled`` (``--feedback-outputs before-hidden-tests``): nothing that the student's code
    printed after the first hidden test ran.

    A hidden test runs in the student's kernel, which keeps its source, and code that runs
    later (the student's next cells, or their functions called by a later test) can print it
    reversed or encoded, where :class:`ScrubHiddenTests` cannot recognise it. From the first
    hidden test on, the student's cells show a note instead of their outputs and test cells
    (that one included) their verdict alone: failed, with the name of a plain test's error but
    no text (the grader's messages quote values the student's code chose, and can carry any
    text), a partial-credit number, or passed.
    """

    enabled = Bool(False, help="Withhold the outputs of cells that ran after the first hidden test.").tag(config=True)

    def preprocess(self, nb, resources):
        self._begin, self._after = hidden_delimiters(self.config)[0], False
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        if not self.enabled or cell.cell_type != "code":
            return cell, resources
        test = utils.is_grade(cell)
        # The mark counts in test cells only, whose source nbgrader restores; a student's cell can say anything.
        self._after = self._after or (test and self._begin in cell.source)
        if self._after and test:
            cell.outputs = verdict_alone(cell.outputs, "(details withheld)", PASSED, grader_messages=False)
        elif self._after and cell.outputs:
            cell.outputs = [new_output("stream", name="stdout", text=WITHHELD + "\n")]
        return cell, resources


def feedback_preprocessors() -> list[type]:
    """nbgrader's feedback steps with hidden test code removed from outputs as well as sources."""
    return [GetGrades, ScrubHiddenTests, WithholdLateOutputs, DisarmOutputs, ClearHiddenTests,
            CSSHTMLHeaderPreprocessor]
