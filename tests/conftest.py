"""Shared test helpers. The suite runs in the quick profile unless told otherwise."""
from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# Under pytest-xdist each worker, and every kernel and grading it starts, gets its share of the
# cores before anything imports PyTorch: processes of two threads each on two cores wait on each
# other's threads at every operation (pages ran 7 to 14 times slower that way).
from autograder.pool import thread_share  # noqa: E402 (imports no PyTorch, so the setting still takes)

_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    for _name, _value in thread_share(_WORKERS).items():
        os.environ.setdefault(_name, _value)

import nbval.kernel  # noqa: E402
import pytest  # noqa: E402

from autograder.course import REPO_ROOT as REPO  # noqa: E402


def _start_kernel_again_if_it_dies(start_new_kernel, attempts: int = 3):
    """nbval's kernel start, tried up to ``attempts`` times.

    nbval's kernels listen on TCP ports that jupyter_client picks by binding port 0 and letting
    it go.  Beside the book's build, the gradings and the other worker, all starting kernels,
    another process can take the port in between; the new kernel then exits before it answers,
    and nbval errors every cell of the notebook ("Kernel died before replying to kernel_info":
    all 24 cells of chapter 6's solution in one CI run, when CI still ran ``solutions/``).  A second
    start picks fresh ports; ``pytest solutions`` and benchmarks/solution_suite.py still need it.
    The grader's own kernels use Unix sockets in folders of their own, so they never race.
    """
    def start(*args, **kwargs):
        for attempt in range(1, attempts + 1):
            try:
                return start_new_kernel(*args, **kwargs)
            except RuntimeError as error:  # nbval's start shuts down the failed kernel before raising
                if attempt == attempts:
                    raise
                print(f"nbval's kernel did not start ({error}); starting another", file=sys.stderr)
    start.wrapped = start_new_kernel
    return start


if not hasattr(nbval.kernel.start_new_kernel, "wrapped"):  # tests that import conftest import it again
    nbval.kernel.start_new_kernel = _start_kernel_again_if_it_dies(nbval.kernel.start_new_kernel)

JUPYTER_BOOK = Path(sys.executable).with_name("jupyter-book")
# The front matter of a book page (MyST Markdown read by jupytext), for tests that write one
MYST_HEADER = ("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
               "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n")
# Text that only the instructors' notebooks hold: no page of the built book may show it.
SOLUTION_MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "MARK SCHEME", "_reference_attention")

# nbgrader's example course and fixtures are inputs to the grading tests, not notebooks to run:
# several fail on purpose (students who did not answer).
collect_ignore = ["nbgrader_course"]

# Set before any notebook kernel starts (nbval, nbclient, nbgrader inherit it).
os.environ.setdefault("NLPBOOK_PROFILE", "quick")
os.environ.setdefault("NLPBOOK_PROGRESS", "0")
# The session's gradings share registered assignments and the solutions' reference runs
# (autograder.grade.shared_cache) as an instructor's do, in a folder of the session's own
# rather than the user's cache: a grading test then pays for each solution run once.
if "AUTOGRADER_CACHE" not in os.environ:
    os.environ["AUTOGRADER_CACHE"] = tempfile.mkdtemp(prefix="autograder-cache-")
    atexit.register(shutil.rmtree, os.environ["AUTOGRADER_CACHE"], ignore_errors=True)


def makes_a_value_check(source: str) -> bool:
    """Whether a test cell's source calls ``expect_close`` or ``expect_score``: the checks whose expected
    value exists only in the solution's run (``autograder.verdicts.VALUE_KINDS``); the others send what
    the student's kernel computed, which code in the notebook can forge."""
    return re.search(r"\bexpect_(close|score)\(", source) is not None


