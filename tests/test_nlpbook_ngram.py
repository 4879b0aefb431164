import math
import random
from collections import Counter

import numpy as np
import pytest

from nlpbook.ngram import NGramModel, context_counts, count_of, ngram_codes_up_to


@pytest.mark.parametrize("order", [1, 2, 3, 5])
def test_probabilities_sum_to_one_for_seen_and_unseen_histories(order):
    model = NGramModel(order, vocab_size=5).fit([0, 1, 2, 1, 2, 3, 1, 2, 0, 0, 1])
    for history in ([], [1], [2, 1], [4, 4, 4, 4], [0, 1, 2, 1]):
        assert sum(model.probability(history, w) for w in range(5)) == pytest.approx(1.0)


def test_an_untrained_model_is_uniform_and_perplexity_counts_choices():
    model = NGramModel(3, vocab_size=7)
    assert model.probability([1, 2], 3) == pytest.approx(1 / 7)
    assert model.perplexity([1, 2, 3, 4]) == pytest.approx(7.0)


def test_a_deterministic_sequence_is_learned_by_a_high_order():
    text = [0, 1, 2, 3] * 50
    bigram, unigram = NGramModel(2, 4).fit(text), NGramModel(1, 4).fit(text)
    assert bigram.probability([1], 2) > 0.95
    assert bigram.perplexity(text[:40]) < 1.2 < unigram.perplexity(text[:40])
    assert unigram.perplexity(text) == pytest.approx(4.0, rel=0.01)


def test_discounted_counts_by_hand():
    # Bigram over "a b a c" (a=0, b=1, c=2): after "a" we saw b once and c once.
    model = NGramModel(2, vocab_size=3, discount=0.5).fit([0, 1, 0, 2])
    unigram_b = (1 - 0.5) / 4 + 0.5 * 3 / 4 * (1 / 3)  # c(b) = 1 of 4 tokens, 3 distinct tokens
    assert model.probability([0], 1) == pytest.approx((1 - 0.5) / 2 + 0.5 * 2 / 2 * unigram_b)
    assert math.isclose(sum(model.probability([0], w) for w in range(3)), 1.0)


def test_bad_arguments():
    with pytest.raises(ValueError, match="order"):
        NGramModel(0, 3)
    with pytest.raises(ValueError, match="discount"):
        NGramModel(2, 3, discount=1.0)


@pytest.mark.parametrize("order", [1, 3, 6])
def test_counts_match_counting_tuples_one_by_one(order):
    rng = random.Random(order)
    text = [rng.randrange(7) for _ in range(2_000)] + [6, 6, 6]
    model = NGramModel(order, vocab_size=7).fit(text)
    for n in range(order):  # n = history length: the counts written the slow, obvious way
        grams = Counter(tuple(text[i - n:i + 1]) for i in range(n, len(text)))
        assert model.counts[n] == grams
        assert model.totals[n] == Counter(g[:-1] for g in grams.elements())
        assert model.types[n] == Counter(g[:-1] for g in grams)


def test_fitting_again_replaces_the_counts_and_bad_ids_are_named():
    model = NGramModel(2, vocab_size=3).fit([0, 1, 2])
    assert model.fit([1, 1]).counts[1] == {(1, 1): 1}
    with pytest.raises(ValueError, match="0 .. 2, got 0 .. 3"):
        model.fit([0, 3])


def test_a_history_shorter_than_the_order_is_used_whole():
    # With three tokens of history a 6-gram model backs off exactly as a 4-gram model does.
    text = [0, 1, 2, 3, 1, 2, 0, 3, 3, 1, 0, 2, 1, 1, 2, 3, 0, 0, 1, 2, 3] * 3
    six, four = NGramModel(6, 4).fit(text), NGramModel(4, 4).fit(text)
    for history in ([1, 2, 3], [3, 0, 0], [2]):
        for token in range(4):
            assert six.probability(history, token) == pytest.approx(four.probability(history, token))


def test_ngram_codes_are_equal_exactly_for_equal_grams_across_texts():
    rng = random.Random(0)
    texts = [[rng.randrange(4) for _ in range(length)] for length in (500, 60, 3, 0)]
    orders = dict(ngram_codes_up_to(texts, 6, vocab_size=4))
    assert list(orders) == [1, 2, 3, 4, 5, 6]
    for n in (1, 2, 3, 6):
        codes = orders[n]
        grams = [[tuple(text[i:i + n]) for i in range(len(text) - n + 1)] for text in texts]
        assert [len(c) for c in codes] == [len(g) for g in grams]
        by_code = {}
        for code, gram in zip(np.concatenate(codes).tolist(), sum(grams, [])):
            assert by_code.setdefault(code, gram) == gram  # one gram per code
        assert len(by_code) == len(set(sum(grams, [])))   # and one code per gram
        # order n's codes are the same whatever highest order is asked for
        assert [c.tolist() for c in codes] == [c.tolist() for c in dict(ngram_codes_up_to(texts, n, 4))[n]]
        history = {gram[:-1]: code // 4 for code, gram in zip(np.concatenate(codes).tolist(), sum(grams, []))}
        assert len(set(history.values())) == len(history)  # code // V names the history
        # the counts of the second text's grams in the first, written the slow, obvious way
        seen = Counter(grams[0])
        [(c_hw, c_h, types)] = context_counts(codes[0], [codes[1]], vocab_size=4)
        assert c_hw.tolist() == [seen[g] for g in grams[1]]
        assert c_h.tolist() == [sum(v for k, v in seen.items() if k[:-1] == g[:-1]) for g in grams[1]]
        assert types.tolist() == [sum(1 for k in seen if k[:-1] == g[:-1]) for g in grams[1]]


def test_count_of_an_empty_key_set_and_bad_ids():
    assert count_of(np.array([1, 2]), np.array([], dtype=np.int64)).tolist() == [0, 0]
    assert count_of(np.array([5, 1, 9]), np.array([1, 1, 5, 7])).tolist() == [1, 2, 0]
    with pytest.raises(ValueError, match="0 .. 2, got 0 .. 3"):
        dict(ngram_codes_up_to([[0, 3]], 2, vocab_size=3))


def test_context_counts_of_an_empty_training_text_are_zero():
    [(c_hw, c_h, types)] = context_counts(np.array([], dtype=np.int64), [np.array([5, 0])], 4)
    assert c_hw.tolist() == c_h.tolist() == types.tolist() == [0, 0]


def test_a_token_outside_the_alphabet_is_refused_not_given_a_probability():
    # A held-out character the model's alphabet lacks got a finite probability, hence a perplexity.
    model = NGramModel(2, 3).fit([0, 1, 2, 0, 1])
    for history, token in (([0], 7), ([0], -1), ([9], 1)):
        with pytest.raises(ValueError, match=r"0 \.\. 2"):
            model.probability(history, token)
    with pytest.raises(ValueError, match="got 3"):
        model.perplexity([0, 1, 3])
    assert model.perplexity([0, 1, 2]) == pytest.approx(math.exp(-model.log_likelihood([0, 1, 2]) / 3))


def test_a_long_history_is_cut_to_its_last_tokens():
    model = NGramModel(2, vocab_size=4).fit([0, 1, 2, 3, 0, 1, 2, 3, 1, 1])
    for token in range(4):
        assert model.probability([0, 1, 2], token) == model.probability([2], token)
