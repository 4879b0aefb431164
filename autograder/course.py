"""Where things are, and how nbgrader is configured to find them.

nbgrader expects ``{root}/{step}/{student_id}/{assignment_id}/{notebook}.ipynb``.
The repository keeps the sources in ``solutions/`` and the student versions in
``exercises/``; grading runs in a course directory of its own (under the
grader's ``--out``) so that nothing it writes lands in the repository.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from traitlets.config import Config

REPO_ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO_ROOT / "solutions"
EXERCISES = REPO_ROOT / "exercises"

COURSE_ID = "nlpbook"

# The grading time limits, declared once (seconds): one cell, one whole notebook, and the CPU time
# a kernel may use beyond its notebook's wall-clock limit before the operating system stops it.
CELL_TIMEOUT, NOTEBOOK_TIMEOUT, CPU_GRACE = 60, 600, 60

# This repository's own course trains models in graded cells: about 10 s each in `quick` on two quiet
# cores, 45 s (chapter 1) to 2 minutes (chapters 5 and 7) in `standard`, and three to four times that
# when notebooks are graded side by side on a busy machine (chapter 1's took 44 s of `quick` so). Its
# cell limit follows the profile, as another course's nbgrader_config.py sets Execute.timeout.
REPOSITORY_CELL_TIMEOUT = {"quick": 180, "standard": 600, "full": 600}
# A whole notebook of chapters 5 and 6 runs two such cells, and the student's own training cells
# besides: in `standard`, graded side by side, more than nbgrader's 600 s.
REPOSITORY_NOTEBOOK_TIMEOUT = {"quick": 600, "standard": 1800, "full": 1800}

# An assignment id is what nbgrader accepts as a folder name: the course's chapters ("04-attention"),
# or any id an instructor brings ("ps1", "hw01", "lab_2"). One path component, no "+" (nbgrader
# refuses it), nothing hidden, no spaces at the ends.
ASSIGNMENT_PATTERN = re.compile(r"^(?! )[^./+\\\x00][^/+\\\x00]*(?<! )$")


class CourseError(Exception):
    """A problem with the instructor's input: it names the file and what is wrong."""


def check_own_folder(out: Path, mark: str, *, maker: str, unwritten: str, replaces: str,
                     ignore: tuple[str, ...] = ()) -> None:
    """``CourseError`` unless ``--out`` ``out`` is new, empty (but for the names in ``ignore``) or holds
    the folder ``mark``, which a ``maker`` (an earlier ``grade`` or ``check-tests``) left there: both
    replace what ``replaces`` says in their folder, and an instructor's own folder (an nbgrader
    course's root) may hold things of those names.  ``unwritten`` says who did not write them."""
    if out.exists() and not out.is_dir():
        raise CourseError(f"--out {out} is a file; give a folder")
    if not out.is_dir() or (out / mark).is_dir():
        return
    if foreign := sorted(entry.name for entry in out.iterdir() if entry.name not in ignore):
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise CourseError(f"--out {out} holds files that {unwritten} ({shown}); {replaces}. Give a new or empty "
                          f"folder, or one that an earlier {maker} filled.")


def first_line(error: Exception) -> str:
    """An exception's type and the first line of its message, for an error that quotes it."""
    return f"{error.__class__.__name__}: {(str(error).strip().splitlines() or [''])[0]}"


# nbgrader settings that change how a class is graded: every setting of these sections, and three
# of CourseDirectory (which files of a submission count). A course's nbgrader_config.py that sets
# one this grader does not follow (all but FOLLOWED) is told so when it is graded (Course.unfollowed).
GRADING_SECTIONS = ("ClearHiddenTests", "Execute", "ExecutePreprocessor", "Autograde", "AssignLatePenalties",
                    "LateSubmissionPlugin", "LimitOutput", "OverwriteCells", "SaveAutoGrades", "IgnorePattern")
GRADING_DIRECTORY_SETTINGS = ("ignore", "include", "max_file_size")
FOLLOWED = {"Execute.timeout", "ExecutePreprocessor.timeout", "ClearHiddenTests.begin_test_delimeter",
            "ClearHiddenTests.end_test_delimeter"}
