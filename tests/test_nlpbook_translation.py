import math
import random

import pytest
import torch
import torch.nn.functional as F

from nlpbook import translation
from nlpbook.parallel import BOS, EOS, Pair, bible_tensors, build_vocabularies, number_pairs, to_tensors
from nlpbook.seq2seq import Seq2Seq
from nlpbook.transformer import EncoderDecoder
from nlpbook.translation import (RACE_MODELS, RACE_OPTIONS, RACE_RATES, greedy_translate, race_model,
                                 scored_translation_perplexity, train_translator, until_eos, validation_loss)


def test_until_eos_decodes_up_to_the_first_eos_or_everything_without_one():
    splits = number_pairs("fr", size=60, seed=3)
    _, target_vocab = build_vocabularies(splits.train)
    pair = splits.train[0]
    ids = target_vocab.encode(pair.target)
    assert until_eos(ids + [target_vocab.index(EOS)] + ids, target_vocab) == list(pair.target)
    assert until_eos(ids, target_vocab) == list(pair.target)  # no <eos>: everything


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


def test_scored_translation_perplexity_is_that_models_validation_perplexity():
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
    rng = random.Random(seed)
    words = "abcdefgh"
    pairs = []
    for _ in range(count):
        sentence = tuple(rng.choice(words) for _ in range(rng.randint(1, 6)))
        pairs.append(Pair(sentence, sentence))
    source_vocab, target_vocab = build_vocabularies(pairs)
    return pairs, source_vocab, target_vocab


def _translators(source_vocab, target_vocab):
    torch.manual_seed(0)
    return [Seq2Seq(len(source_vocab), len(target_vocab), embed=8, hidden=16, attention=True),
            EncoderDecoder(len(source_vocab), len(target_vocab), width=16, heads=2,
                           encoder_layers=1, decoder_layers=1, dropout=0.0)]


def test_validation_loss_is_the_token_weighted_mean_whatever_the_batch_size():
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


def test_train_translator_clips_at_1_warms_up_and_draws_its_batches_from_its_seed(monkeypatch):
    # What the docstring promises and the copy task cannot see: the loop is handed a norm of 1 to
    # clip at, a rate rising over the warm-up, and batches that another seed draws otherwise.
    pairs, source_vocab, target_vocab = _copy_task(count=64)
    tensors = to_tensors(pairs, source_vocab, target_vocab)
    handed = []
    monkeypatch.setattr(translation, "train", lambda model, batches, loss, optimizer, **options:
                        handed.append((next(batches), optimizer, options)))
    for seed in (0, 0, 1):
        model = race_model("LSTM + attention", (len(source_vocab), len(target_vocab)), 16)
        translation.train_translator(model, tensors, seed=seed, lr=1e-2, warmup=10, steps=5, batch_size=8)
    (same, optimizer, options), (again, _, _), (other, _, _) = handed
    assert options["clip_grad_norm"] == 1.0
    assert optimizer.param_groups[0]["lr"] == pytest.approx(1e-2 / 10)  # the first of 10 warm-up steps
    assert all(torch.equal(a, b) for a, b in zip(same, again))
    assert not torch.equal(same[0], other[0])
