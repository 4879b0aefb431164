"""N-gram language models: the baseline every neural language model must beat.

``NGramModel`` estimates P(token | previous n - 1 tokens) by counting, with interpolated
absolute discounting (Ney et al., 1994): every observed count gives up a discount ``d``, and
the mass set free goes to the next lower order, down to the uniform distribution, so no token
ever has probability 0:

    P(w | h) = max(c(h, w) - d, 0) / c(h) + d * N(h) / c(h) * P(w | h')

where ``h'`` drops the oldest token of ``h`` and ``N(h)`` counts the distinct tokens seen after
``h``.  Tokens are integer ids (characters or words).
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Sequence

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

    def probability(self, history: Sequence[int], token: int) -> float:
        """P(token | the last order - 1 tokens of history)."""
        history = tuple(int(t) for t in history[max(0, len(history) - (self.order - 1)):]) if self.order > 1 else ()
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
        return sum(math.log(self.probability(tokens[max(0, i - self.order + 1):i], t)) for i, t in enumerate(tokens))

    def perplexity(self, tokens: Sequence[int]) -> float:
        return math.exp(-self.log_likelihood(tokens) / len(tokens))