# nbgrader settings that shape the student version: what counts as a solution or a hidden test and
# what replaces it. `generate`, and `grade` in all it does (its registration of the assignment, the
# verdicts and the feedback that must not quote hidden tests), follow a course's settings of these
# sections (Course.release_settings): a course that marks its hidden tests with its own delimiters
# must never have them released or quoted because the defaults did not see them. The sections that
# add or lock cells, or point at files of their own, are not followed, and generate says so.
RELEASE_SECTIONS = ("ClearSolutions", "ClearHiddenTests", "ClearMarkScheme")
UNFOLLOWED_RELEASE_SECTIONS = ("GenerateAssignment", "IncludeHeaderFooter", "LockCells", "ClearOutput",
                               "ComputeChecksums", "CheckCellMetadata")


@dataclass(frozen=True)
class Course:
    """An nbgrader course where it lives: ``ROOT/SOURCE/ASSIGNMENT/*.ipynb`` are the instructor's
    notebooks (solutions and hidden tests), ``ROOT/RELEASE/ASSIGNMENT/`` the student versions
    generated from them, ``ROOT/SUBMITTED/STUDENT/ASSIGNMENT/`` the hand-ins.

    This repository is one such course (:meth:`repository`: sources ``solutions/``, student versions
    ``exercises/``);
    :meth:`at` reads any other from its folder and its ``nbgrader_config.py``.
    """

    root: Path
    source_directory: str = "source"
    submitted_directory: str = "submitted"
    release_directory: str = "release"
    cell_timeout: int | None = None  # the course's own Execute.timeout, if it sets one
    notebook_timeout: int | None = None  # the course's own limit for a whole notebook, if it has one
    unfollowed: tuple[str, ...] = ()  # grading settings of its nbgrader_config.py this grader does not follow
    # (section, name, value) of each RELEASE_SECTIONS setting of its nbgrader_config.py, which generate follows
    release_settings: tuple[tuple[str, str, object], ...] = ()
    release_unfollowed: tuple[str, ...] = ()  # settings of UNFOLLOWED_RELEASE_SECTIONS, which generate names

    @classmethod
    def repository(cls) -> "Course":
        # Imported here: importing nlpbook imports PyTorch, which autograder.pool must not (it sets
        # the thread counts PyTorch reads once, when it loads).
        from nlpbook.profile import current_profile

        return cls(REPO_ROOT, source_directory="solutions", release_directory="exercises",
                   cell_timeout=REPOSITORY_CELL_TIMEOUT[current_profile()],
                   notebook_timeout=REPOSITORY_NOTEBOOK_TIMEOUT[current_profile()])

    @classmethod
    def at(cls, folder: Path) -> "Course":
        """The course in ``folder``, with the settings of its ``nbgrader_config.py`` if it has one."""
        folder = Path(folder).absolute()
        if not folder.is_dir():
            raise CourseError(f"--course {folder}: no such folder")
        config = _course_config(folder / "nbgrader_config.py")
        directory = config.get("CourseDirectory", {})
        timeout = config.get("Execute", {}).get("timeout", config.get("ExecutePreprocessor", {}).get("timeout"))
        grading = {f"{section}.{key}" for section in GRADING_SECTIONS for key in config.get(section, {})}
        grading |= {f"CourseDirectory.{key}" for key in directory if key in GRADING_DIRECTORY_SETTINGS}
        unfollowed = sorted(grading - FOLLOWED)
        folders = {name: directory.get(name, default) for name, default in (
            ("source_directory", "source"), ("submitted_directory", "submitted"), ("release_directory", "release"))}
        for name, value in folders.items():
            if not isinstance(value, str) or not ASSIGNMENT_PATTERN.match(value):
                raise CourseError(f"{folder / 'nbgrader_config.py'}: CourseDirectory.{name} = {value!r} is not "
                                  "a folder name inside the course")
        if timeout is not None and (not isinstance(timeout, int) or timeout < 1):
            raise CourseError(f"{folder / 'nbgrader_config.py'}: Execute.timeout = {timeout!r} is not a number "
                              "of seconds")
        release = tuple((section, key, value) for section in RELEASE_SECTIONS
                        for key, value in sorted(config.get(section, {}).items()))
        release_unfollowed = tuple(f"{section}.{key}" for section in UNFOLLOWED_RELEASE_SECTIONS
                                   for key in sorted(config.get(section, {})))
        return cls(folder, **folders, cell_timeout=timeout, unfollowed=tuple(unfollowed),
                   release_settings=release, release_unfollowed=release_unfollowed)

    @property
    def sources(self) -> Path:
        return self.root / self.source_directory

    @property
    def release(self) -> Path:
        return self.root / self.release_directory

    @property
    def submitted(self) -> Path:
        return self.root / self.submitted_directory

    @property
    def private(self) -> list[Path]:
        """What student kernels must never see: the sources (solutions and hidden tests), the
        hand-ins, and what nbgrader itself wrote there (graded notebooks with their hidden tests,
        feedback, the gradebook). Not the whole folder: it may hold the Python the kernels run."""
        if self.root == REPO_ROOT:
            return [self.sources]
        return [self.sources, self.submitted, *(self.root / name for name in ("autograded", "feedback",
                                                                               "gradebook.db"))]

    def assignments(self) -> list[str]:
        """Every assignment id that has source notebooks."""
        if not self.sources.is_dir():
            return []
        return sorted(path.name for path in self.sources.iterdir()
                      if path.is_dir() and ASSIGNMENT_PATTERN.match(path.name) and any(path.glob("*.ipynb")))

    def folder(self, assignment: str) -> Path:
        """The source folder of ``assignment``; a clear error when it holds no notebooks."""
        self.source_notebooks(assignment)
        return self.sources / assignment

    def source_notebooks(self, assignment: str) -> list[Path]:
        """The nbgrader source notebooks of ``assignment``; a clear error when there are none."""
        if not ASSIGNMENT_PATTERN.match(assignment):
            raise CourseError(
                f"{assignment!r} is not an assignment id: expected the name of a folder in {self.sources}, such "
                "as 04-attention or ps1 (one folder name, no '+', not starting with '.')"
            )
        folder = self.sources / assignment
        notebooks = sorted(folder.glob("*.ipynb"))
        if not notebooks:
            known = ", ".join(self.assignments()) or "none"
            raise CourseError(f"{folder} holds no source notebooks (known assignments: {known})")
        return notebooks


