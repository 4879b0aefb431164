"""nlpbook.bpe against a plain recount-every-merge reference and against the tokenizers library's BPE."""
from __future__ import annotations

from collections import Counter

import pytest
from tokenizers.models import BPE as TokenizersBPE

from nlpbook.bpe import BPE, END, merge_pair, pretokenize, spell, train_bpe, word_counts
from nlpbook.corpora import lee_stories


def reference_merges(counts, num_merges):
    """Sennrich et al.'s algorithm as written in the paper: recount every pair before every merge."""
    words = {spell(w): c for w, c in counts.items()}
    merges = []
    for _ in range(num_merges):
        pairs = Counter()
        for symbols, c in words.items():
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += c
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        words = {merge_pair(symbols, best): c for symbols, c in words.items()}
    return merges


@pytest.fixture(scope="module")
def lee():
    stories = lee_stories()
    return word_counts(stories[30:]), word_counts(stories[:30])


def test_training_matches_the_reference_on_the_lee_corpus(lee):
    train, _ = lee
    small = Counter(dict(train.most_common(600)))
    assert train_bpe(small, 300) == reference_merges(small, 300)


def test_ties_go_to_the_pair_that_sorts_first_and_training_stops_when_words_are_whole():
    assert train_bpe({"ab": 1, "cd": 1}, 5) == [("a", "b</w>"), ("c", "d</w>")]
    assert train_bpe({"aaa": 2}, 1) == [("a", "a")]
    assert merge_pair(("a", "a", "a</w>"), ("a", "a")) == ("aa", "a</w>")


def test_encoding_matches_tokenizers_on_unseen_words(lee):
    train, held_out = lee
    merges = train_bpe(train, 2000)
    ours = BPE(merges)
    alphabet = {c for word in train for c in word}
    vocab = {piece: i for i, piece in enumerate(ours.vocabulary(alphabet))}
    theirs = TokenizersBPE(vocab, merges, end_of_word_suffix=END)
    words = [w for w in held_out if set(w) <= alphabet]
    assert len(words) > 1000
    for word in words:
        assert list(ours.encode_word(word)) == [t.value for t in theirs.tokenize(word)], word


def test_tokenize_and_decode_round_trip(lee):
    train, _ = lee
    bpe = BPE(train_bpe(train, 500))
    text = "The Prime Minister said, on Tuesday, that talks were continuing."
    pieces = bpe.tokenize(text)
    assert all(piece in set(bpe.vocabulary("abcdefghijklmnopqrstuvwxyz,.")) for piece in pieces)
    assert bpe.decode(pieces) == " ".join(pretokenize(text))
    assert len(pieces) < len("".join(pretokenize(text)))  # merges shorten the text


def test_spell_rejects_an_empty_word():
    with pytest.raises(ValueError, match="empty"):
        spell("")


def test_pretokenize_keeps_punctuation_as_words():
    assert pretokenize("Hello, World! It's 3.5") == ["hello", ",", "world", "!", "it", "'", "s", "3", ".", "5"]
