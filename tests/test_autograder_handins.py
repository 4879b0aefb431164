"""Hand-ins built the way a student would write them: the tests' planted mistakes must be what they say."""
import pytest

from attention_course import ASSIGNMENT, NOTEBOOK, RELEASE, solved
from autograder.handins import MARKERS, load


def _cells(notebook) -> dict[str, str]:
    return {cell.metadata["nbgrader"]["grade_id"]: cell.source for cell in notebook.cells
            if cell.metadata.get("nbgrader", {}).get("grade_id")}


def test_every_answer_is_the_solution_without_its_markers_and_the_rest_is_the_release():
    handed_in, release = _cells(solved(ASSIGNMENT, NOTEBOOK)), _cells(load(RELEASE))
    assert handed_in.keys() == release.keys()
    answers = [grade_id for grade_id, source in release.items() if source != handed_in[grade_id]]
    assert answers and "causal_mask" in answers  # the exercise's empty answers, filled in
    assert not any(marker in source for source in handed_in.values() for marker in MARKERS)


def test_a_mistake_changes_its_own_cell_and_an_edit_that_does_not_apply_is_refused():
    # A mistake whose text is not in the solution would hand in the solution itself, and a test
    # expecting it to lose points would be testing nothing: it must raise instead.
    right = _cells(solved(ASSIGNMENT, NOTEBOOK))
    line = next(line for line in right["causal_mask"].splitlines() if line.strip() and not line.startswith("def "))
    wrong = _cells(solved(ASSIGNMENT, NOTEBOOK, {"causal_mask": [(line, line + "  # changed")]}))
    assert [grade_id for grade_id in right if right[grade_id] != wrong[grade_id]] == ["causal_mask"]
    with pytest.raises(ValueError, match="edit for cell 'causal_mask' does not apply"):
        solved(ASSIGNMENT, NOTEBOOK, {"causal_mask": [("text the solution does not hold", "x")]})
    with pytest.raises(ValueError, match=r"edits for unknown cells: \['no_such_cell'\]"):
        solved(ASSIGNMENT, NOTEBOOK, {"no_such_cell": [("a", "b")]})
