"""Byte-pair encoding (Sennrich et al., 2016), trained on a corpus and applied to new text.

Training starts from every word spelled as characters, the last one marked with ``</w>`` so that
a piece that ends a word differs from the same letters inside one ("er</w>" in "faster", "er"
in "very"), and repeats: count the adjacent pairs of symbols over the corpus (each word weighted
by its frequency), merge the most frequent pair everywhere, record the merge.  Ties go to the
pair that sorts first, so training is deterministic.  Encoding a new word replays the merges in
the order they were learned: the pair of adjacent symbols with the earliest merge is merged first.
"""
from __future__ import annotations

import heapq
import re
from collections import Counter, defaultdict
from functools import lru_cache
from typing import Iterable

END = "</w>"
_WORD = re.compile(r"\w+|[^\w\s]")


def pretokenize(text: str) -> list[str]:
    """Lower-cased words and punctuation marks: what BPE cuts into pieces."""
    return _WORD.findall(text.lower())


def word_counts(texts: Iterable[str]) -> Counter:
    """How often each pre-tokenized word occurs in ``texts``."""
    counts: Counter = Counter()
    for text in texts:
        counts.update(pretokenize(text))
    return counts


def spell(word: str) -> tuple[str, ...]:
    """A word as its initial symbols: characters, the last one carrying ``</w>``."""
    if not word:
        raise ValueError("cannot spell an empty word")
    return (*word[:-1], word[-1] + END)


def merge_pair(symbols: tuple[str, ...], pair: tuple[str, str]) -> tuple[str, ...]:
    """Every non-overlapping occurrence of ``pair`` in ``symbols``, left to right, joined into one symbol."""
    merged, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            merged.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            merged.append(symbols[i])
            i += 1
    return tuple(merged)


def train_bpe(counts: dict[str, int], num_merges: int) -> list[tuple[str, str]]:
    """The first ``num_merges`` merges (fewer if every word becomes one symbol) learned from word counts.

    Pair counts are updated only for the words that contain the merged pair, and a heap with stale
    entries skipped finds the most frequent pair, so thousands of merges take seconds, not minutes."""
    words = [spell(word) for word in counts]
    weights = [counts[word] for word in counts]
    pairs: Counter = Counter()
    holders: dict[tuple[str, str], set[int]] = defaultdict(set)  # pair -> words that (may) contain it
    for i, symbols in enumerate(words):
        for pair in zip(symbols, symbols[1:]):
            pairs[pair] += weights[i]
            holders[pair].add(i)
    heap = [(-count, pair) for pair, count in pairs.items()]
    heapq.heapify(heap)
    merges: list[tuple[str, str]] = []
    while len(merges) < num_merges and heap:
        count, best = heapq.heappop(heap)
        if pairs.get(best, 0) != -count or count == 0:
            continue  # a stale entry: the pair's count has changed since it was pushed
        merges.append(best)
        changed = set()
        for i in holders.pop(best):
            old = words[i]
            new = merge_pair(old, best)
            if new == old:
                continue
            for pair in zip(old, old[1:]):
                pairs[pair] -= weights[i]
                changed.add(pair)
            for pair in zip(new, new[1:]):
                pairs[pair] += weights[i]
                holders[pair].add(i)
                changed.add(pair)
            words[i] = new
        for pair in changed:
            if pairs[pair] > 0:
                heapq.heappush(heap, (-pairs[pair], pair))
            else:
                del pairs[pair]
        pairs.pop(best, None)
    return merges


class BPE:
    """Applies learned merges: ``encode_word``, ``tokenize`` (text to pieces) and ``decode``."""

    def __init__(self, merges: list[tuple[str, str]]):
        self.merges = [tuple(m) for m in merges]
        self.rank = {pair: i for i, pair in enumerate(self.merges)}
        self.encode_word = lru_cache(maxsize=2 ** 16)(self._encode_word)

    def _encode_word(self, word: str) -> tuple[str, ...]:
        symbols = spell(word)
        while len(symbols) > 1:
            ranked = [(self.rank[pair], pair) for pair in zip(symbols, symbols[1:]) if pair in self.rank]
            if not ranked:
                break
            symbols = merge_pair(symbols, min(ranked)[1])
        return symbols

    def tokenize(self, text: str) -> list[str]:
        return [piece for word in pretokenize(text) for piece in self.encode_word(word)]

    def vocabulary(self, alphabet: Iterable[str]) -> list[str]:
        """The symbols these merges can produce from ``alphabet`` (the training characters): every
        character alone and word-final, then what each merge makes (once: two merges may make the same)."""
        letters = sorted(set(alphabet))
        return list(dict.fromkeys([*letters, *(c + END for c in letters), *(a + b for a, b in self.merges)]))

    @staticmethod
    def decode(pieces: Iterable[str]) -> str:
        """Pieces back to words separated by spaces (the text as pre-tokenized)."""
        return "".join(pieces).replace(END, " ").strip()
