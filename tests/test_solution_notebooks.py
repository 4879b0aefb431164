"""The solution notebooks' structure.  They run whole, as a student's hand-in, in each chapter's grading
test (tests/chapter_grading.py), and under nbval with `pytest solutions` (benchmarks/solution_suite.py)."""
from __future__ import annotations

import nbformat
import pytest

from autograder.course import SOLUTIONS, assignments
from autograder.verdicts import is_test_cell


def _cells(assignment):
    for path in sorted((SOLUTIONS / assignment).glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            yield path, cell, cell.metadata.get("nbgrader", {})


@pytest.mark.parametrize("assignment", assignments())
def test_grade_ids_are_unique_and_match_cell_ids(assignment):
    seen = set()
    for path, cell, meta in _cells(assignment):
        if meta:
            assert meta["grade_id"] not in seen, f"{path}: duplicate grade id {meta['grade_id']}"
            seen.add(meta["grade_id"])
            assert cell.id == meta["grade_id"], f"{path}: cell id {cell.id} != grade id {meta['grade_id']}"


@pytest.mark.parametrize("assignment", assignments())
def test_chapter_standard_counts(assignment):
    code_parts = [m for _, c, m in _cells(assignment) if m.get("solution") and c.cell_type == "code"]
    written = [m for _, c, m in _cells(assignment) if m.get("solution") and c.cell_type == "markdown" and m.get("grade")]
    tests = [m for _, c, m in _cells(assignment) if m.get("grade") and c.cell_type == "code"]
    assert len(code_parts) >= 4, "the chapter standard asks for at least four auto-graded parts"
    assert written, "the chapter standard asks for at least one manually graded answer"
    assert all(m.get("locked") and m.get("points", 0) > 0 for m in tests)
    hidden = [m for p, c, m in _cells(assignment) if m.get("grade") and "### BEGIN HIDDEN TESTS" in c.source]
    assert len(hidden) >= len(code_parts), "every part needs hidden tests"


@pytest.mark.parametrize("assignment", assignments())
def test_every_hidden_test_makes_a_value_check_and_the_visible_ones_without_one_are_worth_a_point(assignment):
    from conftest import makes_a_value_check

    for path, cell, meta in _cells(assignment):
        if not is_test_cell(cell) or makes_a_value_check(cell.source):
            continue
        assert "### BEGIN HIDDEN TESTS" not in cell.source, f"{path}: hidden test {meta['grade_id']} makes no value check"
        assert meta["points"] <= 1, f"{path}: {meta['grade_id']} is worth {meta['points']} points and makes no value check"


def test_nbval_starts_another_kernel_when_one_dies_at_start():
    import nbval.kernel
    from conftest import _start_kernel_again_if_it_dies

    calls = []

    def dies_twice(**kwargs):
        calls.append(kwargs)
        if len(calls) < 3:
            raise RuntimeError("Kernel died before replying to kernel_info")
        return "manager", "client"

    assert _start_kernel_again_if_it_dies(dies_twice)(kernel_name="python3") == ("manager", "client")
    assert calls == [{"kernel_name": "python3"}] * 3

    def always_dies(**kwargs):
        raise RuntimeError("Kernel died before replying to kernel_info")

    with pytest.raises(RuntimeError, match="Kernel died"):
        _start_kernel_again_if_it_dies(always_dies)()
    # what nbval's RunningKernel calls is the wrapper, wrapped once
    assert not hasattr(nbval.kernel.start_new_kernel.wrapped, "wrapped")


def test_chapter_6s_own_check_against_transformers_passes_on_the_solution():
    # Chapter 6's notebook compares the student's BertModel with transformers' in a cell it skips
    # while grading, so the grading test never runs it: the solution's set-up and solution cells,
    # then that cell, outside any grading (what nbval ran when CI ran solutions/).
    from nbclient import NotebookClient

    path = SOLUTIONS / "06-bert" / "bert.ipynb"
    notebook = nbformat.read(path, as_version=4)
    check = next(i for i, cell in enumerate(notebook.cells) if "def compare_with_transformers" in cell.source)
    notebook.cells = [cell for cell in notebook.cells[:check] if cell.cell_type == "code"
                      and not cell.metadata.get("nbgrader", {}).get("grade")] + [notebook.cells[check]]
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    printed = "".join(output.get("text", "") for output in notebook.cells[-1].outputs)
    assert "they match" in printed, printed
