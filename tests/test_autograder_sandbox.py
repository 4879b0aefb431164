"""The sandbox's modes: what each protects, and that grading still works in the weaker ones."""
from __future__ import annotations

import csv
import os
import sys
import threading
import time

import pytest

from autograder import sandbox
from autograder.course import REPO_ROOT
from autograder.execute import exposed_paths
import attention_course
from conftest import run_autograder
from processes import processes
from autograder.handins import solved, write


def test_every_weaker_mode_names_what_it_does_not_protect():
    # Mode root misses only what the machine withholds: a memory control group for each kernel.
    assert sandbox.missing_protections("root", True) == sandbox.memory_group_missing("root")
    userns = sandbox.missing_protections("userns", False)
    for words in ("unprivileged user", "process count limit", "memory limit for the whole sandbox"):
        assert any(words in line for line in userns), words
    none = sandbox.missing_protections("none", False)
    for words in ("network isolation", "hidden folders", "unprivileged user", "disk quota", "process count limit",
                  "memory limit for the whole sandbox"):
        assert any(words in line for line in none), words


def test_probe_accepts_none_only_when_asked_and_refuses_a_mode_it_cannot_give(monkeypatch):
    assert sandbox.probe("none") == "none"
    monkeypatch.setattr(sandbox, "can_enter_namespaces", lambda mode: False)
    with pytest.raises(ValueError, match="cannot create the namespaces"):
        sandbox.probe("userns")
    # Without namespaces the solutions are readable: auto refuses rather than fall back silently.
    with pytest.raises(ValueError, match="could read the solutions"):
        sandbox.probe("auto")


def test_of_the_repository_only_its_package_and_import_path_are_exposed():
    paths, repo = exposed_paths(), REPO_ROOT.resolve()
    assert repo not in paths and not any(path in repo.parents for path in paths)
    assert repo / "nlpbook" in paths
    assert not any(path in (repo / "solutions").parents or path == repo / "tests" for path in paths)
    assert all(not any(other in path.parents for other in paths) for path in paths)  # outermost only


def test_the_folder_the_grader_was_started_from_is_not_exposed(tmp_path, monkeypatch):
    # `python -m autograder` from a home folder puts it first on the import path: its keys and the
    # grader's cache (the solution's check records) must not reach a kernel with it.
    home = tmp_path / "home"
    (home / ".cache" / "nlpbook-autograder").mkdir(parents=True)
    monkeypatch.chdir(home)
    monkeypatch.setattr(sys, "path", [str(home), *sys.path])
    paths = exposed_paths()
    assert home not in paths and not any(path in home.parents or home in path.parents for path in paths)
    assert REPO_ROOT.resolve() / "nlpbook" in paths  # what kernels import is still there


def _kernels() -> set[int]:
    """Processes left working in a sandbox's folder (kernels, and whatever they started) by a grader that ended."""
    return {p["pid"] for p in processes() if p["orphaned"] and "/nlpbook-sandbox-" in p["cwd"]}


@pytest.mark.parametrize("mode", ["userns", "none"])
def test_grading_in_a_weaker_mode_still_grades_and_says_what_is_missing(tmp_path, mode):
    if mode != "none" and not sandbox.can_enter_namespaces(mode):
        pytest.skip("this machine has no namespaces")
    before = _kernels()
    # The grader's own test course: chapter 4 without its training part, whose 3 to 8 s of training
    # would crowd the short time limit under load.
    submissions = tmp_path / "submissions"
    write(attention_course.solved("04-attention", "attention"), submissions / "honest" / "04-attention", "attention")
    result = run_autograder("grade", "04-attention", *attention_course.COURSE_ARGS, "--submissions", str(submissions),
                            "--out", str(tmp_path / "out"), "--sandbox", mode, "--timeout", "30")
    assert result.returncode == 0, result.stderr[-3000:]
    with open(tmp_path / "out" / "parts.csv", newline="") as handle:
        total = sum(float(row["score"]) for row in csv.DictReader(handle) if not row["part"].startswith("answer"))
    assert total == 17.0
    log = (tmp_path / "out" / "grading.log").read_text()
    assert f"sandbox: mode {mode}" in log
    assert ("SANDBOX PROTECTION MISSING: network isolation" in log) == (mode == "none")
    assert ("SANDBOX PROTECTION MISSING: unprivileged user" in log) == (mode == "userns" or
                                                                       "user id 61000" not in log)
    # No kernel outlives the run, even where no namespace or user id ends it (mode none as a
    # user who cannot switch ids left both kernels of this run running before the fix).
    deadline = time.monotonic() + 5
    while _kernels() - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _kernels() - before == set()


