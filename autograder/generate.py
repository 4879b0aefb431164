"""Regenerate the student notebooks (``exercises/``) from the sources (``solutions/``), or those of
any nbgrader course (its ``release/`` from its ``source/``).

nbgrader's own ``generate_assignment`` does the work: it replaces the code
between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` with a stub, removes
``### BEGIN HIDDEN TESTS`` blocks, locks the test cells and clears outputs.
It runs in a throw-away course directory so that its gradebook never lands
in the repository.
"""
from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path

from autograder import gradebook
from autograder.course import Course, CourseError, nbgrader_config

log = logging.getLogger("autograder")

IGNORED = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "*.pyc")


def run_generate_assignment(root: Path, assignment: str, origin: Path | None = None,
                            release_settings: tuple = ()) -> None:
    """Run nbgrader's generate_assignment in the course directory ``root``.

    Reads ``root/source/ASSIGNMENT``; writes ``root/release/ASSIGNMENT`` and
    records the assignment, its cells and their checksums in the gradebook.  ``origin``, the
    instructor's folder the sources were copied from, is what an error names.
    ``release_settings`` are the course's own (section, name, value) for the preprocessors that
    clear solutions, hidden tests and mark schemes (``Course.release_settings``).
    """
    from nbgrader.apps import NbGraderAPI

    gradebook.create(gradebook.url(root))
    api = NbGraderAPI(config=nbgrader_config(root, release_settings=release_settings))
    result = api.generate_assignment(assignment, force=True, create=True)
    if not result["success"]:
        raise CourseError(
            f"nbgrader generate_assignment failed for {origin or root / 'source' / assignment}:\n"
            f"{result.get('log', '')}\n{result.get('error', '')}"
        )


def replace_directory(new: Path, target: Path) -> None:
    """Put a copy of ``new`` at ``target``, replacing what was there only once the copy is complete."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        shutil.copytree(new, staging, dirs_exist_ok=True, ignore=IGNORED)
        previous = target.with_name(f".{target.name}-previous")
        if previous.exists():
            shutil.rmtree(previous)
        if target.exists():
            target.rename(previous)
        staging.rename(target)
        if previous.exists():
            shutil.rmtree(previous)
    finally:
        if staging.exists():
            shutil.rmtree(staging)


def generate_release(assignment: str, destination: Path | None = None, course: Course | None = None,
                     warn: bool = True) -> list[Path]:
    """Generate the student notebooks of ``assignment`` of ``course`` (this repository's by default)
    into ``destination``, by default the course's release folder (``exercises/ASSIGNMENT`` here).

    The course's own gradebook is never written: nbgrader runs in a throw-away copy.  ``warn``
    logs the test cells nbgrader's own rules will grade (a caller that grades next says it then).
    Returns the notebooks written.
    """
    course = course or Course.repository()
    source = course.folder(assignment)  # a clear error for an unknown assignment
    destination = destination or course.release / assignment
    with tempfile.TemporaryDirectory(prefix="nlpbook-generate-") as tmp:
        root = Path(tmp)
        shutil.copytree(source, root / "source" / assignment, ignore=IGNORED)
        run_generate_assignment(root, assignment, origin=source, release_settings=course.release_settings)
        replace_directory(root / "release" / assignment, destination)
    written = sorted(destination.glob("*.ipynb"))
    log.info("generated %d notebook(s) for %s into %s", len(written), assignment, destination)
    for setting in course.release_unfollowed:
        log.warning("%s/nbgrader_config.py sets %s, which generate does not follow: check the student "
                    "version in %s, or generate it with nbgrader itself", course.root, setting, destination)
    if warn:
        warn_about_weaker_tests(assignment, course)
    return written


def warn_about_weaker_tests(assignment: str, course: Course | None = None) -> list[str]:
    """Log, all at once, the test cells of ``assignment`` that nbgrader's own rules will grade."""
    import nbformat

    from autograder.verdicts import weaker_test_cells

    found = []
    for path in (course or Course.repository()).source_notebooks(assignment):
        cells = weaker_test_cells(nbformat.read(path, as_version=4))
        if cells:
            found.append(f"{path.name}: {', '.join(cells)}")
    if found:
        log.warning("WEAKER GRADING in %s: these test cells use plain asserts or no nlpbook.checks call, so "
                    "they are graded by nbgrader's own rules, which trust the student's kernel to report "
                    "its errors: %s", assignment, "; ".join(found))
    return found
