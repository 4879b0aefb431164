"""nbgrader preprocessors this course adds to the autograde step."""
from __future__ import annotations

from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbgrader import utils
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    Execute,
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
