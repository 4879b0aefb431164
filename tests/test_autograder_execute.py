"""The grader's execution step stops a notebook for the right reason, and says which.

These run ``SandboxedExecute`` with an ordinary kernel: how it stops a notebook does not
depend on the sandbox, which tests/test_autograder_hostile.py exercises with whole classes.
"""
from __future__ import annotations

import json
import threading
import time
from types import SimpleNamespace

import pytest
from jupyter_client.manager import AsyncKernelManager
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder import sandbox
from autograder.execute import STOP_KEY, SandboxedExecute, SandboxSession
from nbgrader.preprocessors import Execute

# A cell that takes its time to stop when interrupted: longer than nbclient waits for the
# kernel after an interrupt (iopub_timeout, 1 s in these runs), as any cell may on a busy machine.
SLOW_TO_STOP = "import time\ntry:\n    time.sleep(60)\nexcept KeyboardInterrupt:\n    time.sleep(3)\n    raise"
IGNORES_INTERRUPTS = "import time\nwhile True:\n    try:\n        time.sleep(60)\n    except KeyboardInterrupt:\n        pass"
# Limits long enough for a kernel to start and answer an interrupt on a loaded machine (the
# notebook's clock starts before its kernel does), short enough to keep each test to seconds.
NOTEBOOK_LIMIT, PROMPT = 8, 10


def run(*cells, timeout: int, notebook_timeout: int, iopub_timeout: int = PROMPT):
    """Run cells (a code cell's source, or a cell) in one notebook: (the notebook, seconds taken)."""
    notebook = new_notebook(cells=[new_code_cell(c) if isinstance(c, str) else c for c in cells])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    execute = SandboxedExecute(kernel_manager_class=AsyncKernelManager, timeout=timeout,
                               notebook_timeout=notebook_timeout, iopub_timeout=iopub_timeout)
    started = time.monotonic()
    notebook, _ = execute.preprocess(notebook, {})
    return notebook, time.monotonic() - started


def error_names(cell) -> list[str]:
    return [output["ename"] for output in cell.outputs if output["output_type"] == "error"]


def error_values(cell) -> list[str]:
    return [output["evalue"] for output in cell.outputs if output["output_type"] == "error"]


def test_a_notebook_that_finishes_in_time_has_no_stop():
    notebook, _ = run("x = 1", "print(x + 1)", timeout=10, notebook_timeout=30)
    assert STOP_KEY not in notebook.metadata
    assert notebook.cells[1].outputs[0]["text"] == "2\n"


def test_a_cell_interrupted_at_the_notebook_limit_stops_the_rest_and_keeps_what_ran():
    # The cell's limit is cut to the notebook's remaining time; interrupted there, it stops at
    # once, and the next cell finds the notebook past its limit.
    notebook, _ = run("print('first')", "import time; time.sleep(60)", "print('late')",
                      timeout=60, notebook_timeout=NOTEBOOK_LIMIT)
    assert notebook.cells[0].outputs[0]["text"] == "first\n"
    assert "KeyboardInterrupt" in error_names(notebook.cells[1])
    assert error_values(notebook.cells[1])[-1] == (
        f"interrupted: the notebook reached its time limit of {NOTEBOOK_LIMIT} s while this cell ran")
    assert notebook.metadata[STOP_KEY] == {
        "kind": "notebook-timeout", "cell": None,
        "reason": f"the notebook ran past its time limit of {NOTEBOOK_LIMIT} s"}
    assert error_names(notebook.cells[2]) == ["NotRun"]


def test_a_cell_cut_short_by_the_notebook_limit_is_blamed_on_that_limit_even_when_slow_to_stop():
    # The regression: at the notebook's deadline the cell is interrupted and takes longer than
    # nbclient's wait to stop; it was reported as a cell that ignored the interrupt at "its
    # limit" of a few seconds, a limit the student never met: the notebook's is the one it hit.
    notebook, _ = run("x = 1", SLOW_TO_STOP, "print('late')", timeout=60, notebook_timeout=NOTEBOOK_LIMIT,
                      iopub_timeout=1)
    stop = notebook.metadata[STOP_KEY]
    assert stop == {"kind": "notebook-timeout", "cell": 1,
                    "reason": f"the notebook ran past its time limit of {NOTEBOOK_LIMIT} s in cell 1"}
    assert error_names(notebook.cells[1])[-1] == "KernelStopped"
    assert error_names(notebook.cells[2]) == ["NotRun"]


