"""Where grading jobs run: worker processes on this machine, or a Dask cluster.

Both take :class:`autograder.jobs.Job` objects and give back
:class:`autograder.jobs.Result` objects in the order they finish.  Workers
never touch the gradebook; the coordinating process merges what they return.
"""
from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
from typing import Iterable, Iterator

from autograder import jobs, sandbox

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def thread_share(processes: int) -> dict[str, str]:
    """The environment that gives each of ``processes`` processes running side by side an equal share
    of this machine's cores, one thread at least.

    Set it before the process imports PyTorch (OpenMP reads it once, when it loads).  Without it
    every process starts a thread per core, and two processes of two threads each on two cores
    wait on each other's threads at every operation: pages ran 7 to 14 times slower that way."""
    threads = str(max(1, (os.cpu_count() or 1) // max(1, processes)))
    return dict.fromkeys(THREAD_VARIABLES, threads)


class LocalPool:
    """``workers`` processes on this machine; each dies with the grader, and its kernels with it.

    They are forked from the coordinator, which has imported nbgrader already, so
    they start at once; the coordinator holds no threads and no open gradebook then.
    """

    def __init__(self, workers: int):
        self.workers = workers
        self.executor = concurrent.futures.ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context("fork"), initializer=sandbox.die_with_parent)

    def run(self, items: Iterable[jobs.Job]) -> Iterator[jobs.Result]:
        futures = [self.executor.submit(jobs.run, job) for job in items]
        try:
            for future in concurrent.futures.as_completed(futures):
                yield future.result()
        finally:
            for future in futures:
                future.cancel()

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)


class DaskPool:
    """The workers of a Dask distributed cluster at ``address`` (``tcp://HOST:PORT``)."""

    def __init__(self, address: str):
        from distributed import Client

        # How long to wait for the scheduler is Dask's own setting, distributed.comm.timeouts.connect
        # (30 s unless configured; DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=5s sets it from the shell).
        self.client = Client(address, set_as_default=False)
        self.workers = sum(info.get("nthreads", 1) for info in self.client.scheduler_info()["workers"].values())

    def run(self, items: Iterable[jobs.Job]) -> Iterator[jobs.Result]:
        from distributed import as_completed

        futures = [self.client.submit(jobs.run, job, pure=False) for job in items]
        try:
            for future in as_completed(futures, loop=self.client.loop):
                yield future.result()
        finally:
            self.client.cancel(futures)

    def close(self) -> None:
        self.client.close()
