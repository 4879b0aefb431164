"""A student kernel searches the whole file system it can see for the instructor's secrets.

The hostile class (test_autograder_hostile.py) tries the paths a student would guess.
Here a submission walks everything from ``/`` (skipping only ``/proc`` and ``/sys``),
reads every regular file of up to 2 MB, and prints every file that holds a line of a
hidden test, a line of the instructor's solution, or the name and notebook of a
classmate graded in the same run (which the gradebook and that notebook hold).  It
must find none, in every sandbox mode that isolates (``root`` and ``userns``), with the
repository outside the temporary folder (this clone) and inside it (a copy under
``/tmp``, as a CI clone may be).  The kernel's root holds only the operating system, the
Python installation and the ``nlpbook`` package, so a second clone elsewhere on the machine
(the copy, or this clone when the copy grades) stays out of sight too.  Mode ``none`` promises no such thing: ``--sandbox
auto`` never chooses it, and the log lists what it leaves open (test_autograder_sandbox).

The secrets are searched for by content, so copies made by the grader (a staging
folder, the notebook with its hidden tests restored, a job's private course, a history of
the cells the kernel ran) count.  The walk is the notebook's last cell, after every hidden
test has run.  The student's cell carries the secrets hex-encoded, and writes a marker of
its own to a file in its folder that the walk must find, so a walk that reads nothing, or
skips the kernel's own folder, cannot pass.
"""
from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell

from autograder import sandbox
from autograder.course import REPO_ROOT
from autograder.handins import write
from conftest import autograded, repository_copy

ASSIGNMENT, NOTEBOOK = "04-attention", "attention"
# A line of a hidden test and a line of the solution of the real repository (outside /tmp).
REAL_HIDDEN = "def _check_attention(shape, mask=None, dtype=torch.float32, atol=1e-5):"
REAL_SOLUTION = "mask = torch.zeros(input_ids.shape, dtype=dtype, device=input_ids.device)  # (B, S)"
SIZE_LIMIT = 2_000_000

WALK = '''
import os
needles = {{name: bytes.fromhex(value) for name, value in {needles!r}.items()}}
with open("marker.txt", "wb") as handle:  # the positive control, in the kernel's own folder
    handle.write(needles["own"])
found, files = [], 0
for top, folders, names in os.walk("/"):
    if top == "/":
        folders[:] = [f for f in folders if f not in ("proc", "sys")]
    for name in names:
        path = os.path.join(top, name)
        try:
            status = os.lstat(path)
            if status.st_mode & 0o170000 != 0o100000 or status.st_size > {limit}:
                continue
            files += 1
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        found += [(what, path) for what, needle in needles.items() if needle in data]
print("WALKED", files)
for what, path in found:
    print("FOUND", what, path)
'''


def _plant(repo: Path, token: str) -> tuple[str, str]:
    """Add a line to a hidden test and a line to a solution cell of the copy; return both lines."""
    path = repo / "solutions" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    hidden, solution = f"_planted = 'hidden-{token}'", f"# solution-{token}"
    cells = [c for c in notebook.cells if c.cell_type == "code"]
    test_cell = next(c for c in cells if "### BEGIN HIDDEN TESTS" in c.source)
    test_cell.source = test_cell.source.replace("### BEGIN HIDDEN TESTS", f"### BEGIN HIDDEN TESTS\n{hidden}", 1)
    solution_cell = next(c for c in cells if "### BEGIN SOLUTION" in c.source)
    solution_cell.source = solution_cell.source.replace("### BEGIN SOLUTION", f"### BEGIN SOLUTION\n{solution}", 1)
    nbformat.write(notebook, path)
    return hidden, solution


def _repository(where: str, tmp_path: Path, token: str) -> tuple[Path, dict[str, str]]:
    """The repository to grade from, and the secrets that only its instructor's files hold."""
    if where == "outside":
        return REPO_ROOT, {"hidden test": REAL_HIDDEN, "solution": REAL_SOLUTION}
    copy = repository_copy(tmp_path / "course")
    hidden, solution = _plant(copy, token)
    return copy, {"hidden test": hidden, "solution": solution}


