"""The Transformer of chapter 5 (Vaswani et al., 2017), written out, in both layer layouts.

One class per idea: ``MultiHeadAttention`` (self- or cross-attention), ``FeedForward``,
``EncoderLayer`` and ``DecoderLayer`` (post-LN as in the paper, or pre-LN with
``norm_first=True``), and the two models built from them: ``DecoderOnlyLM`` (a causal language
model) and ``EncoderDecoder`` (a translator).  Parameter names follow ``torch.nn``'s layers, so
``from_torch`` copies the weights of a ``torch.nn.TransformerEncoderLayer`` or
``TransformerDecoderLayer`` and the outputs can be compared.

Masks are boolean and say where attention is **allowed** (True), broadcast to (B, H, T, S):
``causal_mask(T)`` is (T, T), ``key_padding_mask(lengths, S)`` is (B, 1, 1, S).  Shapes: B batch,
T query positions, S key positions, D the model width, H heads of width Dh = D / H.

Generation reads one new token at a time.  A ``KVCache`` per self-attention layer keeps the keys
and values of the tokens read so far, so that each new token computes its own and attends to the
kept ones, instead of the whole prefix going through the model again (tested equal).
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from nlpbook.training import evaluates


def causal_mask(length: int, device=None) -> torch.Tensor:
    """(T, T) bool: query t may attend to keys 0..t."""
    return torch.ones(length, length, dtype=torch.bool, device=device).tril()


def key_padding_mask(lengths: torch.Tensor, length: int) -> torch.Tensor:
    """(B, 1, 1, S) bool: True at the first ``lengths[b]`` keys of row b, False at its padding."""
    return (torch.arange(length, device=lengths.device)[None, :] < lengths[:, None])[:, None, None, :]


def sinusoidal_positions(length: int, width: int) -> torch.Tensor:
    """(T, D) the original encodings: PE[t, 2i] = sin(t / 10000^(2i/D)), PE[t, 2i+1] = cos(the same)."""
    position = torch.arange(length, dtype=torch.float32)[:, None]                           # (T, 1)
    frequency = torch.exp(-math.log(10000.0) * torch.arange(0, width, 2, dtype=torch.float32) / width)  # (D/2,)
    table = torch.zeros(length, width)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency[: width // 2])
    return table


class KVCache:
    """The keys and values one self-attention layer has computed for the tokens read so far,
    (B, H, S, Dh) each, S growing by the tokens of every call.

    A decoder layer's cache also keeps, in :attr:`memory`, its cross-attention's keys and values of
    the source, computed at the first step and read at every later one: the source does not change
    while a sentence is decoded."""

    def __init__(self):
        self.keys = self.values = None
        self._memory: KVCache | None = None

    @property
    def memory(self) -> "KVCache":
        """The cross-attention's keys and values of the source (empty until the first step)."""
        if self._memory is None:
            self._memory = KVCache()
        return self._memory

    def __len__(self) -> int:
        return 0 if self.keys is None else self.keys.shape[2]

    def extend(self, keys, values):
        """Append the new tokens' keys and values (B, H, T, Dh); return all of them so far (B, H, S + T, Dh)."""
        if self.keys is None:
            self.keys, self.values = keys, values
        else:
            self.keys, self.values = torch.cat([self.keys, keys], dim=2), torch.cat([self.values, values], dim=2)
        return self.keys, self.values


