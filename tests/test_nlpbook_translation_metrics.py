import pytest
import sacrebleu

from nlpbook.parallel import Pair, number_pairs
from nlpbook.translation_metrics import bleu, chrf, constant_translation


def test_bleu_is_sacrebleus_on_our_tokens_with_the_share_of_exact_matches():
    pairs = number_pairs("fr", size=60, seed=3).train[:20]
    assert bleu([p.target for p in pairs], pairs) == (pytest.approx(100.0), 1.0)
    wrong = [p.target[:-1] if i % 2 else p.target for i, p in enumerate(pairs)]
    score, exact = bleu(wrong, pairs)
    assert exact == 0.5
    assert score == sacrebleu.corpus_bleu([" ".join(h) for h in wrong], [[" ".join(p.target) for p in pairs]],
                                          tokenize="none").score


def test_constant_translation_is_the_frequent_target_that_scores_best_on_validation():
    said = ("and", "the", "lord", "said", "to", "moses", ":")
    spoke = ("the", "word", "of", "the", "lord", "came", "to", "me", ",", "saying", ":")
    train = [Pair(("s", str(i)), target) for i, target in
             enumerate([said] * 3 + [spoke] * 2 + [("amen", ".")])]
    # validation verses that share long n-grams with the less frequent target only
    valid = [Pair(("v",), spoke[:-1] + ("hear", ":")), Pair(("w",), ("then",) + spoke)]
    scores = {t: bleu([t] * len(valid), valid)[0] for t in (said, spoke, ("amen", "."))}
    assert constant_translation(train, valid) == max(scores, key=scores.get) == spoke
    assert constant_translation(train, valid, candidates=1) == said  # the most frequent only
    # nothing in common with any candidate: every score is 0 and the most frequent is kept
    unrelated = [Pair(("x",), ("zzz", "yyy", "xxx", "www", "vvv"))]
    assert constant_translation(train, unrelated) == said
    for bad, match in (((train, []), "needs training and validation pairs"),
                       (([], valid), "needs training and validation pairs")):
        with pytest.raises(ValueError, match=match):
            constant_translation(*bad)
    with pytest.raises(ValueError, match="candidates must be at least 1"):
        constant_translation(train, valid, candidates=0)


def test_chrf_is_sacrebleus_chrf_and_ignores_how_words_are_cut():
    splits = number_pairs("fr", size=60, seed=3)
    pairs = splits.train[:20]
    assert chrf([p.target for p in pairs], pairs) == pytest.approx(100.0)
    wrong = [p.target[:-1] if i % 2 else p.target[1:] for i, p in enumerate(pairs)]
    expected = sacrebleu.metrics.CHRF().corpus_score([" ".join(h) for h in wrong],
                                                     [[" ".join(p.target) for p in pairs]]).score
    assert chrf(wrong, pairs) == expected
    assert 0 < expected < 100
    # spaces are removed before counting, so the same characters cut otherwise score the same
    glued = [("".join(h),) for h in wrong]
    assert chrf(glued, pairs) == pytest.approx(expected)
    # and BLEU on the same glued words does not
    assert bleu(glued, pairs)[0] < bleu(wrong, pairs)[0]


def test_sentence_bleu_is_sacrebleus_with_the_hypothesis_first():
    from nlpbook.translation_metrics import sentence_bleu

    hypothesis, reference = ["the", "cat", "sat"], ("the", "cat", "sat", "on", "the", "mat")
    expected = sacrebleu.sentence_bleu("the cat sat", ["the cat sat on the mat"], tokenize="none").score
    assert sentence_bleu(hypothesis, Pair(("x",), reference)) == pytest.approx(expected)
    swapped = sacrebleu.sentence_bleu("the cat sat on the mat", ["the cat sat"], tokenize="none").score
    assert expected != pytest.approx(swapped)  # so the order is seen


def test_bleu_scores_our_tokens_without_cutting_them_again():
    # sacrebleu's default tokenizer would split "and/or" into three tokens and match more n-grams.
    pairs = [Pair(("x",), ("and/or", "of", "the", "land"))]
    expected = sacrebleu.corpus_bleu(["and/or of a land"], [["and/or of the land"]], tokenize="none").score
    assert bleu([("and/or", "of", "a", "land")], pairs)[0] == pytest.approx(expected)
    retokenized = sacrebleu.corpus_bleu(["and/or of a land"], [["and/or of the land"]]).score
    assert expected != pytest.approx(retokenized)
