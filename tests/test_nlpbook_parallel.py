import hashlib
import io
import tarfile

import pytest

from nlpbook.bpe import train_bpe, word_counts
from nlpbook.corpora import SPLITS, bible_pairs
from nlpbook.parallel import (BOS, PAD, Pair, bible_tensors, bible_translation, build_vocabularies, multi30k,
                              number_pairs, number_phrase, pieces_to_words, source_length_groups, to_tensors,
                              tokenize_phrase)
from servers import file_server


def test_number_pairs_are_exact_translations():
    splits = number_pairs("fr", size=50, max_value=300, seed=3)
    english = {tokenize_phrase(number_phrase(v, "en")): v for v in range(301)}
    for pair in splits.train + splits.valid + splits.test:
        assert pair.target == tokenize_phrase(number_phrase(english[pair.source], "fr"))
    assert tokenize_phrase(number_phrase(99, "fr")) == ("quatre", "-", "vingt", "-", "dix", "-", "neuf")
    assert tokenize_phrase(number_phrase(342, "en")) == ("three", "hundred", "and", "forty", "-", "two")


def test_splits_are_deterministic_disjoint_and_sized():
    first, second = number_pairs("de", size=200, seed=1), number_pairs("de", size=200, seed=1)
    assert first == second
    assert (len(first.train), len(first.valid), len(first.test)) == (160, 20, 20)
    sources = [set(p.source for p in split) for split in (first.train, first.valid, first.test)]
    assert not (sources[0] & sources[1] or sources[0] & sources[2] or sources[1] & sources[2])
    assert number_pairs("de", size=200, seed=2) != first


def test_characters_mode_and_bad_arguments():
    pair = number_pairs("de", size=1, max_value=0, fractions=(1.0, 0.0, 0.0), characters=True).train[0]
    assert pair == Pair(tuple("zero"), tuple("null"))
    with pytest.raises(ValueError, match="cannot draw 11 distinct numbers"):
        number_pairs(size=11, max_value=9)
    with pytest.raises(ValueError, match="sum to 1"):
        number_pairs(size=5, fractions=(0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="unknown language 'xx'"):
        number_phrase(3, "xx")


def _archive(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_multi30k_loader_downloads_checks_and_caches(tmp_path):
    archive = _archive({"val.en": "A dog runs.\nTwo men talk.\n", "val.de": "Ein Hund rennt.\nZwei Männer reden.\n"})
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "validation.tar.gz").write_bytes(archive)
    files = {"valid": ("validation.tar.gz", hashlib.sha256(archive).hexdigest(), "val")}
    with file_server(tmp_path / "www") as (url, requests):
        pairs = multi30k("valid", mirror=url, files=files, cache=tmp_path / "cache")
        assert pairs == [Pair(("a", "dog", "runs", "."), ("ein", "hund", "rennt", ".")),
                         Pair(("two", "men", "talk", "."), ("zwei", "männer", "reden", "."))]
        assert multi30k("valid", mirror=url, files=files, cache=tmp_path / "cache") == pairs
        assert requests == ["/validation.tar.gz"]
        with pytest.raises(ValueError, match="holds no val.fr"):
            multi30k("valid", target="fr", mirror=url, files=files, cache=tmp_path / "cache")
        with pytest.raises(ValueError, match="unknown split 'dev'"):
            multi30k("dev", mirror=url, files=files, cache=tmp_path / "cache")


def test_bible_translation_cuts_each_side_with_its_own_bpe_and_keeps_the_words():
    corpus = bible_translation(max_words=12, merges=300)
    for split in ("train", "valid", "test"):
        pieces, words = getattr(corpus.pieces, split), getattr(corpus.words, split)
        assert len(pieces) == len(words) > 50
        for cut, whole in zip(pieces[:200], words[:200]):  # pieces glue back into the very words
            assert pieces_to_words(list(cut.source)) == whole.source
            assert pieces_to_words(list(cut.target)) == whole.target
    assert corpus.words.train[0].source == ("in", "the", "beginning", "god", "created", "the", "heavens", "and",
                                            "the", "earth", ".")
    # BPE is learned on the training verses only, and each language gets its own.
    raw = {split: bible_pairs("web", "segond", split=split, max_words=12) for split in SPLITS}
    assert corpus.source_bpe.merges == train_bpe(word_counts(a for a, _ in raw["train"]), 300)
    assert corpus.target_bpe.merges == train_bpe(word_counts(b for _, b in raw["train"]), 300)
    every_verse = [a for split in SPLITS for a, _ in raw[split]]
    assert corpus.source_bpe.merges != train_bpe(word_counts(every_verse), 300)
    assert corpus.source_bpe.merges != corpus.target_bpe.merges
    assert pieces_to_words(["seign", "eur</w>", "di"]) == ("seigneur", "di")


def test_source_length_groups_put_every_pair_in_one_group_punctuation_counted():
    pairs = [Pair(("a",) * n, ("b",)) for n in (3, 5, 6, 9, 12)]
    assert source_length_groups(pairs, starts=(1, 5, 9)) == [
        ("1-4", [0]), ("5-8", [1, 2]), ("9-12", [3, 4])]
    # An empty group keeps its place; the last one's label ends at its own start then.
    assert source_length_groups(pairs[:1], starts=(1, 5)) == [("1-4", [0]), ("5-5", [])]
    # The label as the pages' sentences say it.
    assert [group.in_words for group in source_length_groups(pairs, starts=(1, 5, 9))] == [
        "1 to 4", "5 to 8", "9 to 12"]
    # On the Bible verses of at most 20 words, over a quarter of the test sources have more than 20
    # tokens (punctuation counts); each is in exactly one of the four default groups.
    test = bible_translation(max_words=20, merges=300).words.test
    groups = source_length_groups(test)
    assert sorted(i for _, indices in groups for i in indices) == list(range(len(test)))
    assert any(len(test[i].source) > 20 for i in groups[-1][1])
    assert all(len(indices) > len(test) / 8 for _, indices in groups)


def test_bible_tensors_encode_the_pairs_with_vocabularies_of_the_training_pairs():
    data = bible_tensors(12, merges=300)
    assert bible_tensors(12, merges=300) is data  # one copy per process: the grader scores many students
    corpus = bible_translation(max_words=12, merges=300)
    assert data.source_vocab.tokens == build_vocabularies(corpus.pieces.train)[0].tokens
    for split in ("train", "valid", "test"):
        expected = to_tensors(getattr(corpus.pieces, split), data.source_vocab, data.target_vocab)
        assert all(a.equal(b) for a, b in zip(getattr(data, split), expected))
    assert (data.valid[2][:, 0] == data.target_vocab.index(BOS)).all()


def test_padding_is_id_0_in_both_vocabularies():
    # The translators' losses ignore id 0: were padding anything else, they would train on padding
    # and ignore the token that took its place.
    for vocabulary in build_vocabularies([Pair(("a", "b"), ("c",))]):
        assert vocabulary.index(PAD) == 0