class MultiHeadAttention(nn.Module):
    """softmax(Q K^T / sqrt(Dh) + mask) V in H heads; query from one sequence, keys and values from
    another (cross-attention) or the same one (self-attention).

    With ``return_probs`` the weights are computed step by step and returned (for plots); otherwise
    PyTorch's fused ``scaled_dot_product_attention`` computes the same function faster.  With a
    ``cache`` (self-attention while generating), the keys and values of earlier tokens come from it
    and the new tokens' are added to it.  With ``fixed`` (cross-attention while generating), the keys
    and values are computed at the first call and read from it at every later one.

    ``causal`` says that ``mask`` is ``causal_mask(T)``, T queries over as many keys.  The fused call
    then builds that pattern itself (``is_causal``) instead of reading the mask, the same function,
    which lets a GPU use FlashAttention: its kernels take no mask tensor, only this flag."""

    def __init__(self, width: int, heads: int, dropout: float = 0.0):
        super().__init__()
        if width % heads:
            raise ValueError(f"the width {width} is not divisible by {heads} heads")
        self.heads, self.head_width = heads, width // heads
        self.q, self.k, self.v, self.out = (nn.Linear(width, width) for _ in range(4))
        self.dropout = nn.Dropout(dropout)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.heads, self.head_width).transpose(1, 2)                 # (B, H, T, Dh)

    def forward(self, query, key, value, mask=None, return_probs: bool = False, cache: KVCache | None = None,
                causal: bool = False, fixed: KVCache | None = None):
        q = self.split(self.q(query))                                                   # (B, H, T, Dh)
        if fixed is not None and len(fixed):
            k, v = fixed.keys, fixed.values                                             # (B, H, S, Dh)
        else:
            k, v = self.split(self.k(key)), self.split(self.v(value))                   # (B, H, S, Dh)
            if fixed is not None:
                fixed.extend(k, v)
        if cache is not None:
            k, v = cache.extend(k, v)                                                   # (B, H, S, Dh), S = kept + T
        if causal and q.shape[2] != k.shape[2]:
            # is_causal aligns the triangle to the first key, so queries after a cache would
            # lose the kept keys: there the caller's mask (T, S) is the right one
            raise ValueError(f"causal=True needs as many keys as queries, got {k.shape[2]} keys "
                             f"for {q.shape[2]} queries; pass the mask instead")
        if not return_probs:  # the same function, fused: the (B, H, T, S) weights never reach memory
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=None if causal else mask,
                                                     dropout_p=self.dropout.p if self.training else 0.0,
                                                     is_causal=causal)
            return self.merge(context)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_width)                   # (B, H, T, S)
        if causal and mask is None:  # the triangle the fused path builds for itself
            mask = causal_mask(q.shape[2], q.device)                                    # (T, T)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        # a query that sees no key gets zeros, as the fused path gives it (chapter 4's two-sided guard)
        blocked = torch.isneginf(scores).all(dim=-1, keepdim=True)                      # (B, H, T, 1)
        probs = torch.softmax(scores.masked_fill(blocked, 0.0), dim=-1).masked_fill(blocked, 0.0)
        context = self.dropout(probs) @ v                                               # (B, H, T, Dh)
        return self.merge(context), probs

    def merge(self, context):
        B, H, T, Dh = context.shape
        return self.out(context.transpose(1, 2).reshape(B, T, H * Dh))                  # (B, H, T, Dh) -> (B, T, D)


class FeedForward(nn.Module):
    """The position-wise network: linear2(dropout(gelu(linear1(x)))), applied to every position alone."""

    def __init__(self, width: int, hidden: int, dropout: float = 0.0):
        super().__init__()
        self.linear1, self.linear2 = nn.Linear(width, hidden), nn.Linear(hidden, width)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):                                                               # (B, T, D)
        return self.linear2(self.dropout(F.gelu(self.linear1(x))))                     # (B, T, D)


class EncoderLayer(nn.Module):
    """Self-attention and feed-forward, each wrapped in a residual connection and a LayerNorm.

    post-LN (the paper): x = LN(x + Sublayer(x));  pre-LN (``norm_first``): x = x + Sublayer(LN(x))."""

    def __init__(self, width: int, heads: int, hidden: int, dropout: float = 0.0, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(width, heads, dropout)
        self.feed_forward = FeedForward(width, hidden, dropout)
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)

    def attend(self, x, mask, cache=None, causal=False):
        return self.dropout1(self.self_attn(x, x, x, mask, cache=cache, causal=causal))

    def forward(self, x, mask=None, cache=None, causal=False):                          # (B, T, D)
        if self.norm_first:
            x = x + self.attend(self.norm1(x), mask, cache, causal)
            return x + self.dropout2(self.feed_forward(self.norm2(x)))
        x = self.norm1(x + self.attend(x, mask, cache, causal))
        return self.norm2(x + self.dropout2(self.feed_forward(x)))


