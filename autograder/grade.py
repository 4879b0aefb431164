"""Grade a class: ``python -m autograder grade ASSIGNMENT --submissions DIR --out DIR``.

Grading is an ordered list of small steps (:data:`STEPS`), each a function of
the :class:`GradingRun` it advances, in the spirit of nbgrader's own
preprocessors.  nbgrader does the grading proper; the steps around it check
the input, keep the submissions untouched, and publish the results only once
they are complete:

- everything is built in a staging folder inside ``--out`` and moved into
  place at the end, so a crash leaves the previous results (or nothing),
  never a half-written gradebook;
- submissions are copied, never moved or edited, and their hashes are
  checked again after grading;
- every problem is logged with the student, the notebook and the cause, and
  the submissions that need a human look are flagged in the log and the summary;
- every kernel runs in a sandbox (:mod:`autograder.sandbox`): no network, no
  access to the solutions, the gradebook or other submissions, limits on
  time, memory, processes and output; what the machine cannot provide is
  logged as a missing protection;
- scores come from the grader: each test cell's checks are compared with the
  instructor's solution outside the student's kernel (:mod:`autograder.verdicts`).

Output (``--out``)::

    grades.csv           nbgrader's export: one row per student
    parts.csv            one row per student and graded cell
    grading.log          what happened, student by student; NEEDS REVIEW lines
    feedback/STUDENT/ASSIGNMENT/*.html
    course/              the nbgrader course directory: gradebook.db, nbgrader_config.py,
                         source/, release/, submitted/, autograded/, feedback/
"""
from __future__ import annotations

import csv
import hashlib
import json
import logging
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from autograder import sandbox
from autograder.course import COURSE_ID, SOLUTIONS, CourseError, gradebook_url, nbgrader_config, source_notebooks
from autograder.generate import IGNORED, run_generate_assignment

log = logging.getLogger("autograder")

# nbgrader puts student ids in paths and in the gradebook: keep them boring.
STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}$")
PUBLISHED = ("course", "feedback", "grades.csv", "parts.csv")


@dataclass
class Submission:
    """One student's hand-in for the assignment, and what became of it."""

    student: str
    folder: Path
    notebooks: list[Path] = field(default_factory=list)
    status: str = "pending"  # pending -> graded | failed | missing
    problems: list[str] = field(default_factory=list)
    needs_review: bool = False
    score: float = 0.0
    max_score: float = 0.0
    seconds: float = 0.0

    def flag(self, problem: str, *, review: bool = True) -> None:
        self.problems.append(problem)
        self.needs_review = self.needs_review or review
        (log.warning if review else log.info)("%s: %s", self.student, problem)


@dataclass
class GradingRun:
    """The state that the grading steps share."""

    assignment: str
    submissions_dir: Path
    out: Path
    timeout: int = 60
    notebook_timeout: int = 600
    replace: bool = False
    sandbox_mode: str = "auto"
    limits: sandbox.Limits = field(default_factory=sandbox.Limits)
    drop_user: bool = True
    staging: Path | None = None
    submissions: list[Submission] = field(default_factory=list)
    hashes: dict[Path, str] = field(default_factory=dict)
    expected_notebooks: list[str] = field(default_factory=list)

    @property
    def course(self) -> Path:
        return self.staging / "course"

    @property
    def db_url(self) -> str:
        return gradebook_url(self.course)

    def config(self):
        return nbgrader_config(self.course, timeout=self.timeout, notebook_timeout=self.notebook_timeout)

    def sandbox_session(self, role: str, files: list[Path]):
        from autograder.execute import SandboxSession

        # Student code may read none of these: the solutions, every submission, every result.
        hide = [SOLUTIONS.resolve(), self.submissions_dir.resolve(), self.out.resolve(), _jupyter_runtime_dir()]
        return SandboxSession(mode=self.sandbox_mode, role=role, files=files, hide=hide, drop_user=self.drop_user,
                              limits=self.limits)

    def handed_in(self) -> list[Submission]:
        return [s for s in self.submissions if s.status != "missing"]


# --------------------------------------------------------------------- steps

def check_inputs(run: GradingRun) -> None:
    """The assignment exists, the submissions folder exists, and no earlier results would be lost."""
    run.expected_notebooks = [path.stem for path in source_notebooks(run.assignment)]
    if not run.submissions_dir.is_dir():
        raise CourseError(f"--submissions {run.submissions_dir}: no such folder")
    submissions, out = run.submissions_dir.resolve(), run.out.resolve()
    if out == submissions or submissions in out.parents or out in submissions.parents:
        raise CourseError(f"--out {run.out} and --submissions {run.submissions_dir} must not contain each other: "
                          "grading never writes next to the submissions")
    if (run.out / "course" / "gradebook.db").exists() and not run.replace:
        raise CourseError(
            f"{run.out / 'course' / 'gradebook.db'} already holds a graded class; grading again would replace it "
            "and any manual grades in it. Choose a new --out folder, or pass --replace to discard it."
        )


