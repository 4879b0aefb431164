"""A small training loop with a progress bar, shared by every chapter.

It does the bookkeeping that every notebook would otherwise repeat (moving
batches to the device, clipping, logging the loss, evaluating now and then,
timing) and nothing model-specific: the caller says how a batch becomes a loss.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import torch
from tqdm.std import tqdm

PROGRESS_VARIABLE = "NLPBOOK_PROGRESS"


@dataclass
class History:
    """What a training run measured: loss per step, evaluations, seconds."""

    steps: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    eval_steps: list[int] = field(default_factory=list)
    metrics: dict[str, list[float]] = field(default_factory=dict)
    seconds: float = 0.0

    def record_eval(self, step: int, values: dict[str, float]) -> None:
        self.eval_steps.append(step)
        for name, value in values.items():
            self.metrics.setdefault(name, []).append(float(value))

    def last(self, metric: str) -> float:
        """The latest value of an evaluation metric (``"loss"`` for the training loss)."""
        if metric == "loss":
            return self.loss[-1]
        return self.metrics[metric][-1]


def to_device(batch: Any, device: torch.device) -> Any:
    """Move every tensor inside a (nested) tuple, list or dict to ``device``."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, (tuple, list)):
        return type(batch)(to_device(item, device) for item in batch)
    if isinstance(batch, dict):
        return {key: to_device(value, device) for key, value in batch.items()}
    return batch


def _cycle(batches: Iterable[Any]):
    """Yield the batches over and over; fail at once when a pass yields nothing."""
    while True:
        empty = True
        for batch in batches:
            empty = False
            yield batch
        if empty:
            raise ValueError("batches yielded nothing: an empty list, or a one-shot generator that ran out "
                             "(pass a list or a DataLoader, which can be read again)")


def _progress_enabled(progress: bool | None) -> bool:
    if progress is not None:
        return progress
    return os.environ.get(PROGRESS_VARIABLE, "1") != "0"


def train(
    model: torch.nn.Module,
    batches: Iterable[Any],
    loss_fn: Callable[[torch.nn.Module, Any], torch.Tensor],
    optimizer: torch.optim.Optimizer,
    *,
    steps: int,
    device: torch.device | None = None,
    evaluate: Callable[[torch.nn.Module], dict[str, float]] | None = None,
    eval_every: int | None = None,
    clip_grad_norm: float | None = None,
    scheduler: Any = None,
    progress: bool | None = None,
    description: str = "training",
) -> History:
    """Train ``model`` for ``steps`` optimizer steps and return its :class:`History`.

    ``batches`` is any iterable of batches (a DataLoader, a list); it starts
    over when exhausted.  ``loss_fn(model, batch)`` returns a scalar loss.
    ``evaluate(model)`` returns named metrics; it runs every ``eval_every``
    steps and after the last one, under ``torch.no_grad()`` with the model in
    eval mode.  The progress bar (stderr) is on unless ``progress=False`` or
    ``$NLPBOOK_PROGRESS`` is ``0``.
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    device = device or next(model.parameters()).device
    history = History()
    stream = _cycle(batches)
    bar = tqdm(total=steps, desc=description, disable=not _progress_enabled(progress),
               mininterval=0.5, leave=False)
    start = time.perf_counter()

    model.train()
    try:
        for step in range(1, steps + 1):
            loss = loss_fn(model, to_device(next(stream), device))
            if not torch.isfinite(loss):
                raise FloatingPointError(f"the loss became {loss.item()} at step {step}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if clip_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip_grad_norm)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            history.steps.append(step)
            history.loss.append(loss.item())
            if evaluate is not None and (step == steps or (eval_every and step % eval_every == 0)):
                model.eval()
                with torch.no_grad():
                    history.record_eval(step, evaluate(model))
                model.train()
            bar.set_postfix(loss=f"{history.loss[-1]:.3f}", refresh=False)
            bar.update()
    finally:
        bar.close()
    model.eval()
    history.seconds = time.perf_counter() - start
    return history