class DecoderLayer(nn.Module):
    """Masked self-attention over the target, cross-attention to the encoder's output (the memory),
    then feed-forward; each in a residual block, post-LN or pre-LN like ``EncoderLayer``."""

    def __init__(self, width: int, heads: int, hidden: int, dropout: float = 0.0, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(width, heads, dropout)
        self.cross_attn = MultiHeadAttention(width, heads, dropout)
        self.feed_forward = FeedForward(width, hidden, dropout)
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(width), nn.LayerNorm(width), nn.LayerNorm(width)
        self.dropout1, self.dropout2, self.dropout3 = nn.Dropout(dropout), nn.Dropout(dropout), nn.Dropout(dropout)

    def forward(self, y, memory, self_mask=None, memory_mask=None, cache=None, causal=False):  # y (B, T, D), memory (B, S, D)
        self_block = lambda z: self.dropout1(self.self_attn(z, z, z, self_mask, cache=cache, causal=causal))
        fixed = cache.memory if cache is not None else None  # the source's keys and values, computed once
        cross_block = lambda z: self.dropout2(self.cross_attn(z, memory, memory, memory_mask, fixed=fixed))
        feed_block = lambda z: self.dropout3(self.feed_forward(z))
        for block, norm in ((self_block, self.norm1), (cross_block, self.norm2), (feed_block, self.norm3)):
            y = y + block(norm(y)) if self.norm_first else norm(y + block(y))
        return y                                                                        # (B, T, D)


def from_torch(torch_layer: nn.Module) -> nn.Module:
    """An ``EncoderLayer`` or ``DecoderLayer`` with the weights of a ``torch.nn.TransformerEncoderLayer``
    or ``TransformerDecoderLayer`` (GELU, batch_first), in the same layout and on the same device."""
    decoder = isinstance(torch_layer, nn.TransformerDecoderLayer)
    if not decoder and not isinstance(torch_layer, nn.TransformerEncoderLayer):
        raise TypeError(f"expected a TransformerEncoderLayer or TransformerDecoderLayer, got {type(torch_layer).__name__}")
    if torch_layer.activation is not F.gelu:
        raise ValueError("our layers use GELU: build the torch layer with activation='gelu'")
    attention = torch_layer.self_attn
    width, heads = attention.embed_dim, attention.num_heads
    kind = DecoderLayer if decoder else EncoderLayer
    layer = kind(width, heads, torch_layer.linear1.out_features, torch_layer.dropout.p, torch_layer.norm_first)
    state = {}
    for ours, theirs in (("self_attn", "self_attn"), ("cross_attn", "multihead_attn")) if decoder else (("self_attn", "self_attn"),):
        source = getattr(torch_layer, theirs)
        for name, weight, bias in zip("qkv", source.in_proj_weight.chunk(3), source.in_proj_bias.chunk(3)):
            state[f"{ours}.{name}.weight"], state[f"{ours}.{name}.bias"] = weight, bias
        state[f"{ours}.out.weight"], state[f"{ours}.out.bias"] = source.out_proj.weight, source.out_proj.bias
    for name in ("linear1", "linear2"):
        for part in ("weight", "bias"):
            state[f"feed_forward.{name}.{part}"] = getattr(getattr(torch_layer, name), part)
    for name in ("norm1", "norm2", "norm3") if decoder else ("norm1", "norm2"):
        for part in ("weight", "bias"):
            state[f"{name}.{part}"] = getattr(getattr(torch_layer, name), part)
    weight = torch_layer.linear1.weight
    layer.to(device=weight.device, dtype=weight.dtype)  # before copying, so that float64 weights stay float64
    layer.load_state_dict({k: v.detach().clone() for k, v in state.items()})
    return layer


def sampling_probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None) -> torch.Tensor:
    """(..., V) logits -> (..., V) probabilities of softmax(logits / temperature), kept to the ``top_k``
    likeliest tokens and renormalized; ``temperature=0`` means greedy (all mass on the argmax)."""
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be at least 1 (or None for every token), got {top_k}")
    if temperature == 0:
        return F.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = logits.topk(top_k, dim=-1).values[..., -1:]                               # (..., 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return torch.softmax(logits, dim=-1)