SETUPS = [("root", "outside"), ("userns", "outside"), ("root", "inside"), ("userns", "inside")]


def _start_grading(mode: str, where: str, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """Plant the secrets, hand in the walker beside a classmate, and start grading in ``mode``."""
    assert where == "outside" or "/tmp/" in str(tmp_path)
    token = uuid.uuid4().hex
    repo, secrets = _repository(where, tmp_path, token)
    # Both hand in the blank exercise: a solved one would hold the solution's lines itself, and the
    # classmate's notebook is found by its own line (blank, it grades in seconds, with no training).
    blank = repo / "exercises" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    classmate = f"aa-classmate-{token}"
    theirs = nbformat.read(blank, as_version=4)
    theirs.cells.insert(1, new_code_cell(f"# notebook of classmate-{token}"))
    write(theirs, tmp_path / "submissions" / classmate / ASSIGNMENT, NOTEBOOK)
    needles = {**secrets, "classmate": f"classmate-{token}"}
    own = f"own-{token}"
    walker = nbformat.read(blank, as_version=4)
    walker.cells.append(new_code_cell(WALK.format(
        needles={name: text.encode().hex() for name, text in {**needles, "own": own}.items()}, limit=SIZE_LIMIT)))
    write(walker, tmp_path / "submissions" / "zz-walker" / ASSIGNMENT, NOTEBOOK)
    process = subprocess.Popen([sys.executable, "-m", "autograder", "grade", ASSIGNMENT, "--submissions",
                                str(tmp_path / "submissions"), "--out", str(tmp_path / "out"), "--sandbox", mode,
                                "--timeout", "240", "--notebook-timeout", "300", "--workers", "1"],
                               cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return process, repo


@pytest.fixture(scope="module")
def gradings(tmp_path_factory):
    """Every mode's grading, started at once.  A walk reads files in one kernel on one core, so the
    four run side by side on the machine's cores (each grading claims a sandbox user id of its own)
    instead of one after another with a core idle."""
    started = {}
    for mode, where in SETUPS:
        if (mode == "root" and sandbox.os.geteuid() != 0) or not sandbox.can_enter_namespaces(mode):
            started[mode, where] = f"this machine cannot grade in mode {mode}"
        else:
            started[mode, where] = _start_grading(mode, where, tmp_path_factory.mktemp(f"snoop-{mode}-{where}"))
    yield started
    for entry in started.values():
        if not isinstance(entry, str) and entry[0].poll() is None:
            entry[0].kill()
            entry[0].wait()


@pytest.fixture(scope="module", params=SETUPS, ids=lambda p: f"{p[0]}-repository-{p[1]}-tmp")
def snooped(request, gradings):
    entry = gradings[request.param]
    if isinstance(entry, str):
        pytest.skip(entry)
    process, repo = entry
    _, stderr = process.communicate(timeout=900)
    assert process.returncode == 0, stderr[-3000:]
    out = Path(process.args[process.args.index("--out") + 1])
    graded = autograded(out, "zz-walker", ASSIGNMENT, NOTEBOOK)
    printed = "".join(o.get("text", "") for o in nbformat.read(graded, as_version=4).cells[-1].outputs)
    return {"printed": printed, "repo": repo}


def test_the_walk_reads_the_whole_visible_file_system(snooped):
    printed = snooped["printed"]
    assert "WALKED" in printed, printed[-2000:]
    files = int(printed.split("WALKED", 1)[1].split()[0])
    assert files > 10_000, printed  # the Python installation alone has more
    # The positive control: the marker the walker wrote to its own folder before walking.
    assert any(line.startswith("FOUND own ") for line in printed.splitlines()), printed


def test_no_file_the_kernel_can_read_holds_a_secret(snooped):
    leaks = [line for line in snooped["printed"].splitlines()
             if line.startswith("FOUND ") and not line.startswith("FOUND own ")]
    assert leaks == [], "\n".join(leaks)
