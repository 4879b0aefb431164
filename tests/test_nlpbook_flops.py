"""nlpbook.flops: the weights counted as matrix products, and FLOPs per token as PaLM counts them."""
from __future__ import annotations

import torch.nn as nn

from nlpbook.charlm import CharRNN
from nlpbook.flops import matrix_weights, peak_flops, training_flops_per_token
from nlpbook.transformer import DecoderOnlyLM


def test_linear_maps_and_recurrent_matrices_count_biases_tables_and_norms_do_not():
    model = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 3), nn.LayerNorm(3), nn.LSTM(3, 5, num_layers=2))
    assert matrix_weights(model) == 4 * 3 + (4 * 5 * 3 + 4 * 5 * 5) + (4 * 5 * 5 + 4 * 5 * 5)


def test_a_tied_output_map_counts_once_as_a_product():
    tied = DecoderOnlyLM(11, width=16, heads=2, layers=1, context=8, tie=True, init="gpt2")
    untied = DecoderOnlyLM(11, width=16, heads=2, layers=1, context=8, tie=False)
    assert matrix_weights(tied) == matrix_weights(untied)  # the embedding is a look-up either way
    # attention: q, k, v and output maps (4 W^2), the MLP (8 W^2), the output map (V W)
    assert matrix_weights(tied) == 12 * 16 * 16 + 11 * 16


def test_flops_per_token_are_six_per_weight_plus_the_attention_products():
    model = CharRNN(7, embed=4, hidden=6, cell="lstm")
    assert training_flops_per_token(model) == 6 * matrix_weights(model)
    lm = DecoderOnlyLM(11, width=16, heads=2, layers=3, context=8)
    assert (training_flops_per_token(lm, attention_layers=3, width=16, context=8)
            == 6 * matrix_weights(lm) + 12 * 3 * 16 * 8)


def test_known_chips_have_a_peak_and_others_none():
    assert peak_flops("NVIDIA H100 80GB HBM3") == 989e12
    assert peak_flops("NVIDIA H100 PCIe") == 756e12
    assert peak_flops("NVIDIA L40") == 181e12 and peak_flops("NVIDIA L4") == 121e12  # not the L4's
    assert peak_flops("NVIDIA L40S") == 362e12  # not the L40's
    assert peak_flops("NVIDIA H100 NVL") == 835e12
    assert peak_flops("NVIDIA H200") == 989e12 and peak_flops("NVIDIA H200 NVL") == 835e12


def test_pytorchs_own_attention_and_recurrent_cells_count_their_products():
    # nn.MultiheadAttention keeps q, k and v in one in_proj_weight (3 D^2) beside its out_proj Linear
    layer = nn.TransformerEncoderLayer(32, 4, 64)
    assert matrix_weights(layer) == 4 * 32 * 32 + 2 * 32 * 64
    assert matrix_weights(nn.LSTMCell(8, 16)) == 4 * 16 * (8 + 16)
    assert matrix_weights(nn.GRUCell(8, 16)) == 3 * 16 * (8 + 16)
    assert peak_flops("Some other chip") is None
