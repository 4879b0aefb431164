"""Shared test helpers. The suite runs in the quick profile unless told otherwise."""
from __future__ import annotations

import os
import subprocess
import sys

from autograder.course import REPO_ROOT as REPO

# Set before any notebook kernel starts (nbval, nbclient, nbgrader inherit it).
os.environ.setdefault("NLPBOOK_PROFILE", "quick")
os.environ.setdefault("NLPBOOK_PROGRESS", "0")


def run_autograder(*args: str, timeout: int = 1800) -> subprocess.CompletedProcess:
    """Run ``python -m autograder ARGS`` the way an instructor does, and capture what it prints."""
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


def pytest_generate_tests(metafunc):
    # A chapter's grading tests (chapter_grading.ChapterGrading) run once per classic mistake.
    mistakes = getattr(metafunc.cls, "MISTAKES", None)
    if mistakes is not None and "student" in metafunc.fixturenames:
        metafunc.parametrize("student", sorted(mistakes))
