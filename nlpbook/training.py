"""A small training loop with a progress bar, shared by every chapter.

It does the bookkeeping that every notebook would otherwise repeat (moving
batches to the device, clipping, logging the loss, evaluating now and then,
timing) and nothing model-specific: the caller says how a batch becomes a loss.
Its budget is a number of steps or of seconds (a race at equal time), and it
trains with an optimizer the caller built or with the book's recipe
(:class:`nlpbook.recipe.Recipe`: AdamW, warm-up and cosine decay over the budget,
clipping, bfloat16 on a GPU).
"""
from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import torch
from tqdm.std import tqdm

from nlpbook.recipe import Recipe

PROGRESS_VARIABLE = "NLPBOOK_PROGRESS"


@dataclass
class History:
    """What a training run measured: loss and seconds per step, evaluations (at which step and after
    how many seconds of training), the seconds of training in all (evaluations not counted)."""

    steps: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    step_seconds: list[float] = field(default_factory=list)
    eval_steps: list[int] = field(default_factory=list)
    eval_seconds: list[float] = field(default_factory=list)
    metrics: dict[str, list[float]] = field(default_factory=dict)
    seconds: float = 0.0

    def record_eval(self, step: int, values: dict[str, float], seconds: float = 0.0) -> None:
        self.eval_steps.append(step)
        self.eval_seconds.append(seconds)
        for name, value in values.items():
            self.metrics.setdefault(name, []).append(float(value))

    def curve(self, metric: str) -> list[tuple[float, float]]:
        """``(seconds of training, value)`` at each evaluation of ``metric``: a race's curve at equal time."""
        return list(zip(self.eval_seconds, self.metrics[metric]))

    def checkpoints(self, metric: str) -> list[tuple[int, float, float]]:
        """``(step, seconds of training, value)`` at each evaluation of ``metric``."""
        return list(zip(self.eval_steps, self.eval_seconds, self.metrics[metric]))

    def last(self, metric: str) -> float:
        """The latest value of an evaluation metric (``"loss"`` for the training loss)."""
        if metric == "loss":
            return self.loss[-1]
        return self.metrics[metric][-1]


def linear_warmup(optimizer: torch.optim.Optimizer, steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    """A schedule that raises the learning rate linearly over ``steps`` updates and then keeps it
    (``steps`` 0: no warm-up), stepped once per update."""
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / steps) if steps else 1.0)


