"""benchmarks/measure.py: the machine line, threads shared among jobs, and a run measured and stopped."""
from __future__ import annotations

import os
import resource
import sys

import psutil

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import measure  # noqa: E402


def test_threads_are_shared_out_among_jobs(monkeypatch):
    monkeypatch.setattr(measure.os, "cpu_count", lambda: 16)
    assert measure.threads_each(1) == {}
    assert measure.threads_each(4) == {"OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "4"}
    assert measure.threads_each(32)["OMP_NUM_THREADS"] == "1"


def test_a_measured_run_is_killed_at_its_timeout_and_reports_its_peak():
    status, seconds, _, _ = measure.run_measured([sys.executable, "-c", "import time; time.sleep(20)"],
                                                 dict(os.environ), timeout=1)
    assert status == -9 and seconds < 10
    status, _, peak, _ = measure.run_measured(
        [sys.executable, "-c", "b = b'x' * (300 * 2**20)"], dict(os.environ))
    # The child is forked from this process before it runs Python afresh, so its largest resident set
    # may be this process's (a test worker that has held a gigabyte reports it): at most that plus 300.
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert status == 0 and 300 <= peak < max(own, 300) + 300


def test_the_machine_line_gives_the_memory_in_gib():
    line = measure.machine_line()
    gib = float(line.split(" GiB")[0].rsplit(", ", 1)[1])
    assert abs(gib - psutil.virtual_memory().total / 2**30) <= 1
    assert f", {os.cpu_count()} cores, " in line
