"""nlpbook.bert against transformers.BertModel: a tiny random BERT with copied weights, then the real checkpoint."""
import math

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
    # NaN scores would all answer the first label, whose share is a plausible accuracy
    nan_head = {"weight": torch.full((2, 384), float("nan")), "bias": torch.zeros(2)}
    assert math.isnan(bert.scored_sentiment_accuracy(nan_head, reviews=40))


def test_sentence_classifier_reads_the_mean_of_the_real_tokens():
    torch.manual_seed(0)
    model = bert.SentenceClassifier(bert.BertModel(bert.BertConfig(**TINY)), num_labels=3).eval()
    ids, mask, _ = inputs()
    logits = model(ids, mask)
    assert logits.shape == (3, 3)
    # The padded row scores as it does alone, without its padding.
    assert torch.allclose(logits[0], model(ids[:1, :7], mask[:1, :7])[0], atol=1e-5)
    hidden = model.encoder(ids, mask)["last_hidden_state"]
    assert torch.allclose(logits, model.classifier(bert.mean_pool(hidden, mask)), atol=1e-6)


def test_train_top_layers_freezes_the_embeddings_and_the_lower_layers():
    model = bert.SentenceClassifier(bert.BertModel(bert.BertConfig(**TINY)))
    trained = bert.train_top_layers(model, 1)
    assert trained == [name for name, p in model.named_parameters() if p.requires_grad]
    assert all(name.startswith(("encoder.bert_layers.1.", "classifier.")) for name in trained)
    assert any(name.startswith("classifier.") for name in trained) and len(trained) == 16 + 2
    assert bert.train_top_layers(model, 0) == ["classifier.weight", "classifier.bias"]
    assert len(bert.train_top_layers(model, 2)) == 2 * 16 + 2
    with pytest.raises(ValueError, match="between 0 and the encoder's 2"):
        bert.train_top_layers(model, 3)


def test_review_batches_go_through_every_review_once_an_epoch_in_the_generators_order():
    from nlpbook.corpora import rotten_tomatoes

    tokenizer = bert.minilm_tokenizer()
    reviews = rotten_tomatoes("train")[:10]
    batches = bert.review_batches(reviews, tokenizer, 4, torch.Generator().manual_seed(3))
    epoch = [next(batches) for _ in range(3)]  # 4 + 4 + 2 reviews
    assert [len(labels) for _, labels in epoch] == [4, 4, 2]
    seen = sorted(tokenizer.decode(ids[mask == 1][1:-1]) for inputs, _ in epoch
                  for ids, mask in zip(inputs["input_ids"], inputs["attention_mask"]))
    assert seen == sorted(tokenizer.decode(tokenizer.batch([r.text])["input_ids"][0][1:-1]) for r in reviews)
    again = bert.review_batches(reviews, tokenizer, 4, torch.Generator().manual_seed(3))
    assert all(torch.equal(next(again)[1], labels) for _, labels in epoch)
    with pytest.raises(ValueError, match="at least one review"):
        next(bert.review_batches([], tokenizer, 4, torch.Generator()))


def test_scored_fine_tuned_accuracy_puts_the_weights_into_minilm():
    from nlpbook.corpora import rotten_tomatoes

    encoder, tokenizer = bert.load_minilm()
    torch.manual_seed(0)
    model = bert.SentenceClassifier(encoder).eval()
    reviews = rotten_tomatoes("valid")[:30]
    # A classifier that always answers "fresh", and one whose top layer is changed too.
    always_fresh = {"classifier.weight": torch.zeros(2, 384), "classifier.bias": torch.tensor([0.0, 1.0])}
    fresh_share = sum(review.fresh for review in reviews) / 30
    assert bert.scored_fine_tuned_accuracy(always_fresh, reviews=30) == pytest.approx(fresh_share)
    state = {name: value.clone() for name, value in model.state_dict().items()
             if name.startswith(("encoder.bert_layers.5.", "classifier."))}
    state["encoder.bert_layers.5.out_dense.weight"] *= 0.5
    model.load_state_dict(state, strict=False)
    assert bert.scored_fine_tuned_accuracy(state, reviews=30) == pytest.approx(
        bert.classifier_accuracy(model, tokenizer, reviews))
    with pytest.raises(ValueError, match="classifier's"):
        bert.scored_fine_tuned_accuracy({"classifier.weight": torch.zeros(2, 384)}, reviews=30)
    with pytest.raises(ValueError, match="no weight named 'head.weight'"):
        bert.scored_fine_tuned_accuracy({**always_fresh, "head.weight": torch.zeros(2)}, reviews=30)
    with pytest.raises(ValueError, match="classifier.weight should be \\(2, 384\\)"):
        bert.scored_fine_tuned_accuracy({**always_fresh, "classifier.weight": torch.zeros(3, 384)}, reviews=30)


