"""Synthetic sequence tasks, generated deterministically (no download).

The attention chapter trains tiny models on tasks whose right attention
pattern is known in advance, so a heat map can be checked by eye:

``copy``     target = source
``reverse``  target = source read backwards (attention on the anti-diagonal)
``sort``     target = source sorted ascending (attention follows the values)
``shift``    target t = source t - 1, padding at t = 0 (attention one step back)

Token 0 is padding; real tokens are ``1 .. vocab_size - 1``.

The recurrent chapters add the adding problem, whose answer depends on two
inputs that may be a whole sequence apart.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

PAD_ID = 0
TASKS = ("copy", "reverse", "sort", "shift")


@dataclass
class SequenceTask:
    """A batch of ``(source, target)`` pairs, each ``(N, T)`` int64, padded with :data:`PAD_ID`."""

    source: torch.Tensor  # (N, T)
    target: torch.Tensor  # (N, T)
    lengths: torch.Tensor  # (N,)

    def __len__(self) -> int:
        return self.source.shape[0]

    def batches(self, batch_size: int, *, generator: torch.Generator | None = None):
        """Shuffled ``(source, target)`` mini-batches covering the set once."""
        order = torch.randperm(len(self), generator=generator)
        for start in range(0, len(self), batch_size):
            index = order[start:start + batch_size]
            yield self.source[index], self.target[index]


def make_sequence_task(
    kind: str,
    *,
    size: int,
    length: int,
    vocab_size: int = 16,
    min_length: int | None = None,
    generator: torch.Generator | None = None,
) -> SequenceTask:
    """Generate ``size`` examples of a task from :data:`TASKS`.

    Lengths are drawn uniformly from ``min_length .. length`` (all ``length``
    when ``min_length`` is None); shorter sequences are padded on the right.
    Without ``generator`` every call draws from seed 0, so two calls give the same
    examples: pass generators of different seeds for a training and a test set.
    """
    if kind not in TASKS:
        raise ValueError(f"unknown task {kind!r}; expected one of {', '.join(TASKS)}")
    if vocab_size < 3:
        raise ValueError(f"vocab_size must be at least 3 (padding + two tokens), got {vocab_size}")
    min_length = length if min_length is None else min_length
    if not 1 <= min_length <= length:
        raise ValueError(f"need 1 <= min_length <= length, got {min_length} and {length}")
    generator = generator or torch.Generator().manual_seed(0)
    tokens = torch.randint(1, vocab_size, (size, length), generator=generator)
    lengths = torch.randint(min_length, length + 1, (size,), generator=generator)
    positions = torch.arange(length).expand(size, length)  # (N, T)
    valid = positions < lengths[:, None]  # (N, T)
    source = tokens.masked_fill(~valid, PAD_ID)
    if kind == "copy":
        target = source.clone()
    elif kind == "reverse":
        # Read position lengths-1-t for t < length: reverse only the real tokens.
        index = (lengths[:, None] - 1 - positions).clamp(min=0)  # (N, T)
        target = source.gather(1, index).masked_fill(~valid, PAD_ID)
    elif kind == "shift":
        target = torch.full_like(source, PAD_ID)
        target[:, 1:] = source[:, :-1]
        target = target.masked_fill(~valid, PAD_ID)
    else:
        # Padding sorts last because it is given the largest key.
        keys = source.masked_fill(~valid, vocab_size)
        target = keys.sort(dim=1).values.masked_fill(~valid, PAD_ID)
    return SequenceTask(source=source, target=target, lengths=lengths)


def adding_problem(size: int, length: int, *, generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The adding problem (Hochreiter and Schmidhuber, 1997), a test of long-range memory.

    Each input is ``(length, 2)``: a random value in [0, 1) and a marker that is 1 at exactly two
    positions, one in the first half and one in the second half.  The target is the sum of the two
    marked values.  Predicting the mean (1.0) gives a mean squared error of about 1/6; a model
    that beats it clearly must carry the first marked value across about ``length / 2`` steps.

    Returns ``inputs`` (size, length, 2) float32 and ``targets`` (size,) float32.  Without
    ``generator`` every call draws from seed 0: two calls give the same examples.
    """
    if length < 2:
        raise ValueError(f"length must be at least 2, got {length}")
    generator = generator or torch.Generator().manual_seed(0)
    values = torch.rand(size, length, generator=generator)
    half = length // 2
    first = torch.randint(0, half, (size,), generator=generator)
    second = torch.randint(half, length, (size,), generator=generator)
    markers = torch.zeros(size, length)
    rows = torch.arange(size)
    markers[rows, first] = 1.0
    markers[rows, second] = 1.0
    targets = values[rows, first] + values[rows, second]
    return torch.stack([values, markers], dim=-1), targets
