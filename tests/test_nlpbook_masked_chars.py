"""nlpbook.masked_chars: chapter 4's verses, corruption, course model and the grader's scorer."""
from __future__ import annotations

import math

import pytest
import torch

from nlpbook import masked_chars
from nlpbook.checks import SCORERS, score_state
from nlpbook.masked_chars import MASK, PAD, MaskedCharEncoder, mask_characters, verse_ids, vocab_size


def test_verse_ids_are_padded_rows_of_characters():
    ids = verse_ids("valid", 32)
    assert ids.shape == (1609, 32) and ids.dtype == torch.long
    assert ids.min() == PAD and ids.max() < vocab_size() and not (ids == MASK).any()
    assert (ids[:, 0] != PAD).all()  # no verse is empty


def test_mask_characters_hides_real_characters_only():
    ids = torch.tensor([[5, 6, 7, PAD, PAD]] * 200)
    inputs, targets = mask_characters(ids, 0.5, torch.Generator().manual_seed(0))
    hidden = inputs == MASK
    assert not hidden[:, 3:].any() and 0.4 < hidden[:, :3].float().mean() < 0.6
    assert torch.equal(targets[hidden], ids[hidden]) and (targets[~hidden] == -100).all()
    assert torch.equal(inputs[~hidden], ids[~hidden])


def test_padding_never_changes_the_real_characters_logits():
    torch.manual_seed(0)
    model = MaskedCharEncoder(vocab_size(), 16, 2, 2).eval()
    ids = torch.tensor([[5, 6, 7, PAD, PAD]])
    other = torch.tensor([[5, 6, 7, PAD]])
    assert torch.allclose(model(ids)[:, :3], model(other)[:, :3], atol=1e-5)


def test_the_scorer_loads_a_state_by_name_and_rejects_others():
    assert SCORERS["masked_char_accuracy"][2] == "higher"
    torch.manual_seed(0)
    model = MaskedCharEncoder(vocab_size(), 16, 2, 1)
    state = model.state_dict()
    options = {"heads": 2, "length": 16, "verses": 50}
    # the model scored on the first 50 validation verses of 16 characters, as the options say
    expected = masked_chars.masked_accuracy(model, verse_ids("valid", 16)[:50])
    assert score_state("masked_char_accuracy", state, options) == expected
    assert score_state("masked_char_accuracy", state, {**options, "verses": 80}) == \
        masked_chars.masked_accuracy(model, verse_ids("valid", 16)[:80])
    with pytest.raises(ValueError):
        score_state("masked_char_accuracy", {"weight": torch.zeros(2, 2)}, options)
    with pytest.raises(ValueError):
        score_state("masked_char_accuracy", {**state, "extra.weight": torch.zeros(1)}, options)
    broken = {**state, "out.bias": torch.full_like(state["out.bias"], math.nan)}
    assert math.isnan(score_state("masked_char_accuracy", broken, options))


def test_a_short_training_beats_the_commonest_character():
    # What the exercise's part 7 relies on: attention to the neighbours lifts the accuracy above
    # the share of the commonest character among the hidden ones.
    ids = verse_ids("valid", 16)[:300]
    _, targets = mask_characters(ids, 0.15, torch.Generator().manual_seed(0))
    commonest = torch.bincount(targets[targets != -100]).max().item() / (targets != -100).sum().item()
    torch.manual_seed(0)
    model = MaskedCharEncoder(vocab_size(), 32, 2, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    generator = torch.Generator().manual_seed(0)
    batches = masked_chars.verse_batches("train", 16, 64, generator)
    for _ in range(150):
        inputs, targets = mask_characters(next(batches), 0.15, generator)
        loss = torch.nn.functional.cross_entropy(model(inputs).flatten(0, 1), targets.flatten(), ignore_index=-100)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert masked_chars.masked_accuracy(model, ids) > commonest + 0.03


def test_masked_char_encoder_is_a_pre_ln_gelu_transformer_encoder():
    from nlpbook.transformer import sinusoidal_positions
    torch.manual_seed(0)
    model = MaskedCharEncoder(20, 16, 2, 2).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    references = []
    for block in model.blocks:
        layer = torch.nn.TransformerEncoderLayer(16, 2, 64, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True).train()  # train mode: no fast path
        a = block.attention
        with torch.no_grad():
            layer.self_attn.in_proj_weight.copy_(torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]))
            layer.self_attn.in_proj_bias.copy_(torch.cat([a.q_proj.bias, a.k_proj.bias, a.v_proj.bias]))
            layer.self_attn.out_proj.load_state_dict(a.out_proj.state_dict())
            layer.linear1.load_state_dict(block.feed_forward[0].state_dict())
            layer.linear2.load_state_dict(block.feed_forward[2].state_dict())
            layer.norm1.load_state_dict(block.norm1.state_dict())
            layer.norm2.load_state_dict(block.norm2.state_dict())
        references.append(layer)
    ids = torch.randint(2, 20, (3, 9))
    ids[0, 6:] = PAD
    x = model.embed(ids) + sinusoidal_positions(9, 16)
    for layer in references:
        x = layer(x, src_key_padding_mask=ids == PAD)
    expected = model.out(model.norm(x))
    real = ids != PAD
    torch.testing.assert_close(model(ids)[real], expected[real], atol=1e-5, rtol=1e-4)
