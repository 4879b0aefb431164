import hashlib
import io
import tarfile

import pytest
import sacrebleu

from nlpbook.seq2seq import Seq2Seq
from nlpbook.transformer import EncoderDecoder
from nlpbook.translation import (EOS, RACE_MODELS, RACE_OPTIONS, RACE_RATES, Pair, bleu,
                                 build_vocabularies, chrf, constant_translation, multi30k, number_pairs, number_phrase,
                                 race_model, tokenize_phrase, until_eos)
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


def test_until_eos_and_bleu():
    splits = number_pairs("fr", size=60, seed=3)
    _, target_vocab = build_vocabularies(splits.train)
    pairs = splits.train[:20]
    ids = target_vocab.encode(pairs[0].target)
    assert until_eos(ids + [target_vocab.index(EOS)] + ids, target_vocab) == list(pairs[0].target)
    assert until_eos(ids, target_vocab) == list(pairs[0].target)  # no <eos>: everything
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


def test_race_rates_name_a_rate_for_each_race_model():
    assert set(RACE_RATES) == set(RACE_MODELS) == set(RACE_OPTIONS) and len(RACE_MODELS) == 2
    assert all(0 < rate < 0.1 for rate in RACE_RATES.values())


def test_race_model_builds_each_race_model_at_the_width_asked_for_and_no_other():
    lstm, transformer = (race_model(kind, (30, 40), 16) for kind in RACE_MODELS)
    assert isinstance(lstm, Seq2Seq) and isinstance(transformer, EncoderDecoder)
    # what the page's list of the models says: embeddings of 96 and hidden size 16 for the LSTM,
    # width 16 and 2 + 2 layers for the Transformer, each over the vocabularies asked for
    assert lstm.encoder.embed.weight.shape == (30, 96) and lstm.encoder.lstm.hidden_size == 16
    assert lstm.embed.weight.shape == (40, 96) and lstm.out.out_features == 40
    assert transformer.source_embed.weight.shape == (30, 16) and transformer.out.out_features == 40
    assert len(transformer.encoder) == len(transformer.decoder) == 2 and transformer.dropout.p == 0.1
    with pytest.raises(ValueError, match="no race model 'GRU'"):
        race_model("GRU", (30, 40), 16)


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


def test_bible_translation_cuts_each_side_with_its_own_bpe_and_keeps_the_words():
    from nlpbook.translation import bible_translation, pieces_to_words

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
    assert corpus.source_bpe.merges != corpus.target_bpe.merges
    assert len(corpus.source_bpe.merges) == len(corpus.target_bpe.merges) == 300
    assert pieces_to_words(["seign", "eur</w>", "di"]) == ("seigneur", "di")


def test_source_length_groups_put_every_pair_in_one_group_punctuation_counted():
    from nlpbook.translation import bible_translation, source_length_groups

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
    from nlpbook.translation import BOS, bible_tensors, bible_translation, to_tensors

    data = bible_tensors(12, merges=300)
    assert bible_tensors(12, merges=300) is data  # one copy per process: the grader scores many students
    corpus = bible_translation(max_words=12, merges=300)
    assert data.source_vocab.tokens == build_vocabularies(corpus.pieces.train)[0].tokens
    for split in ("train", "valid", "test"):
        expected = to_tensors(getattr(corpus.pieces, split), data.source_vocab, data.target_vocab)
        assert all(a.equal(b) for a, b in zip(getattr(data, split), expected))
    assert (data.valid[2][:, 0] == data.target_vocab.index(BOS)).all()


def test_scored_translation_perplexity_is_that_models_validation_perplexity():
    import math

    import torch

    from nlpbook.seq2seq import Seq2Seq
    from nlpbook.translation import bible_tensors, scored_translation_perplexity, validation_loss

    data = bible_tensors(12, merges=300)
    torch.manual_seed(0)
    model = Seq2Seq(len(data.source_vocab), len(data.target_vocab), embed=8, hidden=6, attention=True)
    state = {name: value.double() for name, value in model.state_dict().items()}  # any float dtype is read
    assert scored_translation_perplexity(state, max_words=12, merges=300) == pytest.approx(
        math.exp(validation_loss(model, data.valid)), rel=1e-5)
    with pytest.raises(ValueError, match="an encoder-decoder's"):
        scored_translation_perplexity({"weight": torch.zeros(2, 2)}, max_words=12, merges=300)
    with pytest.raises(ValueError, match="the corpus has"):
        smaller = Seq2Seq(10, len(data.target_vocab), embed=8, hidden=6, attention=True)
        scored_translation_perplexity(smaller.state_dict(), max_words=12, merges=300)
    without_attention = Seq2Seq(len(data.source_vocab), len(data.target_vocab), embed=8, hidden=6)
    with pytest.raises(ValueError, match="do not fit the course's translator"):
        scored_translation_perplexity(without_attention.state_dict(), max_words=12, merges=300)


# Training and decoding helpers, on a tiny copy task with both kinds of translator.

