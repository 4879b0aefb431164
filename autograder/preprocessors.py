"""nbgrader preprocessors this course adds to the autograde step."""
from __future__ import annotations

from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor
from nbgrader import utils
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    ClearHiddenTests,
    Execute,
    GetGrades,
    LimitOutput,
    NbGraderPreprocessor,
    SaveAutoGrades,
)

STDERR_HEADER = "[stderr, not counted against the grade]\n"


class KeepStderrVisible(NbGraderPreprocessor):
    """Turn stderr output of test cells into stdout, so that it does not zero the cell.

    nbgrader scores a test cell 0 when it writes anything to stderr, so a correct
    solution that makes PyTorch print a warning loses the points.  A test fails
    by raising, never by printing, so the text is kept (marked) for the
    feedback and the score depends on the exceptions alone.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code" and utils.is_grade(cell):
            for output in cell.outputs:
                if output.output_type == "stream" and output.name == "stderr":
                    output.name = "stdout"
                    output.text = STDERR_HEADER + output.text
        return cell, resources


def autograde_preprocessors() -> list[type]:
    """nbgrader's autograde steps, in nbgrader's order, with stderr kept visible.

    :class:`KeepStderrVisible` takes the place of nbgrader's ``IgnorePattern``
    (which drops stderr matching one pattern) right after execution and
    before the scores are saved.
    """
    return [
        Execute,
        KeepStderrVisible,
        ClearMetadataPreprocessor,
        LimitOutput,
        SaveAutoGrades,
        AssignLatePenalties,
        CheckCellMetadata,
    ]


class HideHiddenTestTracebacks(NbGraderPreprocessor):
    """Cut the tracebacks of hidden test cells down to their last line.

    nbgrader's ``ClearHiddenTests`` removes the hidden code from a cell's
    source, but a failing hidden test's traceback quotes the lines around the
    failure, and those lines are hidden test code (nbgrader #917, #1363).  The
    student keeps the exception and its message, which the course's checks
    write to say what is wrong.
    """

    begin_marker = "### BEGIN HIDDEN TESTS"

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code" and utils.is_grade(cell) and self.begin_marker in cell.source:
            for output in cell.outputs:
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}" if output.evalue else output.ename]
        return cell, resources


def feedback_preprocessors() -> list[type]:
    """nbgrader's feedback steps with the hidden tests removed from sources and tracebacks."""
    return [GetGrades, HideHiddenTestTracebacks, ClearHiddenTests, CSSHTMLHeaderPreprocessor]
