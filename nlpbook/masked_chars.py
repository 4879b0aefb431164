"""Filling in hidden characters of Bible verses: chapter 4's graded training.

Each verse of the World English Bible (lower-cased, its first ``length`` characters) becomes a
row of ids, padded with ``PAD``; a share of its characters is replaced by ``MASK`` and a small
bidirectional Transformer encoder predicts them from the characters around them.  A model that
sees one position at a time can only guess the commonest character (a space, about 18%); the
context has to come through attention.

:class:`MaskedCharEncoder` is the course's model, with the parameter names of the exercise's
(``embed``, ``blocks.i.norm1``, ``blocks.i.attention.{q,k,v,out}_proj``, ``blocks.i.norm2``,
``blocks.i.feed_forward.{0,2}``, ``norm``, ``out``), and :func:`scored_masked_accuracy` is the
grader's measure of a student's trained weights.
"""
from __future__ import annotations

import functools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from nlpbook import corpora
from nlpbook.bert import IGNORE_INDEX
from nlpbook.checks import load_weights
from nlpbook.training import evaluates

PAD, MASK = 0, 1  # the ids of padding and of a hidden character; characters start at 2


@functools.lru_cache(maxsize=None)
def _alphabet() -> str:
    return "".join(sorted(set("".join(verse.text.lower() for verse in corpora.bible_verses("web")))))


def vocab_size() -> int:
    """PAD, MASK and the characters of the lower-cased World English Bible."""
    return len(_alphabet()) + 2


@functools.lru_cache(maxsize=None)
def verse_ids(split: str, length: int) -> torch.Tensor:
    """(N, length) int64: the first ``length`` characters of each non-empty verse of ``split``
    (``nlpbook.corpora.bible_split``'s chapters), lower-cased, as ids, padded with ``PAD``."""
    index = {char: i + 2 for i, char in enumerate(_alphabet())}
    texts = [verse.text.lower()[:length] for verse in corpora.bible_verses("web")
             if verse.text and corpora.bible_split(verse.book, verse.chapter) == split]
    ids = torch.full((len(texts), length), PAD, dtype=torch.long)
    for row, text in enumerate(texts):
        ids[row, :len(text)] = torch.tensor([index[char] for char in text])
    return ids


def verse_batches(split: str, length: int, batch_size: int, generator: torch.Generator):
    """Endless batches (B, length) of verses drawn at random from ``split``."""
    ids = verse_ids(split, length)
    while True:
        yield ids[torch.randint(0, len(ids), (batch_size,), generator=generator)]


def mask_characters(ids: torch.Tensor, rate: float, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """The exercise's corruption: each real character is hidden with probability ``rate``.
    Returns the inputs (hidden characters replaced by ``MASK``) and the targets (the original id
    where a character was hidden, -100 elsewhere, which ``cross_entropy`` ignores)."""
    hidden = (torch.rand(ids.shape, generator=generator) < rate) & (ids != PAD)
    return ids.masked_fill(hidden, MASK), ids.masked_fill(~hidden, IGNORE_INDEX)


class SelfAttention(nn.Module):
    """Multi-head self-attention with the exercise's names and interface (its part 4):
    ``forward(x, attention_mask)`` with a boolean (True where allowed) or additive mask
    broadcastable to (B, H, T, T) returns the output (B, T, D) and ``None`` for the probabilities."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(width, width) for _ in range(4))

    def forward(self, x, attention_mask=None):                                          # (B, T, D)
        B, T, D = x.shape
        # (B, T, D) -> (B, H, T, D / H)
        split = lambda t: t.view(B, T, self.heads, D // self.heads).transpose(1, 2)  # noqa: E731
        context = F.scaled_dot_product_attention(split(self.q_proj(x)), split(self.k_proj(x)),
                                                 split(self.v_proj(x)), attn_mask=attention_mask)
        return self.out_proj(context.transpose(1, 2).reshape(B, T, D)), None           # (B, H, T, D / H) -> (B, T, D)


class _Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.norm1, self.attention = nn.LayerNorm(width), SelfAttention(width, heads)
        self.norm2 = nn.LayerNorm(width)
        self.feed_forward = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x, allowed):
        x = x + self.attention(self.norm1(x), allowed)[0]
        return x + self.feed_forward(self.norm2(x))


class MaskedCharEncoder(nn.Module):
    """Character embeddings plus sinusoidal positions, ``layers`` pre-LN blocks whose attention
    never reads padding, a final LayerNorm and a linear head to one score per id."""

    def __init__(self, vocab: int, width: int, heads: int, layers: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.blocks = nn.ModuleList(_Block(width, heads) for _ in range(layers))
        self.norm, self.out = nn.LayerNorm(width), nn.Linear(width, vocab)

    def forward(self, ids):                                                              # (B, T)
        from nlpbook.transformer import sinusoidal_positions

        T, width = ids.shape[1], self.embed.embedding_dim
        x = self.embed(ids) + sinusoidal_positions(T, width).to(ids.device)              # (B, T, D)
        allowed = (ids != PAD)[:, None, None, :]                                         # (B, 1, 1, T)
        for block in self.blocks:
            x = block(x, allowed)
        return self.out(self.norm(x))                                                    # (B, T, V)


@torch.no_grad()
@evaluates
def masked_accuracy(model: nn.Module, ids: torch.Tensor, rate: float = 0.15, seed: int = 0,
                    batch_size: int = 256) -> float:
    """The share of hidden characters of ``ids`` (hidden by :func:`mask_characters` with ``seed``)
    that ``model`` puts first."""
    inputs, targets = mask_characters(ids, rate, torch.Generator().manual_seed(seed))
    right = total = 0
    for start in range(0, len(ids), batch_size):
        logits = model(inputs[start:start + batch_size])
        target = targets[start:start + batch_size]
        hidden = target != IGNORE_INDEX
        right += (logits.argmax(-1)[hidden] == target[hidden]).sum().item()
        total += hidden.sum().item()
    return right / total


def scored_masked_accuracy(state: dict[str, torch.Tensor], *, heads: int, length: int, verses: int) -> float:
    """The accuracy of a trained :class:`MaskedCharEncoder`, given by its state dict, at the hidden
    characters of the first ``verses`` validation verses (their first ``length`` characters, 15%
    hidden with a fixed seed).  Chapter 4's exercise trains such a model for credit; the grader
    calls this in its own process, and the model it builds never lets attention read padding,
    whatever the student's did.  The width and the number of blocks come from the weights'
    shapes; a state of another form raises ``ValueError``."""
    if "embed.weight" not in state:
        raise ValueError(f"the weights should be a MaskedCharEncoder's (embed, blocks, norm, out), "
                         f"got {sorted(state)[:8]}")
    vocab, width = state["embed.weight"].shape
    layers = len({name.split(".")[1] for name in state if name.startswith("blocks.")})
    if vocab != vocab_size():
        raise ValueError(f"the model has {vocab} ids; the verses use {vocab_size()} (PAD, MASK and the characters)")
    if width % heads or width % 2:
        raise ValueError(f"a width of {width} does not split into {heads} heads or sine-cosine pairs")
    model = load_weights(MaskedCharEncoder(vocab, width, heads, layers), state, "the course's MaskedCharEncoder")
    accuracy = masked_accuracy(model, verse_ids("valid", length)[:verses])
    return accuracy if all(torch.isfinite(value).all() for value in state.values()) else math.nan
