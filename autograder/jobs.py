"""What a grading worker does: one job, in a private course, on any machine.

A job carries everything it needs as bytes (the registered course: gradebook,
source notebooks, the solution's check records; and one student's notebooks),
so it runs the same in a local process and on a Dask worker elsewhere.  The
worker grades in a private copy of the course with nbgrader's own
``autograde`` and ``generate_feedback``, and returns the files they wrote and
the gradebook rows they added.  Only the coordinating process writes the real
gradebook (:func:`autograder.gradebook.merge_rows`).

Kernels come from a zygote (:mod:`autograder.zygote`): the one the coordinator
started on this machine (``Settings.zygote``), or, on a Dask worker, one of
the worker's own.  Each worker process holds a sandbox user id of its own
(:func:`autograder.sandbox.claim_uid`), so parallel kernels never share a
process limit or a user.
"""
from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from autograder import gradebook, sandbox
from autograder.course import nbgrader_config

# What every kernel prints as it starts (the debugger's notes, ipykernel's banner), in an order that
# varies from run to run: never the cause of a death.
CONSOLE_NOISE = ("Debugger warning", "frozen modules", "-Xfrozen_modules", "PYDEVD_DISABLE_FILE_VALIDATION",
                 "Debugging will proceed", "To connect another client", "--existing", "To read more about this",
                 "ipython/ipython/issues", "NOTE: When using the", "ipykernel", "IPKernelApp")


def last_words(console: str, lines: int = 3) -> str:
    """The last few informative lines a kernel printed outside the notebook, on one line."""
    kept = [line.strip() for line in console.splitlines()
            if line.strip() and not any(noise in line for noise in CONSOLE_NOISE)]
    return " | ".join(kept[-lines:]) or "(nothing)"


@dataclass
class Settings:
    """How kernels run: the same for every job of a grading run."""

    mode: str
    drop_user: bool
    limits: sandbox.Limits
    timeout: int
    notebook_timeout: int
    feedback: bool = True  # also run nbgrader's generate_feedback (HTML for the student)
    feedback_outputs: str = "all"  # or "before-hidden-tests" (preprocessors.WithholdLateOutputs)
    hide: list[str] = field(default_factory=list)  # the coordinator's folders that kernels must not see
    env: dict[str, str] = field(default_factory=dict)  # added to every kernel's environment
    zygote: str = ""  # the coordinator's zygote socket; elsewhere each worker starts its own
    release_settings: tuple = ()  # the course's own marks of solutions and hidden tests (Course.release_settings)

    def sandboxing(self) -> tuple:
        """What of these settings can change how a notebook runs: the sandbox and its limits (not
        where it runs, with how many threads, or what it hides, which are the same for everyone)."""
        return (self.mode, self.drop_user, self.limits, self.timeout, self.notebook_timeout)


@dataclass
class Course:
    """A registered course as bytes: ``gradebook.db``, ``source/ASSIGNMENT/*`` and ``reference/*.json``."""

    assignment: str
    files: dict[str, bytes]

    @classmethod
    def read(cls, root: Path, assignment: str) -> "Course":
        files = {}
        for path in sorted(root.rglob("*")):
            relative = path.relative_to(root).as_posix()
            if path.is_file() and (relative == "gradebook.db" or relative.startswith(("source/", "reference/"))):
                files[relative] = path.read_bytes()
        return cls(assignment, files)

    def write(self, root: Path) -> None:
        for relative, data in self.files.items():
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).write_bytes(data)


@dataclass
class Job:
    """Grade one student (``kind="student"``), or run the solution to record its checks (``"reference"``)."""

    kind: str
    student: str
    course: Course
    settings: Settings
    notebooks: dict[str, bytes] = field(default_factory=dict)


@dataclass
class Result:
    student: str
    success: bool
    message: str = ""
    log: str = ""
    files: dict[str, bytes] = field(default_factory=dict)  # autograded/..., feedback/..., reference/...
    rows: dict[str, list[dict]] = field(default_factory=dict)
    seconds: float = 0.0
    # Notebooks that stopped early: notebook file name -> the grader's Stop (execute.STOP_KEY) as a dict,
    # with, for a kernel that died, "console": the last lines the kernel printed outside the notebook.
    stops: dict[str, dict] = field(default_factory=dict)
    # The most memory the kernel's processes held together, in MB, where a memory group measured it.
    peak_mb: int | None = None


