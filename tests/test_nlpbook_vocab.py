import pytest

from nlpbook.vocab import Vocabulary


def test_build_orders_by_frequency_then_alphabet_after_the_specials():
    vocab = Vocabulary.build([["b", "a", "c", "a"], ["c", "d", "a"]], specials=("<pad>", "<unk>"), unk="<unk>")
    assert vocab.tokens == ["<pad>", "<unk>", "a", "c", "b", "d"]
    assert vocab.counts == [0, 0, 3, 2, 1, 1]


def test_min_count_and_max_size_count_the_specials():
    sentences = [["x"] * 5 + ["y"] * 3 + ["z"]]
    assert Vocabulary.build(sentences, min_count=2).tokens == ["x", "y"]
    assert Vocabulary.build(sentences, max_size=2, specials=("<unk>",), unk="<unk>").tokens == ["<unk>", "x"]


def test_encode_and_decode_round_trip_and_unknown_words():
    vocab = Vocabulary.build([["the", "cat", "the"]], specials=("<unk>",), unk="<unk>")
    assert vocab.decode(vocab.encode(["the", "cat"])) == ["the", "cat"]
    assert vocab.encode(["dog"]) == [vocab.index("<unk>")]
    assert vocab.encode(["dog", "cat"], skip_unknown=True) == [vocab.index("cat")]
    strict = Vocabulary.build([["the"]])
    with pytest.raises(KeyError, match="'dog' is not in the vocabulary"):
        strict.index("dog")
    assert "the" in strict and "dog" not in strict and len(strict) == 1


def test_bad_vocabularies_are_refused():
    with pytest.raises(ValueError, match="same token twice"):
        Vocabulary(["a", "a"])
    with pytest.raises(ValueError, match="not among the tokens"):
        Vocabulary(["a"], unk="<unk>")
    with pytest.raises(ValueError, match="min_count"):
        Vocabulary.build([["a"]], min_count=0)


def test_settings_that_cannot_hold_and_ids_outside_are_refused():
    with pytest.raises(ValueError, match="no room"):
        Vocabulary.build([["a", "b"]], max_size=1, specials=("<pad>", "<unk>"))
    with pytest.raises(ValueError, match="one of the specials"):
        Vocabulary.build([["a", "b"]], specials=("<pad>",), unk="a")
    vocab = Vocabulary.build([["a", "b"]])
    for wrong in (-1, 2):
        with pytest.raises(IndexError, match=f"id {wrong} is not in this vocabulary of 2"):
            vocab.decode([0, wrong])


def test_an_unknown_word_takes_the_unknown_token_id_not_the_first():
    # With padding first, an unknown word mapped to id 0 would be read as padding and drop out of
    # the loss.
    vocabulary = Vocabulary.build([["a", "a", "b"]], specials=("<pad>", "<unk>"), unk="<unk>")
    assert vocabulary.encode(["zebra", "a"]) == [1, 2]


def test_a_special_token_that_occurs_in_the_text_is_kept_once_among_the_specials():
    vocabulary = Vocabulary.build([["<eos>", "a", "<eos>"]], specials=("<pad>", "<eos>"))
    assert vocabulary.tokens == ["<pad>", "<eos>", "a"]


def test_tokens_of_equal_counts_are_sorted_alphabetically_not_by_first_appearance():
    # so that the ids do not depend on the order of the sentences
    assert Vocabulary.build([["b", "a"]]).tokens == Vocabulary.build([["a", "b"]]).tokens == ["a", "b"]