def run_autograder(*args: str, timeout: int = 1800, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m autograder ARGS`` the way an instructor does (``env`` added to the environment),
    and capture what it prints."""
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


def autograded(out: Path, student: str, assignment: str, notebook: str) -> Path:
    """Where ``python -m autograder grade ASSIGNMENT ... --out OUT`` leaves a student's graded notebook
    (nbgrader's ``autograded`` folder in the course it builds under ``OUT``)."""
    return out / "course" / "autograded" / student / assignment / f"{notebook}.ipynb"


def course_folder(tmp_path: Path, config: str = "") -> Path:
    """An nbgrader course folder with one source notebook in ``instructor/lab`` (its config says so)."""
    import nbformat

    course = tmp_path / "course"
    (course / "instructor" / "lab").mkdir(parents=True)
    (course / "handins").mkdir()
    nbformat.write(nbformat.v4.new_notebook(), course / "instructor" / "lab" / "lab.ipynb")
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\nc.CourseDirectory.source_directory = 'instructor'\n"
        "c.CourseDirectory.submitted_directory = 'handins'\n" + config)
    return course


def repository_copy(destination: Path) -> Path:
    """A copy of what grading needs from this repository (packages, solutions, exercises) at ``destination``.

    ``python -m autograder`` run from the copy grades from the copy's ``solutions/``, so a
    test can add an assignment or plant a marker without touching the real repository.
    """
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
    from nlpbook.toc import files

    return files()


# A figure directive that shows one of the book's diagrams (diagrams/draw.py), with its options and caption.
DIAGRAM_FIGURE = re.compile(r"^```\{figure\} (diagrams/[\w.-]+\.svg)\n((?::[\w-]+:[^\n]*\n)*)\n(.*?)\n```$", re.M | re.S)


def diagram_figures(name: str) -> list[tuple[str, dict[str, str], str]]:
    """The diagrams placed on the page ``name``: (path from the repository root, figure options, caption)."""
    page = REPO / f"{name}.md"
    if not page.exists():
        return []
    return [(str((page.parent / match.group(1)).relative_to(REPO)),
             dict(re.findall(r"^:([\w-]+):\s*(.*)$", match.group(2), re.M)), match.group(3))
            for match in DIAGRAM_FIGURE.finditer(page.read_text())]


def notebook_pages() -> list[str]:
    """The pages with code: MyST notebooks (a kernelspec in their header): the chapters' pages, and
    the chapter openers and the preface, whose running-time tables a cell makes; not the exercise pages."""
    return [name for name in toc_files()
            if (page := REPO / f"{name}.md").exists() and "kernelspec:" in page.read_text()]


def page_code(page: Path) -> str:
    """The code cells of a MyST Markdown page, joined."""
    return "\n".join(re.findall(r"^```\{code-cell\}[^\n]*\n(.*?)^```", page.read_text(),
                                flags=re.S | re.M))


def execute_pages(cache_folder: Path, workers: int) -> None:
    """Run the book's notebook pages ``workers`` at a time into the execution cache at ``cache_folder``.

    Jupyter Book runs its pages one after another.  In the quick profile a page spends most of
    its time starting a kernel, importing and running small models, mostly on one core, so two
    at a time on two cores take about half as long.  The build then finds every page in its
    cache: jupyter-cache keys a page by its code cells, not by which process ran them.  A page
    that fails here is left out of the cache, so the build runs it again and reports its error.
    Only the tests do this: in the standard profile, pages race models against the clock, and
    two at a time would change the figures the text quotes.
    """
    from concurrent.futures import ProcessPoolExecutor

    import yaml
    from jupyter_cache import get_cache
    from jupyter_cache.executors.basic import ExecutionWorkerLocalMProc, ProcessData

    timeout = yaml.safe_load((REPO / "_config.yml").read_text())["execute"]["timeout"]
    cache = get_cache(str(cache_folder))
    # Pages in execution_mode force run in the build whatever the cache holds (the running-time pages).
    records = [cache.add_nb_to_project(str(REPO / f"{name}.md"), read_data={"name": "myst_nb_md", "type": "plugin"})
               for name in notebook_pages() if "execution_mode: force" not in (REPO / f"{name}.md").read_text()]
    # each kernel gets its share of the cores (autograder.pool.thread_share says why)
    with ProcessPoolExecutor(workers, initializer=os.environ.update, initargs=(thread_share(workers),)) as pool:
        list(pool.map(ExecutionWorkerLocalMProc(), [ProcessData(r.pk, r.uri, cache, timeout, False) for r in records]))


@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """The README's build command (plus -n) into a fresh folder: (the finished process, its output folder).

    One build per test session, shared by the build checks (test_book.py) and the browser
    test (test_book_browser.py); the folder also holds the execution cache, so a second
    builder (linkcheck) re-runs no page.  The pages run two at a time first (:func:`execute_pages`).
    Under pytest-xdist the two files may run on different workers: the first to ask builds, in
    the folder the workers share, and the other waits for it and reads the same build.
    """
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # pytest-N/popen-gwK -> pytest-N, the same for every worker
    out, record = shared / "book", shared / "book-build.json"
    with FileLock(str(shared / "book-build.lock")):
        if not record.exists():
            out.mkdir(exist_ok=True)
            execute_pages(out / "_build" / ".jupyter_cache", workers=max(1, os.cpu_count() or 1))
            result = subprocess.run([str(JUPYTER_BOOK), "build", "-W", "-n", "--keep-going", "--path-output", str(out),
                                     str(REPO)], capture_output=True, text=True, timeout=1800)
            record.write_text(json.dumps({"args": result.args, "returncode": result.returncode,
                                          "stdout": result.stdout, "stderr": result.stderr}))
    saved = json.loads(record.read_text())
    return subprocess.CompletedProcess(saved["args"], saved["returncode"], saved["stdout"], saved["stderr"]), out