def test_a_cell_interrupted_at_its_own_limit_says_so_and_the_notebook_goes_on():
    # nbgrader's rule: a cell past its limit is interrupted and fails; the cells after it still run.
    notebook, _ = run("import time; time.sleep(60)", "print('next')", timeout=2, notebook_timeout=60)
    assert STOP_KEY not in notebook.metadata
    assert error_values(notebook.cells[0])[-1] == "interrupted: this cell ran past its time limit of 2 s"
    assert notebook.cells[1].outputs[0]["text"] == "next\n"


def test_a_stop_names_the_graded_cell_by_its_nbgrader_id():
    # The index counts Markdown cells too, and the feedback numbers no cell: the id is what a
    # student and an instructor can find.
    dies = new_code_cell("import os; os._exit(3)")
    dies.metadata["nbgrader"] = {"grade_id": "test_part_1", "grade": True, "points": 1}
    notebook, _ = run(new_markdown_cell("# Part 1"), "x = 1", dies, "print('late')", timeout=30, notebook_timeout=60)
    stop = notebook.metadata[STOP_KEY]
    assert stop["kind"] == "died" and stop["cell"] == 2
    assert stop["reason"].startswith("the kernel died while cell 2 (test_part_1) ran"), stop


@pytest.mark.parametrize("source", [IGNORES_INTERRUPTS, SLOW_TO_STOP], ids=["ignores", "slow-to-stop"])
def test_a_cell_that_will_not_stop_at_its_own_limit_is_named(source):
    notebook, took = run("x = 1", source, "print('late')", timeout=2, notebook_timeout=60, iopub_timeout=1)
    stop = notebook.metadata[STOP_KEY]
    assert stop == {"kind": "cell-timeout", "cell": 1,
                    "reason": "cell 1 ran past its time limit of 2 s and ignored the interrupt"}
    assert error_names(notebook.cells[1])[-1] == "KernelStopped"
    assert error_names(notebook.cells[2]) == ["NotRun"]
    assert took < 30  # the kernel was shut down, not waited for


def test_a_student_s_test_cells_reach_the_kernel_without_their_expected_values():
    from autograder.execute import without_expected_values

    source = ("expect_close(out, lambda: _reference(q,\n"
              "                                     k), 'attention', atol=1e-5)  # é\n"
              "checks.expect_close(a, expected=torch.tensor([1.0]), name='b')\n"
              "expect_shape(out, (2, 3), 's')\n")
    hidden = without_expected_values(source)
    assert "_reference" not in hidden and "torch.tensor([1.0])" not in hidden
    assert hidden.count("None") == 2 and "expect_shape(out, (2, 3), 's')" in hidden  # nothing else changes
    assert len(hidden.splitlines()) == len(source.splitlines())  # tracebacks keep their line numbers
    compile(hidden, "<cell>", "exec")
    assert without_expected_values("expect_close(") == "expect_close("  # unparsable: sent as it is


def test_the_test_cell_is_sent_blanked_in_a_student_run_and_kept_as_written(monkeypatch):
    # What the kernel receives, seen from nbclient's side; the notebook keeps the instructor's text.
    seen = []
    monkeypatch.setattr(Execute, "preprocess_cell", lambda self, cell, resources, index:
                        (seen.append(cell.source), (cell, resources))[1])
    cell = new_code_cell("expect_close(f(), lambda: secret(), 'f')")
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "t", "points": 1}
    for hide, sent in ((True, "expect_close(f(), None, 'f')"), (False, cell.source)):
        execute = SandboxedExecute(hide_expected=hide)
        execute._deadline, execute._cell_timeout, execute._stopped = time.monotonic() + 60, 60, None
        execute.preprocess_cell(cell, {"interrupted": {}}, 0)
        assert seen[-1] == sent and cell.source == "expect_close(f(), lambda: secret(), 'f')"


