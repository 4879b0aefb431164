"""Chapter 4's exercise through the real grading command: each part handed in blank costs only its own points.

Its classic mistakes and hostile submissions are graded in test_autograder_hostile.py and
test_autograder_mutants.py; here the shared chapter checks run with no mistake of their own.
"""
from __future__ import annotations

from chapter_grading import ChapterGrading


class TestAttentionExercise(ChapterGrading):
    ASSIGNMENT, NOTEBOOK = "04-attention", "attention"
    AUTO_POINTS = 17.0
    MISTAKES: dict = {}