class DecoderOnlyLM(nn.Module):
    """A GPT-style language model: token and learned position embeddings, ``layers`` causal
    self-attention layers (pre-LN by default, with a final LayerNorm), and a linear map to the vocabulary.

    ``init="gpt2"`` draws every weight matrix and embedding from N(0, 0.02²), the maps that write
    into the residual stream (attention's output, the feed-forward's second layer) from
    N(0, 0.02² / (2 x layers)) so that the stream's variance does not grow with depth, and zeroes the
    biases (GPT-2's scheme); ``"torch"`` keeps PyTorch's defaults.  ``tie`` makes the output layer
    use the embedding table as its weights (Press and Wolf, 2017): one table for reading and writing
    tokens, ``vocab_size x width`` fewer weights; it needs the small embeddings of ``init="gpt2"``
    (with PyTorch's N(0, 1) embeddings the first logits would be about sqrt(width) large)."""

    def __init__(self, vocab_size: int, width: int = 128, heads: int = 4, layers: int = 4, context: int = 128,
                 dropout: float = 0.0, norm_first: bool = True, tie: bool = False, init: str = "torch"):
        super().__init__()
        if init not in ("torch", "gpt2"):
            raise ValueError(f"init must be 'torch' or 'gpt2', got {init!r}")
        if tie and init == "torch":
            # PyTorch draws embeddings from N(0, 1): as output weights they make the first logits
            # about sqrt(width) large, a first loss of ~90 nats at width 128, and training diverges.
            raise ValueError("tie=True needs init='gpt2': PyTorch's N(0, 1) embeddings, used as the output "
                             "layer's weights, give logits about sqrt(width) times too large")
        self.context = context
        self.embed = nn.Embedding(vocab_size, width)
        self.position = nn.Embedding(context, width)
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(EncoderLayer(width, heads, 4 * width, dropout, norm_first) for _ in range(layers))
        self.norm = nn.LayerNorm(width) if norm_first else nn.Identity()  # pre-LN leaves the last sum unnormalized
        self.out = nn.Linear(width, vocab_size)
        if init == "gpt2":
            for name, parameter in self.named_parameters():
                if name.endswith("bias"):
                    nn.init.zeros_(parameter)
                elif parameter.dim() >= 2:
                    residual = name.endswith(("self_attn.out.weight", "feed_forward.linear2.weight"))
                    nn.init.normal_(parameter, std=0.02 / math.sqrt(2 * layers) if residual else 0.02)
        if tie:
            self.out.weight = self.embed.weight

    def inputs(self, ids, start: int = 0):
        """What the first layer reads, before dropout, and the causal mask, for tokens at positions
        ``start`` to ``start + T - 1`` after ``start`` already read: (B, T, D), (T, start + T)."""
        T = ids.shape[1]
        if start + T > self.context:
            raise ValueError(f"{start + T} tokens exceed the context of {self.context}")
        x = self.embed(ids) + self.position(torch.arange(start, start + T, device=ids.device))  # (B, T, D)
        return x, causal_mask(start + T, ids.device)[start:]

    def forward(self, ids, caches: list[KVCache] | None = None):                       # (B, T)
        """Logits (B, T, V).  With ``caches`` (one per layer), ``ids`` continue the tokens the caches
        hold, and their keys and values are added to them."""
        start = len(caches[0]) if caches else 0
        x, mask = self.inputs(ids, start)
        x = self.dropout(x)                                                             # (B, T, D)
        causal = start == 0  # nothing kept: the mask is the square causal one, fused attention builds it
        for layer, cache in zip(self.layers, caches or [None] * len(self.layers)):
            x = layer(x, mask, cache, causal)
        return self.out(self.norm(x))                                                   # (B, T, V)

    @torch.no_grad()
    @evaluates
    def attention_maps(self, ids) -> list[torch.Tensor]:
        """The attention weights of every layer for ``ids`` (B, T): a list of (B, H, T, T), for plots."""
        x, mask = self.inputs(ids)
        maps = []
        for layer in self.layers:
            seen = layer.norm1(x) if layer.norm_first else x  # what the attention reads, in either layout
            maps.append(layer.self_attn(seen, seen, seen, mask, return_probs=True)[1])  # (B, H, T, T)
            x = layer(x, mask)
        return maps

    @torch.no_grad()
    @evaluates
    def generate(self, ids, new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
                 generator: torch.Generator | None = None, cache: bool = True):
        """Extend ``ids`` (B, T) by ``new_tokens`` sampled tokens.

        The model reads a window of at most ``context`` tokens.  With ``cache``, it reads the window
        once and then one token a step, keeping every layer's keys and values (``KVCache``).  When
        the window is full it starts again from the last half of it and carries on: learned
        positions cannot slide by one token without reading the window again, so each token sees
        between half and all of the context.  ``cache=False`` reads every step's window whole, the
        same windows, and gives the same tokens.  It samples in eval mode (no dropout) and leaves the
        model in the mode it found it in."""
        if ids.dim() != 2 or ids.shape[1] < 1:
            raise ValueError(f"generate needs a prompt of at least one token a row, (B, T), got {tuple(ids.shape)}")
        if self.context < 2:
            raise ValueError(f"generate restarts from the last half of the context, which a context of "
                             f"{self.context} does not have")
        window = max(0, ids.shape[1] - self.context)  # where the window starts in ids
        caches = None
        for _ in range(new_tokens):
            if ids.shape[1] - window > self.context:   # full: restart from the last half
                window, caches = ids.shape[1] - self.context // 2, None
            if not cache:
                logits = self(ids[:, window:])[:, -1]                                   # (B, V)
            elif caches is None:                       # read the window once, keeping keys and values
                caches = [KVCache() for _ in self.layers]
                logits = self(ids[:, window:], caches)[:, -1]
            else:                                      # then only the token sampled last
                logits = self(ids[:, -1:], caches)[:, -1]
            probs = sampling_probs(logits.float(), temperature, top_k)
            ids = torch.cat([ids, torch.multinomial(probs.cpu(), 1, generator=generator).to(ids.device)], dim=1)
        return ids


