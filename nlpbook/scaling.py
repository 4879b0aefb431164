"""The Transformer and the LSTM at several sizes, trained with one recipe, for loss against compute.

A race at one size and one budget answers one question; curves of validation loss against training
FLOPs, one per family and size, show where the families cross and how each bends as it grows.  The
two families are matched in weights at every size (the LSTM's hidden width chosen so), train on the
same random windows with :class:`nlpbook.Recipe` (AdamW, warm-up and cosine decay, clipping,
bfloat16 on a GPU), and are scored on the same held-out chunks::

    size = SIZES["M"]
    run = train_lm("Transformer", size, data, steps=2_000, batch=64, lr=1.5e-3, seed=0)
    run["curve"][-1]     # {'step': 2000, 'seconds': ..., 'tokens': ..., 'flops': ..., 'valid_loss': ...}
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn

from nlpbook.charlm import CharData, CharRNN, perplexity, train_char_lm
from nlpbook.flops import training_flops_per_token
from nlpbook.recipe import Recipe
from nlpbook.transformer import DecoderOnlyLM

FAMILIES = ("Transformer", "LSTM")


@dataclass(frozen=True)
class LMSize:
    """A Transformer's shape; the LSTM of the same size has as many weights, in ``lstm_layers`` layers."""

    name: str
    width: int
    layers: int
    heads: int
    lstm_layers: int = 2


# About 0.2M, 0.8M, 4.8M and 14M weights for a vocabulary of 60 characters.
SIZES = {size.name: size for size in (
    LMSize("XS", 64, 4, 4),
    LMSize("S", 128, 4, 4),
    LMSize("M", 256, 6, 8),
    LMSize("L", 384, 8, 6),
)}


def lstm_hidden(weights: int, vocab: int, embed: int, layers: int) -> int:
    """The hidden width at which a ``layers``-layer LSTM over ``embed``-wide embeddings, with an
    output map to ``vocab``, has the number of weights nearest ``weights``."""
    def count(h):
        first = 4 * h * (embed + h) + 8 * h
        return vocab * embed + first + (layers - 1) * (8 * h * h + 8 * h) + h * vocab + vocab
    return min(range(4, 8192), key=lambda h: abs(count(h) - weights))


def build(family: str, size: LMSize, vocab: int, context: int, dropout: float = 0.0) -> nn.Module:
    """The model of ``family`` at ``size``: the Transformer tied and initialised as GPT-2, or the LSTM
    with as many weights (its embeddings as wide as the Transformer's)."""
    transformer = DecoderOnlyLM(vocab, width=size.width, heads=size.heads, layers=size.layers, context=context,
                                dropout=dropout, tie=True, init="gpt2")
    if family == "Transformer":
        return transformer
    if family != "LSTM":
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    weights = sum(p.numel() for p in transformer.parameters())
    hidden = lstm_hidden(weights, vocab, size.width, size.lstm_layers)
    return CharRNN(vocab, embed=size.width, hidden=hidden, cell="lstm", layers=size.lstm_layers, dropout=dropout)


def flops_per_token(model: nn.Module, family: str, size: LMSize, context: int) -> float:
    """Training FLOPs per input position of ``model`` (:mod:`nlpbook.flops`)."""
    if family == "Transformer":
        return training_flops_per_token(model, attention_layers=size.layers, width=size.width, context=context)
    return training_flops_per_token(model)


def train_lm(family: str, size: LMSize, data: CharData, *, steps: int, batch: int, lr: float, seed: int,
             context: int = 256, dropout: float = 0.0, evals: int = 8, valid_chars: int = 100_000,
             warmup: int | None = None, device: torch.device | None = None) -> dict:
    """Train one model with the recipe for ``steps`` steps of ``batch`` random windows of ``context``
    characters; return its description and its curve, one point per evaluation: step, seconds of
    training (evaluation not counted), characters and FLOPs trained on, validation loss (nats a
    character, over ``valid_chars`` held-out characters in chunks of ``context``)."""
    device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(seed)
    model = build(family, size, len(data.chars), context, dropout).to(device)
    per_token = flops_per_token(model, family, size, context)
    valid = data.valid_ids[:valid_chars]
    recipe = Recipe(lr=lr, warmup=warmup if warmup is not None else max(1, steps // 20))
    start = time.perf_counter()
    history = train_char_lm(model, data.train_ids, recipe, batch_size=batch, length=context,
                            generator=torch.Generator().manual_seed(seed), steps=steps, device=device, evals=evals,
                            evaluate=lambda m: {"valid_loss": math.log(perplexity(m, valid, chunk=context))})
    tokens_per_step = batch * context
    curve = [dict(step=step, seconds=seconds, tokens=step * tokens_per_step, flops=step * tokens_per_step * per_token,
                  valid_loss=valid_loss)
             for step, seconds, valid_loss in zip(history.eval_steps, history.eval_seconds,
                                                  history.metrics["valid_loss"])]
    return dict(family=family, size=asdict(size), seed=seed, lr=lr, steps=steps, batch=batch, context=context,
                dropout=dropout, weights=sum(p.numel() for p in model.parameters()), flops_per_token=per_token,
                device=str(device), wall_seconds=time.perf_counter() - start,
                train_loss=history.loss[-max(1, steps // 20):], curve=curve)
