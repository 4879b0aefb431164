"""nlpbook.transformer against torch.nn's Transformer layers with copied weights, on tiny configurations."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from nlpbook.transformer import (DecoderOnlyLM, EncoderDecoder, KVCache, MultiHeadAttention, causal_mask, from_torch,
                                 key_padding_mask, sampling_probs, sinusoidal_positions)

WIDTH, HEADS, HIDDEN = 32, 4, 48


def torch_encoder_layer(norm_first, dtype=torch.float32):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(WIDTH, HEADS, HIDDEN, dropout=0.0, activation="gelu", batch_first=True,
                                       norm_first=norm_first).to(dtype)
    for p in layer.parameters():  # LayerNorms start at (1, 0): randomize them so a swapped norm shows
        p.data.add_(0.1 * torch.randn_like(p))
    return layer.train()  # train mode with dropout 0: torch's fast path (which zeroes padding) stays off


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (2, 20)])
def test_encoder_layer_matches_torch(norm_first, shape):
    reference = torch_encoder_layer(norm_first)
    ours = from_torch(reference)
    B, T = shape
    x = torch.randn(B, T, WIDTH)
    lengths = torch.randint(1, T + 1, (B,))
    mask = key_padding_mask(lengths, T)  # (B, 1, 1, T)
    expected = reference(x, src_key_padding_mask=~mask[:, 0, 0])
    assert torch.allclose(ours(x, mask), expected, atol=1e-5)
    causal = reference(x, src_mask=nn.Transformer.generate_square_subsequent_mask(T), is_causal=True)
    assert torch.allclose(ours(x, causal_mask(T)), causal, atol=1e-5)


def test_encoder_layer_matches_torch_in_float64():
    reference = torch_encoder_layer(True, torch.float64)
    x = torch.randn(2, 9, WIDTH, dtype=torch.float64)
    assert torch.allclose(from_torch(reference)(x), reference(x), atol=1e-12)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_torch(norm_first):
    torch.manual_seed(1)
    reference = nn.TransformerDecoderLayer(WIDTH, HEADS, HIDDEN, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=norm_first).train()
    for p in reference.parameters():
        p.data.add_(0.1 * torch.randn_like(p))
    ours = from_torch(reference)
    y, memory = torch.randn(3, 6, WIDTH), torch.randn(3, 11, WIDTH)
    lengths = torch.tensor([11, 4, 1])
    expected = reference(y, memory, tgt_mask=nn.Transformer.generate_square_subsequent_mask(6), tgt_is_causal=True,
                         memory_key_padding_mask=~key_padding_mask(lengths, 11)[:, 0, 0])
    assert torch.allclose(ours(y, memory, causal_mask(6), key_padding_mask(lengths, 11)), expected, atol=1e-5)


def test_from_torch_rejects_what_it_cannot_copy():
    with pytest.raises(ValueError, match="gelu"):
        from_torch(nn.TransformerEncoderLayer(WIDTH, HEADS, HIDDEN, batch_first=True))
    with pytest.raises(TypeError, match="Linear"):
        from_torch(nn.Linear(2, 2))


def test_attention_returns_rows_that_sum_to_one_and_respect_the_mask():
    torch.manual_seed(2)
    attention = MultiHeadAttention(WIDTH, HEADS)
    query, memory = torch.randn(2, 5, WIDTH), torch.randn(2, 8, WIDTH)
    mask = key_padding_mask(torch.tensor([8, 3]), 8)
    output, probs = attention(query, memory, memory, mask, return_probs=True)
    assert output.shape == (2, 5, WIDTH) and probs.shape == (2, HEADS, 5, 8)
    assert torch.allclose(probs.sum(-1), torch.ones(2, HEADS, 5))
    assert probs[1, :, :, 3:].abs().max() == 0
    assert torch.allclose(attention(query, memory, memory, mask), output, atol=1e-6)  # the fused path agrees
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(30, 4)


def test_masks():
    assert causal_mask(3).tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    assert key_padding_mask(torch.tensor([1, 3]), 3)[:, 0, 0].tolist() == [[True, False, False], [True, True, True]]


def test_sinusoidal_positions_follow_the_formula():
    table = sinusoidal_positions(50, 16)
    t, i = 37, 3
    assert math.isclose(table[t, 2 * i].item(), math.sin(t / 10000 ** (2 * i / 16)), abs_tol=1e-5)
    assert math.isclose(table[t, 2 * i + 1].item(), math.cos(t / 10000 ** (2 * i / 16)), abs_tol=1e-5)


def test_sampling_probs_temperature_and_top_k():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    assert torch.allclose(sampling_probs(logits), torch.softmax(logits, -1))
    assert torch.allclose(sampling_probs(logits, temperature=0.5), torch.softmax(2 * logits, -1))
    top2 = sampling_probs(logits, top_k=2)
    assert torch.allclose(top2, torch.tensor([[math.e / (math.e + 1), 1 / (math.e + 1), 0.0, 0.0]]))
    assert sampling_probs(logits, temperature=0).tolist() == [[1.0, 0.0, 0.0, 0.0]]
    with pytest.raises(ValueError, match="temperature"):
        sampling_probs(logits, temperature=-1)
    with pytest.raises(ValueError, match="top_k must be at least 1"):
        sampling_probs(logits, top_k=0)


def test_the_language_model_is_causal_and_generates():
    torch.manual_seed(3)
    model = DecoderOnlyLM(11, width=16, heads=2, layers=2, context=8).eval()
    ids = torch.randint(0, 11, (2, 8))
    changed = ids.clone()
    changed[:, 5:] = (changed[:, 5:] + 1) % 11
    # a change at position 5 leaves the predictions for positions 0..4 untouched
    assert torch.allclose(model(ids)[:, :5], model(changed)[:, :5], atol=1e-6)
    assert not torch.allclose(model(ids)[:, 5:], model(changed)[:, 5:])
    out = model.generate(ids[:, :3], 10, temperature=0.8, top_k=3, generator=torch.Generator().manual_seed(0))
    assert out.shape == (2, 13) and torch.equal(out[:, :3], ids[:, :3])
    with pytest.raises(ValueError, match="context"):
        model(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="at least one token"):
        model.generate(ids[:, :0], 3)


def test_causal_attention_gives_the_same_weights_with_or_without_the_mask_passed():
    torch.manual_seed(6)
    attention = MultiHeadAttention(16, 2).eval()
    x = torch.randn(2, 5, 16)
    fused = attention(x, x, x, causal=True)
    out, probs = attention(x, x, x, causal=True, return_probs=True)
    assert torch.allclose(out, fused, atol=1e-6)
    assert torch.equal(probs.triu(1), torch.zeros_like(probs))  # nothing above the diagonal
    _, with_mask = attention(x, x, x, causal_mask(5), causal=True, return_probs=True)
    assert torch.allclose(probs, with_mask)


@pytest.mark.parametrize("norm_first", [True, False])
def test_attention_maps_are_the_causal_weights_the_forward_pass_uses(norm_first):
    torch.manual_seed(5)
    model = DecoderOnlyLM(11, width=16, heads=2, layers=2, context=8, norm_first=norm_first).eval()
    ids = torch.randint(0, 11, (3, 8))
    maps = model.attention_maps(ids)
    assert [m.shape for m in maps] == [(3, 2, 8, 8)] * 2
    assert torch.allclose(maps[0].sum(-1), torch.ones(3, 2, 8))
    assert (maps[1].triu(1) == 0).all()  # no query sees a later key
    # The second layer's weights, applied to its values, give what its fused attention gives.
    x = model.layers[0](*model.inputs(ids))  # (B, T, D)
    layer = model.layers[1]
    seen = layer.norm1(x) if norm_first else x
    attention = layer.self_attn
    by_hand = attention.merge(maps[1] @ attention.split(attention.v(seen)))
    assert torch.allclose(by_hand, attention(seen, seen, seen, causal_mask(8)), atol=1e-5)
    with pytest.raises(ValueError, match="context"):
        model.attention_maps(torch.zeros(1, 9, dtype=torch.long))


def test_causal_flag_is_the_causal_mask_in_values_and_gradients():
    # causal=True hands the pattern to the fused kernel (is_causal) instead of the mask tensor:
    # the same function, so outputs and gradients must agree with the mask's.
    torch.manual_seed(6)
    attention = MultiHeadAttention(WIDTH, HEADS)
    x = torch.randn(3, 9, WIDTH, requires_grad=True)
    results = []
    for flag in (False, True):
        out = attention(x, x, x, causal_mask(9), causal=flag)
        (grad,) = torch.autograd.grad(out.square().sum(), x)
        results.append((out, grad))
    (masked, masked_grad), (flagged, flagged_grad) = results
    assert torch.allclose(masked, flagged, atol=1e-6)
    assert torch.allclose(masked_grad, flagged_grad, atol=1e-5)
    # Continuing a cache, the queries are the last of the keys: is_causal would align its
    # triangle to the first key and hide the kept ones, so the flag is refused there.
    cache = KVCache()
    attention(x[:, :5], x[:, :5], x[:, :5], causal_mask(5), cache=cache, causal=True)
    with pytest.raises(ValueError, match="as many keys as queries"):
        attention(x[:, 5:6], x[:, 5:6], x[:, 5:6], causal_mask(6)[5:], cache=cache, causal=True)


@pytest.mark.parametrize("norm_first", [True, False])
def test_the_language_model_gives_the_logits_of_its_layers_with_the_mask(norm_first):
    # DecoderOnlyLM passes causal=True to its layers; written out with the mask tensor instead,
    # the same layers must give the same logits.
    torch.manual_seed(7)
    model = DecoderOnlyLM(11, width=16, heads=2, layers=3, context=8, norm_first=norm_first).eval()
    ids = torch.randint(0, 11, (2, 8))
    x, mask = model.inputs(ids)
    for layer in model.layers:
        x = layer(x, mask)
    assert torch.allclose(model(ids), model.out(model.norm(x)), atol=1e-5)


def test_the_language_model_hands_the_causal_pattern_to_the_fused_attention(monkeypatch):
    # What lets a GPU use FlashAttention: no mask tensor and is_causal=True, for training and for
    # reading a prompt; the mask again for the tokens read one by one after a cache.
    calls = []
    fused = F.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, **kwargs):
        calls.append((attn_mask is None, is_causal, q.shape[2], k.shape[2]))
        return fused(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    model = DecoderOnlyLM(11, width=16, heads=2, layers=2, context=8).eval()
    model(torch.randint(0, 11, (2, 6)))
    assert calls == [(True, True, 6, 6)] * 2
    calls.clear()
    model.generate(torch.randint(0, 11, (1, 3)), 2, generator=torch.Generator().manual_seed(0))
    assert calls == [(True, True, 3, 3)] * 2 + [(False, False, 1, 4)] * 2


def test_the_translator_ignores_source_padding_and_future_targets():
    torch.manual_seed(4)
    model = EncoderDecoder(13, 17, width=16, heads=2, encoder_layers=2, decoder_layers=2, dropout=0.0).eval()
    source = torch.randint(1, 13, (1, 5))
    padded = torch.cat([source, torch.zeros(1, 3, dtype=torch.long)], dim=1)
    target = torch.randint(1, 17, (1, 6))
    logits = model(source, torch.tensor([5]), target)
    assert logits.shape == (1, 6, 17)
    assert torch.allclose(model(padded, torch.tensor([5]), target), logits, atol=1e-5)
    changed = target.clone()
    changed[0, 4] = (changed[0, 4] + 1) % 17
    assert torch.allclose(model(source, torch.tensor([5]), changed)[:, :4], logits[:, :4], atol=1e-6)


def test_the_translator_learns_to_copy():
    torch.manual_seed(5)
    model = EncoderDecoder(8, 8, width=32, heads=2, encoder_layers=1, decoder_layers=1, dropout=0.0)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(150):
        source = torch.randint(3, 8, (32, 5))
        target = torch.cat([torch.ones(32, 1, dtype=torch.long), source], dim=1)  # 1 = <bos>
        logits = model(source, torch.full((32,), 5), target[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), target[:, 1:].flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.1


@pytest.mark.parametrize("norm_first", [True, False])
def test_cached_logits_are_the_logits_of_reading_the_whole_prefix(norm_first):
    torch.manual_seed(6)
    model = DecoderOnlyLM(11, width=16, heads=2, layers=2, context=12, norm_first=norm_first).eval()
    ids = torch.randint(0, 11, (3, 12))
    caches = [KVCache() for _ in model.layers]
    pieces = [model(ids[:, :5], caches)] + [model(ids[:, t:t + 1], caches) for t in range(5, 9)]
    pieces.append(model(ids[:, 9:], caches))  # a chunk of three after the single tokens
    assert [len(cache) for cache in caches] == [12, 12]
    assert torch.allclose(torch.cat(pieces, dim=1), model(ids), atol=1e-5)
    with pytest.raises(ValueError, match="context"):
        model(ids[:, :1], caches)  # a 13th token


@pytest.mark.parametrize("prompt", [3, 12, 20])
def test_generation_with_the_cache_writes_what_reading_every_window_whole_writes(prompt):
    torch.manual_seed(7)
    model = DecoderOnlyLM(11, width=16, heads=2, layers=2, context=8).eval()
    ids = torch.randint(0, 11, (2, prompt))
    # 30 new tokens: the window of 8 fills and restarts from its last half several times
    sampled = [model.generate(ids, 30, temperature=1.0, generator=torch.Generator().manual_seed(1), cache=cache)
               for cache in (True, False)]
    assert sampled[0].shape == (2, prompt + 30) and torch.equal(sampled[0], sampled[1])
    greedy = [model.generate(ids, 30, temperature=0, cache=cache) for cache in (True, False)]
    assert torch.equal(*greedy)


def test_the_translator_decodes_with_the_cache_as_it_does_reading_the_whole_prefix():
    torch.manual_seed(8)
    model = EncoderDecoder(13, 17, width=16, heads=2, encoder_layers=2, decoder_layers=2, dropout=0.0).eval()
    source, lengths = torch.randint(1, 13, (2, 6)), torch.tensor([6, 3])
    target = torch.randint(1, 17, (2, 7))
    memory = model.encode(source, lengths)
    caches = [KVCache() for _ in model.decoder]
    stepped = torch.cat([model.decode(target[:, t:t + 1], *memory, caches) for t in range(7)], dim=1)
    assert torch.allclose(stepped, model.decode(target, *memory), atol=1e-5)


def test_tied_embeddings_are_one_table_for_reading_and_writing_tokens():
    model = DecoderOnlyLM(50, width=16, heads=2, layers=2, context=8, tie=True, init="gpt2")
    untied = DecoderOnlyLM(50, width=16, heads=2, layers=2, context=8)
    assert model.out.weight is model.embed.weight
    count = lambda m: sum(p.numel() for p in m.parameters())  # parameters() yields a shared weight once
    assert count(untied) - count(model) == 50 * 16
    loss = model(torch.randint(0, 50, (2, 8))).sum()
    loss.backward()
    assert model.embed.weight.grad is not None  # both uses reach the one table
    # PyTorch's N(0, 1) embeddings as output weights: a first loss far above log V, so it is refused
    with pytest.raises(ValueError, match="init='gpt2'"):
        DecoderOnlyLM(50, width=16, heads=2, layers=2, context=8, tie=True)
    ids = torch.randint(0, 50, (4, 8))
    first = torch.nn.functional.cross_entropy(model(ids).flatten(0, 1), ids.flatten())
    assert abs(first.item() - math.log(50)) < 0.5


def test_gpt2_initialisation_scales_the_residual_writes_by_depth():
    torch.manual_seed(0)
    model = DecoderOnlyLM(50, width=64, heads=4, layers=8, context=32, init="gpt2")
    layer = model.layers[3]
    assert layer.self_attn.q.weight.std().item() == pytest.approx(0.02, rel=0.1)
    assert model.embed.weight.std().item() == pytest.approx(0.02, rel=0.1)
    for written in (layer.self_attn.out.weight, layer.feed_forward.linear2.weight):
        assert written.std().item() == pytest.approx(0.02 / math.sqrt(16), rel=0.1)
    assert all((b == 0).all() for name, b in model.named_parameters() if name.endswith("bias"))
    assert (model.norm.weight == 1).all()  # LayerNorm gains keep their 1
    with pytest.raises(ValueError, match="init"):
        DecoderOnlyLM(50, init="xavier")


def test_dropout_is_off_in_eval_mode_and_on_in_training():
    torch.manual_seed(0)
    model = DecoderOnlyLM(11, width=16, heads=2, layers=2, context=8, dropout=0.5).eval()
    ids = torch.randint(0, 11, (2, 8))
    assert torch.equal(model(ids), model(ids))                      # eval: no dropout anywhere
    embed_only = DecoderOnlyLM(11, width=16, heads=2, layers=0, context=8, dropout=0.5).train()
    assert not torch.equal(embed_only(ids), embed_only(ids))       # the embedding dropout
    attention = MultiHeadAttention(16, 2, dropout=0.5).train()
    x = torch.randn(2, 5, 16)
    written = [attention(x, x, x, causal=True, return_probs=True)[0] for _ in range(2)]
    assert not torch.equal(*written)                                # dropout on the weights, written out


def test_the_translator_scales_its_embeddings_by_sqrt_width():
    torch.manual_seed(0)
    model = EncoderDecoder(13, 17, width=16, heads=2, dropout=0.0).eval()
    ids = torch.randint(1, 13, (2, 5))
    expected = model.source_embed(ids) * math.sqrt(16) + sinusoidal_positions(5, 16)
    assert torch.allclose(model._embed(model.source_embed, ids), expected)


def test_generation_restarts_from_the_last_half_of_a_full_window():
    torch.manual_seed(0)
    model = DecoderOnlyLM(11, width=16, heads=2, layers=1, context=8).eval()
    read = []
    model.register_forward_pre_hook(lambda module, args: read.append(args[0].shape[1]))
    model.generate(torch.randint(0, 11, (1, 3)), 8, temperature=0, cache=False)
    assert read == [3, 4, 5, 6, 7, 8, 4, 5]        # full at 8, then the last 4 of 9 tokens
    read.clear()
    model.generate(torch.randint(0, 11, (1, 20)), 1, temperature=0, cache=False)
    assert read == [8]                              # a long prompt: its last 8 tokens
