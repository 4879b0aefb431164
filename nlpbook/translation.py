"""Training and decoding for any translator with the interface of ``nlpbook.seq2seq.Seq2Seq``
and ``nlpbook.transformer.EncoderDecoder``: ``model(source, lengths, target_in)`` gives
teacher-forced logits (B, T, V).  Chapter 3 trains its LSTM translator with them and scores the
exercise's; chapter 5 races both kinds and sweeps their learning rates.

The pairs and tensors they read come from ``nlpbook.parallel``.
"""
from __future__ import annotations

import math

import torch

from nlpbook.checks import load_weights
from nlpbook.parallel import BOS, EOS, Pair, bible_tensors, to_tensors
from nlpbook.seq2seq import Seq2Seq
from nlpbook.training import History, evaluates, linear_warmup, train
from nlpbook.transformer import EncoderDecoder, KVCache


def until_eos(ids: list[int], vocab) -> list[str]:
    """Decoded ``ids`` up to, not including, the first ``<eos>`` (all of them when there is none)."""
    eos = vocab.index(EOS)
    return vocab.decode(ids[: ids.index(eos)] if eos in ids else ids)


def _trimmed(tensors, rows):
    """The rows' source, lengths and target, cut to their longest source and target."""
    source, lengths, target = tensors
    longest_source = int(lengths[rows].max())
    longest_target = int((target[rows] != 0).sum(1).max())
    return source[rows, :longest_source], lengths[rows], target[rows, :longest_target]


def teacher_forced_loss(model, source, lengths, target) -> torch.Tensor:
    """Mean cross-entropy of every next target token, padding ignored; ``target`` starts with BOS."""
    device = next(model.parameters()).device
    source, target = source.to(device), target.to(device)
    logits = model(source, lengths, target[:, :-1])                        # (B, T - 1, V)
    # (B (T - 1), V) against (B (T - 1),)
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1), target[:, 1:].flatten(),
                                             ignore_index=0)


@torch.no_grad()
@evaluates
def validation_loss(model, tensors, batch_size: int = 256) -> float:
    """Cross-entropy per target token (nats) over all pairs of ``tensors`` (from ``to_tensors``),
    the same whatever the batch size: every batch's mean is weighted by its token count."""
    total, tokens = 0.0, 0
    for start in range(0, len(tensors[0]), batch_size):
        source, lengths, target = _trimmed(tensors, torch.arange(start, min(start + batch_size,
                                                                             len(tensors[0]))))
        count = int((target[:, 1:] != 0).sum())
        total += teacher_forced_loss(model, source, lengths, target).item() * count
        tokens += count
    return total / tokens


def scored_translation_perplexity(state: dict[str, torch.Tensor], *, max_words: int, merges: int = 2000) -> float:
    """The validation perplexity (per target piece, EOS included, padding not) of the encoder-decoder
    with attention (``nlpbook.seq2seq.Seq2Seq``) given by its state dict, on the validation pairs of
    :func:`bible_tensors`.

    Chapter 3's exercise trains such a translator for credit; the grader calls this in its own
    process (``nlpbook.checks.expect_score``), so no code of the student's decides the figure.
    The sizes come from the weights' shapes; a state of another form raises ``ValueError``."""
    data = bible_tensors(max_words, merges)
    if "encoder.embed.weight" not in state or "decoder.weight_hh_l0" not in state or "out.weight" not in state:
        raise ValueError(f"the weights should be an encoder-decoder's, got {sorted(state)[:8]}")
    source_vocab, embed = state["encoder.embed.weight"].shape
    target_vocab, hidden = state["out.weight"].shape
    if (source_vocab, target_vocab) != (len(data.source_vocab), len(data.target_vocab)):
        raise ValueError(f"the model reads {source_vocab} source and writes {target_vocab} target pieces; the "
                         f"corpus has {len(data.source_vocab)} and {len(data.target_vocab)}")
    model = load_weights(Seq2Seq(source_vocab, target_vocab, embed, hidden, attention=True), state,
                         "the course's translator")
    return math.exp(validation_loss(model, data.valid))


def random_batches(tensors, batch_size: int, generator: torch.Generator):
    """Batches of ``batch_size`` random pairs of ``tensors``, each trimmed to its longest member, without end."""
    while True:
        yield _trimmed(tensors, torch.randint(0, len(tensors[0]), (batch_size,), generator=generator))


# Chapter 5's translation race: its two models and the learning rate each races at, the one with
# the highest validation BLEU after 70 s on 2 CPU threads (the race's length then), one seed
# (benchmarks/translation_rates.py, 2026-12-05). LSTM: 2e-3 1.49, 5e-3 1.80, 1e-2 3.61, 2e-2 3.94,
# 4e-2 0.70; Transformer: 1e-3 3.94, 2e-3 4.42, 5e-3 3.10, 1e-2 1.92. full uses them unswept.
RACE_MODELS = ("LSTM + attention", "Transformer")
RACE_RATES = {"LSTM + attention": 2e-2, "Transformer": 2e-3}
# The rest of each model's settings in the race and in its sweep: chapter 3's betas for the LSTM,
# the paper's beta2 (train_translator's default) after a warm-up of 50 steps for the Transformer
RACE_OPTIONS = {"LSTM + attention": dict(betas=(0.9, 0.999)), "Transformer": dict(warmup=50)}


