"""Scores of translations against their references: corpus BLEU, chrF and sentence BLEU as
sacrebleu computes them on the book's own tokens, and the best constant translation, BLEU's floor."""
from __future__ import annotations

from collections import Counter

from nlpbook.parallel import Pair


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