def run(job: Job) -> Result:
    """The worker's entry point: never raises, so one broken job cannot stop a class."""
    start = time.perf_counter()
    # nbgrader's gradebook code triggers SQLAlchemy warnings on every student; they say nothing useful.
    warnings.filterwarnings("ignore", message=".*not in session.*")
    # A notebook saved before nbformat 4.5, or test cells nbgrader puts back, have cells without ids:
    # graded all the same, and nbformat's warning about them reached the instructor's console.
    warnings.filterwarnings("ignore", message="Cell is missing an id field")
    folder = Path(tempfile.mkdtemp(prefix="nlpbook-job-", dir=_scratch()))
    try:
        job.course.write(folder)
        result = (_reference if job.kind == "reference" else _grade)(job, folder)
    except Exception as error:  # noqa: BLE001 - reported to the coordinator with the student's name
        result = Result(job.student, False, f"{type(error).__name__}: {error}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    result.seconds = time.perf_counter() - start
    return result


def _scratch() -> str | None:
    """Where a job's private course lives: memory (/dev/shm) when the machine has it.

    nbgrader commits to the job's copy of the gradebook about 45 times per student, and
    on a disk each commit waits for fsync; the copy is thrown away after the job anyway.
    """
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


def _config(job: Job, root: Path):
    return nbgrader_config(root, timeout=job.settings.timeout, notebook_timeout=job.settings.notebook_timeout,
                           release_settings=job.settings.release_settings,
                           feedback_outputs=job.settings.feedback_outputs)


def _session(job: Job, root: Path, role: str):
    from autograder.execute import SandboxSession

    settings = job.settings
    # settings.hide holds the course's sources (solutions, hidden tests), the hand-ins and the output.
    hide = [*settings.hide, str(root.resolve()), str(_jupyter_runtime_dir())]
    # Files shipped with the assignment (data, images, modules) sit beside the notebook, as nbgrader
    # puts them: the instructor's copies, which win over a student's file of the same name.
    source = root / "source" / job.course.assignment
    shipped = {path.relative_to(source): path for path in sorted(source.rglob("*"))
               if path.is_file() and path.suffix != ".ipynb"}
    return SandboxSession(mode=settings.mode, role=role, shipped=shipped, hide=[Path(p) for p in hide],
                          drop_user=settings.drop_user, limits=settings.limits, uid=worker_uid(),
                          zygote=_zygote_for(settings), env=settings.env)


FAILING_SUFFIX = ".failing-on-solution.json"


def _reference(job: Job, root: Path) -> Result:
    """Run every source notebook as the solution; return its check records as ``reference/NAME.json``."""
    import nbformat

    from autograder.execute import SandboxedExecute
    from autograder.verdicts import reference_records

    files, peaks = {}, []
    for path in sorted((root / "source" / job.course.assignment).glob("*.ipynb")):
        notebook = nbformat.read(str(path), as_version=4)
        session = _session(job, root, "reference")
        with session as kernel_config:
            config = _config(job, root)
            config.merge(kernel_config)
            try:
                executed, _ = SandboxedExecute(config=config).preprocess(notebook,
                                                                         {"metadata": {"path": str(path.parent)}})
            except Exception as error:  # noqa: BLE001 - the kernel's own words explain it best
                return Result(job.student, False, f"the sandbox (mode {job.settings.mode}) could not run the "
                              f"solution {path.name}: {error}\nkernel output:\n{session.console()[-3000:]}")
            peaks.append(session.memory().get("peak_mb"))
        try:
            records, failing = reference_records(executed)
        except ValueError as error:
            return Result(job.student, False, f"{path.name}: {error}")
        files[f"reference/{path.stem}.json"] = json.dumps(records).encode()
        if failing:  # test cells that fail on the instructor's own solution, for the grader to report
            files[f"reference/{path.stem}{FAILING_SUFFIX}"] = json.dumps(failing).encode()
    measured = [peak for peak in peaks if peak is not None]
    return Result(job.student, True, files=files, peak_mb=max(measured) if measured else None)


def _grade(job: Job, root: Path) -> Result:
    """nbgrader's autograde and feedback for one student in the private course ``root``."""
    from nbgrader.apps import NbGraderAPI

    submitted = root / "submitted" / job.student / job.course.assignment
    submitted.mkdir(parents=True)
    for name, data in job.notebooks.items():
        (submitted / name).write_bytes(data)
    session = _session(job, root, "student")
    with session as kernel_config:
        config = _config(job, root)
        config.merge(kernel_config)
        graded = NbGraderAPI(config=config).autograde(job.course.assignment, job.student, force=True, create=True)
        console = session.console(errors_only=True)
        peak_mb = session.memory().get("peak_mb")
    log = graded.get("log") or ""
    if not graded["success"]:
        return Result(job.student, False, f"nbgrader autograde failed ({autograde_failure(graded.get('error'), log)})",
                      log)
    feedback = {"success": True}
    if job.settings.feedback:
        feedback = NbGraderAPI(config=_config(job, root)).generate_feedback(job.course.assignment, job.student,
                                                                            force=True)
    message = "" if feedback["success"] else "feedback could not be generated; see the log"
    files = {}
    for step in ("autograded", "feedback"):
        folder = root / step / job.student / job.course.assignment
        for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
            if path.is_file():
                files[path.relative_to(root).as_posix()] = path.read_bytes()
    try:
        rows = gradebook.student_rows(root / "gradebook.db", job.student)
    except ValueError as error:
        return Result(job.student, False, f"not graded: {error}", log)
    return Result(job.student, True, message, log + (feedback.get("log") or ""), files,
                  rows, stops=_stops(files, console), peak_mb=peak_mb)


_EXCEPTION = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): ?(.*)$")
_CONVERTING = re.compile(r"Converting notebook .*/([^/]+\.ipynb)\s*$")


