"""nlpbook.bert against transformers.BertModel: a tiny random BERT with copied weights, then the real checkpoint."""
import pytest
import torch

from nlpbook import bert


TINY = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
            max_position_embeddings=64, type_vocab_size=2)


def tiny_pair(seed=0):
    from transformers import BertConfig as HFConfig, BertModel as HFBertModel

    torch.manual_seed(seed)
    reference = HFBertModel(HFConfig(**TINY, attn_implementation="eager")).eval()
    with torch.no_grad():  # random LayerNorms and biases too, so a swapped module shows
        for p in reference.parameters():
            p.add_(0.1 * torch.randn_like(p))
    ours = bert.BertModel(bert.BertConfig(**TINY)).eval()
    ours.load_state_dict(bert.from_hf_names(reference.state_dict()))
    return ours, reference


def inputs(batch=3, length=11, seed=1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, TINY["vocab_size"], (batch, length), generator=g)
    types = torch.randint(0, 2, (batch, length), generator=g)
    mask = torch.ones(batch, length, dtype=torch.long)
    mask[0, 7:] = 0  # padding in one row
    return ids, mask, types


@pytest.mark.parametrize("batch,length", [(1, 1), (3, 11), (2, 64)])
def test_tiny_bert_matches_transformers_with_copied_weights(batch, length):
    ours, reference = tiny_pair()
    ids, mask, types = inputs(batch, length)
    with torch.no_grad():
        got, want = ours(ids, mask, types), reference(input_ids=ids, attention_mask=mask, token_type_ids=types)
        shown = ours(ids, mask, types, return_probs=True)
    real = mask.bool()
    for out in (got, shown):
        torch.testing.assert_close(out["last_hidden_state"][real], want.last_hidden_state[real], atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(out["pooler_output"], want.pooler_output, atol=1e-5, rtol=1e-4)
    assert len(shown["attentions"]) == 2 and shown["attentions"][0].shape == (batch, 4, length, length)


def test_attention_weights_skip_padding_and_sum_to_one():
    ours, _ = tiny_pair()
    ids, mask, types = inputs()
    with torch.no_grad():
        probs = ours(ids, mask, types, return_probs=True)["attentions"][1]
    torch.testing.assert_close(probs.sum(-1), torch.ones(probs.shape[:-1]))
    assert probs[0, :, :, 7:].abs().max() == 0


def test_token_types_change_the_output_and_default_to_zero():
    ours, _ = tiny_pair()
    ids, mask, types = inputs()
    with torch.no_grad():
        a, b = ours(ids, mask, types)["last_hidden_state"], ours(ids, mask)["last_hidden_state"]
        c = ours(ids, mask, torch.zeros_like(types))["last_hidden_state"]
    assert (a - b).abs().max() > 1e-3 and torch.equal(b, c)


def test_too_long_input_is_refused():
    ours, _ = tiny_pair()
    with pytest.raises(ValueError, match="longer than the 64 positions"):
        ours.embed(torch.zeros(1, 65, dtype=torch.long))


def test_from_hf_names_renames_every_parameter_and_rejects_strangers():
    ours, reference = tiny_pair()
    renamed = bert.from_hf_names(reference.state_dict())
    assert set(renamed) == set(ours.state_dict())
    old_style = {k.replace("LayerNorm.weight", "LayerNorm.gamma"): v for k, v in reference.state_dict().items()}
    assert set(bert.from_hf_names(old_style)) == set(renamed)
    with pytest.raises(KeyError, match="encoder.layer.0.attention.extra.weight"):
        bert.from_hf_names({"encoder.layer.0.attention.extra.weight": torch.zeros(1)})


def test_mean_pool_ignores_padding():
    hidden = torch.arange(12.0).view(1, 4, 3)
    pooled = bert.mean_pool(hidden, torch.tensor([[1, 1, 0, 0]]))
    torch.testing.assert_close(pooled, hidden[0, :2].mean(0, keepdim=True))


def test_masked_lm_head_ties_the_output_matrix_to_the_embeddings():
    ours, _ = tiny_pair()
    head = bert.MaskedLMHead(ours.config, ours.word_embedding)
    scores = head(torch.randn(2, 5, 32))
    assert scores.shape == (2, 5, 99) and head.word_embedding.weight is ours.word_embedding.weight


def test_minilm_loads_and_matches_transformers_to_1e_5():
    model, tokenizer = bert.load_minilm()
    reference = bert.transformers_minilm()
    assert model.config.hidden_size == 384 and model.config.num_hidden_layers == 6 and len(tokenizer) == 30522
    batch = tokenizer.batch(["The bank raised its rates.", "We sat on the river bank and watched the water."])
    with torch.no_grad():
        got, want = model(**batch), reference(**batch)
    real = batch["attention_mask"].bool()
    assert (got["last_hidden_state"] - want.last_hidden_state)[real].abs().max() < 1e-5
    torch.testing.assert_close(got["last_hidden_state"], want.last_hidden_state, atol=1e-5, rtol=1e-3)  # minBERT's check
    torch.testing.assert_close(got["pooler_output"], want.pooler_output, atol=1e-5, rtol=1e-3)


def test_config_from_json_refuses_other_activations(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"hidden_act": "relu", "hidden_size": 8}')
    with pytest.raises(ValueError, match="config.json"):
        bert.BertConfig.from_json(path)


def test_sentence_vectors_are_each_texts_own_mean_in_the_given_order():
    torch.manual_seed(0)
    tokenizer = bert.minilm_tokenizer()
    model = bert.BertModel(bert.BertConfig(**{**TINY, "vocab_size": len(tokenizer.vocab)})).eval()
    texts = ["a much longer sentence than the others, with a comma", "short", "two words", "x y z"]
    vectors = bert.sentence_vectors(model, tokenizer, texts, batch_size=3)
    for row, text in enumerate(texts):  # alone: no padding at all
        batch = tokenizer.batch([text])
        alone = model(**batch)["last_hidden_state"].mean(1)[0]
        assert torch.allclose(vectors[row], alone, atol=1e-5), text


def test_scored_sentiment_accuracy_is_the_accuracy_of_that_head_on_the_minilm_vectors():
    from nlpbook.corpora import rotten_tomatoes

    vectors, labels = bert.review_vectors("valid", 40)
    assert vectors.shape == (40, 384)
    assert labels.tolist() == [review.fresh for review in rotten_tomatoes("valid")[:40]]
    # A head that always answers "fresh" scores the share of fresh reviews; one that reads the
    # vectors' first coordinate scores what that coordinate's sign says.
    always_fresh = {"weight": torch.zeros(2, 384), "bias": torch.tensor([0.0, 1.0])}
    assert bert.scored_sentiment_accuracy(always_fresh, reviews=40) == pytest.approx(labels.float().mean().item())
    first = {"weight": torch.zeros(2, 384), "bias": torch.zeros(2)}
    first["weight"][1, 0] = 1.0
    expected = ((vectors[:, 0] > 0).long() == labels).float().mean().item()
    assert bert.scored_sentiment_accuracy(first, reviews=40) == pytest.approx(expected)
    with pytest.raises(ValueError, match="linear layer's"):
        bert.scored_sentiment_accuracy({"classifier.weight": torch.zeros(2, 384)}, reviews=40)
    with pytest.raises(ValueError, match="weight \\(2, 384\\)"):
        bert.scored_sentiment_accuracy({"weight": torch.zeros(3, 384), "bias": torch.zeros(3)}, reviews=40)
