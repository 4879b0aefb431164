"""How good are word vectors?  The standard benchmarks, read from installed files.

- WordSim353 and SimLex-999: word pairs with a human similarity score; a model
  is scored by the Spearman rank correlation between its cosine similarities
  and the humans' scores, over the pairs whose two words it knows.
- The Google analogy questions (Mikolov et al., 2013): "a is to b as c is to ?",
  answered by the word closest (cosine) to b - a + c, the three question words
  excluded ("3CosAdd").  Accuracy counts the questions whose four words are all
  in the vocabulary; the coverage says how many those are.

Vectors are a float tensor ``(V, d)`` whose row ``i`` belongs to
``vocab.tokens[i]``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import torch
from scipy.stats import spearmanr

from nlpbook.corpora import gensim_test_data, word_corpus
from nlpbook.vocab import Vocabulary

SIMILARITY_FILES = {"wordsim353": "wordsim353.tsv", "simlex999": "simlex999.txt"}
ANALOGY_FILE = "questions-words.txt"


def similarity_pairs(name: str) -> list[tuple[str, str, float]]:
    """``(word1, word2, human score)`` for every pair of ``wordsim353`` or ``simlex999``, lower-cased."""
    if name not in SIMILARITY_FILES:
        raise ValueError(f"unknown similarity benchmark {name!r}; expected one of {', '.join(SIMILARITY_FILES)}")
    pairs = []
    for line in gensim_test_data(SIMILARITY_FILES[name]).read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        first, second, score = line.split("\t")
        pairs.append((first.lower(), second.lower(), float(score)))
    return pairs


def analogy_questions() -> dict[str, list[tuple[str, str, str, str]]]:
    """The 19,544 Google analogy questions, lower-cased, by section (``capital-world``, ``gram8-plural``, ...)."""
    sections: dict[str, list[tuple[str, str, str, str]]] = {}
    current = None
    for line in gensim_test_data(ANALOGY_FILE).read_text(encoding="utf-8").splitlines():
        if line.startswith(":"):
            current = sections.setdefault(line[1:].strip(), [])
        elif line.strip():
            current.append(tuple(line.lower().split()))
    return sections


def normalize(vectors: torch.Tensor) -> torch.Tensor:
    """Rows scaled to unit length (a zero row stays zero), so dot products are cosines."""
    return vectors / vectors.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def nearest(vectors: torch.Tensor, vocab: Vocabulary, word: str, k: int = 5) -> list[tuple[str, float]]:
    """The ``k`` words whose vectors have the highest cosine with ``word``'s, itself left out."""
    _require_known(vocab, word)
    unit = normalize(vectors.float())
    scores = unit @ unit[vocab.index(word)]  # (V,)
    scores[vocab.index(word)] = -float("inf")
    return _ranked(scores, vocab, min(k, len(vocab) - 1))


def analogy(vectors: torch.Tensor, vocab: Vocabulary, a: str, b: str, c: str, k: int = 1) -> list[tuple[str, float]]:
    """Answers to "a is to b as c is to ?": the words closest to b - a + c (unit vectors), a, b, c excluded."""
    _require_known(vocab, a, b, c)
    unit = normalize(vectors.float())
    ids = [vocab.index(word) for word in (a, b, c)]
    scores = unit @ normalize(unit[ids[1]] - unit[ids[0]] + unit[ids[2]])  # (V,)
    scores[ids] = -float("inf")
    return _ranked(scores, vocab, min(k, len(vocab) - len(set(ids))))  # never the question's words


def _require_known(vocab: Vocabulary, *words: str) -> None:
    """A word outside the vocabulary has no vector: say so, rather than answer with the
    unknown token's neighbours."""
    unknown = [word for word in words if word not in vocab]
    if unknown:
        raise KeyError(f"no vector for {', '.join(map(repr, unknown))}: not in the vocabulary")


def _ranked(scores: torch.Tensor, vocab: Vocabulary, k: int) -> list[tuple[str, float]]:
    """The ``k`` highest of ``scores`` (V,) as (word, score), best first."""
    best = scores.topk(k)
    return [(vocab.tokens[i], float(s)) for s, i in zip(best.values, best.indices)]


@dataclass
class SimilarityResult:
    spearman: float
    pairs_used: int
    pairs_total: int

    @property
    def coverage(self) -> float:
        return self.pairs_used / self.pairs_total


def evaluate_similarity(vectors: torch.Tensor, vocab: Vocabulary, name: str) -> SimilarityResult:
    """Spearman correlation of cosine similarity with the human scores of benchmark ``name``."""
    every_pair = similarity_pairs(name)
    pairs = [(a, b, s) for a, b, s in every_pair if a in vocab and b in vocab]
    total = len(every_pair)
    if len(pairs) < 2:
        return SimilarityResult(float("nan"), len(pairs), total)
    unit = normalize(vectors.float())
    first = unit[[vocab.index(a) for a, _, _ in pairs]]
    second = unit[[vocab.index(b) for _, b, _ in pairs]]
    cosines = (first * second).sum(-1)
    rho = spearmanr(cosines.tolist(), [s for _, _, s in pairs]).statistic
    return SimilarityResult(float(rho), len(pairs), total)


