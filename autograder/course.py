"""Where things are, and how nbgrader is configured to find them.

nbgrader expects ``{root}/{step}/{student_id}/{assignment_id}/{notebook}.ipynb``.
The repository keeps the sources in ``solutions/`` and the student versions in
``exercises/``; grading runs in a course directory of its own (under the
grader's ``--out``) so that nothing it writes lands in the repository.
"""
from __future__ import annotations

import re
from pathlib import Path

from traitlets.config import Config

REPO_ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO_ROOT / "solutions"
EXERCISES = REPO_ROOT / "exercises"

COURSE_ID = "nlpbook"

# An assignment id is what nbgrader accepts as a folder name: the course's chapters ("04-attention"),
# or any id an instructor brings ("ps1", "hw01", "lab_2"). One path component, no "+" (nbgrader
# refuses it), nothing hidden, no spaces at the ends.
ASSIGNMENT_PATTERN = re.compile(r"^(?! )[^./+\\\x00][^/+\\\x00]*(?<! )$")


class CourseError(Exception):
    """A problem with the instructor's input: it names the file and what is wrong."""


def assignments() -> list[str]:
    """Every assignment id that has source notebooks in ``solutions/``."""
    return sorted(
        path.name for path in SOLUTIONS.iterdir()
        if path.is_dir() and ASSIGNMENT_PATTERN.match(path.name) and any(path.glob("*.ipynb"))
    )


def source_notebooks(assignment: str) -> list[Path]:
    """The nbgrader source notebooks of ``assignment``; a clear error when there are none."""
    if not ASSIGNMENT_PATTERN.match(assignment):
        raise CourseError(
            f"{assignment!r} is not an assignment id: expected the name of a folder in {SOLUTIONS}, such as "
            "04-attention or ps1 (one folder name, no '+', not starting with '.')"
        )
    folder = SOLUTIONS / assignment
    notebooks = sorted(folder.glob("*.ipynb"))
    if not notebooks:
        known = ", ".join(assignments()) or "none"
        raise CourseError(f"{folder} holds no source notebooks (known assignments: {known})")
    return notebooks


def gradebook_url(root: Path) -> str:
    """The gradebook of the course directory ``root``: SQLite, where nbgrader puts it by default."""
    return f"sqlite:///{root / 'gradebook.db'}"


def create_gradebook(url: str) -> None:
    """Give the database at ``url`` nbgrader's tables, stamped with the newest migration, unless it has tables.

    nbgrader's ``Gradebook`` does the same when it opens an empty database, but it learns
    the migration's name by running the ``alembic`` command: a new Python that imports
    alembic and nbgrader again, 4.4 s on a 2-core machine, and an error when the
    environment's bin folder is not on PATH.  Here the name is read from nbgrader's own
    migration scripts, in this process; ``Gradebook`` then finds its tables and goes on.
    """
    import sqlalchemy
    from alembic.script import ScriptDirectory
    from nbgrader.api import Base
    from nbgrader.dbutil import ALEMBIC_DIR

    engine = sqlalchemy.create_engine(url)
    try:
        with engine.begin() as connection:
            if sqlalchemy.inspect(connection).get_table_names():
                return
            Base.metadata.create_all(connection)
            connection.execute(sqlalchemy.text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
            connection.execute(sqlalchemy.text("INSERT INTO alembic_version (version_num) VALUES (:head)"),
                               {"head": ScriptDirectory(ALEMBIC_DIR).get_current_head()})
    finally:
        engine.dispose()


def nbgrader_config(root: Path, *, timeout: int = 60, notebook_timeout: int = 600) -> Config:
    """The nbgrader configuration for a course directory at ``root``.

    ``timeout`` is the limit in seconds for one cell when grading, ``notebook_timeout``
    for a whole notebook.  The solution's check records live in ``root/reference``.
    """
    # Imported here so that `import autograder.course` stays light.
    from autograder.feedback import FeedbackExporter
    from autograder.preprocessors import autograde_preprocessors, feedback_preprocessors, sanitize_preprocessors

    config = Config()
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.course_id = COURSE_ID
    config.CourseDirectory.db_url = gradebook_url(root)
    config.CourseDirectory.source_directory = "source"
    config.CourseDirectory.release_directory = "release"
    config.CourseDirectory.submitted_directory = "submitted"
    config.CourseDirectory.autograded_directory = "autograded"
    config.CourseDirectory.feedback_directory = "feedback"
    config.Execute.timeout = timeout
    # A graded kernel is thrown away: kill it (and its namespace) at once instead of asking it to exit.
    config.Execute.shutdown_kernel = "immediate"
    config.SandboxedExecute.notebook_timeout = notebook_timeout
    config.TrustedVerdicts.reference_dir = str(root / "reference")
    # Students may delete a test cell; nbgrader puts it back from the gradebook.
    config.OverwriteCells.add_missing_cells = True
    config.Autograde.sanitize_preprocessors = sanitize_preprocessors()
    config.Autograde.autograde_preprocessors = autograde_preprocessors()
    # Feedback goes to students: it must never quote the hidden tests.
    config.GenerateFeedback.preprocessors = feedback_preprocessors()
    config.GenerateFeedback.exporter_class = FeedbackExporter
    return config
