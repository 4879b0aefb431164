"""The book's training recipe: how every language model and BERT of chapters 5 and 6 is trained.

A comparison between two models is only as good as the training each got.  The recipe is
GPT-3's, as nanoGPT uses it to reproduce GPT-2 (beta2 0.95, weight decay 0.1, cosine to a tenth;
the BERT pages pass BERT's own beta2 and decay), so that a race between a Transformer and an LSTM
compares the models, not one model's luck with its settings:

- **AdamW** (Loshchilov and Hutter) with weight decay on the matrices only: the weights of linear
  maps and embedding tables shrink towards zero, biases and LayerNorm gains do not (decaying a
  gain pulls the normalized activations towards zero, which nothing asks for);
- a **linear warm-up** over ``warmup`` steps, then a **cosine decay** to ``min_lr_ratio`` of the
  peak rate at the end of the budget; the budget may be steps or seconds, so the decay follows
  whichever the run is given (:meth:`Recipe.lr_factor`);
- the gradient's norm **clipped** at ``clip``;
- **bfloat16** autocast on a GPU (the matrix products run at the tensor cores' rate, the weights
  and the optimizer stay float32); float32 on a CPU, where bfloat16 is slower.

Dropout and weight tying belong to the model (``DecoderOnlyLM(dropout=..., tie=...)``); the
learning rate belongs to the model family and is chosen by a sweep that the page shows.
:func:`nlpbook.train.train` takes a recipe where it takes an optimizer.
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
        if self.lr <= 0 or self.weight_decay < 0 or self.warmup < 0 or not 0 <= self.min_lr_ratio <= 1:
            raise ValueError(f"a recipe needs lr > 0, weight_decay >= 0, warmup >= 0 and 0 <= min_lr_ratio <= 1: {self}")

    def optimizer(self, model: nn.Module) -> torch.optim.AdamW:
        """AdamW over the trainable weights: two groups, matrices (two or more dimensions) with weight
        decay and everything else (biases, LayerNorm gains and shifts) without.  A weight tied to
        another (an LM's output layer and its embedding) is counted once."""
        decayed, plain, seen = [], [], set()
        for parameter in model.parameters():
            if not parameter.requires_grad or id(parameter) in seen:
                continue
            seen.add(id(parameter))
            (decayed if parameter.dim() >= 2 else plain).append(parameter)
        groups = [{"params": decayed, "weight_decay": self.weight_decay}, {"params": plain, "weight_decay": 0.0}]
        fused = all(p.is_cuda for p in decayed + plain)  # one kernel for every weight's update on a GPU
        return torch.optim.AdamW([g for g in groups if g["params"]], lr=self.lr, betas=self.betas,
                                 fused=fused or None)

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
