"""N-gram language models: the baseline every neural language model must beat.

``NGramModel`` estimates P(token | previous n - 1 tokens) by counting, with interpolated
absolute discounting (Ney et al., 1994): every observed count gives up a discount ``d``, and
the mass set free goes to the next lower order, down to the uniform distribution, so no token
ever has probability 0:

    P(w | h) = max(c(h, w) - d, 0) / c(h) + d * N(h) / c(h) * P(w | h')

where ``h'`` drops the oldest token of ``h`` and ``N(h)`` counts the distinct tokens seen after
``h``.  Tokens are integer ids (characters or words).

``ngram_codes_up_to``, ``count_of`` and ``context_counts`` count the n-grams of long texts with
NumPy, for the page (book/02-rnns/n-grams) that writes the smoothing formulas out and scores them
on every position of a held-out text at once.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Iterator, Sequence

import numpy as np


class NGramModel:
    """An n-gram model of order ``order`` (1 = unigram) over ids ``0 .. vocab_size - 1``."""

    def __init__(self, order: int, vocab_size: int, discount: float = 0.75):
        if order < 1:
            raise ValueError(f"order must be at least 1, got {order}")
        if not 0 < discount < 1:
            raise ValueError(f"discount must be between 0 and 1, got {discount}")
        self.order, self.vocab_size, self.discount = order, vocab_size, discount
        self.counts: list[Counter] = [Counter() for _ in range(order)]  # by history length: (h, w) -> count
        self.totals: list[Counter] = [Counter() for _ in range(order)]  # h -> count
        self.types: list[Counter] = [Counter() for _ in range(order)]  # h -> distinct continuations

    def fit(self, tokens: Sequence[int]) -> "NGramModel":
        """Count every n-gram of ``tokens`` up to the model's order.  Each gram is read as one
        integer in base ``vocab_size`` (the oldest token the most significant digit), so one sort
        counts all the grams of an order: millions of characters take seconds, not minutes.
        Fitting again replaces the counts."""
        ids = np.asarray(tokens, dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= self.vocab_size):
            raise ValueError(f"token ids must lie in 0 .. {self.vocab_size - 1}, "
                             f"got {ids.min()} .. {ids.max()}")
        if self.vocab_size ** self.order >= 2 ** 62:
            raise ValueError(f"order {self.order} over {self.vocab_size} tokens does not fit in 64-bit codes")
        codes = np.zeros(len(ids), dtype=np.int64)  # codes[i]: the gram ending at i, up to length n + 1
        for n in range(self.order):  # n = history length
            if n:
                codes[n:] = codes[n - 1:-1] * self.vocab_size + ids[n:]
            else:
                codes[:] = ids
            grams, counts = np.unique(codes[n:], return_counts=True)
            # totals: occurrences of each history; types: distinct tokens seen after it
            histories, inverse = np.unique(grams // self.vocab_size, return_inverse=True)
            totals = np.bincount(inverse, weights=counts).astype(np.int64)
            types = np.bincount(inverse)
            history_keys = list(map(tuple, self._digits(histories, n)))
            self.counts[n] = Counter(dict(zip(map(tuple, self._digits(grams, n + 1)), counts.tolist())))
            self.totals[n] = Counter(dict(zip(history_keys, totals.tolist())))
            self.types[n] = Counter(dict(zip(history_keys, types.tolist())))
        return self

    def _digits(self, codes: np.ndarray, length: int) -> list[list[int]]:
        """The base-``vocab_size`` digits of each code, oldest first: (len(codes), length)."""
        powers = self.vocab_size ** np.arange(length - 1, -1, -1, dtype=np.int64)
        return ((codes[:, None] // powers) % self.vocab_size).tolist()

    def _check_ids(self, tokens: Sequence[int]) -> None:
        outside = [t for t in tokens if not 0 <= t < self.vocab_size]
        if outside:  # a model over fewer tokens would give them a probability all the same
            raise ValueError(f"token ids must lie in 0 .. {self.vocab_size - 1}, got {outside[0]}")

    def probability(self, history: Sequence[int], token: int) -> float:
        """P(token | the last order - 1 tokens of history)."""
        history = tuple(int(t) for t in history[max(0, len(history) - (self.order - 1)):]) if self.order > 1 else ()
        self._check_ids([*history, int(token)])
        return self._probability(history, int(token))

    def _probability(self, history: tuple[int, ...], token: int) -> float:
        """:meth:`probability` for a history already cut to the order, ids already checked."""
        probability = 1.0 / self.vocab_size
        for n in range(0, len(history) + 1):  # from the unigram up to the full history
            h = history[len(history) - n:] if n else ()
            total = self.totals[n][h]
            if total == 0:
                break  # an unseen history: longer ones are unseen too
            seen = self.counts[n][h + (int(token),)]
            probability = max(seen - self.discount, 0) / total + self.discount * self.types[n][h] / total * probability
        return probability

    def log_likelihood(self, tokens: Sequence[int]) -> float:
        """Sum of log P(token_i | token_<i) over the sequence (the first tokens use shorter histories)."""
        tokens = [int(t) for t in tokens]
        self._check_ids(tokens)
        return sum(math.log(self._probability(tuple(tokens[max(0, i - self.order + 1):i]), t))
                   for i, t in enumerate(tokens))

    def perplexity(self, tokens: Sequence[int]) -> float:
        return math.exp(-self.log_likelihood(tokens) / len(tokens))


# --- Counting n-grams of long texts, for measuring models written out on a page --------------

def ngram_codes_up_to(texts: Sequence[Sequence[int]], max_n: int, vocab_size: int
                      ) -> Iterator[tuple[int, list[np.ndarray]]]:
    """For n = 1 .. ``max_n`` in turn, ``(n, codes)``: the n-grams of each text as integers.  For
    each text of ids ``0 .. vocab_size - 1``, one int64 per n-gram (the gram starting at each
    position, ``len(text) - n + 1`` of them), equal exactly when the n-grams are equal, in every
    text alike.

    Each code is ``history * vocab_size + last``: the gram's last id, and a number for its first
    n - 1 ids (0 for n = 1) that the texts share too, so ``code // vocab_size`` names the history.
    Histories are numbered by rank among all the (n - 1)-grams of all the texts, so the codes stay
    small whatever n is (``vocab_size ** n`` overflows 64 bits for words at n = 5).  Each order is
    built from the one before, so only one order's codes are held at a time."""
    if max_n < 1:
        raise ValueError(f"n must be at least 1, got {max_n}")
    texts = [np.asarray(text, dtype=np.int64) for text in texts]
    for text in texts:
        if text.size and (text.min() < 0 or text.max() >= vocab_size):
            raise ValueError(f"ids must lie in 0 .. {vocab_size - 1}, got {text.min()} .. {text.max()}")
    codes = [text.copy() for text in texts]  # the 1-grams
    yield 1, codes
    for n in range(2, max_n + 1):
        prefixes = [code[:-1] for code in codes]  # the (n - 1)-gram that starts each n-gram
        _, ranks = np.unique(np.concatenate(prefixes), return_inverse=True)
        ends = np.cumsum([len(prefix) for prefix in prefixes])[:-1]
        codes = [rank.astype(np.int64) * vocab_size + text[n - 1:]
                 for rank, text in zip(np.split(ranks.reshape(-1), ends), texts)]
        yield n, codes


