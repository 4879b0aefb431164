import copy

import pytest
import torch
import torch.nn.functional as F

from nlpbook.seq2seq import Encoder, Seq2Seq
from nlpbook.parallel import BOS, EOS, build_vocabularies, number_pairs, to_tensors


def test_tensors_are_padded_and_framed():
    splits = number_pairs("fr", size=20, max_value=99)
    source_vocab, target_vocab = build_vocabularies(splits.train)
    source, lengths, target = to_tensors(splits.train[:4], source_vocab, target_vocab)
    assert source.shape == (4, int(lengths.max())) and (source[0, lengths[0]:] == 0).all()
    assert (target[:, 0] == target_vocab.index(BOS)).all()
    for row, pair in zip(target, splits.train[:4]):
        assert target_vocab.decode(row[1:len(pair.target) + 1]) == list(pair.target)
        assert int(row[len(pair.target) + 1]) == target_vocab.index(EOS)


@pytest.mark.parametrize("attention", [False, True])
def test_decode_steps_reproduce_teacher_forcing(attention):
    torch.manual_seed(0)
    model = Seq2Seq(11, 13, embed=8, hidden=12, attention=attention).eval()
    source = torch.tensor([[3, 4, 5, 6], [7, 8, 0, 0]])
    lengths = torch.tensor([4, 2])
    target_in = torch.tensor([[2, 5, 6], [2, 9, 10]])
    with torch.no_grad():
        expected = torch.log_softmax(model(source, lengths, target_in), dim=-1)  # (B, T, V)
        memory = model.encode(source, lengths)
        for t in range(3):
            log_probs, memory, weights = model.decode_step(target_in[:, t], memory)
            assert torch.allclose(log_probs, expected[:, t], atol=1e-5)
            if attention:
                assert torch.allclose(weights.sum(-1), torch.ones(2)) and (weights[1, 2:] == 0).all()
            else:
                assert weights is None


def test_padding_does_not_change_the_encoding():
    torch.manual_seed(0)
    model = Seq2Seq(11, 13, embed=8, hidden=12, attention=True).eval()
    target_in = torch.tensor([[2, 5]])
    with torch.no_grad():
        short = model(torch.tensor([[3, 4]]), torch.tensor([2]), target_in)
        padded = model(torch.tensor([[3, 4, 0, 0, 0]]), torch.tensor([2]), target_in)
    assert torch.allclose(short, padded, atol=1e-6)


def test_the_model_learns_to_translate_small_numbers():
    torch.manual_seed(0)
    splits = number_pairs("fr", size=100, max_value=99, fractions=(1.0, 0.0, 0.0))
    source_vocab, target_vocab = build_vocabularies(splits.train)
    source, lengths, target = to_tensors(splits.train, source_vocab, target_vocab)
    model = Seq2Seq(len(source_vocab), len(target_vocab), embed=16, hidden=32, attention=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(60):
        logits = model(source, lengths, target[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), target[:, 1:].flatten(), ignore_index=0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.3 * losses[0]


def test_the_decoder_starts_from_both_directions_of_the_encoder():
    # The bridge reads the forward and the backward LSTM's last states: changing either
    # direction's weights alone changes the decoder's initial state and cell.
    torch.manual_seed(0)
    encoder = Encoder(vocab_size=7, embed=4, hidden=5)
    source, lengths = torch.tensor([[1, 2, 3, 4], [5, 6, 0, 0]]), torch.tensor([4, 2])
    _, (h, c) = encoder(source, lengths)
    for direction in ("weight_ih_l0", "weight_ih_l0_reverse"):
        changed = copy.deepcopy(encoder)
        with torch.no_grad():
            getattr(changed.lstm, direction).add_(0.5)
        _, (h2, c2) = changed(source, lengths)
        assert not torch.allclose(h, h2) and not torch.allclose(c, c2), direction
