"""Timing a function the way a benchmark should: warm-up, repeats, the fastest run."""
from __future__ import annotations

import math
import time
from typing import Callable

import torch


def _synchronize(device: torch.device | str | None) -> None:
    # CUDA kernels run asynchronously: without a sync we would time the launch only.
    if device is not None and torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def time_call(
    fn: Callable[[], object],
    *,
    repeats: int = 20,
    warmup: int = 3,
    device: torch.device | str | None = None,
) -> float:
    """The fastest wall-clock seconds of ``fn()`` over ``repeats`` runs after ``warmup`` runs.  Give
    the ``device`` that ``fn`` computes on: on a GPU, each run is then timed to its end, not to its
    launch.

    The fastest, not the median: anything else the machine does (another process, a test run beside
    the book) only ever adds time to a run, so the fastest run is the one least disturbed.  No
    statistic undoes a load that lasts through every repeat: on 2026-12-06 why-slow in ``standard``
    read an LSTM 1.30 times as slow as attention at T = 512 alone, and 2.40 times with a one-core
    loop running beside it the whole time (the page took 427 s instead of 54), so time a page on a
    quiet machine."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    for _ in range(warmup):
        fn()
    _synchronize(device)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        _synchronize(device)
        samples.append(time.perf_counter() - start)
    return min(samples)


def duration(seconds: float) -> str:
    """A measured time as a reader wants it: "0.4 s", "45 s", "3.2 minutes", never "0.0 minutes"."""
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"a duration is a finite time, not negative: {seconds}")
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} minutes"
