"""Build student submissions from the exercise notebook, the way a student would.

The notebooks come from this repository's course (``solutions/`` and ``exercises/``) unless
``sources`` and ``release`` name the folders of another course's assignments.

A submission starts as the generated exercise; each solution cell is filled in
with the instructor's solution (markers removed), then optionally edited by
exact string replacements, so every "mistake" is a known, small change that
must apply (an edit that does not match raises, so a test cannot silently
grade the correct solution instead of the mistake).
"""
from __future__ import annotations

import copy
from pathlib import Path

import nbformat

from autograder.course import EXERCISES, SOLUTIONS

MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


def load(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def solution_sources(assignment: str, notebook: str, sources: Path = SOLUTIONS) -> dict[str, str]:
    """The source of every solution cell of a source notebook, by cell id, without the markers."""
    source = load(sources / assignment / f"{notebook}.ipynb")
    sources = {}
    for cell in source.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            lines = [line for line in cell.source.split("\n") if line.strip() not in MARKERS]
            sources[cell.metadata["nbgrader"]["grade_id"]] = "\n".join(lines)
    return sources


def solved(assignment: str, notebook: str, edits: dict[str, list[tuple[str, str]]] | None = None,
           *, answers: bool = True, replace: dict[str, str] | None = None, sources: Path = SOLUTIONS,
           release: Path = EXERCISES) -> nbformat.NotebookNode:
    """The exercise with every solution cell filled in (``replace`` gives whole cells), then ``edits`` applied."""
    exercise = copy.deepcopy(load(release / assignment / f"{notebook}.ipynb"))
    solutions = {**solution_sources(assignment, notebook, sources), **(replace or {})}
    edits = dict(edits or {})
    for cell in exercise.cells:
        meta = cell.metadata.get("nbgrader", {})
        if not meta.get("solution"):
            continue
        grade_id = meta["grade_id"]
        if cell.cell_type == "code" or answers:
            cell.source = solutions[grade_id]
        for old, new in edits.pop(grade_id, []):
            if old not in cell.source:
                raise ValueError(f"edit for cell {grade_id!r} does not apply: {old!r} not found")
            cell.source = cell.source.replace(old, new)
    if edits:
        raise ValueError(f"edits for unknown cells: {sorted(edits)}")
    return exercise


def write(notebook: nbformat.NotebookNode, folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.ipynb"
    nbformat.write(notebook, path)
    return path