def set_up_sandbox(run: GradingRun) -> None:
    """Choose the strongest sandbox this machine allows, and say loudly what it cannot protect."""
    try:
        run.sandbox_mode = sandbox.probe(run.sandbox_mode)
    except ValueError as error:
        raise CourseError(str(error)) from None
    run.drop_user = run.sandbox_mode == "root" or (run.sandbox_mode == "none" and sandbox.can_drop_user(sandbox.SANDBOX_UID))
    log.info("sandbox: mode %s%s; limits: %s; cell %d s, notebook %d s", run.sandbox_mode,
             f", user id {sandbox.SANDBOX_UID}" if run.drop_user else "", run.limits, run.timeout,
             run.notebook_timeout)
    for missing in sandbox.missing_protections(run.sandbox_mode, run.drop_user):
        log.warning("SANDBOX PROTECTION MISSING: %s", missing)


def find_submissions(run: GradingRun) -> None:
    """One folder per student, ``DIR/STUDENT/ASSIGNMENT/*.ipynb``; anything else is logged and skipped."""
    for entry in sorted(run.submissions_dir.iterdir()):
        where = f"{run.submissions_dir}/{entry.name}"
        if entry.is_symlink():
            log.warning("%s: skipped, a link is not a student folder", where)
        elif not entry.is_dir():
            log.warning("%s: skipped, not a folder (expected one folder per student)", where)
        elif not STUDENT_ID.match(entry.name):
            log.warning("%s: skipped, %r is not a usable student id (letters, digits, _.@+-)", where, entry.name)
        else:
            run.submissions.append(_find_notebooks(run, Submission(entry.name, entry / run.assignment)))
    if not run.submissions:
        raise CourseError(f"--submissions {run.submissions_dir}: no student folders found "
                          f"(expected {run.submissions_dir}/STUDENT_ID/{run.assignment}/*.ipynb)")
    log.info("%d student folder(s) in %s", len(run.submissions), run.submissions_dir)


def _find_notebooks(run: GradingRun, submission: Submission) -> Submission:
    folder = submission.folder
    if folder.is_symlink() or not folder.is_dir():
        submission.status = "missing"
        submission.flag(f"no {run.assignment}/ folder: scored 0 as not handed in", review=False)
        return submission
    for name in run.expected_notebooks:
        path = folder / f"{name}.ipynb"
        if path.is_symlink():
            submission.flag(f"{path}: a link, not a notebook; scored 0")
        elif not path.is_file():
            submission.flag(f"{path}: missing; scored 0")
        elif problem := _unreadable(path):
            submission.flag(f"{path}: {problem}; scored 0")
        else:
            submission.notebooks.append(path)
    if not submission.notebooks:
        submission.status = "missing"
    return submission


def _unreadable(path: Path) -> str | None:
    """Why ``path`` is not a notebook nbgrader can read, or ``None``."""
    import nbformat

    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        return f"not UTF-8 text (byte {error.start})"
    try:
        notebook = nbformat.reads(text, as_version=4)
        nbformat.validate(notebook)
    except Exception as error:  # json and nbformat raise many kinds
        return f"not a valid notebook ({type(error).__name__}: {str(error).splitlines()[0][:200]})"
    return None


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files_of(run: GradingRun):
    """Every regular file in the submission folders, links not followed."""
    for submission in run.submissions:
        if submission.folder.is_dir() and not submission.folder.is_symlink():
            for folder, folders, files in os.walk(submission.folder):
                folders.sort()
                for name in sorted(files):
                    path = Path(folder) / name
                    if path.is_file() and not path.is_symlink():
                        yield path


def hash_submissions(run: GradingRun) -> None:
    """Record a hash of every submitted file, to prove afterwards that grading changed none."""
    run.hashes = {path: _sha256(path) for path in _files_of(run)}


def prepare_course(run: GradingRun) -> None:
    """A fresh nbgrader course directory in a staging folder inside ``--out``."""
    run.out.mkdir(parents=True, exist_ok=True)
    run.staging = run.out / f".staging-{time.strftime('%Y%m%d-%H%M%S')}-{id(run) % 10_000:04d}"
    run.staging.mkdir()
    shutil.copytree(SOLUTIONS / run.assignment, run.course / "source" / run.assignment, ignore=IGNORED)
    _write_course_config(run.course, run.timeout, run.notebook_timeout)


