"""nlpbook.next_sentence: the vocabulary, the pair layout, NSP and paraphrase pairs on small made-up
verses whose answers are known, BERT's corruption rates, and the verses of a real split."""
import pytest
import torch

from nlpbook import bert
from nlpbook.bert import IGNORE_INDEX
from nlpbook.next_sentence import (PieceVocabulary, Verses, corrupt, next_sentence_pairs, pack,
                                   paraphrase_pairs, windows)

# tokenizer ids 0-4 stand for [PAD] [CLS] [SEP] [MASK] [UNK]; 10-99 are words
VOCABULARY = PieceVocabulary(compact={i: i for i in [0, 1, 2, 3, 4, *range(10, 100)]},
                             pad=0, cls=1, sep=2, mask=3, unk=4)


def made_up_verses(chapters=(4, 3, 5), first_word=10, skip=()):
    """Verses whose pieces say where they are: verse v of chapter c is [first_word + 10 c + v]
    twice, so a pair's B can be checked against its A.  Keys in ``skip`` are left out."""
    numbers, keys, pieces = [], [], []
    for c, count in enumerate(chapters):
        for v in range(count):
            if (1, c, v) in skip:
                continue
            numbers.append(c)
            keys.append((1, c, v))
            pieces.append([first_word + 10 * c + v] * 2)
    return Verses(torch.tensor(numbers), keys, pieces)


class FakeTokenizer:
    def token_id(self, token):  # ids in another order than the fields, so a field read from the wrong token shows
        return {"[PAD]": 4, "[CLS]": 0, "[SEP]": 3, "[MASK]": 1, "[UNK]": 2}[token]


def test_the_vocabulary_keeps_frequent_pieces_and_the_specials_renumbered():
    texts = [[50, 50, 60], [50, 70, 70, 70]]
    vocabulary = PieceVocabulary.from_texts(FakeTokenizer(), texts, min_count=2)
    assert sorted(vocabulary.compact) == [0, 1, 2, 3, 4, 50, 70]
    assert sorted(vocabulary.compact.values()) == list(range(7)) and vocabulary.size == 7
    assert vocabulary.encode([50, 60, 70]) == [vocabulary.compact[50], vocabulary.unk, vocabulary.compact[70]]
    assert (vocabulary.pad, vocabulary.cls, vocabulary.sep, vocabulary.mask, vocabulary.unk) == (4, 0, 3, 1, 2)


def test_pack_lays_out_cls_a_sep_b_sep_then_padding_with_segments():
    ids, segments = pack([[10, 11, 12], [20]], [[30], [40, 41, 42, 43]], VOCABULARY, length=3)
    assert ids.shape == segments.shape == (2, 9)
    assert ids[0].tolist() == [1, 10, 11, 12, 2, 30, 2, 0, 0]
    assert segments[0].tolist() == [0, 0, 0, 0, 0, 1, 1, 0, 0]
    assert ids[1].tolist() == [1, 20, 2, 40, 41, 42, 2, 0, 0]  # B cut to its first 3 pieces
    assert segments[1].tolist() == [0, 0, 0, 1, 1, 1, 1, 0, 0]
    with pytest.raises(ValueError, match="2 first texts but 1"):
        pack([[10], [11]], [[12]], VOCABULARY, length=3)


def test_windows_cut_the_running_text_between_cls_and_sep():
    ids = VOCABULARY.running([[10, 11, 12], [13, 5], [14, 15, 16]])
    assert ids.tolist() == [10, 11, 12, 13, 4, 14, 15, 16]
    rows = windows(ids, VOCABULARY, width=3)
    # 5 is not in the vocabulary: [UNK]; the last two pieces do not fill a window
    assert rows.tolist() == [[1, 10, 11, 12, 2], [1, 13, 4, 14, 2]]


