"""exercises/ is generated from solutions/ and must match it; it holds no solution and no hidden test."""
from __future__ import annotations

import json

import nbformat
import pytest
from nbclient import NotebookClient

from autograder.course import EXERCISES, SOLUTIONS, assignments
from autograder.generate import generate_release, warn_about_weaker_tests
from autograder.handins import MARKERS, solution_sources

ASSIGNMENTS = assignments()


def test_every_chapter_with_sources_has_exercises():
    assert ASSIGNMENTS, "solutions/ holds no assignment"
    assert sorted(p.name for p in EXERCISES.iterdir() if p.is_dir()) == ASSIGNMENTS


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_exercises_are_what_generate_writes(assignment, tmp_path):
    fresh = generate_release(assignment, tmp_path / assignment)
    committed = sorted((EXERCISES / assignment).glob("*.ipynb"))
    assert [p.name for p in fresh] == [p.name for p in committed]
    for new, old in zip(fresh, committed):
        assert json.loads(new.read_text()) == json.loads(old.read_text()), (
            f"{old} is stale: run `python -m autograder generate {assignment}` and commit exercises/")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_test_cell_judges_through_nlpbook_checks(assignment):
    # The course's own tests are all trusted verdicts; nbgrader's plain rules are for imported ones.
    assert warn_about_weaker_tests(assignment) == []


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_sources_are_committed_without_outputs(assignment):
    for path in sorted((SOLUTIONS / assignment).glob("*.ipynb")) + sorted((EXERCISES / assignment).glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, f"{path}: cell {cell.id} has outputs"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_exercises_hold_no_solution_and_no_hidden_test(assignment):
    for path in sorted((EXERCISES / assignment).glob("*.ipynb")):
        text = path.read_text()
        for marker in (*MARKERS, "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS", "=== BEGIN MARK SCHEME ==="):
            assert marker not in text, f"{path} contains {marker!r}"
        solutions = solution_sources(assignment, path.stem)
        for cell in nbformat.read(path, as_version=4).cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("solution") and cell.cell_type == "code":
                assert "raise NotImplementedError()" in cell.source, f"{path}: cell {meta['grade_id']} has no stub"
                body = set(solutions[meta["grade_id"]].split("\n")) - set(cell.source.split("\n"))
                assert body, f"{path}: cell {meta['grade_id']} still holds its solution"
            elif meta.get("solution"):
                assert cell.source.strip() == "YOUR ANSWER HERE", f"{path}: answer {meta['grade_id']} is filled in"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_untouched_exercise_fails_only_at_its_stubs(assignment):
    for path in sorted((EXERCISES / assignment).glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        NotebookClient(notebook, timeout=120, kernel_name="python3", allow_errors=True).execute()
        for cell in notebook.cells:
            if cell.cell_type != "code":
                continue
            errors = [o for o in cell.outputs if o.output_type == "error"]
            meta = cell.metadata.get("nbgrader", {})
            is_test = meta.get("grade") or (meta.get("locked") and cell.source.lstrip().startswith("# Optional"))
            if errors:
                assert is_test, f"{path}: cell {cell.id} failed but is not a test: {errors[0].ename}"
                assert errors[0].ename == "NotImplementedError", f"{path}: cell {cell.id}: {errors[0].ename}"
            elif meta.get("grade") and _has_code(cell.source):
                pytest.fail(f"{path}: test cell {cell.id} passes on the untouched exercise")


def _has_code(source: str) -> bool:
    """False for the released hidden-test cells, which hold only a comment."""
    return any(line.strip() and not line.strip().startswith("#") for line in source.split("\n"))
