"""The benchmarks are checked against gensim's own evaluation of the same vectors."""
import math

import pytest
import torch
from gensim.models import KeyedVectors

from nlpbook import similarity
from nlpbook.corpora import gensim_test_data, word_corpus
from nlpbook.similarity import restrict
from nlpbook.vocab import Vocabulary


def test_benchmark_files_have_their_published_sizes():
    assert len(similarity.similarity_pairs("wordsim353")) == 353
    assert len(similarity.similarity_pairs("simlex999")) == 999
    questions = similarity.analogy_questions()
    assert sum(map(len, questions.values())) == 19544 and len(questions) == 14
    assert questions["capital-common-countries"][0] == ("athens", "greece", "baghdad", "iraq")
    with pytest.raises(ValueError, match="unknown similarity benchmark"):
        similarity.similarity_pairs("men")


@pytest.fixture(scope="module")
def keyed_vectors():
    """Random vectors for every word of the benchmarks, in gensim's KeyedVectors and in ours."""
    words = sorted({w for a, b, _ in similarity.similarity_pairs("wordsim353") for w in (a, b)}
                   | {w for q in similarity.analogy_questions()["family"] for w in q})
    vectors = torch.randn(len(words), 16, generator=torch.Generator().manual_seed(0))
    # Plant the answer of a few analogies so that some are right.
    index = {w: i for i, w in enumerate(words)}
    vectors[index["queen"]] = vectors[index["king"]] - vectors[index["man"]] + vectors[index["woman"]]
    kv = KeyedVectors(16)
    kv.add_vectors(words, vectors.numpy())
    return kv, vectors, Vocabulary(words)


def test_spearman_matches_gensim(keyed_vectors):
    kv, vectors, vocab = keyed_vectors
    ours = similarity.evaluate_similarity(vectors, vocab, "wordsim353")
    theirs = kv.evaluate_word_pairs(str(gensim_test_data("wordsim353.tsv")), case_insensitive=True)[1].statistic
    assert ours.spearman == pytest.approx(theirs, abs=1e-6)
    assert ours.pairs_used == 353 and ours.coverage == 1.0


def test_analogy_accuracy_matches_gensim(keyed_vectors):
    kv, vectors, vocab = keyed_vectors
    ours = similarity.evaluate_analogies(vectors, vocab)
    score, sections = kv.evaluate_word_analogies(str(gensim_test_data("questions-words.txt")), case_insensitive=True)
    assert ours.accuracy == pytest.approx(score) and ours.accuracy > 0
    family = next(s for s in sections if s["section"] == "family")
    assert ours.by_section["family"] == (len(family["correct"]), len(family["correct"]) + len(family["incorrect"]))
    assert similarity.analogy(vectors, vocab, "man", "king", "woman")[0][0] == "queen"


def test_vectors_that_say_nothing_answer_no_analogy(keyed_vectors):
    # Zero vectors tie every candidate; argmax settled the tie on the most frequent word, which
    # answered 4% of the family questions. NaN did the same, and is refused.
    _, vectors, vocab = keyed_vectors
    assert similarity.evaluate_analogies(torch.zeros_like(vectors), vocab).correct == 0
    with pytest.raises(ValueError, match="NaN or infinite"):
        similarity.evaluate_analogies(torch.full_like(vectors, float("nan")), vocab)


def test_nearest_leaves_the_word_out_and_ranks_by_cosine():
    vocab = Vocabulary(["a", "b", "c"])
    vectors = torch.tensor([[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]])
    assert [w for w, _ in similarity.nearest(vectors, vocab, "a", k=2)] == ["b", "c"]
    assert similarity.nearest(vectors, vocab, "a", k=1)[0][1] == pytest.approx(10 / math.sqrt(101))


def test_nearest_and_analogy_refuse_a_word_without_a_vector():
    # With an unknown token in the vocabulary, the lookup alone would answer for "<unk>".
    vocab = Vocabulary(["<unk>", "a", "b", "c"], unk="<unk>")
    vectors = torch.eye(4)
    with pytest.raises(KeyError, match="no vector for 'zebra'"):
        similarity.nearest(vectors, vocab, "zebra")
    with pytest.raises(KeyError, match="no vector for 'x', 'y'"):
        similarity.analogy(vectors, vocab, "x", "a", "y")