def _course_config(path: Path) -> dict:
    """The settings of a course's ``nbgrader_config.py`` (run as nbgrader runs it), or ``{}``."""
    if not path.is_file():
        return {}
    from traitlets.config.loader import PyFileConfigLoader

    try:
        return PyFileConfigLoader(path.name, path=str(path.parent)).load_config()
    except Exception as error:  # noqa: BLE001 - the instructor's file: say which and why
        raise CourseError(f"{path}: could not be read as nbgrader reads it ({type(error).__name__}: "
                          f"{error})") from None


def assignments() -> list[str]:
    """Every assignment of this repository's own course."""
    return Course.repository().assignments()


# What feedback shows of the outputs of students' code (cli --feedback-outputs, preprocessors.WithholdLateOutputs).
FEEDBACK_OUTPUTS = ("all", "before-hidden-tests")


def nbgrader_config(root: Path, *, timeout: int = CELL_TIMEOUT, notebook_timeout: int = NOTEBOOK_TIMEOUT,
                    release_settings: tuple = (), feedback_outputs: str = "all") -> Config:
    """The nbgrader configuration for a course directory at ``root``.

    ``timeout`` is the limit in seconds for one cell when grading, ``notebook_timeout``
    for a whole notebook.  The solution's check records live in ``root/reference``.
    ``release_settings`` are the course's own (section, name, value) for the preprocessors that
    clear solutions, hidden tests and mark schemes (``Course.release_settings``).
    ``feedback_outputs`` is ``all`` or ``before-hidden-tests`` (:class:`autograder.preprocessors.WithholdLateOutputs`).
    """
    # Imported here so that `import autograder.course` stays light.
    from autograder import gradebook
    from autograder.feedback import FeedbackExporter
    from autograder.preprocessors import autograde_preprocessors, feedback_preprocessors, sanitize_preprocessors

    config = Config()
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.course_id = COURSE_ID
    config.CourseDirectory.db_url = gradebook.url(root)
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
    config.WithholdLateOutputs.enabled = feedback_outputs == "before-hidden-tests"
    config.merge(release_config(release_settings))
    return config


def release_config(release_settings: tuple) -> Config:
    """The course's own (section, name, value) settings of :data:`RELEASE_SECTIONS` as a configuration."""
    config = Config()
    for section, name, value in release_settings:
        config[section][name] = value
    return config
