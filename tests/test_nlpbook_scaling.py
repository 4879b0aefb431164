import math

import pytest
import torch

from nlpbook.charlm import CharData, CharRNN
from nlpbook.scaling import SIZES, LMSize, build, flops_per_token, lstm_hidden, train_lm
from nlpbook.transformer import DecoderOnlyLM

TINY = LMSize("tiny", width=16, layers=2, heads=2, lstm_layers=2)


def weights(model) -> int:
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_lstm_hidden_gives_the_lstm_the_number_of_weights_asked_for(layers):
    for target in (20_000, 300_000):
        hidden = lstm_hidden(target, vocab=60, embed=32, layers=layers)
        counted = {width: weights(CharRNN(60, embed=32, hidden=width, cell="lstm", layers=layers))
                   for width in (hidden - 1, hidden, hidden + 1)}
        # the nearest width: one unit more or less lands further from the target
        assert abs(counted[hidden] - target) <= min(abs(counted[hidden - 1] - target),
                                                     abs(counted[hidden + 1] - target))


@pytest.mark.parametrize("size", list(SIZES.values()) + [TINY], ids=lambda size: size.name)
def test_both_families_of_a_size_have_as_many_weights(size):
    transformer, lstm = (build(family, size, vocab=60, context=64) for family in ("Transformer", "LSTM"))
    assert isinstance(transformer, DecoderOnlyLM) and isinstance(lstm, CharRNN)
    assert transformer.out.weight is transformer.embed.weight  # tied, as GPT-2
    assert abs(weights(lstm) - weights(transformer)) / weights(transformer) < 0.02
    with pytest.raises(ValueError, match="family"):
        build("GRU", size, vocab=60, context=64)


def test_flops_per_token_match_a_count_by_hand():
    # Per layer the Transformer multiplies by q, k, v, out (4 D^2) and a feed-forward network of
    # 4D (8 D^2); its tied output layer by V x D; attention adds 12 L D context (PaLM's count).
    # The LSTM: 4H(E + H) for the first layer, 8H^2 for the second, H x V out.
    V, context, D, L, H = 30, 32, TINY.width, TINY.layers, 20
    transformer = build("Transformer", TINY, V, context)
    assert flops_per_token(transformer, "Transformer", TINY, context) == 6 * (12 * L * D * D + V * D) + 12 * L * D * context
    lstm = build("LSTM", TINY, V, context)
    assert lstm.rnn.hidden_size == H
    assert flops_per_token(lstm, "LSTM", TINY, context) == 6 * (4 * H * (D + H) + 8 * H * H + H * V)


def test_train_lm_reports_a_curve_in_steps_tokens_and_flops_and_learns():
    text = "in the beginning god created the heaven and the earth. " * 40
    data = CharData.from_texts(text, text[:600])
    run = train_lm("Transformer", TINY, data, steps=30, batch=8, lr=1e-2, seed=0, context=32, evals=3,
                   valid_chars=400, device=torch.device("cpu"))
    curve = run["curve"]
    assert [point["step"] for point in curve] == [10, 20, 30]
    assert all(point["tokens"] == point["step"] * 8 * 32 for point in curve)
    assert all(math.isclose(point["flops"], point["tokens"] * run["flops_per_token"]) for point in curve)
    assert curve[-1]["valid_loss"] < math.log(len(data.chars))  # better than guessing uniformly
    assert run["weights"] == weights(build("Transformer", TINY, len(data.chars), 32))
    again = train_lm("Transformer", TINY, data, steps=30, batch=8, lr=1e-2, seed=0, context=32, evals=3,
                     valid_chars=400, device=torch.device("cpu"))
    assert again["train_loss"] == run["train_loss"]  # seeded: the same run twice


def test_train_lm_scores_the_held_out_text(monkeypatch):
    from nlpbook import scaling
    seen = []

    def spy(model, ids, chunk=None):
        seen.append(ids.clone())
        return 2.0

    monkeypatch.setattr(scaling, "perplexity", spy)
    data = CharData.from_texts("abcabcabc" * 20, "cbacbacba" * 10)
    scaling.train_lm("Transformer", scaling.LMSize("t", 16, 1, 2), data, steps=2, batch=2, lr=1e-3, seed=0,
                     context=8, evals=1, valid_chars=50, device=torch.device("cpu"))
    assert seen and all(torch.equal(ids, data.valid_ids[:50]) for ids in seen)
