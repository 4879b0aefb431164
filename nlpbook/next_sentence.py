"""Pairs of Bible verses for pretraining a BERT with and without next-sentence prediction
(chapter 6, ``next-sentence``), and for a sentence-pair task to fine-tune it on afterwards.

A pair is laid out as BERT reads one, ``[CLS] A [SEP] B [SEP]`` padded to ``2 * length + 3``
positions, with segment 0 on ``[CLS]``, A and the first ``[SEP]``, segment 1 on B and the last
``[SEP]``.  A verse longer than ``length`` pieces keeps its first ``length``.

- :func:`next_sentence_pairs`: A is a verse, B the verse after it in its chapter (label 1,
  IsNext) or a verse of another chapter of the same translation (label 0, NotNext), half and half.
- :func:`windows`: the running text cut into short windows ``[CLS] ... [SEP]``, for a first
  phase of masked-LM pretraining before the pairs.
- :func:`paraphrase_pairs`: A is a verse in one translation, B the same verse in another
  (label 1) or the next verse of the same chapter in the other translation (label 0): a
  paraphrase task whose negatives share the topic, so that only the meaning tells them apart.

Ids are those of a :class:`PieceVocabulary`, the MiniLM pieces seen often enough in the training
text, renumbered (the masked-LM page's vocabulary).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import torch

from nlpbook import corpora
from nlpbook.bert import IGNORE_INDEX
from nlpbook.wordpiece import SPECIAL_TOKENS, WordPieceTokenizer



@dataclass(frozen=True)
class PieceVocabulary:
    """The tokenizer's pieces kept for a small model: ``compact`` maps a tokenizer id to a new id
    in ``range(size)``; a piece that is not kept becomes ``[UNK]``."""
    compact: dict[int, int]
    pad: int
    cls: int
    sep: int
    mask: int
    unk: int

    @classmethod
    def from_texts(cls, tokenizer: WordPieceTokenizer, texts: list[list[int]],
                   min_count: int) -> "PieceVocabulary":
        """Keep the pieces seen at least ``min_count`` times in ``texts`` (lists of tokenizer
        ids), and the five special pieces."""
        seen = Counter(i for text in texts for i in text)
        # "pad" -> the tokenizer's id of [PAD], and so on for the other four fields
        specials = {token.strip("[]").lower(): tokenizer.token_id(token) for token in SPECIAL_TOKENS}
        kept = sorted({i for i, count in seen.items() if count >= min_count} | set(specials.values()))
        compact = {old: new for new, old in enumerate(kept)}
        return cls(compact, **{name: compact[i] for name, i in specials.items()})

    @property
    def size(self) -> int:
        return len(self.compact)

    def encode(self, ids: list[int]) -> list[int]:
        return [self.compact.get(i, self.unk) for i in ids]

    def running(self, texts: list[list[int]]) -> torch.Tensor:
        """(N,) the texts (tokenizer ids) encoded and run together, as :func:`windows` cuts them."""
        return torch.tensor([i for text in texts for i in self.encode(text)])


@dataclass(frozen=True)
class Verses:
    """The non-empty verses of one split of one translation, in canonical order: ``chapters``
    (N,) numbers each verse's chapter, ``keys`` are their (book, chapter, verse) and ``pieces``
    their tokenizer ids."""
    chapters: torch.Tensor
    keys: list[tuple[int, int, int]]
    pieces: list[list[int]]

    @classmethod
    def of(cls, tokenizer: WordPieceTokenizer, translation: str, split: str) -> "Verses":
        chapters, keys, pieces, numbers = [], [], [], {}
        for verse in corpora.bible_verses(translation):
            if verse.text and corpora.bible_split(verse.book, verse.chapter) == split:
                chapters.append(numbers.setdefault((verse.book, verse.chapter), len(numbers)))
                keys.append((verse.book, verse.chapter, verse.verse))
                pieces.append(tokenizer.ids(verse.text))
        return cls(torch.tensor(chapters), keys, pieces)

    def followed(self) -> torch.Tensor:
        """(M,) the positions of the verses whose next verse is in the same chapter."""
        return torch.nonzero(self.chapters[:-1] == self.chapters[1:]).squeeze(1)  # (M, 1) -> (M,)


def pack(firsts: list[list[int]], seconds: list[list[int]], vocabulary: PieceVocabulary,
         length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, segments), each (N, 2 * length + 3): ``[CLS] A [SEP] B [SEP]`` then padding, every
    A and B cut to its first ``length`` pieces (tokenizer ids, encoded here)."""
    if len(firsts) != len(seconds):
        raise ValueError(f"{len(firsts)} first texts but {len(seconds)} second ones")
    ids = torch.full((len(firsts), 2 * length + 3), vocabulary.pad)
    segments = torch.zeros_like(ids)
    for row, (a, b) in enumerate(zip(firsts, seconds)):
        a, b = vocabulary.encode(a[:length]), vocabulary.encode(b[:length])
        pair = [vocabulary.cls, *a, vocabulary.sep, *b, vocabulary.sep]
        ids[row, :len(pair)] = torch.tensor(pair)
        segments[row, len(a) + 2:len(pair)] = 1
    return ids, segments


