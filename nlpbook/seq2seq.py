"""An LSTM encoder-decoder for translation, with optional attention (Luong et al., 2015).

Chapter 3 trains it and chapter 5 compares Transformers with it, so it lives here once.  The
decoding algorithms (greedy and beam search) are the chapter's exercise and are not part of
the package: the model exposes ``encode`` and ``decode_step`` for them.

Shapes: sources (B, S) with lengths (B,); target inputs (B, T); E the embedding width, H the
hidden width.  The encoder is a bidirectional LSTM whose two final states are projected to
the decoder's initial state; the decoder is a one-directional LSTM.  With attention, each
decoder state h_t scores every encoder state (general form: h_t^T W_a s_j), the softmax over
the real (unpadded) source positions weights a context vector, and tanh(W_c [h_t ; context]),
Luong et al.'s attentional vector, feeds the output layer.
"""
from __future__ import annotations

import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, vocab_size: int, embed: int, hidden: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed, padding_idx=0)
        self.lstm = nn.LSTM(embed, hidden, batch_first=True, bidirectional=True)
        self.bridge_h = nn.Linear(2 * hidden, hidden)
        self.bridge_c = nn.Linear(2 * hidden, hidden)

    def forward(self, source, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(source), lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        states, (h, c) = self.lstm(packed)
        states, _ = nn.utils.rnn.pad_packed_sequence(states, batch_first=True, total_length=source.shape[1])  # (B, S, 2H)
        h = torch.tanh(self.bridge_h(torch.cat([h[0], h[1]], dim=-1)))  # both directions' last states -> (B, H)
        c = self.bridge_c(torch.cat([c[0], c[1]], dim=-1))
        return states, (h[None], c[None])  # (B, S, 2H), ((1, B, H), (1, B, H))


class Seq2Seq(nn.Module):
    """Encoder-decoder; ``attention=False`` is the plain model whose only link is the initial state."""

    def __init__(self, source_vocab: int, target_vocab: int, embed: int = 128, hidden: int = 256,
                 attention: bool = False):
        super().__init__()
        self.attention = attention
        self.encoder = Encoder(source_vocab, embed, hidden)
        self.embed = nn.Embedding(target_vocab, embed, padding_idx=0)
        self.decoder = nn.LSTM(embed, hidden, batch_first=True)
        if attention:
            self.score = nn.Linear(2 * hidden, hidden, bias=False)  # W_a: encoder states into the decoder's space
            self.combine = nn.Linear(hidden + 2 * hidden, hidden)
        self.out = nn.Linear(hidden, target_vocab)

    def encode(self, source, lengths):
        """What the decoder needs: (encoder states, source mask, decoder state)."""
        states, decoder_state = self.encoder(source, lengths)
        mask = torch.arange(source.shape[1], device=source.device)[None, :] < lengths.to(source.device)[:, None]  # (B, S)
        return states, mask, decoder_state

    def _logits(self, outputs, states, mask):
        """outputs (B, T, H) -> logits (B, T, V) and the attention weights (B, T, S) or None."""
        if not self.attention:
            return self.out(outputs), None
        scores = outputs @ self.score(states).transpose(1, 2)  # (B, T, H) @ (B, H, S) -> (B, T, S)
        scores = scores.masked_fill(~mask[:, None, :], float("-inf"))  # padding is never attended to
        weights = torch.softmax(scores, dim=-1)
        context = weights @ states  # (B, T, S) @ (B, S, 2H) -> (B, T, 2H)
        return self.out(torch.tanh(self.combine(torch.cat([outputs, context], dim=-1)))), weights

    def forward(self, source, lengths, target_in):
        """Teacher forcing: logits (B, T, V) for every next token of ``target_in`` (BOS first)."""
        states, mask, decoder_state = self.encode(source, lengths)
        outputs, _ = self.decoder(self.embed(target_in), decoder_state)  # (B, T, H)
        return self._logits(outputs, states, mask)[0]

    def decode_step(self, tokens, memory):
        """One decoding step.  ``memory`` = (encoder states, mask, decoder state) from :meth:`encode`
        (rows may be repeated or reordered, for beam search).  Returns log-probabilities (B, V),
        the new memory, and the attention weights (B, S) or None."""
        states, mask, decoder_state = memory
        output, decoder_state = self.decoder(self.embed(tokens[:, None]), decoder_state)  # (B, 1, H)
        logits, weights = self._logits(output, states, mask)
        return (torch.log_softmax(logits[:, 0], dim=-1), (states, mask, decoder_state),
                None if weights is None else weights[:, 0])