def _write_course_config(course: Path, timeout: int, notebook_timeout: int) -> None:
    # The same configuration as the grader's (one source: autograder.course.nbgrader_config),
    # computed from the file's own folder so that it still holds after the folder is moved.
    (course / "nbgrader_config.py").write_text(
        "# Written by `python -m autograder grade`: run nbgrader (formgrader, export,\n"
        "# generate_feedback) from this folder with the grader's own settings.\n"
        "from pathlib import Path\n\n"
        "from autograder.course import nbgrader_config\n\n"
        "c = get_config()  # noqa: F821\n"
        f"c.merge(nbgrader_config(Path(__file__).resolve().parent, timeout={timeout}, "
        f"notebook_timeout={notebook_timeout}))\n",
        encoding="utf-8",
    )


def register_assignment(run: GradingRun) -> None:
    """nbgrader's generate_assignment: records the cells, points and checksums in the gradebook."""
    run_generate_assignment(run.course, run.assignment)


def record_reference(run: GradingRun) -> None:
    """Run the solution once in the sandbox; its check records are what students are compared with."""
    from autograder.execute import SandboxedExecute
    from autograder.verdicts import reference_records

    import nbformat

    folder = run.course / "reference"
    folder.mkdir()
    for path in sorted((run.course / "source" / run.assignment).glob("*.ipynb")):
        notebook = nbformat.read(str(path), as_version=4)
        session = run.sandbox_session("reference", [])
        with session as kernel_config:
            config = run.config()
            config.merge(kernel_config)
            try:
                executed, _ = SandboxedExecute(config=config).preprocess(notebook,
                                                                         {"metadata": {"path": str(path.parent)}})
            except Exception as error:
                raise CourseError(
                    f"the sandbox (mode {run.sandbox_mode}) could not run the solution {path.name}: {error}\n"
                    f"kernel output:\n{session.console()[-3000:]}\n"
                    "If this machine cannot give that mode, choose another with --sandbox.") from None
        try:
            records = reference_records(executed)
        except ValueError as error:
            raise CourseError(f"{SOLUTIONS / run.assignment / path.name}: {error}") from None
        (folder / f"{path.stem}.json").write_text(json.dumps(records), encoding="utf-8")
        log.info("reference: %s, %d test cells, %d checks", path.name, len(records),
                 sum(len(r) for r in records.values()))


def collect_submissions(run: GradingRun) -> None:
    """Copy (never move) each student's notebooks into the course, and list every student in the gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(run.db_url, COURSE_ID) as gradebook:
        for submission in run.submissions:
            gradebook.update_or_create_student(submission.student)
            if submission.status == "missing":
                continue
            target = run.course / "submitted" / submission.student / run.assignment
            target.mkdir(parents=True)
            for notebook in submission.notebooks:
                shutil.copyfile(notebook, target / notebook.name)


def autograde(run: GradingRun) -> None:
    """nbgrader's autograde, one student at a time; a failure is logged and flagged, and grading goes on."""
    from nbgrader.apps import NbGraderAPI

    for submission in run.handed_in():
        start = time.perf_counter()
        submitted = run.course / "submitted" / submission.student / run.assignment
        with run.sandbox_session("student", sorted(submitted.glob("*.ipynb"))) as kernel_config:
            config = run.config()
            config.merge(kernel_config)
            result = NbGraderAPI(config=config).autograde(run.assignment, submission.student, force=True,
                                                          create=True)
        submission.seconds = time.perf_counter() - start
        if result["success"]:
            submission.status = "graded"
            _log_stopped_kernels(submission, result.get("log") or "")
        else:
            submission.status = "failed"
            reason = (result.get("error") or result.get("log") or "no message").strip().splitlines()[-1]
            submission.flag(f"{run.assignment}: nbgrader autograde failed ({reason})")
            log.debug("%s: nbgrader log:\n%s", submission.student, result.get("log", ""))
    _read_scores(run)


def _log_stopped_kernels(submission: Submission, nbgrader_log: str) -> None:
    """Say which notebooks stopped early (a kernel that died, a time limit): the score counts what ran."""
    for line in nbgrader_log.splitlines():
        if "Stopping the notebook:" in line:
            reason = line.split("Stopping the notebook:", 1)[1].strip()
            submission.flag(f"notebook stopped early, {reason}; the cells after it were not run", review=False)


def _jupyter_runtime_dir() -> Path:
    from jupyter_core.paths import jupyter_runtime_dir

    return Path(jupyter_runtime_dir()).resolve()


def _read_scores(run: GradingRun) -> None:
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(run.db_url, COURSE_ID) as gradebook:
        for submission in run.submissions:
            try:
                record = gradebook.find_submission(run.assignment, submission.student)
            except MissingEntry:
                submission.max_score = gradebook.find_assignment(run.assignment).max_score
                continue
            submission.score, submission.max_score = record.score, record.max_score
            if record.needs_manual_grade:
                submission.problems.append("written answers wait for manual grading")


