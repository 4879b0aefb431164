"""Shared test helpers. The suite runs in the quick profile unless told otherwise."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import REPO_ROOT as REPO

JUPYTER_BOOK = Path(sys.executable).with_name("jupyter-book")
# Text that only the instructors' notebooks hold: no page of the built book may show it.
SOLUTION_MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "MARK SCHEME", "_reference_attention")

# nbgrader's example course and fixtures are inputs to the grading tests, not notebooks to run:
# several fail on purpose (students who did not answer).
collect_ignore = ["nbgrader_course"]

# Set before any notebook kernel starts (nbval, nbclient, nbgrader inherit it).
os.environ.setdefault("NLPBOOK_PROFILE", "quick")
os.environ.setdefault("NLPBOOK_PROGRESS", "0")


def run_autograder(*args: str, timeout: int = 1800) -> subprocess.CompletedProcess:
    """Run ``python -m autograder ARGS`` the way an instructor does, and capture what it prints."""
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


def repository_copy(destination: Path) -> Path:
    """A copy of what grading needs from this repository (packages, solutions, exercises) at ``destination``.

    ``python -m autograder`` run from the copy grades from the copy's ``solutions/``, so a
    test can add an assignment or plant a marker without touching the real repository.
    """
    import shutil

    for folder in ("autograder", "nlpbook", "solutions", "exercises"):
        shutil.copytree(REPO / folder, destination / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return destination


def pytest_generate_tests(metafunc):
    # A chapter's grading tests (chapter_grading.ChapterGrading) run once per classic mistake.
    mistakes = getattr(metafunc.cls, "MISTAKES", None)
    if mistakes is not None and "student" in metafunc.fixturenames:
        metafunc.parametrize("student", sorted(mistakes))


def toc_files() -> list[str]:
    """Every page of the book, as paths without suffix (``book/04-attention/index``), in table-of-contents order."""
    import yaml

    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc["parts"]:
        for chapter in part["chapters"]:
            files.append(chapter["file"])
            files.extend(section["file"] for section in chapter.get("sections", []))
    return files


def notebook_pages() -> list[str]:
    """The pages with code: MyST notebooks (a kernelspec in their header), not the chapter openers,
    the exercise pages or the preface."""
    return [name for name in toc_files()
            if (page := REPO / f"{name}.md").exists() and "kernelspec:" in page.read_text()]


@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """The README's build command (plus -n) into a fresh folder: (the finished process, its output folder).

    One build per test session, shared by the build checks (test_book.py) and the browser
    test (test_book_browser.py); the folder also holds the execution cache, so a second
    builder (linkcheck) re-runs no page.
    """
    out = tmp_path_factory.mktemp("book")
    result = subprocess.run([str(JUPYTER_BOOK), "build", "-W", "-n", "--keep-going", "--path-output", str(out), str(REPO)],
                            capture_output=True, text=True, timeout=1800)
    return result, out
