"""A vocabulary: the map between tokens and the integer ids a model sees.

Every chapter that turns text into tensors needs one (word vectors, language
models, translation), so it lives here once.  Ids are given in order of
decreasing frequency, ties broken alphabetically, after the special tokens,
so the same corpus always gives the same ids.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence


class Vocabulary:
    """Tokens <-> ids, with the count of every token in the corpus it was built from.

    ``unk`` names the token that stands for every unknown one; when it is
    ``None``, looking up an unknown token raises ``KeyError``.
    """

    def __init__(self, tokens: Sequence[str], counts: Sequence[int] | None = None, *, unk: str | None = None):
        if len(set(tokens)) != len(tokens):
            raise ValueError("a vocabulary cannot hold the same token twice")
        if counts is not None and len(counts) != len(tokens):
            raise ValueError(f"{len(tokens)} tokens but {len(counts)} counts")
        if unk is not None and unk not in tokens:
            raise ValueError(f"the unknown token {unk!r} is not among the tokens")
        self.tokens = list(tokens)
        self.counts = list(counts) if counts is not None else [0] * len(self.tokens)
        self.unk = unk
        self._ids = {token: index for index, token in enumerate(self.tokens)}

    @classmethod
    def build(cls, sentences: Iterable[Sequence[str]], *, min_count: int = 1, max_size: int | None = None,
              specials: Sequence[str] = (), unk: str | None = None) -> "Vocabulary":
        """The vocabulary of ``sentences``: tokens seen at least ``min_count`` times, the most
        frequent first, at most ``max_size`` of them (specials included).  ``specials`` come first
        with a count of 0; ``unk``, when given, must be one of them."""
        if min_count < 1:
            raise ValueError(f"min_count must be at least 1, got {min_count}")
        if max_size is not None and max_size < len(specials):
            raise ValueError(f"max_size {max_size} leaves no room for the {len(specials)} special tokens")
        if unk is not None and unk not in specials:
            raise ValueError(f"the unknown token {unk!r} must be one of the specials {list(specials)}")
        counter = Counter(token for sentence in sentences for token in sentence)
        for special in specials:
            counter.pop(special, None)
        ranked = sorted((item for item in counter.items() if item[1] >= min_count), key=lambda item: (-item[1], item[0]))
        if max_size is not None:
            ranked = ranked[: max(0, max_size - len(specials))]
        return cls([*specials, *(token for token, _ in ranked)], [0] * len(specials) + [count for _, count in ranked],
                   unk=unk)

    def __len__(self) -> int:
        return len(self.tokens)

    def __contains__(self, token: str) -> bool:
        return token in self._ids

    def __repr__(self) -> str:
        return f"Vocabulary({len(self)} tokens: {' '.join(self.tokens[:8])}{' ...' if len(self) > 8 else ''})"

    def index(self, token: str) -> int:
        """The id of ``token``; the unknown token's id for an unknown one (or ``KeyError`` without one)."""
        found = self._ids.get(token)
        if found is not None:
            return found
        if self.unk is None:
            raise KeyError(f"{token!r} is not in the vocabulary and it has no unknown token")
        return self._ids[self.unk]

    def encode(self, tokens: Iterable[str], *, skip_unknown: bool = False) -> list[int]:
        """Ids of ``tokens``; ``skip_unknown`` drops tokens that are not in the vocabulary."""
        if skip_unknown:
            return [self._ids[token] for token in tokens if token in self._ids]
        return [self.index(token) for token in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        ids = [int(index) for index in ids]
        outside = [index for index in ids if not 0 <= index < len(self.tokens)]
        if outside:  # a negative id would read from the end of the list
            raise IndexError(f"id {outside[0]} is not in this vocabulary of {len(self.tokens)} tokens")
        return [self.tokens[index] for index in ids]