def generate_feedback(run: GradingRun) -> None:
    """nbgrader's feedback (HTML, hidden tests removed) for every graded student."""
    from nbgrader.apps import NbGraderAPI

    api = NbGraderAPI(config=run.config())
    for submission in (s for s in run.submissions if s.status == "graded"):
        result = api.generate_feedback(run.assignment, submission.student, force=True)
        if not result["success"]:
            submission.flag("feedback could not be generated; see the log")
            log.debug("%s: nbgrader log:\n%s", submission.student, result.get("log", ""))
    feedback = run.course / "feedback"
    if feedback.exists():
        shutil.copytree(feedback, run.staging / "feedback")
    else:
        (run.staging / "feedback").mkdir()


def export_grades(run: GradingRun) -> None:
    """``grades.csv`` (nbgrader's CSV export) and ``parts.csv`` (one row per graded cell)."""
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.plugins import CsvExportPlugin

    with Gradebook(run.db_url, COURSE_ID) as gradebook:
        CsvExportPlugin(to=str(run.staging / "grades.csv"), assignment=[run.assignment]).export(gradebook)
        with open(run.staging / "parts.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["student_id", "assignment", "notebook", "part", "score", "max_score",
                             "needs_manual_grade"])
            for submission in run.submissions:
                try:
                    record = gradebook.find_submission(run.assignment, submission.student)
                except MissingEntry:
                    continue
                for notebook in record.notebooks:
                    for grade in sorted(notebook.grades, key=lambda g: g.name):
                        writer.writerow([submission.student, run.assignment, notebook.name, grade.name,
                                         grade.score, grade.max_score, grade.needs_manual_grade])


def check_submissions_unchanged(run: GradingRun) -> None:
    """Every submitted file still has the hash it had before grading."""
    now = {path: _sha256(path) for path in _files_of(run)}
    changed = sorted(str(p) for p in set(run.hashes) | set(now) if run.hashes.get(p) != now.get(p))
    if changed:
        raise CourseError("submissions changed during grading (nothing was published): " + ", ".join(changed))


def publish(run: GradingRun) -> None:
    """Move the complete results from the staging folder into ``--out``, replacing earlier ones."""
    for name in PUBLISHED:
        target = run.out / name
        previous = run.out / f".previous-{name}"
        if previous.exists():
            _remove(previous)
        if target.exists():
            target.rename(previous)
        (run.staging / name).rename(target)
        if previous.exists():
            _remove(previous)
    shutil.rmtree(run.staging)
    run.staging = None


def _remove(path: Path) -> None:
    shutil.rmtree(path) if path.is_dir() else path.unlink()


def summarize(run: GradingRun) -> None:
    """One line per student, then the counts and every submission that needs a human look."""
    for submission in run.submissions:
        notes = "; ".join(submission.problems)
        log.info("%-20s %-8s %5.1f / %4.1f  %5.1fs  %s", submission.student, submission.status,
                 submission.score, submission.max_score, submission.seconds, notes)
    counts = {status: sum(s.status == status for s in run.submissions) for status in ("graded", "failed", "missing")}
    log.info("%s: %d graded, %d failed, %d not handed in; results in %s", run.assignment,
             counts["graded"], counts["failed"], counts["missing"], run.out)
    for submission in run.submissions:
        if submission.needs_review:
            log.warning("NEEDS REVIEW %s: %s", submission.student, "; ".join(submission.problems))


STEPS: list[Callable[[GradingRun], None]] = [
    check_inputs,
    set_up_sandbox,
    find_submissions,
    hash_submissions,
    prepare_course,
    register_assignment,
    record_reference,
    collect_submissions,
    autograde,
    generate_feedback,
    export_grades,
    check_submissions_unchanged,
    publish,
    summarize,
]


def grade(assignment: str, submissions: Path, out: Path, *, timeout: int = 60, notebook_timeout: int = 600,
          replace: bool = False, sandbox_mode: str = "auto", limits: sandbox.Limits | None = None) -> GradingRun:
    """Run :data:`STEPS` in order; on any error the staging folder is removed and nothing is published."""
    run = GradingRun(assignment=assignment, submissions_dir=Path(submissions), out=Path(out),
                     timeout=timeout, notebook_timeout=notebook_timeout, replace=replace, sandbox_mode=sandbox_mode,
                     limits=limits or sandbox.Limits(cpu_seconds=notebook_timeout + 60))
    try:
        for step in STEPS:
            log.debug("step %s", step.__name__)
            step(run)
    finally:
        if run.staging is not None and run.staging.exists():
            shutil.rmtree(run.staging)
    return run