def count_of(queries: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """How many times each of ``queries`` occurs among ``keys`` (0 for one that never does)."""
    values, counts = np.unique(np.asarray(keys, dtype=np.int64), return_counts=True)
    return _look_up(values, counts, np.asarray(queries, dtype=np.int64))


def context_counts(train: np.ndarray, queries: Sequence[np.ndarray], vocab_size: int
                   ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """For each array of n-gram codes in ``queries`` (codes from ``ngram_codes_up_to``, as
    ``train``), three int64 arrays shaped like it: how often each n-gram occurs in ``train``
    (c(h, w)), how often its history occurs there followed by a token (c(h), the sum of
    c(h, w') over w'), and how many distinct tokens follow its history there (N(h)).
    One sort of ``train`` serves all three."""
    grams, counts = np.unique(np.asarray(train, dtype=np.int64), return_counts=True)
    histories = grams // vocab_size  # sorted too, since each code is history * V + last
    starts = np.flatnonzero(np.r_[True, histories[1:] != histories[:-1]]) if grams.size \
        else np.zeros(0, dtype=np.int64)
    history_totals = np.add.reduceat(counts, starts) if grams.size else counts
    history_types = np.diff(np.r_[starts, len(grams)])
    found = []
    for q in queries:
        q = np.asarray(q, dtype=np.int64)
        found.append((_look_up(grams, counts, q),
                      _look_up(histories[starts], history_totals, q // vocab_size),
                      _look_up(histories[starts], history_types, q // vocab_size)))
    return found


def _look_up(keys: np.ndarray, values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """``values[i]`` where ``queries`` equals ``keys[i]`` (``keys`` sorted, distinct), else 0."""
    if not keys.size:
        return np.zeros(queries.shape, dtype=np.int64)
    at = np.searchsorted(keys, queries).clip(max=len(keys) - 1)
    return np.where(keys[at] == queries, values[at], 0).astype(np.int64)