def autograde_failure(error: str | None, log: str) -> str:
    """Why nbgrader's autograde failed, from its log, naming the notebook it was converting: the last
    exception its traceback shows, not its closing "see the above traceback".  A KeyError as it adds
    back the test cells means that a cell it places them after (an answer cell, say) is gone or has
    lost its nbgrader metadata, which some editors drop when they save."""
    lines = (log or error or "").splitlines()
    found = [match for line in lines if (match := _EXCEPTION.match(line))
             and not match.group(1).endswith("NbGraderException")]
    notebooks = [match.group(1) for line in lines if (match := _CONVERTING.search(line))]
    where = f"{notebooks[-1]}: " if notebooks else ""
    if not found:
        return where + ((error or log or "no message").strip().splitlines() or ["no message"])[-1]
    kind, message = found[-1].groups()
    if kind == "KeyError" and "add_missing_grade_cells" in log:
        return (f"{where}the cell {message} is missing or has lost its nbgrader metadata (deleted, or the notebook "
                "was saved by an editor that drops it), so nbgrader cannot put the tests back in place")
    return f"{where}{kind}: {message}"


def _stops(files: dict[str, bytes], console: str) -> dict[str, dict]:
    """The notebooks of a graded hand-in that stopped early, read from the autograded notebooks."""
    from autograder.execute import STOP_KEY

    stops = {}
    for relative, data in files.items():
        if relative.startswith("autograded/") and relative.endswith(".ipynb"):
            # Only the metadata is read: plain JSON, without nbformat's conversion and validation.
            stop = json.loads(data).get("metadata", {}).get(STOP_KEY)
            if stop:
                stops[Path(relative).name] = {**stop, **({"console": last_words(console)}
                                                          if stop["kind"] == "died" else {})}
    return stops


def _jupyter_runtime_dir() -> Path:
    from jupyter_core.paths import jupyter_runtime_dir

    return Path(jupyter_runtime_dir()).resolve()


# ------------------------------------------------------------ per worker process

_zygotes: dict = {}  # this process's own zygotes, one per kernel environment
_zygotes_lock = threading.Lock()  # a Dask worker may run jobs in several threads
_uid: int | None = None


def _zygote_for(settings: Settings) -> str:
    """The coordinator's zygote when this machine can reach it, else this process's own, started
    with the run's kernel environment: the zygote imports PyTorch, which reads its thread count
    then, so the coordinator's thread share set later in a forked kernel would change nothing.
    One zygote per environment, so that two runs sharing a worker do not close each other's."""
    if settings.zygote and os.path.exists(settings.zygote):
        return settings.zygote
    from autograder.zygote import Zygote

    env = {**sandbox.kernel_environment(), **settings.env}
    key = tuple(sorted(env.items()))
    with _zygotes_lock:
        zygote = _zygotes.get(key)
        if zygote is None or not zygote.alive():
            if zygote is not None:
                zygote.close()
            zygote = _zygotes[key] = Zygote(env)
            zygote.start().wait()
            atexit.register(zygote.close)
        return zygote.path


def worker_uid() -> int:
    """This process's sandbox user id, held for its lifetime."""
    global _uid
    if _uid is None:
        _uid = sandbox.claim_uid()
    return _uid

