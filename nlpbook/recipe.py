"""The book's training recipe: how every language model and BERT of chapters 5 and 6 is trained.

A comparison between two models is only as good as the training each got.  The recipe is
close to GPT-3's as nanoGPT uses it to reproduce GPT-2 (beta2 0.95, weight decay 0.1, cosine to a tenth;
the BERT pages pass BERT's own beta2 and decay), so that a race between a Transformer and an LSTM
compares the models, not one model's luck with its settings:

- **AdamW** (Loshchilov and Hutter) with weight decay on the matrices only: the weights of linear
  maps and embedding tables shrink towards zero, biases and LayerNorm gains do not (decaying a
  gain pulls the normalized activations towards zero, which nothing asks for);
- a **linear warm-up** over ``warmup`` steps times a **cosine decay** to ``min_lr_ratio`` of the
  peak rate at the end of the budget, over the whole budget (nanoGPT starts its cosine when the
  warm-up ends; here it has begun by then, so with a warm-up of a tenth of the budget the rate
  peaks at 98% of ``lr``, with half the budget at 56%, and :func:`nlpbook.training.train` refuses a
  warm-up longer than a budget of steps, whose rate would end below the floor); the budget may be
  steps or seconds, so the decay follows whichever the run is given (:meth:`Recipe.lr_factor`);
- the gradient's norm **clipped** at ``clip``;
- **bfloat16** autocast on a GPU (the matrix products run at the tensor cores' rate, the weights
  and the optimizer stay float32); float32 on a CPU, where bfloat16 is slower.

Dropout and weight tying belong to the model (``DecoderOnlyLM(dropout=..., tie=...)``); the
learning rate belongs to the model family and is chosen by a sweep that the page shows.
:func:`nlpbook.training.train` takes a recipe where it takes an optimizer.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass(frozen=True)
class Recipe:
    """AdamW at peak rate ``lr`` with ``weight_decay`` on matrices, ``warmup`` steps of linear warm-up,
    cosine decay to ``min_lr_ratio * lr`` over the budget, gradients clipped at norm ``clip``,
    bfloat16 autocast on CUDA when ``bf16``."""

    lr: float
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.95)
    warmup: int = 100
    min_lr_ratio: float = 0.1
    clip: float | None = 1.0
    bf16: bool = True

    def __post_init__(self):
        if (self.lr <= 0 or self.weight_decay < 0 or self.warmup < 0 or not 0 <= self.min_lr_ratio <= 1
                or (self.clip is not None and self.clip <= 0)):
            # a clip of 0 zeroes every update, and a negative one turns the gradient round
            raise ValueError(f"a recipe needs lr > 0, weight_decay >= 0, warmup >= 0, 0 <= min_lr_ratio <= 1 "
                             f"and clip > 0 (or None): {self}")

    def optimizer(self, model: nn.Module) -> torch.optim.AdamW:
        """AdamW over the trainable weights, in :func:`decay_groups`: matrices with weight decay,
        biases and LayerNorm's weights without."""
        groups = decay_groups(model, self.weight_decay)
        fused = all(p.is_cuda for group in groups for p in group["params"])  # one kernel for every update on a GPU
        return torch.optim.AdamW(groups, lr=self.lr, betas=self.betas, fused=fused or None)

    def lr_factor(self, step: int, progress: float) -> float:
        """The multiple of ``lr`` for optimizer step ``step`` (counting from 0) when ``progress`` (0 to 1)
        of the budget is spent: ``min(1, (step + 1) / warmup)`` times the cosine from 1 at progress 0
        down to ``min_lr_ratio`` at progress 1."""
        warm = min(1.0, (step + 1) / self.warmup) if self.warmup else 1.0
        progress = min(max(progress, 0.0), 1.0)
        cosine = self.min_lr_ratio + (1 - self.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))
        return warm * cosine

    def autocast(self, device: torch.device):
        """The context the forward pass runs in: bfloat16 autocast on CUDA, nothing elsewhere."""
        if self.bf16 and torch.device(device).type == "cuda":
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()


def decay_groups(module: nn.Module, weight_decay: float, **options) -> list[dict]:
    """``module``'s trainable weights as AdamW's parameter groups: the matrices (two or more
    dimensions: linear maps, embedding tables) with ``weight_decay``, everything else (biases,
    LayerNorm's gains and shifts) without, as BERT and GPT-1 were trained.  ``options`` (a learning
    rate, say) go into both groups; a weight tied to another (an LM's output layer and its
    embedding) is counted once, and an empty group is left out."""
    decayed, plain, seen = [], [], set()
    for parameter in module.parameters():
        if not parameter.requires_grad or id(parameter) in seen:
            continue
        seen.add(id(parameter))
        (decayed if parameter.dim() >= 2 else plain).append(parameter)
    groups = [{"params": decayed, "weight_decay": weight_decay, **options},
              {"params": plain, "weight_decay": 0.0, **options}]
    return [group for group in groups if group["params"]]
