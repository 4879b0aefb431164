"""Grading a chapter's exercise on a class of known mistakes, shared by the per-chapter tests.

A chapter test names its classic mistakes as edits to the instructor's solution
(``autograder.handins.solved``); the class is graded once by the real command,
and every mistake must cost exactly the points it is expected to cost, in its
own part, and nothing anywhere else.  A part is a solution cell together with
the graded test cells that follow it.
"""
from __future__ import annotations

import csv
from pathlib import Path

import nbformat
import pytest

from autograder.course import EXERCISES, SOLUTIONS
from autograder.handins import solved, write
from conftest import run_autograder


def parts_of(assignment: str, notebook: str) -> dict[str, tuple[str, ...]]:
    """Solution cell id -> the grade ids of the auto-graded test cells after it (up to the next part)."""
    parts: dict[str, list[str]] = {}
    current = None
    for cell in nbformat.read(SOLUTIONS / assignment / f"{notebook}.ipynb", as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":
            current = meta["grade_id"]
            parts[current] = []
        elif meta.get("grade") and cell.cell_type == "code":
            assert current is not None, f"{assignment}/{notebook}: test cell {meta['grade_id']} comes before any part"
            parts[current].append(meta["grade_id"])
    return {part: tuple(cells) for part, cells in parts.items()}


def read_part_scores(out: Path, parts: dict[str, tuple[str, ...]]) -> dict[str, dict[str, list[float]]]:
    """student -> part -> [score, max], summed over the part's graded cells, from ``out/parts.csv``."""
    part_of = {cell: part for part, cells in parts.items() for cell in cells}
    scores: dict[str, dict[str, list[float]]] = {}
    with open(out / "parts.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["part"] not in part_of:  # a written answer, graded by hand
                continue
            entry = scores.setdefault(row["student_id"], {}).setdefault(part_of[row["part"]], [0.0, 0.0])
            entry[0] += float(row["score"])
            entry[1] += float(row["max_score"])
    return scores


def blank_student(part: str) -> str:
    return f"blank-{part}"


def grade_mistakes(assignment: str, notebook: str, mistakes: dict, folder: Path, variants: dict | None = None):
    """Grade the solution, the untouched exercise and one student per mistake; return the part scores.

    ``mistakes``: student id -> (part, expected score in that part, edits to the solution).
    ``variants``: student id -> edits that keep the solution correct (other ways to write it).
    Every part is also handed in blank once (the exercise's stub, which raises), beside a
    solution of every other part: a later part's tests must not fail because of it.
    """
    submissions, out = folder / "submissions", folder / "out"
    write(solved(assignment, notebook), submissions / "solution" / assignment, notebook)
    exercise = nbformat.read(EXERCISES / assignment / f"{notebook}.ipynb", as_version=4)
    write(exercise, submissions / "untouched" / assignment, notebook)
    for student, (_, _, edits) in mistakes.items():
        write(solved(assignment, notebook, edits, answers=False), submissions / student / assignment, notebook)
    for student, edits in (variants or {}).items():
        write(solved(assignment, notebook, edits, answers=False), submissions / student / assignment, notebook)
    stubs = {cell.metadata["nbgrader"]["grade_id"]: cell.source for cell in exercise.cells
             if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution")}
    for part in parts_of(assignment, notebook):
        write(solved(assignment, notebook, replace={part: stubs[part]}, answers=False),
              submissions / blank_student(part) / assignment, notebook)
    result = run_autograder("grade", assignment, "--submissions", str(submissions), "--out", str(out))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return read_part_scores(out, parts_of(assignment, notebook))


def check_mistake(scores: dict, student: str, broken: str, expected: float) -> None:
    """``student`` scores ``expected`` in part ``broken`` (less than its maximum) and full marks elsewhere."""
    assert broken in scores[student], f"{broken} is not a part: {sorted(scores[student])}"
    for part, (score, maximum) in scores[student].items():
        if part == broken:
            assert score == expected, f"{student}: {part} scored {score} of {maximum}, expected {expected}"
            assert score < maximum
        else:
            assert score == maximum, f"{student}: {part} lost points ({score} of {maximum}) for a mistake in {broken}"


class ChapterGrading:
    """The tests every chapter's exercise must pass, for a subclass that names its assignment and
    mistakes (``MISTAKES``: student id -> (part, expected score there, edits)).  ``conftest.py``
    parametrizes ``student`` over the subclass's mistakes."""

    ASSIGNMENT: str
    NOTEBOOK: str
    AUTO_POINTS: float
    MISTAKES: dict
    VARIANTS: dict = {}  # student id -> edits that keep the solution correct: full marks

    @pytest.fixture(scope="class")
    @classmethod
    def scores(cls, tmp_path_factory):
        return grade_mistakes(cls.ASSIGNMENT, cls.NOTEBOOK, cls.MISTAKES, tmp_path_factory.mktemp(cls.ASSIGNMENT),
                              cls.VARIANTS)

    def test_a_blank_part_costs_its_own_points_and_nothing_else(self, scores):
        # One crash in an earlier part must not cost a point of a later one (the notebook promises it).
        problems = []
        for part in parts_of(self.ASSIGNMENT, self.NOTEBOOK):
            try:
                check_mistake(scores, blank_student(part), part, 0.0)
            except AssertionError as error:
                problems.append(str(error).splitlines()[0])
        assert not problems, "\n".join(problems)

    def test_correct_variants_keep_every_point(self, scores):
        for student in self.VARIANTS:
            lost = {part: s for part, s in scores[student].items() if s[0] != s[1]}
            assert not lost, f"{student}: a correct way to write it lost points in {lost}"

    def test_the_solution_gets_every_automatic_point(self, scores):
        assert sorted(scores["solution"]) == sorted(parts_of(self.ASSIGNMENT, self.NOTEBOOK))
        assert all(score == maximum for score, maximum in scores["solution"].values())
        assert sum(score for score, _ in scores["solution"].values()) == self.AUTO_POINTS

    def test_the_untouched_exercise_scores_zero(self, scores):
        assert all(score == 0.0 for score, _ in scores["untouched"].values())

    def test_each_mistake_costs_its_own_part_and_nothing_else(self, scores, student):
        broken, expected, _ = self.MISTAKES[student]
        check_mistake(scores, student, broken, expected)