def test_scored_fine_tuned_accuracy_runs_only_the_layers_a_state_changes():
    # The grader starts from MiniLM's own outputs below the lowest layer a student changed: the
    # logits, and so the accuracy, must be exactly those of the whole model with the weights put in.
    from nlpbook.corpora import rotten_tomatoes

    encoder, tokenizer = bert.load_minilm()
    model = bert.SentenceClassifier(encoder).eval()
    names = bert.train_top_layers(model, 2)
    torch.manual_seed(1)
    state = {name: value + 0.05 * torch.randn_like(value) for name, value in model.state_dict().items() if name in names}
    assert bert.pretrained_layers(state, 6) == 4
    model.load_state_dict(state, strict=False)
    reviews = rotten_tomatoes("valid")[:70]
    whole = bert.classifier_accuracy(model, tokenizer, reviews, batch_size=128)
    bert.pretrained_hidden.cache_clear()
    assert bert.scored_fine_tuned_accuracy(state, reviews=70) == whole
    assert bert.scored_fine_tuned_accuracy(state, reviews=70) == whole
    assert bert.pretrained_hidden.cache_info().hits == 1  # the bottom four layers ran once for both
    # A changed embedding changes every layer's input: the whole model runs, with no stored states.
    embedded = {**state, "encoder.pos_embedding.weight": model.state_dict()["encoder.pos_embedding.weight"] * 0.9}
    model.load_state_dict(embedded, strict=False)
    bert.pretrained_hidden.cache_clear()
    assert bert.scored_fine_tuned_accuracy(embedded, reviews=70) == bert.classifier_accuracy(model, tokenizer, reviews)
    assert bert.pretrained_hidden.cache_info().misses == 0


def test_pretrained_layers_is_the_lowest_layer_a_state_names():
    assert bert.pretrained_layers(["classifier.weight", "classifier.bias"], 6) == 6
    assert bert.pretrained_layers(["encoder.bert_layers.5.out_dense.weight", "encoder.bert_layers.3.interm_dense.bias",
                                   "classifier.bias"], 6) == 3
    assert bert.pretrained_layers(["encoder.bert_layers.0.attention_dense.weight"], 6) == 0
    assert bert.pretrained_layers(["encoder.pooler_dense.weight", "encoder.bert_layers.5.out_dense.weight"], 6) == 0
    assert bert.pretrained_layers(["encoder.word_embedding.weight"], 6) == 0


def test_masked_lm_head_matches_transformers():
    from transformers import BertConfig as HFConfig
    from transformers.models.bert.modeling_bert import BertLMPredictionHead
    tiny = dict(vocab_size=99, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=37)
    torch.manual_seed(0)
    ours = bert.MaskedLMHead(bert.BertConfig(**tiny), torch.nn.Embedding(99, 32))
    reference = BertLMPredictionHead(HFConfig(**tiny))
    with torch.no_grad():
        for p in list(ours.parameters()):
            p.add_(0.1 * torch.randn_like(p))
        reference.transform.dense.load_state_dict(ours.dense.state_dict())
        reference.transform.LayerNorm.load_state_dict(ours.layer_norm.state_dict())
        reference.decoder.weight.copy_(ours.word_embedding.weight)
        reference.decoder.bias.copy_(ours.bias)
    x = torch.randn(2, 5, 32)
    torch.testing.assert_close(ours(x), reference(x), atol=1e-5, rtol=1e-4)


def test_bert_starts_from_bert_initialisation():
    torch.manual_seed(0)
    model = bert.BertModel(bert.BertConfig(vocab_size=500, hidden_size=64, num_hidden_layers=2,
                                           num_attention_heads=4, intermediate_size=128))
    assert model.word_embedding.weight[1:].std().item() == pytest.approx(0.02, rel=0.1)
    assert model.bert_layers[1].interm_dense.weight.std().item() == pytest.approx(0.02, rel=0.1)
    assert (model.word_embedding.weight[0] == 0).all() and (model.bert_layers[0].out_dense.bias == 0).all()