def race_model(kind: str, sizes: tuple[int, int], width: int) -> torch.nn.Module:
    """One of the race's two models (``RACE_MODELS``) for source and target vocabularies of ``sizes``:
    chapter 3's LSTM with attention (embeddings of 96, hidden size ``width``) or a Transformer of width
    ``width``, 4 heads, 2 encoder and 2 decoder layers and dropout 0.1.  The page races them and
    ``benchmarks/translation_rates.py`` sweeps their rates, so both build them here."""
    if kind == "LSTM + attention":
        return Seq2Seq(*sizes, embed=96, hidden=width, attention=True)
    if kind == "Transformer":
        return EncoderDecoder(*sizes, width=width, heads=4, encoder_layers=2, decoder_layers=2, dropout=0.1)
    raise ValueError(f"no race model {kind!r}: the race's models are {RACE_MODELS}")


def train_translator(model, tensors, *, seed: int, lr: float, warmup: int = 0,
                     steps: int | None = None, seconds: float | None = None,
                     batch_size: int = 64, valid=None, every: float | None = None,
                     every_steps: int | None = None, betas=(0.9, 0.98)) -> History:
    """Train with teacher forcing: Adam, gradient norm clipped at 1, the learning rate rising
    linearly over ``warmup`` steps, batches of random pairs trimmed to their longest member,
    through the book's one loop (:func:`nlpbook.training.train`).

    Stops after ``steps`` steps or ``seconds`` seconds of training, whichever comes first
    (at least one must be given).  With ``valid`` tensors, the validation loss (metric
    ``"valid_loss"``) is measured every ``every`` seconds of a ``seconds`` budget or every
    ``every_steps`` steps, and at the end; its time is not counted."""
    if steps is None and seconds is None:
        raise ValueError("give steps, seconds or both: the training needs a budget")
    if every is not None and seconds is None:
        raise ValueError("every counts seconds of a seconds budget; with a budget of steps give every_steps")
    torch.manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=betas)
    checks = valid is not None and (every or every_steps)
    return train(model, random_batches(tensors, batch_size, torch.Generator().manual_seed(seed)),
                 lambda m, batch: teacher_forced_loss(m, *batch), optimizer, steps=steps, seconds=seconds,
                 clip_grad_norm=1.0, scheduler=linear_warmup(optimizer, warmup),
                 evaluate=(lambda m: {"valid_loss": validation_loss(m, valid)}) if checks else None,
                 evals=max(1, round(seconds / every)) if checks and every else None,
                 eval_every=every_steps if checks and not every else None, progress=False)


@torch.no_grad()
@evaluates
def greedy_translate(model, pairs: list[Pair], source_vocab, target_vocab,
                     max_length: int = 60, cache: bool = True) -> list[tuple[str, ...]]:
    """The greedy output of ``model`` for every pair's source, decoded as one batch until every
    row has written ``<eos>`` or ``max_length`` tokens, as token tuples (pieces, not words).

    A model with ``decode_step`` (the LSTM) carries its state from step to step; one with
    ``decode`` (the Transformer) keeps each decoder layer's keys and values (``KVCache``) and reads
    only the token it wrote last, unless ``cache=False``, which re-reads the whole prefix at every
    step (the same tokens, for checking and timing)."""
    device = next(model.parameters()).device
    source, lengths, _ = to_tensors(pairs, source_vocab, target_vocab)
    source = source.to(device)
    eos = target_vocab.index(EOS)
    tokens = torch.full((len(pairs), 1), target_vocab.index(BOS), device=device)   # (B, 1)
    finished = torch.zeros(len(pairs), dtype=torch.bool, device=device)
    stateful = hasattr(model, "decode_step")
    memory = model.encode(source, lengths)
    caches = [KVCache() for _ in model.decoder] if cache and not stateful else None
    for _ in range(max_length):
        if stateful:
            log_probs, memory, _ = model.decode_step(tokens[:, -1], memory)       # (B, V)
        elif caches is not None:
            log_probs = model.decode(tokens[:, -1:], *memory, caches)[:, -1]      # (B, V)
        else:
            log_probs = model.decode(tokens, *memory)[:, -1]                      # (B, V)
        best = log_probs.argmax(-1, keepdim=True)                                 # (B, 1)
        tokens = torch.cat([tokens, best], dim=1)
        finished |= best[:, 0] == eos
        if finished.all():
            break
    return [tuple(until_eos(row[1:], target_vocab)) for row in tokens.tolist()]
