"""How grading processes side by side share the machine's cores."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from autograder.grade import GradingRun
from autograder.pool import thread_share


@pytest.mark.parametrize("processes", [1, 2, 3, 64])
def test_each_process_gets_an_equal_share_of_the_cores_and_at_least_one_thread(monkeypatch, processes):
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    share = thread_share(processes)
    assert set(share) == {"OMP_NUM_THREADS", "MKL_NUM_THREADS"}
    assert len(set(share.values())) == 1
    assert int(share["OMP_NUM_THREADS"]) == max(1, 16 // processes)


def test_the_share_is_read_before_pytorch_so_it_takes():
    # The test suite sets it from conftest before anything imports PyTorch; that only works
    # if the module that computes it imports no PyTorch itself.
    code = "import sys, autograder.pool; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


def test_kernels_of_a_grading_run_share_the_cores_unless_the_instructor_set_threads(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("NLPBOOK_PROFILE", "quick")
    run = GradingRun.__new__(GradingRun)
    run.workers, run.sandbox_mode = 4, "none"
    assert run.kernel_env == {"NLPBOOK_PROFILE": "quick", "NLPBOOK_DEVICE": "cpu", "OMP_NUM_THREADS": "2",
                              "MKL_NUM_THREADS": "2"}
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert run.kernel_env == {"NLPBOOK_PROFILE": "quick", "NLPBOOK_DEVICE": "cpu"}


def test_every_kernel_gets_the_coordinators_profile_and_device_whatever_its_workers_have(monkeypatch):
    # A Dask worker builds each kernel's environment from its own; the run's settings travel
    # with every job and win (autograder.execute), so the profile the limits and the reference
    # run were sized for is the one the students' models train in.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    run = GradingRun.__new__(GradingRun)
    run.workers, run.sandbox_mode = 2, "none"
    monkeypatch.delenv("NLPBOOK_PROFILE", raising=False)
    monkeypatch.delenv("NLPBOOK_DEVICE", raising=False)
    # the book's default profile, named, and the CPU the margins were measured on
    assert run.kernel_env == {"NLPBOOK_PROFILE": "standard", "NLPBOOK_DEVICE": "cpu"}
    monkeypatch.setenv("NLPBOOK_PROFILE", "full")
    monkeypatch.setenv("NLPBOOK_DEVICE", "cuda")  # without a sandbox, a device the instructor names
    assert run.kernel_env == {"NLPBOOK_PROFILE": "full", "NLPBOOK_DEVICE": "cuda"}


def test_kernels_in_a_sandbox_are_told_to_use_the_cpu_the_only_device_they_can_reach(monkeypatch):
    # The sandbox binds no /dev/nvidia* device: kernels run on the CPU whatever the machine has,
    # and say so to PyTorch and the course (a cache key with it cannot pass for a GPU run's).
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("NLPBOOK_PROFILE", "quick")
    monkeypatch.delenv("NLPBOOK_DEVICE", raising=False)
    run = GradingRun.__new__(GradingRun)
    run.workers = 2
    for mode in ("root", "userns"):
        run.sandbox_mode = mode
        assert run.kernel_env == {"NLPBOOK_PROFILE": "quick", "NLPBOOK_DEVICE": "cpu", "CUDA_VISIBLE_DEVICES": ""}
    run.sandbox_mode = "none"  # no sandbox: the CPU still, unless the instructor names a device
    assert run.kernel_env == {"NLPBOOK_PROFILE": "quick", "NLPBOOK_DEVICE": "cpu"}
