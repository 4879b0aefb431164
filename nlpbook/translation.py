"""Translation data: real verse pairs that install with pip, a generated task, and a corpus that downloads.

``bible_translation`` pairs two public-domain Bible translations verse by verse (the World
English Bible and Louis Segond's French by default), cut into subword pieces by a BPE learned
on the training verses: chapter 3 translates with it.

``number_pairs`` builds an exact parallel corpus from ``num2words``: an English number phrase
and its translation ("three hundred and forty-two" -> "trois cent quarante-deux").  The
mapping is deterministic and known, yet not word for word: French counts in twenties
(*quatre-vingt-dix-neuf*, four-twenty-ten-nine, is 99), German puts units before tens
(*neunundneunzig*, nine-and-ninety) and compounds whole numbers into one word, and English
inserts "and".  Long numbers make sentences of 10 to 20 tokens whose words must be moved, so
a decoder that sees only a fixed summary of the source struggles and attention helps.  The
splits hold disjoint numbers, so a model cannot pass the test by memorizing.

``multi30k`` loads the Multi30k English-German image captions (Elliott et al., 2016, 29,000
training pairs), downloaded with a checksum into the cache of ``nlpbook.download``.
"""
from __future__ import annotations

import functools
import math
import random
import re
import tarfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import torch

from nlpbook.bpe import BPE, pretokenize, train_bpe, word_counts
from nlpbook.checks import load_weights
from nlpbook.download import fetch
from nlpbook.seq2seq import Seq2Seq
from nlpbook.train import History, linear_warmup, train
from nlpbook.transformer import EncoderDecoder, KVCache
from nlpbook.vocab import Vocabulary

LANGUAGES = ("en", "fr", "de", "es")
_TOKEN = re.compile(r"\w+|[^\w\s]")

MULTI30K_MIRROR = "https://raw.githubusercontent.com/neychev/small_DL_repo/master/datasets/Multi30k/"
# split -> (file name, SHA-256, prefix of the files inside the archive); the checksums torchtext publishes.
MULTI30K_FILES = {
    "train": ("training.tar.gz", "20140d013d05dd9a72dfde46478663ba05737ce983f478f960c1123c6671be5e", "train"),
    "valid": ("validation.tar.gz", "a7aa20e9ebd5ba5adce7909498b94410996040857154dab029851af3a866da8c", "val"),
    "test": ("mmt16_task1_test.tar.gz", "6d1ca1dba99e2c5dd54cae1226ff11c2551e6ce63527ebb072a1f70f72a5cd36", "test"),
}


@dataclass(frozen=True)
class Pair:
    """One sentence and its translation, as tokens."""

    source: tuple[str, ...]
    target: tuple[str, ...]


@dataclass
class ParallelSplits:
    train: list[Pair]
    valid: list[Pair]
    test: list[Pair]


def tokenize_phrase(text: str, *, characters: bool = False) -> tuple[str, ...]:
    """Lower-cased words with punctuation and hyphens as tokens of their own
    ("quatre-vingt-dix" -> quatre - vingt - dix); ``characters`` splits into characters instead
    (spaces become "_"), which suits German's one-word numbers."""
    text = text.lower()
    if characters:
        return tuple("_" if c == " " else c for c in text)
    return tuple(_TOKEN.findall(text))


def number_phrase(value: int, language: str) -> str:
    """``value`` written out in ``language`` (one of ``LANGUAGES``)."""
    from num2words import num2words

    if language not in LANGUAGES:
        raise ValueError(f"unknown language {language!r}; expected one of {', '.join(LANGUAGES)}")
    return num2words(value, lang=language)


def number_pairs(target: str = "fr", *, source: str = "en", size: int = 20_000, max_value: int = 999_999,
                 seed: int = 0, fractions: tuple[float, float, float] = (0.8, 0.1, 0.1),
                 characters: bool = False) -> ParallelSplits:
    """``size`` distinct numbers from 0..max_value, each as a (source phrase, target phrase) pair,
    split into train, validation and test sets that share no number.  The same arguments always
    give the same splits."""
    if size > max_value + 1:
        raise ValueError(f"cannot draw {size} distinct numbers from 0..{max_value}")
    if abs(sum(fractions) - 1.0) > 1e-9 or any(f < 0 for f in fractions):
        raise ValueError(f"fractions must be non-negative and sum to 1, got {fractions}")
    values = random.Random(seed).sample(range(max_value + 1), size)
    pairs = [Pair(tokenize_phrase(number_phrase(v, source), characters=characters),
                  tokenize_phrase(number_phrase(v, target), characters=characters)) for v in values]
    first = round(size * fractions[0])
    second = first + round(size * fractions[1])
    return ParallelSplits(pairs[:first], pairs[first:second], pairs[second:])


