"""The character-level language modelling task of chapter 2, shared by the chapters that come back to it.

Chapter 2 trains an RNN on it against n-grams; chapter 5 trains Transformers on it and takes their
layers apart; chapter 7 compares optimizers and warm-up on it.  The data are Bible translations
(``bible_char_data``), lower-cased, split by whole chapters.  The exercises of chapters 2 and 5 are
scored here (``scored_perplexity``, ``scored_transformer_perplexity``), in the grader's process.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterator

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from nlpbook.checks import load_weights
from nlpbook.corpora import bible_text
from nlpbook.profile import current_profile
from nlpbook.recipe import Recipe
from nlpbook.training import History, evaluates, train
from nlpbook.transformer import DecoderOnlyLM, sampling_probs
from nlpbook.vocab import Vocabulary


@dataclass(frozen=True)
class CharData:
    """A character vocabulary and the training and validation texts as id tensors."""

    chars: Vocabulary
    train_ids: torch.Tensor  # (N_train,) long
    valid_ids: torch.Tensor  # (N_valid,) long

    @classmethod
    def from_texts(cls, train_text: str, valid_text: str) -> "CharData":
        """The characters of both texts as one vocabulary, and each text as ids: the vocabulary and
        ids of ``Vocabulary.build`` and ``encode`` (the most frequent character first, ties in
        code-point order), counted and looked up as code points in numpy.  A Python loop over
        three Bibles' 10.7M characters took about 5 s of every page and graded run that read them."""
        # UTF-32 gives one 4-byte code point per Python character, so the counts are Counter's.
        # (surrogatepass: a lone surrogate is a character like any other, as it is to Counter)
        train_codes, valid_codes = (np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
                                    for text in (train_text, valid_text))
        counts = np.bincount(np.concatenate([train_codes, valid_codes]))  # (max code point + 1,)
        present = np.flatnonzero(counts)
        ranked = present[np.lexsort((present, -counts[present]))]  # last key first: by count, then code
        chars = Vocabulary([chr(code) for code in ranked.tolist()], counts[ranked].tolist())
        id_of = np.zeros(len(counts), dtype=np.int64)  # code point -> id
        id_of[ranked] = np.arange(len(ranked))
        return cls(chars, torch.from_numpy(id_of[train_codes]), torch.from_numpy(id_of[valid_codes]))

    def text(self, ids: torch.Tensor) -> str:
        """The characters of ``ids`` as one string: ``"".join(chars.decode(ids))``, at numpy's speed."""
        codes = np.array([ord(char) for char in self.chars.tokens], dtype=np.uint32)  # id -> code point
        return codes[ids.cpu().numpy()].tobytes().decode("utf-32-le", "surrogatepass")


@lru_cache(maxsize=None)
def bible_char_data(*translations: str) -> CharData:
    """Bible translations (keys of ``nlpbook.corpora.BIBLE_TRANSLATIONS``; the World English Bible
    when none is named) as lower-cased characters: the training chapters of every translation
    named for training, one after another, and the validation chapters of the first for
    validation.  Chapters are split whole and alike in every translation
    (``nlpbook.corpora.bible_split``), so no verse, nor any translation of it, sits on both sides;
    its words may (a passage told twice, a formula repeated in another chapter, as ``bible_split``
    says), and a few validation verses occur word for word in the training text.
    The World English Bible alone gives 3.4M training characters and 209k validation characters;
    with the King James Version and the Bible in Basic English, 10.4M training characters."""
    translations = translations or ("web",)
    train_text = "\n\n".join(bible_text(translation, "train").lower() for translation in translations)
    return CharData.from_texts(train_text, bible_text(translations[0], "valid").lower())


def random_windows(ids: torch.Tensor, batch_size: int, length: int, generator: torch.Generator) -> torch.Tensor:
    """``batch_size`` windows of ``length + 1`` consecutive ids at random offsets, (B, T + 1): inputs are
    ``[:, :-1]`` and the next-character targets ``[:, 1:]``."""
    if len(ids) < length + 1:
        raise ValueError(f"a text of {len(ids)} ids is too short for windows of {length + 1}")
    # offsets 0 to len - length - 1: the last window ends at the last id, so every id can be a target
    offsets = torch.randint(0, len(ids) - length, (batch_size,), generator=generator)
    return torch.stack([ids[o:o + length + 1] for o in offsets.tolist()])  # (B, T + 1)


def sequential_batches(ids: torch.Tensor, batch_size: int, length: int):
    """One pass over ``ids`` cut into ``batch_size`` contiguous streams, read ``length`` ids at a
    time: windows (B, T + 1) in which row b of each window continues row b of the one before
    (each window's last id is the next one's first input), so that a model may carry its state
    from one window to the next.  The ids that do not fill the streams evenly are left out."""
    per_stream = len(ids) // batch_size
    if per_stream < length + 1:
        raise ValueError(f"{len(ids)} ids make streams of {per_stream}, too short for windows of {length + 1}")
    streams = ids[: batch_size * per_stream].view(batch_size, per_stream)  # (B, N / B)
    for start in range(0, per_stream - length, length):
        yield streams[:, start:start + length + 1]                           # (B, T + 1)