class StepWatch:
    """Watches every optimizer step taken inside a ``with`` block, whichever optimizer takes it and
    wherever it was built (PyTorch's global step hooks): the exercises' way to see how a student's
    loop trains without reading its code.

    Before each step it notes each parameter group's learning rate (``rates``, one list per step),
    its other hyperparameters (``settings``: betas, eps, weight decay, ...) and the global norm of
    the gradients the step is given (``norms``), which is above the loop's bound if the loop clips
    after the step or not at all.  With ``poison=True`` it leaves NaN in the gradients after each
    step: a loop that clears them before the next backward pass never sees it, one that does not
    shows NaN norms from its second step on.  ``optimizers`` lists the optimizers that took
    steps, in the order of their first step, for a test to read their parameter groups.
    """

    def __init__(self, poison: bool = False):
        self.poison = poison
        self.rates: list[list[float]] = []
        self.settings: list[list[dict[str, Any]]] = []
        self.norms: list[float] = []
        self.optimizers: list[torch.optim.Optimizer] = []
        self._group_of: list[dict[int, int]] = []  # per step: id(parameter) -> its group's index
        self._handles: list[Any] = []

    def __enter__(self) -> "StepWatch":
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        self._handles = [register_optimizer_step_pre_hook(self._before),
                         register_optimizer_step_post_hook(self._after)]
        return self

    def __exit__(self, *exc_info) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    @staticmethod
    def _grads(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
        return [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]

    def _before(self, optimizer, args, kwargs) -> None:
        if not any(seen is optimizer for seen in self.optimizers):
            self.optimizers.append(optimizer)
        self.rates.append([float(group["lr"]) for group in optimizer.param_groups])
        self._group_of.append({id(p): k for k, group in enumerate(optimizer.param_groups) for p in group["params"]})
        self.settings.append([{key: value for key, value in group.items() if key not in ("params", "lr")}
                              for group in optimizer.param_groups])
        # the norm clip_grad_norm_ bounds, computed as it computes it
        self.norms.append(float(torch.nn.utils.get_total_norm(self._grads(optimizer))))

    def per_weight(self, parameters: Iterable[torch.Tensor], key: str = "lr") -> torch.Tensor:
        """(steps, weights) float64: each of ``parameters``' ``key`` (``"lr"``, ``"weight_decay"``, ...),
        read from its parameter group, at every watched step; NaN where the optimizer that took the
        step did not hold that weight, or its group had no ``key``."""
        parameters = list(parameters)
        table = torch.full((len(self.rates), len(parameters)), float("nan"), dtype=torch.float64)
        for step, (group_of, rates, settings) in enumerate(zip(self._group_of, self.rates, self.settings)):
            for column, parameter in enumerate(parameters):
                group = group_of.get(id(parameter))
                if group is not None:
                    value = rates[group] if key == "lr" else settings[group].get(key)
                    if isinstance(value, (int, float)):
                        table[step, column] = float(value)
        return table

    def _after(self, optimizer, args, kwargs) -> None:
        if self.poison:
            for grad in self._grads(optimizer):
                grad.fill_(float("nan"))


def evaluates(function: Callable) -> Callable:
    """Decorator for ``function(model, ...)``, or a method of the model: it runs with the model in eval
    mode (no dropout) and leaves the model in the mode it found it in, so that a check made in the
    middle of training does not switch dropout off for the rest of it."""
    @functools.wraps(function)
    def in_eval_mode(model, *args, **kwargs):
        was_training = model.training
        model.eval()
        try:
            return function(model, *args, **kwargs)
        finally:
            model.train(was_training)

    return in_eval_mode


def to_device(batch: Any, device: torch.device) -> Any:
    """Move every tensor inside a (nested) tuple, list or dict to ``device``."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # a namedtuple takes its fields one by one
        return type(batch)(*(to_device(item, device) for item in batch))
    if isinstance(batch, (tuple, list)):
        return type(batch)(to_device(item, device) for item in batch)
    if isinstance(batch, dict):
        return {key: to_device(value, device) for key, value in batch.items()}
    return batch


def length_grouped_batches(lengths: torch.Tensor, batch_size: int, generator: torch.Generator,
                           pool: int = 8) -> list[torch.Tensor]:
    """One epoch of batches of indices into ``lengths`` (N,), each index once, grouped by length.

    A batch is padded to its longest member, so a batch of mixed lengths spends much of its work on
    padding.  The epoch is shuffled, cut into pools of ``pool`` batches, each pool is sorted by
    length and cut into batches, and the batches are shuffled: every batch holds examples of
    similar length, and which examples share a batch still changes from epoch to epoch (the
    "group by length" of ``transformers``' Trainer does the same)."""
    if batch_size < 1 or pool < 1:
        raise ValueError(f"batch_size and pool must be at least 1, got {batch_size} and {pool}")
    order = torch.randperm(len(lengths), generator=generator)
    batches = []
    for start in range(0, len(order), batch_size * pool):
        chunk = order[start:start + batch_size * pool]
        chunk = chunk[torch.argsort(lengths[chunk], stable=True)]
        batches += list(chunk.split(batch_size))
    return [batches[k] for k in torch.randperm(len(batches), generator=generator).tolist()]


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
    optimizer: torch.optim.Optimizer | Recipe,
    *,
    steps: int | None = None,
    seconds: float | None = None,
    device: torch.device | None = None,
    evaluate: Callable[[torch.nn.Module], dict[str, float]] | None = None,
    eval_every: int | None = None,
    evals: int | None = None,
    clip_grad_norm: float | None = None,
    scheduler: Any = None,
    progress: bool | None = None,
    description: str = "training",
) -> History:
    """Train ``model`` for ``steps`` optimizer steps or ``seconds`` of training, whichever ends
    first (give at least one), and return its :class:`History`.

    ``batches`` is any iterable of batches (a DataLoader, a list, an endless generator); it starts
    over when exhausted.  ``loss_fn(model, batch)`` returns a scalar loss.  ``optimizer`` is a
    ready optimizer (with ``clip_grad_norm`` and ``scheduler`` if wanted) or a
    :class:`~nlpbook.recipe.Recipe`, which builds AdamW, sets the learning rate before every
    step from the share of the budget spent, clips and autocasts.  ``evaluate(model)`` returns
    named metrics; it runs every ``eval_every`` steps, or ``evals`` times evenly spread over the
    budget, and after the last step, under ``torch.no_grad()`` with the model in eval mode, its
    time not counted.  The progress bar (stderr) is on unless ``progress=False`` or
    ``$NLPBOOK_PROGRESS`` is ``0``.
    """
    if steps is None and seconds is None:
        raise ValueError("give steps, seconds or both: the training needs a budget")
    if steps is not None and steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    if seconds is not None and seconds <= 0:
        raise ValueError(f"seconds must be positive, got {seconds}")
    if evals is not None and (evals < 1 or eval_every is not None):
        raise ValueError(f"give evals (at least 1) or eval_every, not both: {evals}, {eval_every}")
    if eval_every is not None and eval_every < 1:
        raise ValueError(f"eval_every must be at least 1, got {eval_every}")
    device = device or next(model.parameters()).device
    recipe = optimizer if isinstance(optimizer, Recipe) else None
    if recipe is not None:
        if clip_grad_norm is not None or scheduler is not None:
            raise ValueError("a recipe clips and schedules itself: give no clip_grad_norm or scheduler with it")
        if steps is not None and recipe.warmup > steps:
            raise ValueError(f"the recipe warms up over {recipe.warmup} steps, longer than the run's {steps}: its "
                             "rate would never reach lr, and would end below min_lr_ratio * lr; give a shorter warmup")
        optimizer, clip_grad_norm = recipe.optimizer(model), recipe.clip
    history = History()
    stream = _cycle(batches)
    bar = tqdm(total=steps, desc=description, disable=not _progress_enabled(progress),
               mininterval=0.5, leave=False)

    def spent() -> float:  # the share of the budget used so far: steps or seconds, whichever is further
        return max(history.steps[-1] / steps if steps and history.steps else 0.0,
                   history.seconds / seconds if seconds else 0.0)

    def reached(share: int) -> bool:
        """Has the run used ``share / evals`` of its budget?  Counted in whole steps, exactly: a sum
        of 1 / evals drifts above the share and once left step 3 of 10 without its evaluation."""
        return bool((steps and history.steps and history.steps[-1] * evals >= share * steps)
                    or (seconds and history.seconds * evals >= share * seconds))

    evals_passed = 0  # of the evenly spread evaluations of ``evals``, the ones whose share is used
    model.train()
    try:
        while True:
            start = time.perf_counter()
            step = len(history.steps) + 1
            if recipe is not None:
                for group in optimizer.param_groups:
                    group["lr"] = recipe.lr * recipe.lr_factor(step - 1, spent())
                with recipe.autocast(device):
                    loss = loss_fn(model, to_device(next(stream), device))
            else:
                loss = loss_fn(model, to_device(next(stream), device))
            if loss.dim() != 0:
                raise ValueError(f"loss_fn should return one number (a 0-d tensor), got shape {tuple(loss.shape)}: "
                                 "take the mean over the batch")
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
            history.loss.append(loss.item())  # waits for the device: the time below is honest on a GPU
            history.step_seconds.append(time.perf_counter() - start)
            history.seconds += history.step_seconds[-1]
            done = spent() >= 1.0
            due = (eval_every and step % eval_every == 0) or (evals and reached(evals_passed + 1))
            if evaluate is not None and (done or due):
                model.eval()
                with torch.no_grad():
                    history.record_eval(step, evaluate(model), history.seconds)
                model.train()
                while evals and reached(evals_passed + 1):
                    evals_passed += 1
            bar.set_postfix(loss=f"{history.loss[-1]:.3f}", refresh=False)
            bar.update()
            if done:
                break
    finally:
        bar.close()
    model.eval()
    return history