@pytest.mark.skipif(not sandbox.memory_group_parent(), reason="this machine lets the grader make no memory group")
def test_a_memory_group_holds_a_process_and_everything_it_starts_to_one_limit():
    group = sandbox.MemoryGroup.make(sandbox.memory_group_parent(), f"test-{os.getpid()}", 256)
    try:
        ready, done = os.pipe()
        first = os.fork()
        if first == 0:  # pragma: no cover - child: three children of 128 MiB each, 384 MiB in a 256 MiB group
            os.close(ready)
            group.join()
            hoarders = []
            for _ in range(3):
                pid = os.fork()
                if pid == 0:
                    hoard = b"x" * (128 << 20)  # noqa: F841 - held until killed
                    time.sleep(3600)
                    os._exit(0)
                hoarders.append(pid)
            time.sleep(1.5)
            alive = [pid for pid in hoarders if os.waitpid(pid, os.WNOHANG) == (0, 0)]
            os.write(done, str(len(alive)).encode())
            for pid in alive:
                os.kill(pid, 9)
            os._exit(0)
        os.close(done)
        alive = int(os.read(ready, 8))
        os.waitpid(first, 0)
        usage = group.usage()
    finally:
        removed = group.remove()
    assert removed and alive <= 1 and usage["oom_kills"] >= 2 and usage["limit_mb"] == 256
    assert usage["peak_mb"] is None or 128 <= usage["peak_mb"] <= 256
    assert not group.folder.exists()


def _v2_group(folder, controllers, enabled, procs):
    """A stand-in for a cgroup v2 group's files (the kernel's own checks are not imitated)."""
    folder.mkdir()
    (folder / "cgroup.controllers").write_text(" ".join(controllers) + "\n")
    (folder / "cgroup.subtree_control").write_text(" ".join(enabled) + "\n")
    (folder / "cgroup.procs").write_text("".join(f"{pid}\n" for pid in procs))
    return folder


def test_under_cgroup_v2_a_grader_alone_in_its_group_moves_to_a_leaf_and_delegates_memory(tmp_path):
    group = _v2_group(tmp_path / "grading.scope", ["cpu", "memory", "pids"], [], [4321])
    assert sandbox.memory_for_children(group, 4321)
    # the process first, then the controller: a group holding a process may not hand one on
    assert (group / sandbox.GRADER_GROUP / "cgroup.procs").read_text() == "4321"
    assert (group / "cgroup.subtree_control").read_text() == "+memory"


@pytest.mark.parametrize("controllers, procs, why", [
    (["cpu", "memory"], [4321, 77], "a login shell shares the group"),
    (["cpu", "pids"], [4321], "the parent does not delegate the memory controller"),
])
def test_under_cgroup_v2_a_group_the_grader_cannot_own_is_left_as_it_is(tmp_path, controllers, procs, why):
    group = _v2_group(tmp_path / "session.scope", controllers, [], procs)
    assert not sandbox.memory_for_children(group, 4321), why
    assert not (group / sandbox.GRADER_GROUP).exists()
    assert (group / "cgroup.subtree_control").read_text() == "\n"


def test_under_cgroup_v2_a_group_that_already_delegates_memory_is_used_as_it_is(tmp_path):
    group = _v2_group(tmp_path / "grading.service", ["memory"], ["memory"], [])
    assert sandbox.memory_for_children(group, 4321)
    assert not (group / sandbox.GRADER_GROUP).exists()


def test_a_sandbox_that_cannot_start_a_kernel_is_a_clear_error(tmp_path):
    from autograder import grade as grading
    from autograder.course import CourseError

    write(solved("04-attention", "attention"), tmp_path / "submissions" / "honest" / "04-attention", "attention")
    # 1 MiB of memory: the kernel dies as it starts.
    with pytest.raises(CourseError, match="could not run the solution attention.ipynb"):
        grading.grade("04-attention", tmp_path / "submissions", tmp_path / "out", sandbox_mode="none",
                      limits=sandbox.Limits(memory_mb=1), workers=1)
    assert not (tmp_path / "out" / "grades.csv").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can run processes as the sandbox user")
def test_a_sandbox_user_id_is_free_again_before_the_next_kernel_gets_it():
    # A fork bomb's children may still be dying when its kernel has ended; the next kernel
    # with the same user id must not start with its process limit already used up.
    uid = sandbox.SANDBOX_UIDS[-1]
    children = []
    for _ in range(20):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            os.setgid(uid)
            os.setuid(uid)
            time.sleep(3600)
            os._exit(0)
        children.append(pid)
    time.sleep(0.2)
    assert len(sandbox._processes_of(uid)) == 20
    # They are our children here: reap them as they die, as a namespace's first process would.
    reaper = threading.Thread(target=lambda: [os.waitpid(pid, 0) for pid in children])
    reaper.start()
    assert sandbox.end_user_processes(uid)
    assert sandbox._processes_of(uid) == []
    reaper.join()


def test_outputs_are_built_unvalidated_only_during_a_run_and_validation_comes_back():
    import jsonschema
    import nbformat
    from nbformat.v4 import new_output

    from autograder.execute import _outputs_unvalidated

    def broken():  # an execute_result must carry an execution count
        return new_output("execute_result", data={"text/plain": "1"}, execution_count="not a number")

    with pytest.raises((nbformat.ValidationError, jsonschema.ValidationError)):
        broken()
    with pytest.raises(RuntimeError), _outputs_unvalidated():
        broken()  # built without a check, as nbclient does during a run
        raise RuntimeError("the run stops")
    with pytest.raises((nbformat.ValidationError, jsonschema.ValidationError)):
        broken()
