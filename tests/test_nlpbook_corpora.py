import pytest

from nlpbook import corpora


def test_tokenize_keeps_lower_case_words_and_inner_apostrophes():
    assert corpora.tokenize("Don't PANIC: 42 towels, (the) Hitchhiker's guide!") == [
        "don't", "panic", "towels", "the", "hitchhiker's", "guide"]


def test_lee_corpus_is_300_stories_of_about_60000_words():
    stories = corpora.lee_corpus()
    assert len(stories) == 300
    assert 55_000 < sum(map(len, stories)) < 65_000
    assert stories[0][:4] == ["hundreds", "of", "people", "have"]


def test_lee_stories_are_the_raw_text_of_the_same_stories():
    stories = corpora.lee_stories()
    assert len(stories) == 300 and stories[0].startswith("Hundreds of people have been forced")
    assert [corpora.tokenize(s) for s in stories] == corpora.lee_corpus()


def test_wiki_corpus_is_plain_words_without_markup():
    articles = corpora.wiki_corpus()
    assert 100 <= len(articles) <= 110 and all(len(a) >= 50 for a in articles)
    assert 400_000 < sum(map(len, articles)) < 500_000
    words = {w for article in articles for w in article}
    assert "anarchism" in words and not any(w.startswith(("http", "ref")) and len(w) > 20 for w in words)
    assert not any(c in w for w in words for c in "[]{}|=<>")


def test_a_missing_file_names_itself():
    with pytest.raises(FileNotFoundError, match="no-such-file.txt"):
        corpora.gensim_test_data("no-such-file.txt")


def test_polarity_sentences_are_200_labelled_reviews_half_positive():
    texts, labels = corpora.polarity_sentences()
    assert len(texts) == len(labels) == 200 and sum(labels) == 100
    assert texts[0] == "simplistic , silly and tedious ." and labels[0] == 0
    assert all(text and text == text.strip() for text in texts)
