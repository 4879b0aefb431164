"""Parallel corpora for translation: real verse pairs that install with pip, a generated task, and a
corpus that downloads; and the vocabularies and padded tensors a translator reads.

``bible_translation`` pairs two public-domain Bible translations verse by verse (the World
English Bible and Louis Segond's French by default), cut into subword pieces by a BPE learned
on the training verses: chapters 3 and 5 translate with it.

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

How translations are scored is in ``nlpbook.translation_metrics``; how translators are trained
and decode, in ``nlpbook.translation``.
"""
from __future__ import annotations

import functools
import random
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import torch

from nlpbook.bpe import BPE, pretokenize, train_bpe, word_counts
from nlpbook.download import fetch
from nlpbook.vocab import Vocabulary

LANGUAGES = ("en", "fr", "de", "es")

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
    if characters:
        return tuple("_" if c == " " else c for c in text.lower())
    return tuple(pretokenize(text))  # BPE's words: the same cut


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