def multi30k(split: str = "train", *, source: str = "en", target: str = "de", mirror: str = MULTI30K_MIRROR,
             files: dict | None = None, cache: Path | None = None) -> list[Pair]:
    """The Multi30k captions of ``split`` (train, valid or test) as token pairs, downloaded once.

    ``mirror`` and ``files`` (split -> (file name, SHA-256, prefix)) point elsewhere, for a
    local copy or a test server."""
    files = files or MULTI30K_FILES
    if split not in files:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(files)}")
    name, sha256, prefix = files[split]
    archive = fetch(mirror + name, sha256, name=f"multi30k-{name}", cache=cache)
    lines = {}
    with tarfile.open(archive, "r:gz") as tar:
        for language in (source, target):
            member = f"{prefix}.{language}"
            try:
                handle = tar.extractfile(member)
            except KeyError:
                raise ValueError(f"{archive} holds no {member} (languages in Multi30k: en, de, fr, cs)") from None
            lines[language] = handle.read().decode("utf-8").splitlines()
    if len(lines[source]) != len(lines[target]):
        raise ValueError(f"{archive}: {len(lines[source])} {source} lines but {len(lines[target])} {target} lines")
    return [Pair(tokenize_phrase(a), tokenize_phrase(b)) for a, b in zip(lines[source], lines[target]) if a.strip()]


PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<bos>", "<eos>"
SPECIALS = (PAD, UNK, BOS, EOS)


@dataclass
class SubwordTranslation:
    """A parallel corpus cut into BPE pieces for the model, kept as words for scoring.

    ``pieces`` and ``words`` hold the same pairs in the same order; a model reads and writes
    pieces, and BLEU compares :func:`pieces_to_words` of its output with ``words``."""

    pieces: ParallelSplits
    words: ParallelSplits
    source_bpe: BPE
    target_bpe: BPE


def bible_translation(source: str = "web", target: str = "segond", *, max_words: int = 25,
                      merges: int = 2000) -> SubwordTranslation:
    """Verse pairs of two Bible translations (``nlpbook.corpora.bible_pairs``: whole chapters
    split 85/5/10, held-out verses never equal to training ones) whose sides have at most
    ``max_words`` words, each side cut by its own BPE of ``merges`` merges learned on the
    training verses alone.  Words are lower-cased, with punctuation as tokens of its own
    (``nlpbook.bpe.pretokenize``)."""
    from nlpbook.corpora import SPLITS, bible_pairs

    raw = {split: bible_pairs(source, target, split=split, max_words=max_words) for split in SPLITS}
    source_bpe = BPE(train_bpe(word_counts(a for a, _ in raw["train"]), merges))
    target_bpe = BPE(train_bpe(word_counts(b for _, b in raw["train"]), merges))
    words = {split: [Pair(tuple(pretokenize(a)), tuple(pretokenize(b))) for a, b in pairs]
             for split, pairs in raw.items()}
    pieces = {split: [Pair(_cut(source_bpe, p.source), _cut(target_bpe, p.target)) for p in pairs]
              for split, pairs in words.items()}
    return SubwordTranslation(ParallelSplits(**pieces), ParallelSplits(**words), source_bpe, target_bpe)


class BibleTensors(NamedTuple):
    """``bible_translation``'s pairs as id tensors (``to_tensors``: source, lengths, target), with
    the vocabularies they were encoded with (built on the training pairs)."""

    train: tuple[torch.Tensor, torch.Tensor, torch.Tensor]
    valid: tuple[torch.Tensor, torch.Tensor, torch.Tensor]
    test: tuple[torch.Tensor, torch.Tensor, torch.Tensor]
    source_vocab: Vocabulary
    target_vocab: Vocabulary


@functools.lru_cache(maxsize=2)
def bible_tensors(max_words: int, merges: int = 2000) -> BibleTensors:
    """The World English Bible and Louis Segond's pairs of at most ``max_words`` words a side, cut
    by BPEs of ``merges`` merges, as tensors.  Kept for the process's life: chapter 3's grader
    scores every student's translator on the same validation tensors."""
    corpus = bible_translation("web", "segond", max_words=max_words, merges=merges)
    vocabs = build_vocabularies(corpus.pieces.train)
    return BibleTensors(*(to_tensors(getattr(corpus.pieces, split), *vocabs) for split in ("train", "valid", "test")),
                        *vocabs)


