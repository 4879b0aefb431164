import pytest

from nlpbook import corpora
from nlpbook.bert import minilm_path
from nlpbook.wordpiece import WordPieceTokenizer, basic_tokenize, read_vocab, wordpiece

TOY = {piece: i for i, piece in enumerate(
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "##a", "aff", "able", "##ble"])}


@pytest.fixture(scope="module")
def tokenizer():
    return WordPieceTokenizer.from_file(minilm_path() / "vocab.txt")


@pytest.fixture(scope="module")
def reference():
    # Since transformers 5, BertTokenizer is the Rust BertTokenizerFast under another name.
    from transformers import BertTokenizerFast

    return BertTokenizerFast(str(minilm_path() / "vocab.txt"), do_lower_case=True)


@pytest.fixture(scope="module")
def python_reference():
    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

    return BertTokenizerLegacy(str(minilm_path() / "vocab.txt"), do_lower_case=True)


def test_wordpiece_takes_the_longest_piece_first():
    assert wordpiece("unaffable", TOY) == ["un", "##aff", "##able"]
    assert wordpiece("affable", TOY) == ["aff", "##able"]


def test_a_word_with_an_unknown_part_is_one_unk():
    assert wordpiece("unaffablex", TOY) == ["[UNK]"]
    assert wordpiece("x" * 101, {**TOY, "x": 99, "##x": 100}) == ["[UNK]"]


def test_basic_tokenize_lowercases_strips_accents_and_splits_punctuation():
    assert basic_tokenize("Héllo,  WORLD!\tcafé's $5") == ["hello", ",", "world", "!", "cafe", "'", "s", "$", "5"]
    assert basic_tokenize("东京 ok") == ["东", "京", "ok"]


def test_special_tokens_written_in_the_text_stay_whole_as_in_transformers(tokenizer, reference, python_reference):
    # the fill-in-the-blank a reader tries first: "[MASK]" was cut into [, mask, ]
    for text in ("the [MASK] sat on the mat.", "Paris is the capital of[MASK]!", "[CLS] a [SEP] b [SEP]",
                 "an [UNK] and a [mask]"):
        assert tokenizer.tokenize(text) == reference.tokenize(text) == python_reference.tokenize(text), text
    assert basic_tokenize("The [MASK] sat.") == ["the", "[MASK]", "sat", "."]


def test_read_vocab_names_the_file_when_it_is_not_a_bert_vocabulary(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(ValueError, match="vocab.txt.*lacks \\[PAD\\]"):
        read_vocab(path)


def test_the_tokenizer_matches_transformers_on_the_lee_corpus_and_the_reviews(tokenizer, reference,
                                                                            python_reference):
    texts = corpora.lee_stories()[:60] + corpora.polarity_sentences()[0] + ["naïve Zoë's café — 3.5%, x" * 3]
    for text in texts:
        assert tokenizer.tokenize(text) == reference.tokenize(text) == python_reference.tokenize(text), text


def test_cleaning_and_the_word_cache_match_transformers_on_characters_a_bible_lacks(tokenizer, python_reference):
    # A NUL, U+FFFD, a no-break space, a zero-width space (a format character), a tab, a carriage
    # return, a control character and ideographs: step 1's and 2's cases, each decided once per
    # distinct character; the same words again, cut from the tokenizer's cache of cut words.
    text = "a\x00b\ufffdc\u00a0d\u200be\tf\rg\x07h \u4e2d\u6587x ＄5 Ünïcode"
    for _ in range(2):
        assert tokenizer.tokenize(text) == python_reference.tokenize(text)
    assert tokenizer.tokenize(text.upper()) == python_reference.tokenize(text.upper())


def test_encode_and_batch_match_transformers_with_pairs_and_truncation(tokenizer, reference):
    ids, segments = tokenizer.encode("The cat sat.", "On the mat, it slept.")
    theirs = reference("The cat sat.", "On the mat, it slept.")
    assert ids == theirs["input_ids"] and segments == theirs["token_type_ids"]
    long = "word " * 50
    ids, segments = tokenizer.encode(long, "short pair", max_length=16)
    theirs = reference(long, "short pair", truncation="longest_first", max_length=16)
    assert ids == theirs["input_ids"] and segments == theirs["token_type_ids"]
    texts = ["A short one.", "A somewhat longer sentence, with a comma."]
    batch, theirs = tokenizer.batch(texts), reference(texts, padding=True, return_tensors="pt")
    for name in ("input_ids", "token_type_ids", "attention_mask"):
        assert batch[name].equal(theirs[name]), name
    pairs = ["And a second sentence for the first.", "Two."]
    batch, theirs = tokenizer.batch(texts, pairs), reference(texts, pairs, padding=True, return_tensors="pt")
    for name in ("input_ids", "token_type_ids", "attention_mask"):
        assert batch[name].equal(theirs[name]), name
    with pytest.raises(ValueError, match="2 texts but 1 pairs"):
        tokenizer.batch(texts, pairs[:1])


def test_ids_are_the_pieces_between_cls_and_sep(tokenizer):
    text = "Tokenization is unaffable"
    ids, _ = tokenizer.encode(text)
    assert tokenizer.ids(text) == ids[1:-1] == [tokenizer.token_id(p) for p in tokenizer.tokenize(text)]


def test_decode_glues_continuation_pieces(tokenizer):
    ids, _ = tokenizer.encode("Tokenization is unaffable")
    assert tokenizer.decode(ids[1:-1]) == "tokenization is unaffable"


def test_a_word_of_exactly_100_characters_and_a_tie_in_truncation_match_transformers():
    from transformers import BertTokenizerFast
    tokenizer = WordPieceTokenizer.from_file(minilm_path() / "vocab.txt")
    reference = BertTokenizerFast(str(minilm_path() / "vocab.txt"), do_lower_case=True)
    word = "a" * 100
    assert tokenizer.tokenize(word) == reference.tokenize(word)
    a, b = "one two three four", "five six seven eight"                # 4 pieces each: a tie
    ids, segments = tokenizer.encode(a, b, max_length=8)
    theirs = reference(a, b, truncation="longest_first", max_length=8)
    assert ids == theirs["input_ids"] and segments == theirs["token_type_ids"]
