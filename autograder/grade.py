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
  instructor's solution outside the student's kernel (:mod:`autograder.verdicts`);
- students are graded in parallel by worker processes or a Dask cluster
  (:mod:`autograder.pool`, :mod:`autograder.jobs`); only this process writes
  the gradebook;
- every finished student is saved in ``--out/.work``: an interrupted run
  starts again where it stopped, and an unchanged class is not graded twice;
- the registered assignment and the solution's reference run depend only on the
  course, the grading code and the kernel's environment (profile, versions), so
  they are also kept in a cache shared by every ``--out`` folder
  (``$AUTOGRADER_CACHE``, by default ``~/.cache/nlpbook-autograder``; ``off``
  turns it off): grading the same assignment into a new folder runs the
  solution again only when one of those changed.

Output (``--out``)::

    grades.csv           nbgrader's export: one row per student
    parts.csv            one row per student and graded cell
    lms.csv              student id and total, for an LMS grade import
    grading.log          what happened, student by student; NEEDS REVIEW lines
    feedback/STUDENT/ASSIGNMENT/*.html
    course/              the nbgrader course directory: gradebook.db, nbgrader_config.py,
                         source/, release/, submitted/, autograded/, feedback/
    .work/               what a later run reuses: registered courses and finished students; and
                         published.json, the assignment and course whose results these are
"""
from __future__ import annotations

import csv
import dataclasses
import fcntl
import hashlib
import json
import logging
import os
import pickle
import re
import shutil
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from autograder import gradebook, jobs, sandbox
from autograder.course import (CELL_TIMEOUT, CPU_GRACE, NOTEBOOK_TIMEOUT, REPO_ROOT, Course, CourseError,
                               check_own_folder, first_line)
from autograder.generate import IGNORED, run_generate_assignment
from autograder.pool import thread_share

log = logging.getLogger("autograder")

# nbgrader puts student ids in paths and in the gradebook: keep them boring.
STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}$")
TIMESTAMP = "timestamp.txt"
PUBLISHED = ("course", "feedback", "grades.csv", "parts.csv", "lms.csv", "report.html")


@dataclass
class Submission:
    """One student's hand-in for the assignment, and what became of it."""

    student: str
    folder: Path
    notebooks: list[Path] = field(default_factory=list)
    timestamp: Path | None = None  # the submission's timestamp.txt, when nbgrader's collect left one
    status: str = "pending"  # pending -> graded | failed | missing
    problems: list[str] = field(default_factory=list)
    needs_review: bool = False
    score: float = 0.0
    max_score: float = 0.0
    seconds: float = 0.0
    peak_mb: int | None = None  # the most memory its kernel's processes held together, where measured

    def handed_in_files(self) -> list[Path]:
        """What is graded: the notebooks, and the timestamp nbgrader reads for due dates."""
        return [*self.notebooks, *([self.timestamp] if self.timestamp else [])]

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
    origin: Course = field(default_factory=Course.repository)  # the course the assignment comes from
    timeout: int = CELL_TIMEOUT
    notebook_timeout: int = NOTEBOOK_TIMEOUT
    replace: bool = False
    regrade: bool = False
    sandbox_mode: str = "auto"
    limits: sandbox.Limits = field(default_factory=sandbox.Limits)
    drop_user: bool = True
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    scheduler: str | None = None  # a Dask scheduler's address: grade on its workers
    db: str | None = None  # a PostgreSQL (or any SQLAlchemy) URL the gradebook is published to
    progress: bool = True
    feedback: bool = True  # write each student's feedback HTML (nbgrader's generate_feedback)
    feedback_outputs: str = "all"  # or "before-hidden-tests": see preprocessors.WithholdLateOutputs
    staging: Path | None = None
    submissions: list[Submission] = field(default_factory=list)
    hashes: dict[Path, str] = field(default_factory=dict)
    expected_notebooks: list[str] = field(default_factory=list)
    pool: object = None
    zygote: object = None
    lock: object = None
    course_key: str = ""
    duedate: str | None = None  # nbgrader's due date ("2026-03-01 17:00:00 Europe/Paris"); late is measured from it
    strict: bool = False  # refuse an assignment whose tests fail on its own solution
    failing_on_solution: dict[str, list[str]] = field(default_factory=dict)  # notebook -> failing test cells
    skipped: list[str] = field(default_factory=list)  # entries of --submissions that are not graded, and why

    @property
    def course(self) -> Path:
        return self.staging / "course"

    @property
    def db_url(self) -> str:
        return gradebook.url(self.course)

    @property
    def work(self) -> Path:
        """What later runs reuse: registered courses (``courses/KEY``) and finished students (``results/KEY``)."""
        return self.out / ".work"

    @property
    def kernel_env(self) -> dict[str, str]:
        """Added to every kernel's environment, here and on a cluster's workers alike. The profile
        (and the device, where set) that sized this run's time limits, its reference run and its
        saved results: a Dask worker started with another ``NLPBOOK_PROFILE`` would otherwise train
        the students' models at its own size and score them against this run's targets. And the
        cores: kernels side by side share them, one thread each unless the instructor says
        otherwise. And the device: the CPU, where the training targets' margins were measured and
        all that a sandbox's kernels can reach (it binds no GPU device); without a sandbox, the
        device ``NLPBOOK_DEVICE`` names, if the instructor names one."""
        from nlpbook.profile import PROFILE_VARIABLE, current_profile

        env = {PROFILE_VARIABLE: current_profile()}
        if self.sandbox_mode in sandbox.GPU_BLIND_MODES:
            env.update(NLPBOOK_DEVICE="cpu", CUDA_VISIBLE_DEVICES="")
        else:
            env["NLPBOOK_DEVICE"] = os.environ.get("NLPBOOK_DEVICE", "").strip() or "cpu"
        if "OMP_NUM_THREADS" not in os.environ:
            env.update(thread_share(self.workers))
        return env

    def settings(self) -> jobs.Settings:
        return jobs.Settings(mode=self.sandbox_mode, drop_user=self.drop_user, limits=self.limits,
                             timeout=self.timeout, notebook_timeout=self.notebook_timeout, feedback=self.feedback,
                             feedback_outputs=self.feedback_outputs,
                             hide=[str(p.resolve()) for p in (self.submissions_dir, self.out, *self.origin.private)],
                             env=self.kernel_env, release_settings=self.origin.release_settings,
                             zygote=self.zygote.path if self.zygote else "")

    def handed_in(self) -> list[Submission]:
        return [s for s in self.submissions if s.status != "missing"]


# --------------------------------------------------------------------- steps

def check_apart(out: Path, submissions_dir: Path) -> None:
    """``CourseError`` unless the output folder and the submissions are apart: grading never writes
    next to the submissions, so the command asks this before it makes ``out`` or its log."""
    submissions, resolved = submissions_dir.resolve(), out.resolve()
    if resolved == submissions or submissions in resolved.parents or resolved in submissions.parents:
        raise CourseError(f"--out {out} and --submissions {submissions_dir} must not contain each other: "
                          "grading never writes next to the submissions")


RUN_RECORD = "published.json"  # in --out/.work: the assignment and the course of the results published there


def check_out(out: Path) -> None:
    """``CourseError`` unless ``out`` is a new or empty folder or one that grading made (its ``.work``):
    publishing replaces ``course/``, ``feedback/``, ``grades.csv`` and the rest of :data:`PUBLISHED`
    there, which would take an instructor's own files of those names (an nbgrader course's root has
    two).  The command asks this before it makes ``out`` or its log, which is all it may hold."""
    check_own_folder(out, ".work", maker="grading run", unwritten="no grading run wrote", ignore=("grading.log",),
                     replaces=f"grading publishes {', '.join(PUBLISHED)} there and would replace what has those names")


def check_inputs(run: GradingRun) -> None:
    """The assignment and the submissions exist, ``--out`` is a grading folder that no other run uses
    and holds no other assignment's results, and no manual grade would be lost."""
    run.expected_notebooks = [path.stem for path in run.origin.source_notebooks(run.assignment)]
    if not run.submissions_dir.is_dir():
        raise CourseError(f"--submissions {run.submissions_dir}: no such folder")
    check_apart(run.out, run.submissions_dir)
    check_out(run.out)
    run.work.mkdir(parents=True, exist_ok=True)
    run.lock = open(run.work / "lock", "a")
    try:
        fcntl.flock(run.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        raise CourseError(f"{run.out}: another grading run is using this folder; wait for it to finish") from None
    finish_interrupted_publish(run.out)
    for stale in run.out.glob(".staging-*"):  # left by a run that was killed
        shutil.rmtree(stale, ignore_errors=True)
    if run.replace:
        return  # the instructor said to discard what is there
    record = _published_record(run.out)
    if record and record != _record_of(run):
        raise CourseError(
            f"{run.out} holds the results of {record['assignment']} of the course {record['course']}; a run "
            f"replaces the results in its folder. Grade each assignment into a folder of its own, such as "
            f"--out graded/{run.assignment}, or pass --replace to discard them.")
    for where in published_gradebooks(run):
        if others := gradebook.other_assignments(where, run.assignment):
            raise CourseError(
                f"{where.split('@')[-1]} holds the grades of {', '.join(others)}; a run grades one assignment and "
                f"publishes a gradebook of that one alone, which would drop them. Grade each assignment into a "
                f"folder (and database) of its own, such as --out graded/{run.assignment}, or pass --replace to "
                "discard them.")
        _refuse_manual_grades(where, "grading again would replace them")


def _record_of(run: GradingRun) -> dict[str, str]:
    return {"assignment": run.assignment, "course": str(run.origin.root.resolve())}


def _published_record(out: Path) -> dict[str, str] | None:
    """What :func:`publish` last wrote into ``out`` (None before any, or from a grader that kept no record:
    the check of the gradebooks then stands alone)."""
    try:
        record = json.loads((out / ".work" / RUN_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and {"assignment", "course"} <= set(record) else None


def published_gradebooks(run: GradingRun) -> list[str]:
    """The gradebooks a run's publishing replaces: ``--db``'s, and the one an earlier run left in
    ``--out`` (a run with ``--db`` into a folder that an earlier run without it filled replaces both)."""
    places = [run.db] if run.db else []
    if (run.out / "course" / "gradebook.db").is_file():
        places.append(gradebook.url(run.out / "course"))
    return places


def _refuse_manual_grades(where: str, why: str) -> None:
    gradebook.refuse_manual_entries(where, gradebook.manual_entries(where), why)


def check_no_grades_entered_meanwhile(run: GradingRun) -> None:
    """Just before publishing, the check of :func:`check_inputs` again: a teaching assistant may have
    entered grades in the formgrader while this run graded (nothing is published then)."""
    if not run.replace:
        for where in published_gradebooks(run):
            _refuse_manual_grades(where, "they were entered while this run graded, and publishing would "
                                         "replace them (nothing was published)")


def set_up_sandbox(run: GradingRun) -> None:
    """Choose the strongest sandbox this machine allows, and say loudly what it cannot protect."""
    try:
        run.sandbox_mode = sandbox.probe(run.sandbox_mode)
    except ValueError as error:
        raise CourseError(str(error)) from None
    check_device(run)
    run.drop_user = run.sandbox_mode == "root" or (run.sandbox_mode == "none" and sandbox.can_drop_user(sandbox.SANDBOX_UID))
    group = sandbox.memory_group_for(run.sandbox_mode)
    log.info("sandbox: mode %s%s; limits: %s; %s; cell %d s, notebook %d s; kernels run with %s", run.sandbox_mode,
             f", user ids from {sandbox.SANDBOX_UID}" if run.drop_user else "", run.limits,
             f"{run.limits.group_mb} MB for all of a kernel's processes (control groups in "
             f"{group})" if group else "no limit on a kernel's processes together", run.timeout,
             run.notebook_timeout, " ".join(f"{k}={v}" for k, v in run.kernel_env.items()))
    for missing in sandbox.missing_protections(run.sandbox_mode, run.drop_user):
        log.warning("SANDBOX PROTECTION MISSING: %s", missing)
    if not run.scheduler:  # this machine's kernels come from one zygote; it imports while we go on
        from autograder.zygote import Zygote

        run.zygote = Zygote({**sandbox.kernel_environment(), **run.kernel_env}).start()


def check_device(run: GradingRun) -> None:
    """Refuse a GPU the kernels cannot reach, and the ``full`` profile on the CPU. A sandbox binds no
    GPU device, so a device asked for with ``NLPBOOK_DEVICE`` would fail in every graded training cell,
    the solution's included; and ``full``, sized for one GPU, would train on one CPU thread a kernel
    past every time limit."""
    from nlpbook.profile import current_profile

    asked = os.environ.get("NLPBOOK_DEVICE", "").strip()
    sandboxed = run.sandbox_mode in sandbox.GPU_BLIND_MODES
    where = (f"kernels in the {run.sandbox_mode} sandbox reach no GPU (it binds no /dev/nvidia* device) and run "
             "on the CPU" if sandboxed else "kernels run on the CPU unless NLPBOOK_DEVICE names a GPU")
    if sandboxed and asked and asked != "cpu":
        raise CourseError(f"NLPBOOK_DEVICE={asked}: {where}; unset it, or grade with --sandbox none on a machine "
                          "where that is safe (see 'Grading safely')")
    if current_profile() == "full" and run.kernel_env.get("NLPBOOK_DEVICE") == "cpu":
        raise CourseError(f"NLPBOOK_PROFILE=full is sized for one GPU, and {where}, one thread each: grade in "
                          "standard (the default) or quick")


def find_submissions(run: GradingRun) -> None:
    """One folder per student, ``DIR/STUDENT/ASSIGNMENT/*.ipynb``; anything else is logged and skipped."""
    for entry in sorted(run.submissions_dir.iterdir()):
        where = f"{run.submissions_dir}/{entry.name}"
        if entry.is_symlink():
            run.skipped.append(f"{where}: skipped, a link is not a student folder")
        elif not entry.is_dir() and entry.suffix.lower() in (".ipynb", ".zip"):  # a hand-in put in the wrong place
            run.skipped.append(f"{where}: skipped, a file where a student's folder belongs (expected "
                               f"{run.submissions_dir}/STUDENT_ID/{run.assignment}/NOTEBOOK.ipynb)")
        elif not entry.is_dir():
            log.warning("%s: skipped, not a folder (expected one folder per student)", where)
        elif not STUDENT_ID.match(entry.name):
            run.skipped.append(f"{where}: skipped, {entry.name!r} is not a usable student id (letters, digits, "
                               "_.@+-, starting with a letter or digit); rename the folder to grade it")
        else:
            submission = Submission(entry.name, entry / run.assignment)
            try:
                run.submissions.append(_find_notebooks(run, submission))
            except OSError as error:  # a folder or file its owner's permissions keep from the grader
                submission.notebooks, submission.timestamp, submission.status = [], None, "missing"
                submission.flag(f"{error.filename or submission.folder}: cannot be read ({error.strerror}); "
                                "scored 0")
                run.submissions.append(submission)
    for reason in run.skipped:
        log.warning("%s", reason)
    if not run.submissions:
        raise CourseError(f"--submissions {run.submissions_dir}: no student folders found "
                          f"(expected {run.submissions_dir}/STUDENT_ID/{run.assignment}/*.ipynb)")
    log.info("%d student folder(s) in %s", len(run.submissions), run.submissions_dir)


def _find_notebooks(run: GradingRun, submission: Submission) -> Submission:
    folder = submission.folder
    if folder.is_symlink():  # never followed: it could lead to a classmate's hand-in or anywhere else
        submission.status = "missing"
        submission.flag(f"{folder}: a link, not a folder; scored 0")
        return submission
    if folder.exists() and not folder.is_dir():  # a zip of the folder, say: handed in, in a form not graded
        submission.status = "missing"
        submission.flag(f"{folder}: a file where the {run.assignment}/ folder belongs; scored 0")
        return submission
    if not folder.is_dir():
        submission.status = "missing"
        # A notebook elsewhere in the student's folder is a hand-in in the wrong place, not none at all.
        elsewhere = sorted(str(p.relative_to(folder.parent)) for p in folder.parent.rglob("*.ipynb"))[:3]
        submission.flag(f"no {run.assignment}/ folder: scored 0 as not handed in"
                        + (f", but the student's folder holds {', '.join(elsewhere)}" if elsewhere else ""),
                        review=bool(elsewhere))
        return submission
    for name in run.expected_notebooks:
        path = folder / f"{name}.ipynb"
        if path.is_symlink():
            submission.flag(f"{path}: a link, not a notebook; scored 0")
        elif not path.is_file():
            others = sorted(p.name for p in folder.glob("*.ipynb") if p.stem not in run.expected_notebooks)
            submission.flag(f"{path}: missing" + (f" (the folder holds {', '.join(others)})" if others else "")
                            + "; scored 0")
        elif problem := _unreadable(path):
            submission.flag(f"{path}: {problem}; scored 0")
        else:
            submission.notebooks.append(path)
    if not submission.notebooks:
        submission.status = "missing"
    # nbgrader's record of when the student submitted: due dates and late penalties read it.
    timestamp = folder / TIMESTAMP
    if timestamp.is_file() and not timestamp.is_symlink() and timestamp.stat().st_size < 1000:
        from nbgrader.utils import parse_utc

        text = timestamp.read_text(encoding="utf-8", errors="replace").strip()
        try:
            parse_utc(text)
            submission.timestamp = timestamp
        except Exception:  # dateutil raises several kinds; nbgrader would fail the whole hand-in
            submission.flag(f"{timestamp}: {text[:40]!r} is not a date nbgrader can read; graded without it, "
                            "as if handed in on time")
    return submission


# The largest hand-in the grader reads: a notebook with its plots is a few MB, and one of several
# GB would exhaust the coordinator's memory as it is parsed, and grade nobody.
MAX_NOTEBOOK_MB = 64


def _unreadable(path: Path) -> str | None:
    """Why ``path`` is not a notebook nbgrader can read, or ``None``."""
    import nbformat

    size = path.stat().st_size
    if size > MAX_NOTEBOOK_MB * 2**20:
        return f"{size / 2**20:,.1f} MiB, more than the {MAX_NOTEBOOK_MB} MiB a notebook may have"
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        return f"not UTF-8 text (byte {error.start})"
    try:
        with warnings.catch_warnings():  # cells without ids (saved before nbformat 4.5) are graded all the same
            warnings.simplefilter("ignore", nbformat.validator.MissingIDFieldWarning)
            notebook = nbformat.reads(text, as_version=4)
            nbformat.validate(notebook)
    except Exception as error:  # json and nbformat raise many kinds
        return f"not a valid notebook ({_version_problem(text) or first_line(error)[:200]})"
    return None


def _version_problem(text: str) -> str | None:
    """What is wrong with a notebook's version numbers, which nbformat checks by a bare assert."""
    try:
        fields = json.loads(text)
    except ValueError:
        return None
    for key in ("nbformat", "nbformat_minor") if isinstance(fields, dict) else ():
        if type(fields.get(key)) is not int:
            return f'"{key}" is {json.dumps(fields.get(key))[:40]}, not a whole number'
    return None


def _sha256(path: Path) -> str:
    """The file's hash, read a block at a time: a hand-in may hold a file of any size."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


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


def _hash_or_why(path: Path) -> str:
    """The file's hash, or why it cannot be read (a student's notes.txt the grader may not open is
    not graded, and cannot be changed by grading either)."""
    try:
        return _sha256(path)
    except OSError as error:
        return f"cannot be read ({error.strerror})"


def hash_submissions(run: GradingRun) -> None:
    """Record a hash of every submitted file, to prove afterwards that grading changed none."""
    run.hashes = {path: _hash_or_why(path) for path in _files_of(run)}
    for path, why in run.hashes.items():
        if why.startswith("cannot be read"):
            log.warning("%s: %s, so grading cannot show that it left it unchanged", path, why)


def prepare_course(run: GradingRun) -> None:
    """A fresh nbgrader course directory in a staging folder inside ``--out``."""
    run.staging = run.out / f".staging-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    run.staging.mkdir()
    shutil.copytree(run.origin.folder(run.assignment), run.course / "source" / run.assignment, ignore=IGNORED)
    _write_course_config(run.course, run.timeout, run.notebook_timeout, run.db, run.origin.release_settings,
                         run.feedback_outputs)
    run.course_key = _digest([run.assignment, *_flat(_files(run.course / "source")), *_flat(_code()),
                              *_kernel_environment(run.kernel_env), repr(run.origin.release_settings)])


def _kernel_environment(env: dict[str, str]) -> list[str]:
    """What besides the course and the code changes what the solution computes: the profile sizes
    the training parts and their targets (a course graded in ``quick`` and then in ``standard``
    must not reuse the quick reference), the device, and the versions of Python and the numerical
    libraries the kernel imports."""
    from importlib import metadata

    versions = []
    for package in ("torch", "numpy"):
        try:
            versions.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{package} absent")
    # env is what the kernels get: a sandbox's say the CPU, whatever this machine has
    return [f"{name}={env.get(name, os.environ.get(name, ''))}"
            for name in ("NLPBOOK_PROFILE", "NLPBOOK_DEVICE", "CUDA_VISIBLE_DEVICES")] + [
        f"python {sys.version_info[:3]}", *versions]


def shared_cache() -> Path | None:
    """The folder every grading run shares for registered courses and reference runs (keyed by
    :attr:`GradingRun.course_key`), or None when ``$AUTOGRADER_CACHE`` is ``off``."""
    value = os.environ.get("AUTOGRADER_CACHE", "").strip()
    if value.lower() == "off":
        return None
    if value:
        return Path(value)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nlpbook-autograder"


def _reuse(run: GradingRun, what: str) -> Path | None:
    """The folder ``courses/KEY/WHAT`` of this run's ``.work``, copied there from the shared cache
    if only that has it; None if neither does."""
    own = run.work / "courses" / run.course_key / what
    if own.is_dir():
        return own
    shared = shared_cache()
    source = None if shared is None else shared / "courses" / run.course_key / what
    if source is None or not source.is_dir():
        return None
    _save_atomically(own, _files(source))
    log.info("%s: reused from the shared cache %s", what, shared)
    return own


def _keep(run: GradingRun, what: str, files: dict[str, bytes]) -> Path:
    """Save ``files`` as ``courses/KEY/WHAT`` in this run's ``.work`` and, if it can, in the shared cache."""
    own = run.work / "courses" / run.course_key / what
    _save_atomically(own, files)
    shared = shared_cache()
    if shared is not None:
        try:
            _save_atomically(shared / "courses" / run.course_key / what, files)
        except OSError as error:  # a read-only home, a full disk: grading goes on without sharing
            log.warning("could not write the shared cache %s (%s); gradings into other folders will redo this",
                        shared, first_line(error))
    return own


def _digest(parts) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, bytes) else str(part).encode()
        hasher.update(len(data).to_bytes(8, "big") + data)
    return hasher.hexdigest()


def _files(folder: Path, pattern: str = "*") -> dict[str, bytes]:
    """Every file under ``folder`` by its relative name, in a fixed order."""
    return {path.relative_to(folder).as_posix(): path.read_bytes()
            for path in sorted(folder.rglob(pattern)) if path.is_file()}


def _flat(files: dict[str, bytes]) -> list:
    return [part for name in sorted(files) for part in (name, files[name])]


def _code() -> dict[str, bytes]:
    """The grading code itself: a change to it makes earlier results stale."""
    return {f"{package}/{name}": data for package in ("autograder", "nlpbook")
            for name, data in _files(REPO_ROOT / package, "*.py").items()}


def _write_course_config(course: Path, timeout: int, notebook_timeout: int, db: str | None,
                         release_settings: tuple = (), feedback_outputs: str = "all") -> None:
    # The same configuration as the grader's (one source: autograder.course.nbgrader_config),
    # computed from the file's own folder so that it still holds after the folder is moved.
    (course / "nbgrader_config.py").write_text(
        "# Written by `python -m autograder grade`: run nbgrader (formgrader, export,\n"
        "# generate_feedback) from this folder with the grader's own settings.\n"
        "from pathlib import Path\n\n"
        "from autograder.course import nbgrader_config\n\n"
        "c = get_config()  # noqa: F821\n"
        f"c.merge(nbgrader_config(Path(__file__).resolve().parent, timeout={timeout}, "
        f"notebook_timeout={notebook_timeout}, release_settings={release_settings!r}, "
        f"feedback_outputs={feedback_outputs!r}))\n" + (f"c.CourseDirectory.db_url = {_without_password(db)!r}\n" if db else ""),
        encoding="utf-8",
    )


def _without_password(url: str) -> str:
    """The URL as the formgrader needs it; the password stays in ~/.pgpass or $PGPASSWORD, not in a file."""
    from sqlalchemy.engine import make_url

    return make_url(url).set(password=None).render_as_string(hide_password=False)


def register_assignment(run: GradingRun) -> None:
    """nbgrader's generate_assignment records the cells, points and checksums; reused while the source is unchanged.

    Reusing the same registration keeps the gradebook's cell ids, so results saved by an
    earlier run still fit.
    """
    saved = _reuse(run, "registration")
    if saved is not None:
        shutil.copyfile(saved / "gradebook.db", run.course / "gradebook.db")
        shutil.copytree(saved / "release", run.course / "release", dirs_exist_ok=True)
        return
    # An error names the instructor's folder, not this run's copy of it (removed as the run stops).
    run_generate_assignment(run.course, run.assignment, origin=run.origin.sources / run.assignment,
                            release_settings=run.origin.release_settings)
    _keep(run, "registration", {"gradebook.db": (run.course / "gradebook.db").read_bytes(),
                                **{f"release/{k}": v for k, v in _files(run.course / "release").items()}})


def set_due_date(run: GradingRun) -> None:
    """Give the assignment the instructor's due date, from which nbgrader measures each submission's lateness."""
    if run.duedate is None:
        return
    from nbgrader.utils import parse_utc

    try:
        duedate = parse_utc(run.duedate)
    except (ValueError, TypeError) as error:
        raise CourseError(f"--duedate {run.duedate!r}: not a date nbgrader reads, such as "
                          f"'2026-03-01 17:00:00 Europe/Paris' ({error})") from None
    gradebook.set_duedate(run.db_url, run.assignment, duedate)
    log.info("due date: %s UTC", duedate)


def _save_atomically(folder: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` under ``folder``, which appears complete or not at all.  If another run
    writes the same folder first (the same key, so the same content), theirs is kept."""
    temporary = folder.with_name(f".{folder.name}.{os.getpid()}")
    shutil.rmtree(temporary, ignore_errors=True)
    temporary.mkdir(parents=True)
    for relative, data in files.items():
        (temporary / relative).parent.mkdir(parents=True, exist_ok=True)
        (temporary / relative).write_bytes(data)
    if folder.exists():
        shutil.rmtree(temporary)
        return
    try:
        temporary.rename(folder)
    except OSError:
        shutil.rmtree(temporary)
        if not folder.exists():
            raise


def start_workers(run: GradingRun) -> None:
    """Worker processes on this machine (``--workers``), or the workers of a Dask cluster (``--scheduler``)."""
    from autograder.pool import DaskPool, LocalPool

    if run.scheduler:
        try:
            run.pool = DaskPool(run.scheduler)
        except (OSError, TimeoutError) as error:
            raise CourseError(f"--scheduler {run.scheduler}: cannot reach the Dask scheduler ({error})") from None
        log.info("workers: %d on the Dask cluster at %s", run.pool.workers, run.scheduler)
    else:
        try:
            run.zygote.wait()
        except RuntimeError as error:
            raise CourseError(str(error)) from None
        run.pool = LocalPool(run.workers)
        log.info("workers: %d processes on this machine", run.workers)


def record_reference(run: GradingRun) -> None:
    """Run the solution once in the sandbox; its check records are what students are compared with."""
    from autograder.verdicts import forgeable_test_cells

    # The solution runs in the students' sandbox (its mode, limits and time limits), so that a sandbox
    # that cannot run it is reported before any student is graded: a run is kept per sandbox setting.
    settings = run.settings()
    what = f"reference-{_digest([repr(settings.sandboxing())])[:16]}"
    saved = _reuse(run, what)
    if saved is None:
        course = jobs.Course.read(run.course, run.assignment)
        [result] = run.pool.run([jobs.Job("reference", "", course, settings)])
        if not result.success:
            sandbox_failed = result.message.startswith("the sandbox")
            hint = "\nIf this machine cannot give that mode, choose another with --sandbox." if sandbox_failed else ""
            raise CourseError(f"{result.message}{hint}")
        saved = _keep(run, what, {k.split("/", 1)[1]: v for k, v in result.files.items()})
        if result.peak_mb is not None:
            log.info("reference: the solution's kernel memory at most %s MB", f"{result.peak_mb:,}")
    shutil.copytree(saved, run.course / "reference")
    for path in sorted(saved.glob(f"*{jobs.FAILING_SUFFIX}")):
        notebook = path.name.removesuffix(jobs.FAILING_SUFFIX)
        run.failing_on_solution[notebook] = json.loads(path.read_text(encoding="utf-8"))
    _report_failing_on_solution(run)
    for path in sorted(p for p in saved.glob("*.json") if not p.name.endswith(jobs.FAILING_SUFFIX)):
        records = json.loads(path.read_text(encoding="utf-8"))
        log.info("reference: %s.ipynb, %d test cells, %d checks", path.stem, len(records),
                 sum(len(r) for r in records.values() if isinstance(r, list)))
        plain = [grade_id for grade_id, checks in records.items() if checks == []]
        if plain:
            log.warning("WEAKER GRADING in %s.ipynb: %d test cell(s) make no checks through nlpbook.checks and are "
                        "graded by nbgrader's own rules (an error means 0, a number is partial credit), which trust "
                        "the student's kernel to report its errors: %s", path.stem, len(plain), ", ".join(plain))
        forgeable = forgeable_test_cells(records)
        if forgeable:
            log.warning("FORGEABLE TESTS in %s.ipynb: %d test cell(s) check only yes-or-no answers, shapes or "
                        "dtypes, which the student's kernel computes, so code in the notebook can rewrite them "
                        "to pass; a test with at least one expect_close or expect_score is judged on a value "
                        "that only the solution's run holds: %s", path.stem, len(forgeable), ", ".join(forgeable))


def failing_on_solution(notebook: str, cells: list[str]) -> str:
    """The one wording, for the log, the terminal and the class report, of test cells that fail on the solution."""
    return (f"INSTRUCTOR TESTS FAIL ON THE SOLUTION in {notebook}.ipynb: {len(cells)} test cell(s) fail when the "
            f"source notebook itself runs, and are graded by nbgrader's own rules (an error means 0 points): "
            f"{'; '.join(cells)}")


def _report_failing_on_solution(run: GradingRun) -> None:
    """Test cells that fail on the instructor's own solution: graded as nbgrader grades them (an error
    means 0), said loudly here and again at the end; with ``--strict``, the grading stops instead."""
    for notebook, cells in run.failing_on_solution.items():
        message = failing_on_solution(f"{run.assignment}/{notebook}", cells)
        if run.strict:
            raise CourseError(f"{message}. --strict: nothing was graded; fix the tests or the solution")
        log.warning("%s. Plain nbgrader would grade them so too; a student who passes them may have a different "
                    "answer from yours. Pass --strict to refuse such an assignment.", message)


def collect_submissions(run: GradingRun) -> None:
    """Copy (never move) each student's notebooks into the course, and list every student in the gradebook."""
    gradebook.add_students(run.db_url, [submission.student for submission in run.submissions])
    for submission in run.handed_in():
        target = run.course / "submitted" / submission.student / run.assignment
        target.mkdir(parents=True)
        for path in submission.handed_in_files():
            shutil.copyfile(path, target / path.name)


def grade_submissions(run: GradingRun) -> None:
    """Each student is a job for the workers, unless an earlier run saved its result; results merge in here."""
    import sqlalchemy

    course = jobs.Course.read(run.course, run.assignment)
    settings = run.settings()
    results = run.work / "results"
    results.mkdir(exist_ok=True)
    todo, keys = [], {}
    # What can change a grade: the course, the solution's records, the limits (a memory group's
    # among them); not where it ran or with how many threads.
    grouped = bool(sandbox.memory_group_for(settings.mode))
    grading_terms = [run.course_key, str(run.duedate), *_flat(_files(run.course / "reference")),
                     repr((*settings.sandboxing(), settings.feedback, settings.feedback_outputs, grouped))]
    database = sqlalchemy.create_engine(run.db_url)
    try:
        for submission in run.handed_in():
            notebooks = {path.name: path.read_bytes() for path in submission.handed_in_files()}
            keys[submission.student] = key = _digest([*grading_terms, submission.student, *_flat(notebooks)])
            saved = None if run.regrade else _saved_result(results / key)
            if saved is not None:
                _merge(run, database, submission, saved, reused=True)
            else:
                todo.append(jobs.Job("student", submission.student, course, settings, notebooks))
        by_student = {s.student: s for s in run.submissions}
        reused = len(run.handed_in()) - len(todo)
        log.info("%d to grade, %d already graded by an earlier run%s", len(todo), reused,
                 " (--regrade grades them again)" if reused else "")
        with _Progress(len(todo), run.progress) as progress:
            for result in run.pool.run(todo):
                submission = by_student[result.student]
                if result.success:  # failures are not saved: the next run tries them again
                    _save_result(results / keys[result.student], result)
                _merge(run, database, submission, result)
                progress.done(submission)
    finally:
        database.dispose()


def _save_result(path: Path, result: jobs.Result) -> None:
    """Keep a student's result for later runs; one that cannot be kept (a full disk) is graded again
    by the next run, and this one goes on."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        _write_synced(temporary, pickle.dumps(result))  # on the disk before its name is
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        log.warning("%s: could not keep the result for later runs (%s); a later run grades %s again",
                    path, first_line(error), result.student)


def _saved_result(path: Path) -> jobs.Result | None:
    """An earlier run's result for a hand-in, or ``None`` where there is none to trust: a result cut
    short (a machine that stopped while writing it) is removed, and the hand-in graded again."""
    if not path.exists():
        return None
    try:
        result = pickle.loads(path.read_bytes())
    except Exception as error:  # truncated or damaged: EOFError, UnpicklingError and others
        log.warning("%s: a saved result that cannot be read (%s); grading that hand-in again",
                    path, first_line(error)[:200])
        path.unlink(missing_ok=True)
        return None
    return result if isinstance(result, jobs.Result) else None


def _merge(run: GradingRun, database, submission: Submission, result: jobs.Result, reused: bool = False) -> None:
    """Put one worker's result into the staging course: its files, and its rows in the gradebook."""
    submission.seconds = result.seconds
    submission.peak_mb = getattr(result, "peak_mb", None)  # results saved by an older grader have none
    if not result.success:
        submission.status = "failed"
        submission.flag(f"{run.assignment}: {result.message}")
        log.debug("%s: nbgrader log:\n%s", submission.student, result.log)
        return
    for relative, data in result.files.items():
        (run.course / relative).parent.mkdir(parents=True, exist_ok=True)
        (run.course / relative).write_bytes(data)
    gradebook.merge_rows(database, result.rows)
    submission.status = "graded"
    if result.message:
        submission.flag(result.message)
    _flag_stopped_notebooks(submission, getattr(result, "stops", {}))  # results saved before stops: none
    log.info("%-20s graded%s in %.1f s%s", submission.student, " (saved by an earlier run)" if reused else "",
             result.seconds, f", kernel memory at most {submission.peak_mb:,} MB" if submission.peak_mb is not None
             else "")


class _Progress:
    """A progress bar on the terminal: done, failed, remaining and an estimate of the time left.

    While it is shown, log lines for the terminal are written above it instead of through it.
    """

    def __init__(self, total: int, enabled: bool):
        from tqdm import tqdm

        self.bar = tqdm(total=total, unit="student", disable=not (enabled and sys.stderr.isatty()) or total == 0,
                        dynamic_ncols=True)
        self.failed = 0
        self.streams: list = []

    def __enter__(self):
        if not self.bar.disable:
            for handler in log.handlers:
                if type(handler) is logging.StreamHandler:
                    self.streams.append((handler, handler.setStream(self)))
        return self

    def write(self, text: str) -> None:  # the terminal handlers' stream while the bar is shown
        if text.strip():
            self.bar.write(text.rstrip("\n"), file=sys.stderr)

    def flush(self) -> None:
        pass

    def done(self, submission: Submission) -> None:
        self.failed += submission.status == "failed"
        self.bar.update(1)
        self.bar.set_postfix(failed=self.failed, remaining=self.bar.total - self.bar.n, refresh=False)

    def __exit__(self, *exc) -> None:
        self.bar.close()
        for handler, stream in self.streams:
            handler.setStream(stream)


def _flag_stopped_notebooks(submission: Submission, stops: dict[str, dict]) -> None:
    """Say which notebooks stopped early (a kernel that died, a time limit): the score counts what ran,
    and a person should look, since a busy machine can cut off a correct but slow notebook."""
    for notebook, stop in sorted(stops.items()):
        reason = stop["reason"] + (f" (the kernel's console: {stop['console']})" if stop.get("console") else "")
        submission.flag(f"{notebook} stopped early, {reason}; the cells after it were not run")


def read_scores(run: GradingRun) -> None:
    """Each student's total and maximum, from the gradebook."""
    totals = gradebook.totals(run.db_url, run.assignment, [submission.student for submission in run.submissions])
    for submission in run.submissions:
        total = totals[submission.student]
        submission.max_score = total.max_score
        if total.handed_in:
            submission.score = total.score
        if total.needs_manual_grade:
            submission.problems.append("written answers wait for manual grading")


def copy_feedback(run: GradingRun) -> None:
    """``feedback/STUDENT/ASSIGNMENT/*.html`` beside the course, where instructors look for it."""
    feedback = run.course / "feedback"
    shutil.copytree(feedback, run.staging / "feedback") if feedback.exists() else (run.staging / "feedback").mkdir()


def export_grades(run: GradingRun) -> None:
    """``grades.csv`` (nbgrader's CSV export), ``parts.csv`` (one row per graded cell), ``lms.csv`` (totals)."""
    gradebook.export_csv(run.db_url, run.assignment, run.staging / "grades.csv")
    with open(run.staging / "parts.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(gradebook.CELL_GRADE_COLUMNS)
        writer.writerows(gradebook.cell_grades(run.db_url, run.assignment,
                                               [submission.student for submission in run.submissions]))
    write_lms_csv(run.staging / "lms.csv", run.assignment, run.submissions,
                  automatic_points(run.origin.source_notebooks(run.assignment)))


def automatic_points(notebooks: list[Path]) -> float:
    """The points of the source notebooks' automatically graded test cells (written answers not counted)."""
    import nbformat

    from autograder.verdicts import is_test_cell

    return sum(float(cell.metadata.nbgrader.get("points", 0)) for path in notebooks
               for cell in nbformat.read(path, as_version=4).cells if is_test_cell(cell))


def write_lms_csv(path: Path, assignment: str, submissions: list[Submission], out_of: float) -> None:
    """What an LMS grade import (Moodle, Canvas, Blackboard) maps: an id column and one grade column,
    the automatic points out of ``out_of`` (the written answers are graded later, in the formgrader).

    A student whose grading failed gets an empty cell, not a 0: an import then leaves their grade
    alone until a person has looked (nbgrader's ``grades.csv`` gives them 0)."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student_id", f"{assignment} (out of {out_of:g})"])
        for submission in submissions:
            writer.writerow([submission.student, "" if submission.status == "failed" else f"{submission.score:g}"])


def write_report(run: GradingRun) -> None:
    """``report.html``: the class's scores by part, the checks that failed most, time per notebook,
    and the submissions flagged for review (:mod:`autograder.report`)."""
    from autograder.course import release_config
    from autograder.report import write_report as write
    from autograder.verdicts import hidden_delimiters

    warnings = [failing_on_solution(f"{run.assignment}/{notebook}", cells)
                for notebook, cells in run.failing_on_solution.items()]
    warnings += [f"not graded: {entry}" for entry in run.skipped]  # the NEEDS REVIEW (not graded) lines
    write(run.staging, run.assignment, run.course, run.submissions, warnings,
          hidden_delimiters(release_config(run.origin.release_settings)))


def publish_database(run: GradingRun) -> None:
    """With ``--db``: copy the whole gradebook into that database in one transaction (nothing half-written),
    refusing again, under the copy's lock, grades a person entered there since the last check."""
    if not run.db:
        return
    gradebook.copy_all(run.db_url, run.db, keep_manual=not run.replace)
    (run.course / "gradebook.db").unlink()  # one gradebook only: the database
    log.info("gradebook published to %s", _without_password(run.db))


def check_submissions_unchanged(run: GradingRun) -> None:
    """Every submitted file still has the hash it had before grading."""
    now = {path: _hash_or_why(path) for path in _files_of(run)}
    changed = sorted(str(p) for p in set(run.hashes) | set(now) if run.hashes.get(p) != now.get(p))
    if changed:
        raise CourseError("submissions changed during grading (nothing was published): " + ", ".join(changed))


PUBLISHING = ".publishing"  # in --out while publish() swaps the results: its phase, "aside" or "in"


def publish(run: GradingRun) -> None:
    """Move the complete results from the staging folder into ``--out``, replacing earlier ones.

    The files move by renames, journaled in :data:`PUBLISHING`: the earlier results set aside,
    then the new ones moved in, and only then the slow removal of the earlier ones. A run that
    is stopped in the middle leaves the journal, and the next run puts the earlier results back
    (:func:`finish_interrupted_publish`): ``--out`` holds one run's results, never a mix.
    """
    journal = run.out / PUBLISHING
    _write_synced(journal, b"aside")
    for name in PUBLISHED:
        if (run.out / name).exists():
            (run.out / name).rename(run.out / f".previous-{name}")
    # Moving in, the journal names the results set aside: a recovery that is itself stopped can
    # then tell an earlier result it has put back from a new one it has still to remove.
    earlier = [name for name in PUBLISHED if (run.out / f".previous-{name}").exists()]
    _write_synced(journal, "\n".join(["in", *earlier]).encode())
    for name in PUBLISHED:
        (run.staging / name).rename(run.out / name)
    journal.unlink()
    for name in PUBLISHED:
        if (run.out / f".previous-{name}").exists():
            _remove(run.out / f".previous-{name}")
    shutil.rmtree(run.staging)
    run.staging = None


def record_published(run: GradingRun) -> None:
    """Note in ``.work`` whose results ``--out`` now holds, for :func:`check_inputs` to compare the next
    run with.  (A run that replaced another assignment's results, with ``--replace``, and stopped just
    before this leaves that assignment's note: the next run is refused as if the results were still
    the other assignment's, and ``--replace`` again lets it through.)"""
    _write_synced(run.work / RUN_RECORD, json.dumps(_record_of(run)).encode())


def finish_interrupted_publish(out: Path) -> None:
    """Put back the results a stopped :func:`publish` had set aside, or remove them where it had
    finished moving the new ones in."""
    journal = out / PUBLISHING
    if journal.exists():
        # Setting aside, every result in place is an earlier one. Moving in, a result in place is a
        # new one, unless it is one the journal names as set aside and its .previous- is gone: then
        # an earlier recovery, stopped before it removed the journal, has already put it back.
        # An empty journal: stopped as it was rewritten for moving in, before anything moved in.
        phase, *earlier = journal.read_text(encoding="utf-8").split() or ["aside"]
        for name in PUBLISHED:
            previous = out / f".previous-{name}"
            put_back = phase == "in" and name in earlier and not previous.exists()
            if phase == "in" and not put_back and (out / name).exists():
                _remove(out / name)
            if previous.exists():
                previous.rename(out / name)
        journal.unlink()
        log.warning("%s: a grading run stopped while publishing; the results of the run before it are back",
                    out)
    for name in PUBLISHED:
        if (out / f".previous-{name}").exists():
            _remove(out / f".previous-{name}")  # a run stopped while removing them, its results complete


def _write_synced(path: Path, data: bytes) -> None:
    """``data`` in ``path``, on the disk when this returns (a machine that stops cannot cut it short)."""
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _remove(path: Path) -> None:
    shutil.rmtree(path) if path.is_dir() else path.unlink()


def summarize(run: GradingRun) -> None:
    """One line per student, then the counts, the slowest notebooks and every submission that needs a human look."""
    for submission in run.submissions:
        notes = "; ".join(submission.problems)
        log.info("%-20s %-8s %5.1f / %4.1f  %5.1fs  %s", submission.student, submission.status,
                 submission.score, submission.max_score, submission.seconds, notes)
    counts = {status: sum(s.status == status for s in run.submissions) for status in ("graded", "failed", "missing")}
    log.info("%s: %d graded, %d failed, %d not handed in; results in %s", run.assignment,
             counts["graded"], counts["failed"], counts["missing"], run.out)
    slowest = sorted(run.handed_in(), key=lambda s: -s.seconds)[:5]
    log.info("slowest: %s", ", ".join(f"{s.student} {s.seconds:.1f} s" for s in slowest) or "none")
    measured = sorted((s for s in run.handed_in() if s.peak_mb is not None), key=lambda s: -s.peak_mb)
    if measured:  # what a worker needs besides the zygote, whose imports the kernels share uncounted
        log.info("most memory: %s (each kernel's own, beyond what it shares with the zygote; the limit: %s MB)",
                 ", ".join(f"{s.student} {s.peak_mb:,} MB" for s in measured[:5]),
                 f"{run.limits.group_mb:,}")
    log.info("class report: %s", run.out / "report.html")
    for submission in run.submissions:
        if submission.needs_review:
            log.warning("NEEDS REVIEW %s: %s", submission.student, "; ".join(submission.problems))
    for reason in run.skipped:  # in no CSV and no gradebook: a person must see them here
        log.warning("NEEDS REVIEW (not graded) %s", reason)
    for notebook, cells in run.failing_on_solution.items():
        log.warning("%s", failing_on_solution(f"{run.assignment}/{notebook}", cells))


STEPS: list[Callable[[GradingRun], None]] = [
    check_inputs,
    set_up_sandbox,
    find_submissions,
    hash_submissions,
    prepare_course,
    register_assignment,
    set_due_date,
    start_workers,
    record_reference,
    collect_submissions,
    grade_submissions,
    read_scores,
    copy_feedback,
    export_grades,
    write_report,
    check_submissions_unchanged,
    check_no_grades_entered_meanwhile,
    publish_database,
    publish,
    record_published,
    summarize,
]


def kernel_limits(notebook_timeout: int = NOTEBOOK_TIMEOUT, memory_mb: int | None = None) -> sandbox.Limits:
    """A kernel's limits for a notebook time limit: its CPU time is the notebook's plus a grace."""
    limits = sandbox.Limits(cpu_seconds=notebook_timeout + CPU_GRACE)
    return limits if memory_mb is None else dataclasses.replace(limits, memory_mb=memory_mb)


def grade(assignment: str, submissions: Path, out: Path, *, timeout: int = CELL_TIMEOUT,
          notebook_timeout: int = NOTEBOOK_TIMEOUT,
          replace: bool = False, regrade: bool = False, sandbox_mode: str = "auto", limits: sandbox.Limits | None = None,
          workers: int | None = None, scheduler: str | None = None, db: str | None = None,
          progress: bool = True, feedback: bool = True, duedate: str | None = None, course: Course | None = None,
          strict: bool = False, feedback_outputs: str = "all") -> GradingRun:
    """Run :data:`STEPS` in order; on any error the staging folder is removed and nothing is published.

    ``course`` is where the assignment's source notebooks live (default: this repository's
    ``solutions/``); ``strict`` refuses an assignment whose tests fail on its own solution.
    """
    # Absolute paths: nbgrader and the kernels run in other folders.
    run = GradingRun(assignment=assignment, submissions_dir=Path(submissions).absolute(), out=Path(out).absolute(),
                     origin=course or Course.repository(), strict=strict,
                     timeout=timeout, notebook_timeout=notebook_timeout, replace=replace, regrade=regrade,
                     sandbox_mode=sandbox_mode, limits=limits or kernel_limits(notebook_timeout),
                     workers=workers or os.cpu_count() or 1, scheduler=scheduler, db=db, progress=progress,
                     feedback=feedback, feedback_outputs=feedback_outputs, duedate=duedate)
    try:
        for step in STEPS:
            log.debug("step %s", step.__name__)
            step(run)
    finally:
        if run.pool is not None:
            run.pool.close()
        if run.zygote is not None:
            run.zygote.close()
        if run.staging is not None and run.staging.exists():
            shutil.rmtree(run.staging)
        if run.lock is not None:
            run.lock.close()
    return run
