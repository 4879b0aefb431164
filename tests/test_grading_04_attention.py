"""Chapter 4's exercise through the real grading command: each part handed in blank costs only its own points,
and the classic mistakes of the training part (part 7) cost that part's hidden points.

Its classic mistakes in the attention parts and hostile submissions are graded in test_autograder_hostile.py
and test_autograder_mutants.py.
"""
from __future__ import annotations

from chapter_grading import ChapterGrading

TRAIN = "masked_char_model"


class TestAttentionExercise(ChapterGrading):
    ASSIGNMENT, NOTEBOOK = "04-attention", "attention"
    AUTO_POINTS = 20.0
    # Part 7 trains an encoder: it runs only in the hand-ins that carry its own entries.
    COSTLY = (TRAIN,)
    # student id -> (the part it breaks, its score in that part, edits to the solution)
    MISTAKES = {
        # Training for a target (part 7): the grader scores the trained weights itself.
        "train-never-clears-gradients": (TRAIN, 1.0, {TRAIN: [("        optimizer.zero_grad()\n", "")]}),
        "train-ignores-lr": (TRAIN, 1.0, {TRAIN: [("torch.optim.Adam(model.parameters(), lr=lr)",
                                                   "torch.optim.Adam(model.parameters())")]}),
    }