def windows(ids: torch.Tensor, vocabulary: PieceVocabulary, width: int) -> torch.Tensor:
    """(N, width + 2) rows ``[CLS] ... [SEP]``: ``ids`` (the texts run together, already
    encoded by ``vocabulary``) cut into windows of ``width`` pieces (the masked-lm page's
    inputs); the last piece of text that does not fill a window is left out."""
    rows = ids[: len(ids) // width * width].view(-1, width)                      # (N, width)
    cls = torch.full((len(rows), 1), vocabulary.cls)
    sep = torch.full((len(rows), 1), vocabulary.sep)
    return torch.cat([cls, rows, sep], dim=1)                                    # (N, width + 2)


def next_sentence_pairs(verses: Verses, n: int, vocabulary: PieceVocabulary, length: int,
                        generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``n`` NSP inputs: (ids, segments, labels), labels (n,) 1 for IsNext, 0 for NotNext, each
    drawn with probability one half."""
    followed = verses.followed()
    if len(followed) == 0:
        raise ValueError("no verse is followed by another of its chapter: no IsNext pair to draw")
    if bool((verses.chapters == verses.chapters[0]).all()):
        raise ValueError("every verse is of one chapter: a NotNext verse must come from another")
    first = followed[torch.randint(len(followed), (n,), generator=generator)]
    labels = torch.randint(2, (n,), generator=generator)
    other = torch.randint(len(verses.pieces), (n,), generator=generator)
    # a NotNext verse of the first verse's own chapter is drawn again, until none is
    same = verses.chapters[other] == verses.chapters[first]
    while same.any():
        other[same] = torch.randint(len(verses.pieces), (int(same.sum()),), generator=generator)
        same = verses.chapters[other] == verses.chapters[first]
    second = torch.where(labels.bool(), first + 1, other)
    ids, segments = pack([verses.pieces[i] for i in first.tolist()],
                         [verses.pieces[i] for i in second.tolist()], vocabulary, length)
    return ids, segments, labels


def paraphrase_pairs(source: Verses, target: Verses, n: int, vocabulary: PieceVocabulary,
                     length: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``n`` paraphrase inputs (ids, segments, labels): A a verse of ``source``, B the same verse
    of ``target`` (label 1) or the verse after it in ``target``'s chapter (label 0), half and
    half.  Only the verses that both translations hold, and whose next verse ``target`` holds,
    are drawn."""
    where = {key: k for k, key in enumerate(target.keys)}
    followed = set(target.followed().tolist())
    usable = [(k, where[key]) for k, key in enumerate(source.keys) if where.get(key, -1) in followed]
    if not usable:
        raise ValueError("the two translations share no verse followed by another in this split")
    drawn = torch.randint(len(usable), (n,), generator=generator).tolist()
    labels = torch.randint(2, (n,), generator=generator)
    firsts = [source.pieces[usable[d][0]] for d in drawn]
    seconds = [target.pieces[usable[d][1] + 1 - int(label)] for d, label in zip(drawn, labels)]
    ids, segments = pack(firsts, seconds, vocabulary, length)
    return ids, segments, labels


def corrupt(ids: torch.Tensor, vocabulary: PieceVocabulary, rate: float = 0.15,
            generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masked-LM corruption, as the masked-lm page writes it: pick ``rate`` of the
    positions that hold no ``[PAD]``, ``[CLS]`` or ``[SEP]`` (``[UNK]`` is picked like any piece, as
    in BERT); of those, 80% become ``[MASK]``, 10% a random piece,
    10% stay.  Returns (corrupted ids, labels), the labels -100 where nothing was picked."""
    special = (ids == vocabulary.pad) | (ids == vocabulary.cls) | (ids == vocabulary.sep)
    picked = torch.bernoulli(torch.full(ids.shape, rate), generator=generator).bool() & ~special
    # 0: [MASK], 1: random, 2: unchanged
    how = torch.multinomial(torch.tensor([0.8, 0.1, 0.1]), ids.numel(), replacement=True,
                            generator=generator).view(ids.shape)  # (B T,) -> (B, T)
    corrupted = torch.where(picked & (how == 0), vocabulary.mask, ids)
    random_ids = torch.randint(vocabulary.size, ids.shape, generator=generator)
    corrupted = torch.where(picked & (how == 1), random_ids, corrupted)
    return corrupted, torch.where(picked, ids, IGNORE_INDEX)