@dataclass
class AnalogyResult:
    correct: int
    answered: int
    total: int
    by_section: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def accuracy(self) -> float:
        """Accuracy over the questions whose four words are in the vocabulary."""
        return self.correct / self.answered if self.answered else float("nan")

    @property
    def coverage(self) -> float:
        return self.answered / self.total


def evaluate_analogies(vectors: torch.Tensor, vocab: Vocabulary, *, restrict: int | None = None,
                       batch_size: int = 512) -> AnalogyResult:
    """3CosAdd accuracy on the Google analogy questions.

    ``restrict`` keeps only the first ``restrict`` words of the vocabulary (the most frequent ones)
    as questions and as candidate answers, as gensim's ``evaluate_word_analogies`` does.
    """
    limit = len(vocab) if restrict is None else min(restrict, len(vocab))
    if not torch.isfinite(vectors[:limit]).all():
        # argmax would settle every question on the lowest index, sometimes the right answer
        raise ValueError("the vectors hold NaN or infinite values: no analogy can be scored")
    known = {token: index for index, token in enumerate(vocab.tokens[:limit])}
    unit = normalize(vectors[:limit].float())
    result = AnalogyResult(0, 0, 0)
    for section, questions in analogy_questions().items():
        usable = [q for q in questions if all(word in known for word in q)]
        result.total += len(questions)
        correct = 0
        for start in range(0, len(usable), batch_size):
            ids = torch.tensor([[known[word] for word in q] for q in usable[start:start + batch_size]])  # (Q, 4)
            targets = normalize(unit[ids[:, 1]] - unit[ids[:, 0]] + unit[ids[:, 2]])  # (Q, d)
            scores = targets @ unit.T  # (Q, V)
            scores.scatter_(1, ids[:, :3], -float("inf"))  # the question's own words are not answers
            best = scores.max(dim=1)                       # (Q,)
            # a tie (zero vectors score 0 everywhere) is not an answer: argmax would pick the
            # lowest index, the most frequent word, which is sometimes the right one
            alone = (scores == best.values[:, None]).sum(dim=1) == 1
            correct += int(((best.indices == ids[:, 3]) & alone).sum())
        result.correct += correct
        result.answered += len(usable)
        result.by_section[section] = (correct, len(usable))
    return result


def restrict(vectors: torch.Tensor, vocab: Vocabulary, words: Sequence[str]) -> tuple[torch.Tensor, Vocabulary]:
    """The rows of ``words`` only, in that order, with their vocabulary (counts kept): to score
    vectors from different vocabularies on exactly the same words."""
    missing = [word for word in words if word not in vocab]
    if missing:
        raise KeyError(f"{len(missing)} of the {len(words)} words have no vector, for example {missing[:5]}")
    ids = [vocab.index(word) for word in words]
    return vectors[ids], Vocabulary(list(words), [vocab.counts[i] for i in ids])


def from_gensim(keyed_vectors) -> tuple[torch.Tensor, Vocabulary]:
    """A gensim ``KeyedVectors`` as ``(vectors, vocab)``, rows in gensim's order (most frequent first)."""
    tokens = list(keyed_vectors.index_to_key)
    # vectors read from a word2vec or GloVe text file carry no counts: 0, as for a special token
    counted = "count" in getattr(keyed_vectors, "expandos", {})
    counts = [int(keyed_vectors.get_vecattr(token, "count")) if counted else 0 for token in tokens]
    return torch.from_numpy(keyed_vectors.vectors.copy()), Vocabulary(tokens, counts)


def scored_wordsim(state: dict[str, torch.Tensor], *, corpus: str, min_count: int) -> float:
    """The WordSim353 Spearman correlation of trained word vectors given as ``{"vectors": (V, d)}``,
    row ``i`` for word ``i`` of the vocabulary of :func:`nlpbook.corpora.word_corpus` ``(corpus)``
    with ``min_count``.

    Chapter 1's exercise is scored here: the grader calls this in its own process on the vectors a
    student's training produced (``nlpbook.checks.expect_score``).  Vectors of another form raise
    ``ValueError``; vectors that hold NaN, or that are all alike, score NaN."""
    vocab = Vocabulary.build(word_corpus(corpus), min_count=min_count)
    if set(state) != {"vectors"} or state["vectors"].dim() != 2 or state["vectors"].shape[0] != len(vocab):
        raise ValueError(f"the weights should be {{'vectors': a ({len(vocab)}, d) tensor}}, one row per word, "
                         f"got {sorted(state)[:4]} of shapes {[tuple(v.shape) for v in state.values()][:4]}")
    if not torch.isfinite(state["vectors"]).all():  # a NaN in a row WordSim353 does not ask about, too
        return math.nan
    return evaluate_similarity(state["vectors"], vocab, "wordsim353").spearman
