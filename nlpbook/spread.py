"""How a result over several seeds is written in a page's table or sentence.

Every training result in the book comes with the range a reader should expect.  Two styles:
``mean_range`` gives the mean and the lowest and highest run, ``mean_std`` the mean and the
sample standard deviation of the runs (divided by n - 1, as ``torch.std`` gives it).  With one run there is no spread to give, and
both write the value alone.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np


def _runs(values: Sequence[float]) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        raise ValueError("no runs to summarize: the list of values is empty")
    return values


def mean_range(values: Sequence[float], digits: int = 1) -> str:
    """``"9.6 (9.0 to 10.1)"``: the mean, then the lowest and highest value.

    Runs that differ but print alike get more digits ("11.7 (11.71 to 11.74)"), so that a
    range never reads as "11.7 to 11.7" unless the runs agree."""
    values = _runs(values)
    text = f"{values.mean():.{digits}f}"
    if len(values) > 1:
        low, high, shown = values.min(), values.max(), digits
        while f"{low:.{shown}f}" == f"{high:.{shown}f}" and low != high and shown < digits + 3:
            shown += 1
        text += f" ({low:.{shown}f} to {high:.{shown}f})"
    return text


def mean_std(values: Sequence[float], digits: int = 3) -> str:
    """``"0.481 ± 0.012"``: the mean and the sample standard deviation (n - 1)."""
    values = _runs(values)
    text = f"{values.mean():.{digits}f}"
    if len(values) > 1:
        text += f" ± {values.std(ddof=1):.{digits}f}"
    return text


def over_seeds(values: Sequence[float], digits: int = 2) -> str:
    """``"4.63 ± 0.02 over 3 seeds"`` (mean ± sample standard deviation), or ``"4.61 with 1 seed"``:
    a result and the number of runs it rests on, for a sentence."""
    values = _runs(values)
    if len(values) == 1:
        return f"{values[0]:.{digits}f} with 1 seed"
    return f"{mean_std(values, digits)} over {len(values)} seeds"
