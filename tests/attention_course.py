"""The grader's own test assignment: chapter 4's exercise without its graded training (part 7).

The grader's tests (a class of classic mistakes, a hostile class, grading at scale, the command
line) grade chapter 4's notebook dozens of times a run. Its part 7 trains a small encoder in its
hidden test (3 to 8 s a notebook in ``quick``), which would add minutes to those tests and test
nothing about the grader that parts 1 to 6 do not. They grade this course instead: an nbgrader
course (``source/`` and ``release/``) whose one assignment is chapter 4's source and student
notebooks with part 7's cells left out. It is written once per test process from the
repository's own notebooks, so it never falls behind them. Chapter 4's own grading test
(test_grading_04_attention.py) grades the whole notebook, training included.

Use ``solved`` and ``exercise`` for hand-ins and pass ``COURSE_ARGS`` to ``python -m autograder
grade``; the course's source notebook, which no student kernel may read, is ``SOURCE``.
"""
from __future__ import annotations

import atexit
import copy
import functools
import shutil
import tempfile
from pathlib import Path

import nbformat

from autograder import handins
from autograder.course import EXERCISES, SOLUTIONS

ASSIGNMENT, NOTEBOOK = "04-attention", "attention"
TRAINING_PART = "## Part 7"


def without_part(notebook: nbformat.NotebookNode, heading: str = TRAINING_PART) -> nbformat.NotebookNode:
    """``notebook`` without the part whose markdown heading starts with ``heading``: the cells from
    that heading up to the next part's heading."""
    starts = [i for i, cell in enumerate(notebook.cells)
              if cell.cell_type == "markdown" and cell.source.startswith("## Part")]
    first = next((i for i in starts if notebook.cells[i].source.startswith(heading)), None)
    if first is None:
        raise ValueError(f"{NOTEBOOK}.ipynb has no part headed {heading!r}")
    end = next((i for i in starts if i > first), len(notebook.cells))
    trimmed = copy.deepcopy(notebook)
    del trimmed.cells[first:end]
    return trimmed


def _write_course() -> Path:
    root = Path(tempfile.mkdtemp(prefix="attention-course-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    for folder, origin in (("source", SOLUTIONS), ("release", EXERCISES)):
        notebook = nbformat.read(origin / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
        handins.write(without_part(notebook), root / folder / ASSIGNMENT, NOTEBOOK)
    return root


COURSE = _write_course()
COURSE_ARGS = ("--course", str(COURSE))
SOURCE = COURSE / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
RELEASE = COURSE / "release" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"

# handins.solved on this course: solved(ASSIGNMENT, NOTEBOOK, edits, ...)
solved = functools.partial(handins.solved, sources=COURSE / "source", release=COURSE / "release")


def exercise() -> nbformat.NotebookNode:
    """The student notebook as released, untouched."""
    return nbformat.read(RELEASE, as_version=4)
