"""A grading worker's job, apart from the kernels it runs (those are the grading tests' concern)."""
import json
from pathlib import Path

import pytest

from autograder import jobs
from autograder.execute import STOP_KEY
from autograder.jobs import Course, Job, Settings, last_words
from autograder.sandbox import Limits


def test_last_words_are_the_kernels_last_informative_lines_on_one_line():
    console = ("Debugger warning: It seems that frozen modules are being used\n"
               "loading the data\n\n  MemoryError  \n"
               "[IPKernelApp] WARNING | Kernel is running over TCP\n"
               "Killed\n"
               "NOTE: When using the `ipython kernel` entry point, Ctrl-C will not work.\n")
    assert last_words(console) == "loading the data | MemoryError | Killed"
    assert last_words(console, lines=1) == "Killed"
    assert last_words("Debugger warning\n\n") == "(nothing)"


def test_a_course_travels_as_its_gradebook_sources_and_reference_records_only(tmp_path):
    root = tmp_path / "course"
    for relative in ("gradebook.db", "source/hw/hw.ipynb", "source/hw/data.txt", "reference/hw.json",
                     "submitted/ada/hw/hw.ipynb", "autograded/ada/hw/hw.ipynb", "nbgrader_config.py"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(relative.encode())
    course = Course.read(root, "hw")
    # no student's work and no other course's settings go to a worker with every job
    assert sorted(course.files) == ["gradebook.db", "reference/hw.json", "source/hw/data.txt", "source/hw/hw.ipynb"]
    copy = tmp_path / "copy"
    course.write(copy)
    assert sorted(p.relative_to(copy).as_posix() for p in copy.rglob("*") if p.is_file()) == sorted(course.files)
    assert (copy / "source/hw/data.txt").read_bytes() == b"source/hw/data.txt"


def _autograded(stop=None):
    return json.dumps({"metadata": {STOP_KEY: stop} if stop else {}, "cells": []}).encode()


def test_stops_name_each_notebook_that_stopped_early_with_the_kernels_last_words_when_it_died():
    died = {"kind": "died", "cell": 4, "message": "the kernel died while part 3 ran"}
    timeout = {"kind": "timeout", "cell": 2, "message": "part 2 ran out of time"}
    files = {"autograded/ada/hw/one.ipynb": _autograded(died), "autograded/ada/hw/two.ipynb": _autograded(timeout),
             "autograded/ada/hw/three.ipynb": _autograded(),
             "feedback/ada/hw/one.html": b"<html>", "autograded/ada/hw/data.txt": b"not a notebook"}
    stops = jobs._stops(files, "loading\nKilled\n")
    assert stops == {"one.ipynb": {**died, "console": "loading | Killed"}, "two.ipynb": timeout}


def test_a_job_that_breaks_returns_a_failed_result_and_leaves_no_private_course_behind(tmp_path, monkeypatch):
    monkeypatch.setattr(jobs, "_scratch", lambda: str(tmp_path))
    settings = Settings(mode="none", drop_user=False, limits=Limits(), timeout=10, notebook_timeout=60)
    # a notebook name that points into a folder the hand-in does not have: writing it fails before any kernel
    job = Job("student", "ada", Course("hw", {"gradebook.db": b""}), settings, {"sub/hw.ipynb": b"{}"})
    result = jobs.run(job)
    assert not result.success and result.student == "ada"
    assert result.message.startswith("FileNotFoundError: ") and result.seconds > 0
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("field, value", [("mode", "userns"), ("timeout", 11), ("limits", Limits(memory_mb=1))])
def test_what_can_change_how_a_notebook_runs_is_in_the_sandboxing_key_and_nothing_else(field, value):
    base = dict(mode="none", drop_user=False, limits=Limits(), timeout=10, notebook_timeout=60)
    settings = Settings(**base)
    assert Settings(**{**base, field: value}).sandboxing() != settings.sandboxing()
    # where kernels run and what they cannot see is the same for every student: not a reason to grade again
    elsewhere = Settings(**base, hide=["/srv/course"], zygote="/tmp/zygote.sock", env={"OMP_NUM_THREADS": "1"})
    assert elsewhere.sandboxing() == settings.sandboxing()


def test_a_workers_own_zygote_starts_with_the_runs_kernel_environment(monkeypatch):
    # The zygote imports PyTorch, which reads its thread count then: a Dask worker's zygote started
    # without the coordinator's thread share would hand every kernel a thread per core.
    started = []

    class FakeZygote:
        def __init__(self, env):
            self.env, self.closed, self.path = env, False, f"/tmp/zygote-{len(started)}.sock"
            started.append(self)

        def start(self):
            return self

        def wait(self):
            return self.path

        def alive(self):
            return not self.closed

        def close(self):
            self.closed = True

    monkeypatch.setattr("autograder.zygote.Zygote", FakeZygote)
    monkeypatch.setattr(jobs, "_zygotes", {})
    monkeypatch.setattr(jobs.atexit, "register", lambda function: None)
    base = dict(mode="none", drop_user=False, limits=Limits(), timeout=10, notebook_timeout=60)
    one_thread = Settings(**base, env={"OMP_NUM_THREADS": "1", "NLPBOOK_PROFILE": "quick"})
    path = jobs._zygote_for(one_thread)
    assert path == started[0].path and started[0].env["OMP_NUM_THREADS"] == "1"
    assert started[0].env["NLPBOOK_PROFILE"] == "quick"
    assert jobs._zygote_for(one_thread) == path and len(started) == 1  # kept for the next job
    # another run's settings on the same worker get a zygote of their own, and both runs keep theirs
    two_threads = Settings(**base, env={"OMP_NUM_THREADS": "2", "NLPBOOK_PROFILE": "quick"})
    assert jobs._zygote_for(two_threads) == started[1].path and started[1].env["OMP_NUM_THREADS"] == "2"
    assert jobs._zygote_for(one_thread) == path and not started[0].closed and len(started) == 2
    # one that died is replaced
    started[0].closed = True
    assert jobs._zygote_for(one_thread) == started[2].path
    # the coordinator's zygote, where this machine can reach it, is used as it is
    assert jobs._zygote_for(Settings(**base, zygote=__file__)) == __file__


NBGRADER_LOG = """[INFO] Converting notebook /dev/shm/nlpbook-job-1/submitted/bea/04-attention/attention.ipynb
[WARNING] Missing grade cell test_scaled_dot_product_attention_visible encountered, adding to notebook
[ERROR] Traceback (most recent call last):
      File "nbgrader/preprocessors/overwritecells.py", line 140, in add_missing_grade_cells
        prev_cell_idx = submitted_cell_idxs[prev_cell_id] + added_count
    KeyError: 'scaled_dot_product_attention'

[ERROR] There was an error processing assignment '04-attention' for student 'bea'
[ERROR] Please see the the above traceback for details on the specific errors on the above failures.
"""


def test_an_autograde_failure_is_told_by_its_cause_and_notebook_not_by_nbgrader_s_last_line():
    from autograder.jobs import autograde_failure

    closing = "nbgrader.converters.base.NbGraderException: Please see the the above traceback"
    assert autograde_failure(closing, NBGRADER_LOG) == (
        "attention.ipynb: the cell 'scaled_dot_product_attention' is missing or has lost its nbgrader metadata "
        "(deleted, or the notebook was saved by an editor that drops it), so nbgrader cannot put the tests back "
        "in place")
    other = NBGRADER_LOG.replace("add_missing_grade_cells", "preprocess").replace(
        "KeyError: 'scaled_dot_product_attention'", "ValueError: invalid literal for int()")
    assert autograde_failure(closing, other) == "attention.ipynb: ValueError: invalid literal for int()"
    assert autograde_failure("it broke\n", "") == "it broke"  # nothing to read but nbgrader's own words


class _FakeSession:
    def __enter__(self):
        from traitlets.config import Config

        return Config()

    def __exit__(self, *exc):
        return None

    def console(self, errors_only=False):
        return ""

    def memory(self):
        return {}


def test_a_failed_autograde_is_a_failed_result_with_no_rows(tmp_path, monkeypatch):
    # kills J2: past a failed autograde the worker went on to the feedback and the gradebook's rows
    from nbgrader.apps import NbGraderAPI

    monkeypatch.setattr(jobs, "_scratch", lambda: str(tmp_path))
    monkeypatch.setattr(jobs, "_session", lambda job, root, role: _FakeSession())
    monkeypatch.setattr(NbGraderAPI, "autograde", lambda self, *args, **kwargs: {
        "success": False, "log": NBGRADER_LOG, "error": "see the above traceback"})
    monkeypatch.setattr(NbGraderAPI, "generate_feedback", lambda self, *args, **kwargs: {"success": True})
    settings = jobs.Settings(mode="none", drop_user=False, limits=Limits(), timeout=10, notebook_timeout=60)
    job = jobs.Job("student", "bea", jobs.Course("04-attention", {}), settings, {"attention.ipynb": b"{}"})
    result = jobs.run(job)
    assert not result.success and not result.rows and not result.files
    assert result.message.startswith("nbgrader autograde failed (attention.ipynb: the cell 'scaled_dot_product")


def test_kernels_are_kept_from_every_folder_the_coordinator_hides(tmp_path, monkeypatch):
    # kills J4: the coordinator's folders (sources, hand-ins, --out) left out of the sandbox's hidden list
    monkeypatch.setattr(jobs, "worker_uid", lambda: 12345)
    settings = jobs.Settings(mode="none", drop_user=False, limits=Limits(), timeout=10, notebook_timeout=60,
                             hide=["/srv/course/source", "/srv/class"], zygote=__file__)
    (tmp_path / "source" / "hw").mkdir(parents=True)
    session = jobs._session(jobs.Job("student", "ada", jobs.Course("hw", {}), settings), tmp_path, "student")
    assert {Path("/srv/course/source"), Path("/srv/class"), tmp_path.resolve()} <= set(session.hide)