def test_unknown_words_lower_the_coverage_not_the_score():
    vocab = Vocabulary(["cat", "qwertyuiop"])
    result = similarity.evaluate_similarity(torch.ones(2, 3), vocab, "wordsim353")
    assert result.pairs_used == 0 and math.isnan(result.spearman)
    assert similarity.evaluate_analogies(torch.ones(2, 3), vocab).answered == 0


def test_restrict_keeps_the_rows_of_the_words_asked_in_their_order():
    vocab = Vocabulary(["a", "b", "c"], [5, 3, 1])
    vectors = torch.arange(6.0).view(3, 2)
    rows, sub = restrict(vectors, vocab, ["c", "a"])
    assert rows.tolist() == [[4.0, 5.0], [0.0, 1.0]] and sub.tokens == ["c", "a"] and sub.counts == [1, 5]
    with pytest.raises(KeyError, match=r"1 of the 2 words have no vector, for example \['z'\]"):
        restrict(vectors, vocab, ["a", "z"])


def test_scored_wordsim_reads_the_vectors_in_the_order_of_the_corpus_vocabulary():
    """The grader's score of chapter 1's vectors is gensim's WordSim353 correlation of the same vectors
    under the vocabulary of the named corpus, which the exercise's test builds the same way."""
    vocab = Vocabulary.build(word_corpus("lee"), min_count=5)
    vectors = torch.randn(len(vocab), 8, generator=torch.Generator().manual_seed(1))
    kv = KeyedVectors(8)
    kv.add_vectors(vocab.tokens, vectors.numpy())
    theirs = kv.evaluate_word_pairs(str(gensim_test_data("wordsim353.tsv")), case_insensitive=True,
                                    dummy4unknown=False)[1].statistic
    assert similarity.scored_wordsim({"vectors": vectors}, corpus="lee", min_count=5) == pytest.approx(theirs, abs=1e-6)
    assert math.isnan(similarity.scored_wordsim({"vectors": torch.full_like(vectors, float("nan"))},
                                                corpus="lee", min_count=5))
    one_bad_row = vectors.clone()
    one_bad_row[-1] = float("nan")  # the rarest word, in no WordSim353 pair
    assert math.isnan(similarity.scored_wordsim({"vectors": one_bad_row}, corpus="lee", min_count=5))
    for wrong in ({"vectors": vectors[:-1]}, {"weight": vectors}, {"vectors": vectors, "extra": vectors}):
        with pytest.raises(ValueError, match="one row per word"):
            similarity.scored_wordsim(wrong, corpus="lee", min_count=5)


def test_analogy_never_answers_with_the_questions_words_and_reads_uncounted_vectors():
    vocab = Vocabulary(["a", "b", "c", "d"])
    assert [word for word, _ in similarity.analogy(torch.eye(4), vocab, "a", "b", "c", k=3)] == ["d"]
    kv = KeyedVectors(2)
    kv.add_vectors(["x", "y"], torch.eye(2).numpy())  # as read from a text file: no counts
    vectors, read = similarity.from_gensim(kv)
    assert read.tokens == ["x", "y"] and read.counts == [0, 0] and torch.equal(vectors, torch.eye(2))


def test_restricted_analogies_answer_only_among_the_commonest_words():
    # queen = king - man + woman exactly; among the 3 commonest words the answer is not there, so
    # no question is answered.
    vocabulary = Vocabulary(["man", "king", "woman", "queen"])
    vectors = torch.randn(4, 8, generator=torch.Generator().manual_seed(0))
    vectors[3] = vectors[1] - vectors[0] + vectors[2]
    assert similarity.evaluate_analogies(vectors, vocabulary).correct >= 1
    assert similarity.evaluate_analogies(vectors, vocabulary, restrict=3).answered == 0