class CharRNN(nn.Module):
    """Embedding, a tanh RNN (or LSTM with ``cell="lstm"``) of ``layers`` layers, one by default,
    and a linear map to the characters; ``dropout`` between the layers and before the output map."""

    def __init__(self, vocab_size: int, embed: int = 64, hidden: int = 256, cell: str = "rnn",
                 layers: int = 1, dropout: float = 0.0):
        super().__init__()
        recurrent = {"rnn": nn.RNN, "lstm": nn.LSTM}
        if cell not in recurrent:
            raise ValueError(f"cell must be one of {sorted(recurrent)}, got {cell!r}")
        self.embed = nn.Embedding(vocab_size, embed)
        self.rnn = recurrent[cell](embed, hidden, num_layers=layers, batch_first=True,
                                   dropout=dropout if layers > 1 else 0.0)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(hidden, vocab_size)

    def forward(self, ids: torch.Tensor, state=None):       # ids (B, T)
        states, state = self.rnn(self.embed(ids), state)    # (B, T, H)
        return self.out(self.dropout(states)), state        # (B, T, V)


def next_char_loss(model: nn.Module, window: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of predicting ``window[:, 1:]`` from ``window[:, :-1]``; the model returns
    logits first (a tensor, or a tuple whose first item is one)."""
    logits = _logits(model, window[:, :-1])  # (B, T, V)
    return F.cross_entropy(logits.flatten(0, 1), window[:, 1:].flatten())  # (B T, V) against (B T,)


def next_char_losses(model: nn.Module, window: torch.Tensor) -> torch.Tensor:
    """(B, T): the cross-entropy of each prediction of ``window[:, 1:]`` from what precedes it, for
    scoring some positions of a window and not others."""
    logits = _logits(model, window[:, :-1])  # (B, T, V)
    return F.cross_entropy(logits.transpose(1, 2), window[:, 1:], reduction="none")  # (B, V, T) against (B, T)


#: Each network's peak learning rate under the recipe in chapter 5's races of character models
#: (long-context and scaling), by profile: the rates language-model's sweep chose when those pages
#: were last run (standard, on a quiet 2-core machine, 2026-12-03: for the Transformer, 3e-3 and
#: 1e-2 each won one of two sweeps of 20-second runs, by 0.34 and 0.21 in perplexity, and 3e-3
#: stayed; 1e-2 for the RNN and 3e-2, the top of its range, for the LSTM in three sweeps of 10 to
#: 20 seconds).  language-model races at its own sweep's choice and prints these beside it.  full
#: has not run the sweep yet.
RACE_RATES = {
    "quick": {"Transformer": 3e-3, "RNN": 3e-3, "LSTM": 3e-3},
    "standard": {"Transformer": 3e-3, "RNN": 1e-2, "LSTM": 3e-2},
    "full": {"Transformer": 1e-3, "RNN": 1e-3, "LSTM": 1e-3},
}


def race_rate(kind: str, profile: str | None = None) -> float:
    """:data:`RACE_RATES` of network ``kind`` in ``profile`` (the current one by default)."""
    return RACE_RATES[profile or current_profile()][kind]


def random_window_stream(train_ids: torch.Tensor, batch_size: int, length: int,
                         generator: torch.Generator) -> Iterator[torch.Tensor]:
    """Batches of ``batch_size`` random windows of ``length + 1`` characters, without end."""
    while True:
        yield random_windows(train_ids, batch_size, length, generator)


def staged_window_stream(train_ids: torch.Tensor, stages: list[tuple[int | None, int, int]],
                         generator: torch.Generator) -> Iterator[torch.Tensor]:
    """Random windows in stages, short ones first (Press et al.'s staged training): ``stages`` is a
    list of (steps, batch_size, length), each stage giving ``steps`` batches of ``batch_size``
    windows of ``length + 1`` characters; the last stage's steps may be None, for without end."""
    if any(steps is None for steps, _, _ in stages[:-1]):
        raise ValueError(f"only the last stage may run without end, got {stages}")
    for steps, batch_size, length in stages:
        batches = random_window_stream(train_ids, batch_size, length, generator)
        yield from (batches if steps is None else itertools.islice(batches, steps))


def train_char_lm(model: nn.Module, train_ids: torch.Tensor, recipe: Recipe, *, batch_size: int, length: int,
                  generator: torch.Generator, seconds: float | None = None, steps: int | None = None,
                  evaluate: Callable[[nn.Module], dict[str, float]] | None = None, evals: int | None = None,
                  device: torch.device | None = None) -> History:
    """Train a character language model the book's one way: random windows of ``train_ids``
    (``batch_size`` of ``length`` predictions a step), next-character cross-entropy, the training
    recipe (:class:`nlpbook.recipe.Recipe`: AdamW, warm-up then cosine decay over the budget,
    clipping, bfloat16 on a GPU), for ``seconds`` of training (a race at equal time) or ``steps``.
    ``evaluate(model)`` returns named metrics, ``evals`` times evenly over the budget and at the end,
    its time not counted.  Returns :func:`nlpbook.training.train`'s :class:`~nlpbook.training.History`."""
    return train(model, random_window_stream(train_ids, batch_size, length, generator), next_char_loss, recipe,
                 steps=steps, seconds=seconds, device=device, evaluate=evaluate, evals=evals, progress=False)


@torch.no_grad()
@evaluates
def generate(model: nn.Module, ids: torch.Tensor, new_tokens: int, temperature: float = 1.0,
             top_k: int | None = None, generator: torch.Generator | None = None) -> torch.Tensor:
    """Extend ``ids`` (B, T) by ``new_tokens`` sampled characters, from a ``CharRNN`` or a
    ``DecoderOnlyLM``, with the same sampling (``sampling_probs``, drawn on the CPU from
    ``generator``) in eval mode (no dropout), so that samples of the two families compare like for
    like.  The recurrent
    model reads the prompt once and then carries its state a character at a time; the
    Transformer goes through its own ``generate``.  (B, T + new_tokens)"""
    if not isinstance(model, CharRNN):
        return model.generate(ids, new_tokens, temperature=temperature, top_k=top_k, generator=generator)
    logits, state = model(ids)                                                          # (B, T, V)
    out = [ids]
    for _ in range(new_tokens):
        probs = sampling_probs(logits[:, -1].float(), temperature, top_k)              # (B, V)
        out.append(torch.multinomial(probs.cpu(), 1, generator=generator).to(ids.device))  # (B, 1)
        logits, state = model(out[-1], state)                                          # (B, 1, V)
    return torch.cat(out, dim=1)


def curve_by_characters(history: History, chars_per_step: int, metric: str) -> list[tuple[float, float]]:
    """A run's evaluations of ``metric`` against the characters it had trained on by then (its
    steps times ``chars_per_step``) instead of the seconds, for comparing machines or batch sizes."""
    return [(step * chars_per_step, value) for step, value in zip(history.eval_steps, history.metrics[metric])]


def _logits(model: nn.Module, inputs: torch.Tensor) -> torch.Tensor:
    """The logits of a model that returns them alone or first in a tuple (with its state)."""
    out = model(inputs)
    return out[0] if isinstance(out, tuple) else out


def _full_chunks(ids: torch.Tensor, chunk: int, batch_size: int, device: torch.device):
    """The consecutive whole chunks of ``chunk`` predictions in ``ids``, each with the character
    before it, ``batch_size`` at a time: (b, chunk + 1) windows on ``device``."""
    starts = range(0, len(ids) - chunk, chunk)
    for first in range(0, len(starts), batch_size):
        yield torch.stack([ids[start:start + chunk + 1] for start in starts[first:first + batch_size]]).to(device)


@torch.no_grad()
@evaluates
def perplexity(model: nn.Module, ids: torch.Tensor, chunk: int | None = None, batch_size: int = 128) -> float:
    """Per-character perplexity of ``ids`` under ``model``: the whole text as one sequence, or in
    consecutive chunks of ``chunk`` characters (for models with a bounded context).

    Each chunk is read on its own (from a fresh state), so the chunks go through the model
    ``batch_size`` at a time; a shorter last chunk goes alone."""
    if len(ids) < 2:
        raise ValueError(f"a perplexity needs at least 2 characters (one to read, one to predict), got {len(ids)}")
    device = next(model.parameters()).device
    step = chunk or len(ids) - 1
    total, count = 0.0, 0
    for windows in _full_chunks(ids, step, batch_size, device):  # (b, step + 1)
        total += next_char_loss(model, windows).item() * windows[:, 1:].numel()
        count += windows[:, 1:].numel()
    if (len(ids) - 1) % step:
        last = ids[(len(ids) - 1) // step * step:].to(device)[None]  # (1, T + 1), shorter than a chunk
        total += next_char_loss(model, last).item() * (last.shape[1] - 1)
        count += last.shape[1] - 1
    return math.exp(total / count)


@torch.no_grad()
@evaluates
def loss_by_position(model: nn.Module, ids: torch.Tensor, chunk: int, batch_size: int = 128) -> torch.Tensor:
    """The mean cross-entropy (nats) of each position of ``ids`` read in consecutive chunks of
    ``chunk`` characters, each from a fresh state, as ``perplexity(..., chunk=chunk)`` reads them:
    entry t is the loss of predicting a chunk's character t + 1 from the t + 1 before it, so it
    shows how much a model gains from a longer context.  A shorter last chunk is left out.  (chunk,)"""
    device = next(model.parameters()).device
    if len(ids) <= chunk:
        raise ValueError(f"a text of {len(ids)} ids is too short for chunks of {chunk + 1}")
    total, chunks = torch.zeros(chunk), 0
    for windows in _full_chunks(ids, chunk, batch_size, device):  # (b, chunk + 1)
        total += next_char_losses(model, windows).sum(0).cpu()  # (b, chunk) summed over the chunks
        chunks += len(windows)
    return total / chunks


# The exercise's RNNLanguageModel (chapter 2, part 6) names its weights as the book writes the
# equations; CharRNN keeps PyTorch's.  Same tensors, same shapes.
EXERCISE_TO_CHAR_RNN = {"embedding.weight": "embed.weight", "weight_ih": "rnn.weight_ih_l0",
                        "weight_hh": "rnn.weight_hh_l0", "bias_ih": "rnn.bias_ih_l0",
                        "bias_hh": "rnn.bias_hh_l0", "head.weight": "out.weight", "head.bias": "out.bias"}


def char_rnn_state(exercise_state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The weights of chapter 2's ``RNNLanguageModel`` under ``CharRNN``'s names, detached and on
    the CPU, so that the grader can score them (``scored_perplexity``).  Any other set of names
    raises ``ValueError`` naming the expected ones."""
    if set(exercise_state) != set(EXERCISE_TO_CHAR_RNN):
        raise ValueError(f"RNNLanguageModel's weights should be named {sorted(EXERCISE_TO_CHAR_RNN)}, "
                         f"got {sorted(exercise_state)}")
    return {EXERCISE_TO_CHAR_RNN[name]: value.detach().cpu() for name, value in exercise_state.items()}


def scored_perplexity(state: dict[str, torch.Tensor], *, characters: int, chunk: int) -> float:
    """The validation perplexity of a trained ``CharRNN`` (cell ``rnn``) given by its state dict,
    on the first ``characters`` characters of ``bible_char_data``'s validation text, read in
    chunks of ``chunk``.

    The grader calls this in its own process on the weights a student's training produced
    (``nlpbook.checks.expect_score``), so the score does not depend on any code the student's
    kernel ran.  The sizes come from the weights' shapes; a state of another form raises
    ``ValueError``."""
    expected = {"embed.weight", "rnn.weight_ih_l0", "rnn.weight_hh_l0", "rnn.bias_ih_l0", "rnn.bias_hh_l0",
                "out.weight", "out.bias"}
    if set(state) != expected:
        raise ValueError(f"the weights should be a CharRNN's {sorted(expected)}, got {sorted(state)}")
    data = bible_char_data()
    vocab_size, embed = state["embed.weight"].shape
    hidden = state["rnn.weight_hh_l0"].shape[0]
    if vocab_size != len(data.chars):
        raise ValueError(f"the model has {vocab_size} characters; the text has {len(data.chars)}")
    model = load_weights(CharRNN(vocab_size, embed, hidden), state, "the course's CharRNN")
    return perplexity(model, data.valid_ids[:characters], chunk=chunk)


def scored_transformer_perplexity(state: dict[str, torch.Tensor], *, heads: int, layers: int,
                                  characters: int) -> float:
    """The validation perplexity of a trained ``nlpbook.transformer.DecoderOnlyLM`` (pre-LN, with
    ``heads`` heads and ``layers`` layers) given by its state dict, on the first ``characters`` characters of
    ``bible_char_data``'s validation text, read in chunks of the model's context.

    As :func:`scored_perplexity`, for chapter 5's exercise: the grader calls it in its own process,
    and the model it builds applies the causal mask whatever the student's model did.  The width
    and the context come from the weights' shapes; a state of another form (another number of
    layers among them) raises ``ValueError``."""
    if "embed.weight" not in state or "position.weight" not in state:
        raise ValueError(f"the weights should be a DecoderOnlyLM's (embed, position, layers, norm, out), "
                         f"got {sorted(state)[:8]}")
    data = bible_char_data()
    vocab_size, width = state["embed.weight"].shape
    context = state["position.weight"].shape[0]
    if vocab_size != len(data.chars):
        raise ValueError(f"the model has {vocab_size} characters; the text has {len(data.chars)}")
    if width % heads:
        raise ValueError(f"a width of {width} does not split into {heads} heads")
    model = load_weights(DecoderOnlyLM(vocab_size, width, heads, layers, context), state,
                         "the course's DecoderOnlyLM")
    return perplexity(model, data.valid_ids[:characters], chunk=context)
