"""What the benchmark scripts share: what the machine is, the cores of jobs run side by side, and a
measured subprocess run."""
from __future__ import annotations

import os
import platform
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def gpu_name() -> str | None:
    """The first GPU's name, or None on a machine without one."""
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def threads_each(jobs: int) -> dict[str, str]:
    """The environment of one of ``jobs`` processes run side by side: the cores shared out among
    them, since a pool of threads as large as the machine in each would fight over the cores.

    The grader's ``autograder.pool.thread_share`` does the same; these scripts also run on a lent
    GPU machine without Jupyter, where that module (through nbgrader's traitlets) cannot be imported."""
    if jobs <= 1:
        return {}
    threads = str(max(1, (os.cpu_count() or 1) // jobs))
    return dict(OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads)


def machine_name() -> str:
    """CPU model, cores, memory, any GPU, Python and torch: the machine a running time was measured on."""
    import torch

    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        model = next((line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                      if line.startswith("model name")), model)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    gpu = f"GPU {name}" if (name := gpu_name()) else "no GPU"
    return f"{model}, {os.cpu_count()} cores, {memory:.0f} GiB, {gpu}, Python {platform.python_version()}, " \
           f"torch {torch.__version__}"


def machine_line() -> str:
    """:func:`machine_name` and today's date: what a figure was measured on."""
    return f"{machine_name()}; {time.strftime('%Y-%m-%d')}"


def record_timings(entries: list) -> None:
    """Append measured runs (``nlpbook.running_times.Timing``) to the book's record of running times, and
    say so: the chapters' opening pages and the preface show the latest of each."""
    from nlpbook import running_times

    running_times.record(entries, running_times.RECORD)  # read now, so that a test can point it elsewhere
    print(f"recorded {len(entries)} run(s) in {running_times.RECORD}")


def run_measured(command: list[str], env: dict[str, str],
                 timeout: float | None = None) -> tuple[int, float, float, str]:
    """Run a command in the repository; its exit status, seconds, peak memory in MiB and its output's tail.

    The peak is wait4's ru_maxrss: the largest resident set of the process and of every
    descendant it waited for, which includes a Jupyter kernel that ran a notebook for it.  It is
    never below this process's own resident set when it starts the command (the child is a fork of
    it until it runs the command; about 220 MiB for solution_suite.py, under any notebook's peak).
    After ``timeout`` seconds the command and everything it started are killed (status -9).
    """
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as output:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=output, stderr=subprocess.STDOUT, text=True,
                                   start_new_session=True)
        timer = threading.Timer(timeout, os.killpg, (process.pid, signal.SIGKILL)) if timeout else None
        if timer:
            timer.start()
        _, status, usage = os.wait4(process.pid, 0)
        if timer:
            timer.cancel()
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        output.seek(0)
        tail = output.read()[-5000:]
    return process.returncode, seconds, usage.ru_maxrss / 1024, tail
