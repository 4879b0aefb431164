"""Which device a notebook runs on: CUDA when present, else the CPU."""
from __future__ import annotations

import contextlib
import os

import torch

from nlpbook.claims import counted

DEVICE_VARIABLE = "NLPBOOK_DEVICE"


def get_device(prefer: str | None = None) -> torch.device:
    """Return the device to run on.

    ``prefer`` (or the environment variable ``NLPBOOK_DEVICE``) forces a
    device such as ``"cpu"`` or ``"cuda:1"``; otherwise the first CUDA device
    is used when there is one, and the CPU when there is not.  Notebooks never
    assume a GPU: every chapter runs on either.
    """
    wanted = prefer or os.environ.get(DEVICE_VARIABLE)
    if wanted:
        device = torch.device(wanted)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(
                f"device {wanted!r} was asked for (argument or ${DEVICE_VARIABLE}) "
                "but this PyTorch build sees no CUDA device"
            )
        return device
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def describe(device: torch.device) -> str:
    """The device in words for a sentence about a timing: "2 CPU threads" or "one NVIDIA H200".

    A sentence such as "in 100 s on two CPU cores" is false on every other machine; pages glue
    this instead, so that it names the machine the build ran on."""
    if device.type == "cuda":
        return f"one {torch.cuda.get_device_name(device)}"
    if device.type == "cpu":
        return counted(torch.get_num_threads(), "CPU thread")
    return f"the {device.type} device"


@contextlib.contextmanager
def cpu_threads(count: int):
    """Run the block with PyTorch's CPU thread pool at ``count`` threads, then restore it.

    A loop of many tiny operations (a few thousand numbers each) gains nothing from a second
    thread and can lose a lot: every operation waits for both threads, and when another
    process holds one of the cores, that wait is a whole scheduler slice.  On the course's
    2-core machine such a loop ran 10 to 20 times faster on one thread.
    """
    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