def test_updates_of_a_display_count_against_the_output_allowance():
    # nbclient applies update_display_data outside output(): without the count, an update of
    # 2 MB would land in the graded notebook, past the allowance of 1 MB, and one of 500 MB too.
    flood = "h = display('x', display_id=True)\nh.update('y' * 2_000_000)"
    notebook, _ = run(flood, timeout=20, notebook_timeout=40)
    assert len(str(notebook.cells[0].outputs)) < 1_000_000


def test_a_later_cell_cannot_rewrite_an_earlier_cell_s_display():
    # Feedback may withhold what ran after a hidden test; an update from there must not land in a
    # cell before it. Within its own cell a display still updates (a progress bar).
    notebook, _ = run("h = display('early', display_id=True)\nh.update('updated in its cell')",
                      "h.update('from a later cell')\ndisplay('again', display_id=h.display_id)",
                      timeout=20, notebook_timeout=40)
    [early] = notebook.cells[0].outputs
    assert early["data"]["text/plain"] == "'updated in its cell'"
    assert "from a later cell" not in str(notebook.cells[0].outputs)


def test_a_kernel_killed_for_its_sandbox_s_memory_says_so(tmp_path):
    # Each kernel's relay writes what its memory group saw beside the socket folder; a kernel the
    # operating system killed there is not "killed by signal 9" alone, which reads like a crash.
    (tmp_path / "ipc" / "kernel-b").mkdir(parents=True)
    code = -9
    execute = SandboxedExecute()
    execute.km = SimpleNamespace(provisioner=SimpleNamespace(process=SimpleNamespace(poll=lambda: code)),
                                 socket_root=str(tmp_path / "ipc"), ip=str(tmp_path / "ipc" / "kernel-b" / "kernel"))
    assert execute._exit_status() == "killed by signal 9"
    killed = {"peak_mb": 3584, "limit_mb": 3584, "oom_kills": 1}
    (tmp_path / "memory-kernel-a.json").write_text(json.dumps(killed))  # another kernel of the session
    assert execute._exit_status() == "killed by signal 9"
    (tmp_path / "memory-kernel-b.json").write_text(json.dumps(killed))
    assert execute._exit_status() == (
        "killed by signal 9: the notebook's processes together reached the sandbox's memory limit of 3584 MB")
    code = 1  # a hoarding child was killed, then the kernel ended on its own: not the memory's doing
    assert execute._exit_status() == "exit status 1"


def test_a_session_waits_for_the_memory_report_of_every_kernel_it_started(tmp_path):
    # A kernel killed at shutdown (nbclient kills its launcher when it does not answer) has its
    # report written by its relay a moment after the grader asks: it is waited for, boundedly.
    session = SandboxSession(mode="root", role="student", hide=[])
    session.root, session.memory_group = tmp_path, "/a/memory/group"  # as __enter__ sets them
    for kernel in ("kernel-early", "kernel-late"):
        (tmp_path / "ipc" / kernel).mkdir(parents=True)
    report = {"peak_mb": 40, "limit_mb": 3584, "oom_kills": 0}
    sandbox.write_memory_report(tmp_path, str(tmp_path / "ipc" / "kernel-early" / "kernel"), report)
    late = threading.Timer(0.5, sandbox.write_memory_report,
                           (tmp_path, str(tmp_path / "ipc" / "kernel-late" / "kernel"), {**report, "peak_mb": 3000}))
    late.start()
    assert session.memory()["peak_mb"] == 3000
    late.join()
    assert sorted(p.name for p in tmp_path.glob("memory-*")) == ["memory-kernel-early.json", "memory-kernel-late.json"]
    (tmp_path / "ipc" / "kernel-never").mkdir()  # a kernel whose relay never wrote: the wait ends
    started = time.monotonic()
    assert session.memory(wait=0.3)["peak_mb"] == 3000
    assert 0.3 <= time.monotonic() - started < 2
    session.memory_group = ""  # no group: no report to wait for
    started = time.monotonic()
    session.memory()
    assert time.monotonic() - started < 0.3