def _cut(bpe: BPE, words: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(piece for word in words for piece in bpe.encode_word(word))


# Where each group of source lengths starts, in tokens (words and punctuation marks): about a
# quarter of the Bible test verses of at most 20 words a side fall in each group.
SOURCE_LENGTH_STARTS = (1, 15, 18, 21)


class LengthGroup(NamedTuple):
    """One group of :func:`source_length_groups`: its ``label`` ("15-17", for a plot's axis) and
    the ``indices`` of its pairs."""

    label: str
    indices: list[int]

    @property
    def in_words(self) -> str:
        """The label as a sentence says it: "15 to 17"."""
        return self.label.replace("-", " to ")


def source_length_groups(pairs: list[Pair], starts: tuple[int, ...] = SOURCE_LENGTH_STARTS
                         ) -> list[LengthGroup]:
    """The indices of ``pairs`` grouped by the length of their source in tokens, as
    ``pretokenize`` cuts it (so punctuation marks count): a group per start, from that start up
    to the next, the last one open; each with a label such as ``"15-17"`` (the last group's
    label ends at the longest source).  Every pair of at least ``starts[0]`` tokens is in one
    group, so no verse is left out of a comparison by length."""
    lengths = [len(pair.source) for pair in pairs]
    longest = max(lengths, default=starts[-1])
    ends = [start - 1 for start in starts[1:]] + [max(longest, starts[-1])]
    return [LengthGroup(f"{low}-{high}", [i for i, n in enumerate(lengths) if low <= n <= high])
            for low, high in zip(starts, ends)]


def pieces_to_words(pieces: list[str]) -> tuple[str, ...]:
    """BPE pieces back to words ("seign", "eur</w>" -> "seigneur"); an unfinished last word is kept."""
    return tuple(BPE.decode(pieces).split())


def build_vocabularies(pairs: list[Pair]):
    """Source and target vocabularies of ``pairs`` (training pairs only), specials first: pad = 0."""
    return (Vocabulary.build([p.source for p in pairs], specials=SPECIALS, unk=UNK),
            Vocabulary.build([p.target for p in pairs], specials=SPECIALS, unk=UNK))


def until_eos(ids: list[int], vocab) -> list[str]:
    """Decoded ``ids`` up to, not including, the first ``<eos>`` (all of them when there is none)."""
    eos = vocab.index(EOS)
    return vocab.decode(ids[: ids.index(eos)] if eos in ids else ids)


def bleu(hypotheses: list, pairs: list[Pair]) -> tuple[float, float]:
    """Corpus BLEU of token-list ``hypotheses`` against the pairs' targets (sacrebleu on our tokens, not
    retokenized), and the share of hypotheses equal to their reference.  sacrebleu's default
    exponential smoothing applies: it differs from the unsmoothed formula the book teaches only when
    some n-gram order has no match in the whole corpus, where the formula gives 0."""
    import sacrebleu

    references = [" ".join(p.target) for p in pairs]
    joined = [" ".join(h) for h in hypotheses]
    # force: the text is tokenized on purpose (the same tokens on both sides), which sacrebleu
    # would otherwise warn about on every call
    score = sacrebleu.corpus_bleu(joined, [references], tokenize="none", force=True).score
    return score, sum(h == r for h, r in zip(joined, references)) / len(pairs)


def constant_translation(train: list[Pair], valid: list[Pair], candidates: int = 20) -> tuple[str, ...]:
    """The one target sentence that scores best when it is the translation of every source: of the
    ``candidates`` most frequent targets in ``train``, the one with the highest corpus BLEU on
    ``valid`` (the more frequent one on a tie).  A floor for BLEU: a model that does not beat it
    has learned nothing from the source that BLEU can see."""
    if not train or not valid:
        raise ValueError(f"a constant translation needs training and validation pairs: {len(train)} and {len(valid)}")
    if candidates < 1:
        raise ValueError(f"candidates must be at least 1: {candidates}")
    common = [target for target, _ in Counter(p.target for p in train).most_common(candidates)]
    return max(common, key=lambda target: bleu([target] * len(valid), valid)[0])  # max keeps the first of equals


def chrf(hypotheses: list, pairs: list[Pair]) -> float:
    """Corpus chrF (Popovic, 2015) of token-list ``hypotheses`` against the pairs' targets, as
    sacrebleu's ``CHRF`` computes it by default: character n-grams of 1 to 6 characters with the
    spaces removed (so how the words were cut into tokens does not matter), clipped match counts
    summed over the corpus, precision and recall averaged over the orders, and their F-score with
    recall weighted by beta = 2."""
    import sacrebleu

    references = [" ".join(p.target) for p in pairs]
    return sacrebleu.corpus_chrf([" ".join(h) for h in hypotheses], [references]).score


def sentence_bleu(hypothesis: list[str], pair: Pair) -> float:
    """BLEU of one hypothesis against its pair's target (smoothed, as sacrebleu does for a sentence)."""
    import sacrebleu

    return sacrebleu.sentence_bleu(" ".join(hypothesis), [" ".join(pair.target)], tokenize="none").score


def to_tensors(pairs: list[Pair], source_vocab, target_vocab):
    """Padded id tensors: sources (N, S), their lengths (N,), and targets (N, T + 2) framed by BOS and EOS."""
    sources = [source_vocab.encode(p.source) for p in pairs]
    targets = [[target_vocab.index(BOS), *target_vocab.encode(p.target), target_vocab.index(EOS)] for p in pairs]
    lengths = torch.tensor([len(s) for s in sources])
    source = torch.zeros(len(pairs), int(lengths.max()), dtype=torch.long)  # pad id 0
    target = torch.zeros(len(pairs), max(map(len, targets)), dtype=torch.long)
    for i, (s, t) in enumerate(zip(sources, targets)):
        source[i, :len(s)] = torch.tensor(s)
        target[i, :len(t)] = torch.tensor(t)
    return source, lengths, target


# Training and decoding for any translator with the interface of ``nlpbook.seq2seq.Seq2Seq``
# and ``nlpbook.transformer.EncoderDecoder``: ``model(source, lengths, target_in)`` gives
# teacher-forced logits (B, T, V).  Chapter 5's two pages compare both kinds with them.


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
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1), target[:, 1:].flatten(),
                                             ignore_index=0)