def _copy_task(count=40, seed=0):
    import random

    rng = random.Random(seed)
    words = "abcdefgh"
    pairs = []
    for _ in range(count):
        sentence = tuple(rng.choice(words) for _ in range(rng.randint(1, 6)))
        pairs.append(Pair(sentence, sentence))
    source_vocab, target_vocab = build_vocabularies(pairs)
    return pairs, source_vocab, target_vocab


def _translators(source_vocab, target_vocab):
    import torch

    from nlpbook.seq2seq import Seq2Seq
    from nlpbook.transformer import EncoderDecoder

    torch.manual_seed(0)
    return [Seq2Seq(len(source_vocab), len(target_vocab), embed=8, hidden=16, attention=True),
            EncoderDecoder(len(source_vocab), len(target_vocab), width=16, heads=2,
                           encoder_layers=1, decoder_layers=1, dropout=0.0)]


def test_validation_loss_is_the_token_weighted_mean_whatever_the_batch_size():
    import torch
    import torch.nn.functional as F

    from nlpbook.translation import to_tensors, validation_loss

    pairs, source_vocab, target_vocab = _copy_task()
    for model in _translators(source_vocab, target_vocab):
        total, tokens = 0.0, 0
        with torch.no_grad():
            for pair in pairs:                      # one unpadded pair at a time
                source, lengths, target = to_tensors([pair], source_vocab, target_vocab)
                logits = model(source, lengths, target[:, :-1])[0]               # (T, V)
                total += F.cross_entropy(logits, target[0, 1:], reduction="sum").item()
                tokens += target.shape[1] - 1
        tensors = to_tensors(pairs, source_vocab, target_vocab)
        for batch_size in (1, 7, 256):
            assert validation_loss(model, tensors, batch_size) == pytest.approx(total / tokens,
                                                                                rel=1e-5)


def test_greedy_translate_matches_teacher_forced_argmax_one_token_at_a_time_with_and_without_the_cache():
    import torch

    from nlpbook.translation import BOS, greedy_translate, to_tensors

    pairs, source_vocab, target_vocab = _copy_task(count=6)
    for model in _translators(source_vocab, target_vocab):
        model.eval()
        batched = greedy_translate(model, pairs, source_vocab, target_vocab, max_length=8)
        # the Transformer's keys and values kept from step to step, or its whole prefix read again
        assert batched == greedy_translate(model, pairs, source_vocab, target_vocab, max_length=8, cache=False)
        if not hasattr(model, "decode_step"):  # the Transformer: the source's keys computed once, not every step
            calls = []
            hook = model.decoder[0].cross_attn.k.register_forward_hook(lambda *args: calls.append(1))
            greedy_translate(model, pairs, source_vocab, target_vocab, max_length=8)
            hook.remove()
            assert calls == [1]
        for pair, output in zip(pairs, batched):
            source, lengths, _ = to_tensors([pair], source_vocab, target_vocab)
            prefix = [target_vocab.index(BOS)]
            with torch.no_grad():
                for _ in range(8):                  # the full forward pass on the prefix
                    logits = model(source, lengths, torch.tensor([prefix]))[0, -1]
                    prefix.append(int(logits.argmax()))
                    if prefix[-1] == target_vocab.index(EOS):
                        break
            assert output == tuple(until_eos(prefix[1:], target_vocab))


def test_train_translator_learns_the_copy_task_within_its_budget():
    from nlpbook.translation import greedy_translate, to_tensors, train_translator, validation_loss

    pairs, source_vocab, target_vocab = _copy_task(count=64)
    tensors = to_tensors(pairs, source_vocab, target_vocab)
    for model in _translators(source_vocab, target_vocab):
        before = validation_loss(model, tensors)
        run = train_translator(model, tensors, seed=0, lr=1e-2, warmup=10, steps=300,
                               batch_size=16, valid=tensors, every_steps=1)
        assert len(run.loss) == len(run.step_seconds) == 300
        checks = run.checkpoints("valid_loss")
        assert len(checks) == 300 and checks[-1][:2] == (300, run.seconds)
        assert checks[-1][2] < before / 5
        stepped = train_translator(model, tensors, seed=0, lr=1e-3, steps=10, batch_size=16,
                                   valid=tensors, every_steps=4)
        assert [step for step, _, _ in stepped.checkpoints("valid_loss")] == [4, 8, 10]  # and the end
        outputs = greedy_translate(model, pairs, source_vocab, target_vocab, max_length=10)
        assert sum(o == p.target for o, p in zip(outputs, pairs)) >= len(pairs) // 2
        timed = train_translator(model, tensors, seed=0, lr=1e-3, seconds=0.2)
        assert timed.seconds >= 0.2 and timed.seconds - timed.step_seconds[-1] < 0.2
    with pytest.raises(ValueError, match="budget"):
        train_translator(model, tensors, seed=0, lr=1e-3)
    with pytest.raises(ValueError, match="every_steps"):
        train_translator(model, tensors, seed=0, lr=1e-3, steps=5, valid=tensors, every=1.0)
