"""One call that makes a notebook's random numbers repeatable."""
from __future__ import annotations

import random

import numpy as np
import torch


def seed_everything(seed: int = 0) -> torch.Generator:
    """Seed Python, NumPy and PyTorch (every CUDA device too) with ``seed``.

    Returns a fresh ``torch.Generator`` seeded the same way, for code that
    wants its own stream of random numbers (data generation, say) that does
    not shift when a model draws a different number of initial weights.
    """
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)  # seeds every CUDA device as well
    generator = torch.Generator()
    generator.manual_seed(seed)
    return generator