def test_next_sentence_pairs_take_the_next_verse_or_one_of_another_chapter():
    verses = made_up_verses()
    ids, segments, labels = next_sentence_pairs(verses, 400, VOCABULARY, 2, torch.Generator().manual_seed(0))
    assert ids.shape == (400, 7) and 150 < int(labels.sum()) < 250
    for row, label in zip(ids.tolist(), labels.tolist()):
        a, b = row[1] - 10, row[4] - 10  # 10 chapter + verse
        if label:
            assert b == a + 1 and b // 10 == a // 10
        else:
            assert b // 10 != a // 10
        assert a % 10 + 1 < [4, 3, 5][a // 10]  # A is never the last verse of its chapter
    again = next_sentence_pairs(verses, 400, VOCABULARY, 2, torch.Generator().manual_seed(0))
    assert torch.equal(ids, again[0]) and torch.equal(labels, again[2])
    with pytest.raises(ValueError, match="one chapter"):
        next_sentence_pairs(made_up_verses(chapters=(5,)), 4, VOCABULARY, 2, torch.Generator())
    with pytest.raises(ValueError, match="no IsNext"):
        next_sentence_pairs(made_up_verses(chapters=(1, 1)), 4, VOCABULARY, 2, torch.Generator())


def test_paraphrase_pairs_pair_a_verse_with_itself_or_the_next_in_the_other_translation():
    source = made_up_verses()
    # the target's words are 50 higher, and it lacks chapter 0's verse 2
    target = made_up_verses(first_word=60, skip={(1, 0, 2)})
    ids, _, labels = paraphrase_pairs(source, target, 300, VOCABULARY, 2, torch.Generator().manual_seed(1))
    assert 100 < int(labels.sum()) < 200
    # the verse that follows each one in the target's chapter: after verse 1 of chapter 0 comes 3
    after = {10 * k[1] + k[2]: 10 * n[1] + n[2]
             for k, n in zip(target.keys, target.keys[1:]) if k[1] == n[1]}
    firsts = set()
    for row, label in zip(ids.tolist(), labels.tolist()):
        a, b = row[1] - 10, row[4] - 60
        firsts.add(a)
        assert b == (a if label else after[a])
    # verse 2 of chapter 0 is not in the target; the last verse of a chapter has no successor
    assert firsts == {0, 1, 10, 11, 20, 21, 22, 23}
    with pytest.raises(ValueError, match="share no verse"):
        paraphrase_pairs(source, made_up_verses(chapters=(1, 1, 1)), 5, VOCABULARY, 2, torch.Generator())


def test_corrupt_picks_fifteen_percent_of_ordinary_pieces_eighty_ten_ten():
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(10, 100, (400, 500), generator=generator)
    ids[:, 0], ids[:, 250], ids[:, -50:] = VOCABULARY.cls, VOCABULARY.sep, VOCABULARY.pad
    corrupted, labels = corrupt(ids, VOCABULARY, generator=torch.Generator().manual_seed(1))
    special = (ids == VOCABULARY.cls) | (ids == VOCABULARY.sep) | (ids == VOCABULARY.pad)
    picked = labels != IGNORE_INDEX
    assert not (picked & special).any() and torch.equal(corrupted[~picked], ids[~picked])
    assert torch.equal(labels[picked], ids[picked])
    assert abs(picked.sum() / (~special).sum() - 0.15) < 0.005
    masked = (corrupted[picked] == VOCABULARY.mask).float().mean()
    kept = (corrupted[picked] == ids[picked]).float().mean()  # a random piece can be the same one
    assert abs(masked - 0.8) < 0.01 and abs(kept - 0.1 - 0.1 / VOCABULARY.size) < 0.01
    again = corrupt(ids, VOCABULARY, generator=torch.Generator().manual_seed(1))
    assert torch.equal(corrupted, again[0])


def test_the_verses_of_a_real_split_keep_canonical_order_and_chapters():
    verses = Verses.of(bert.minilm_tokenizer(), "web", "valid")
    assert len(verses.keys) == len(verses.pieces) == len(verses.chapters) > 1000
    assert verses.keys == sorted(verses.keys) and all(verses.pieces)
    chapter_of = {}
    for (book, chapter, _), number in zip(verses.keys, verses.chapters.tolist()):
        assert chapter_of.setdefault((book, chapter), number) == number
    assert len(set(chapter_of.values())) == len(chapter_of)
    followed = verses.followed()
    assert torch.equal(verses.chapters[followed], verses.chapters[followed + 1])


def test_the_vocabulary_keeps_a_piece_seen_exactly_min_count_times_and_windows_keep_the_last_full_one():
    vocabulary = PieceVocabulary.from_texts(FakeTokenizer(), [[50, 50, 60]], min_count=2)
    assert 50 in vocabulary.compact and 60 not in vocabulary.compact
    rows = windows(torch.arange(6) + 10, vocabulary, width=3)
    assert rows.shape == (2, 5) and rows[1, 1:-1].tolist() == [13, 14, 15]