class EncoderDecoder(nn.Module):
    """The translator of Vaswani et al. (2017) in outline: embeddings scaled by sqrt(D) plus sinusoidal
    positions, an encoder stack, a decoder stack with cross-attention, and a linear map to the target
    vocabulary.  It differs from the paper's in four ways: its layers are pre-LN by default (the
    paper's are post-LN: ``norm_first=False``), its feed-forward networks use GELU (the paper's
    ReLU), the two languages have separate embedding tables and an untied output map (the paper
    shares one table among all three over a joint vocabulary), and the loss has no label smoothing
    (``nlpbook.translation`` trains it on plain cross-entropy).
    Id 0 is padding in both languages."""

    def __init__(self, source_vocab: int, target_vocab: int, width: int = 128, heads: int = 4,
                 encoder_layers: int = 2, decoder_layers: int = 2, hidden: int | None = None,
                 dropout: float = 0.1, norm_first: bool = True, max_length: int = 256):
        super().__init__()
        hidden = hidden or 4 * width
        self.width, self.norm_first = width, norm_first
        self.source_embed = nn.Embedding(source_vocab, width, padding_idx=0)
        self.target_embed = nn.Embedding(target_vocab, width, padding_idx=0)
        for table in (self.source_embed, self.target_embed):  # std D^-1/2, so that x sqrt(D) is about as large as the positions
            nn.init.normal_(table.weight, std=width ** -0.5)
            table.weight.data[0] = 0.0
        self.register_buffer("positions", sinusoidal_positions(max_length, width), persistent=False)
        self.dropout = nn.Dropout(dropout)
        self.encoder = nn.ModuleList(EncoderLayer(width, heads, hidden, dropout, norm_first) for _ in range(encoder_layers))
        self.decoder = nn.ModuleList(DecoderLayer(width, heads, hidden, dropout, norm_first) for _ in range(decoder_layers))
        self.encoder_norm = nn.LayerNorm(width) if norm_first else nn.Identity()
        self.decoder_norm = nn.LayerNorm(width) if norm_first else nn.Identity()
        self.out = nn.Linear(width, target_vocab)

    def _embed(self, table, ids, start: int = 0):                                       # (B, T) -> (B, T, D)
        """Scaled embeddings plus the positions of tokens ``start`` to ``start + T - 1``."""
        if start + ids.shape[1] > len(self.positions):
            raise ValueError(f"positions {start} to {start + ids.shape[1] - 1} are past the model's "
                             f"{len(self.positions)} (max_length)")
        return self.dropout(table(ids) * math.sqrt(self.width) + self.positions[start:start + ids.shape[1]])

    def encode(self, source, lengths):
        """Memory (B, S, D) and its mask (B, 1, 1, S)."""
        mask = key_padding_mask(lengths.to(source.device), source.shape[1])
        x = self._embed(self.source_embed, source)
        for layer in self.encoder:
            x = layer(x, mask)
        return self.encoder_norm(x), mask

    def decode(self, target_in, memory, memory_mask, caches: list[KVCache] | None = None):
        """Logits (B, T, V) for the next token after every prefix of ``target_in`` (B, T).  With
        ``caches`` (one per decoder layer), ``target_in`` continues the tokens they hold."""
        start = len(caches[0]) if caches else 0
        y = self._embed(self.target_embed, target_in, start)                            # (B, T, D)
        self_mask = causal_mask(start + target_in.shape[1], target_in.device)[start:]   # (T, start + T)
        for layer, cache in zip(self.decoder, caches or [None] * len(self.decoder)):
            y = layer(y, memory, self_mask, memory_mask, cache, causal=start == 0)
        return self.out(self.decoder_norm(y))

    def forward(self, source, lengths, target_in):
        """Teacher forcing, like ``nlpbook.seq2seq.Seq2Seq``: logits (B, T, V)."""
        return self.decode(target_in, *self.encode(source, lengths))