@torch.no_grad()
def validation_loss(model, tensors, batch_size: int = 256) -> float:
    """Cross-entropy per target token (nats) over all pairs of ``tensors`` (from ``to_tensors``),
    the same whatever the batch size: every batch's mean is weighted by its token count."""
    was_training = model.training
    model.eval()
    total, tokens = 0.0, 0
    for start in range(0, len(tensors[0]), batch_size):
        source, lengths, target = _trimmed(tensors, torch.arange(start, min(start + batch_size,
                                                                             len(tensors[0]))))
        count = int((target[:, 1:] != 0).sum())
        total += teacher_forced_loss(model, source, lengths, target).item() * count
        tokens += count
    model.train(was_training)
    return total / tokens


def scored_translation_perplexity(state: dict[str, torch.Tensor], *, max_words: int, merges: int = 2000) -> float:
    """The validation perplexity (per target piece, EOS included, padding not) of the encoder-decoder
    with attention (``nlpbook.seq2seq.Seq2Seq``) given by its state dict, on the validation pairs of
    :func:`bible_tensors`.

    Chapter 3's exercise trains such a translator for credit; the grader calls this in its own
    process (``nlpbook.checks.expect_score``), so no code of the student's decides the figure.
    The sizes come from the weights' shapes; a state of another form raises ``ValueError``."""
    from nlpbook.seq2seq import Seq2Seq

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
    through the book's one loop (:func:`nlpbook.train.train`).

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
def greedy_translate(model, pairs: list[Pair], source_vocab, target_vocab,
                     max_length: int = 60, cache: bool = True) -> list[tuple[str, ...]]:
    """The greedy output of ``model`` for every pair's source, decoded as one batch until every
    row has written ``<eos>`` or ``max_length`` tokens, as token tuples (pieces, not words).

    A model with ``decode_step`` (the LSTM) carries its state from step to step; one with
    ``decode`` (the Transformer) keeps each decoder layer's keys and values (``KVCache``) and reads
    only the token it wrote last, unless ``cache=False``, which re-reads the whole prefix at every
    step (the same tokens, for checking and timing)."""
    was_training = model.training
    model.eval()
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
    model.train(was_training)
    return [tuple(until_eos(row[1:], target_vocab)) for row in tokens.tolist()]
