"""How much arithmetic a language model's training costs: FLOPs per token, counted as PaLM does.

Training a weight that takes part in a matrix product costs 6 FLOPs per token (2 in the forward
pass, 4 in the backward pass); a Transformer's attention adds its two products, 12 x layers x width
x context per token (Chowdhery et al., 2022, appendix B).  Embedding look-ups, biases and norms are
left out: they are a rounding error beside the products.  Model FLOP utilisation is then
FLOPs per token x tokens a second / the chip's peak.
"""
from __future__ import annotations

import torch.nn as nn

# Dense bfloat16 tensor-core peaks, in FLOP/s, from the vendors' data sheets (SXM parts unless named).
# Longer names first: the first key found in the device's name wins ("L40" must not read as "L4").
PEAKS = {"H200 NVL": 835e12, "H200": 989e12, "H100 PCIe": 756e12, "H100 NVL": 835e12, "H100": 989e12, "A100": 312e12,
         "L40S": 362e12, "L40": 181e12, "L4": 121e12}


def matrix_weights(model: nn.Module) -> int:
    """The weights that take part in a matrix product: every Linear's (an output map tied to the
    embedding counted once, as a product), a recurrent layer's or cell's, the input projections of
    PyTorch's ``MultiheadAttention``; not embedding look-ups, biases or norms.  A product written
    as a bare ``@`` with a parameter (an output layer that multiplies by the embedding table
    itself) is not seen: count it by hand."""
    seen, total = set(), 0
    for module in model.modules():
        if isinstance(module, nn.Linear) and id(module.weight) not in seen:
            seen.add(id(module.weight))
            total += module.weight.numel()
        elif isinstance(module, (nn.LSTM, nn.GRU, nn.RNN, nn.RNNCellBase)):
            total += sum(p.numel() for name, p in module.named_parameters() if name.startswith("weight"))
        elif isinstance(module, nn.MultiheadAttention):  # its out_proj is a Linear, counted above
            total += sum(p.numel() for name, p in module.named_parameters(recurse=False)
                         if name in ("in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight"))
    # transformers' GPT-2 writes its linear maps as Conv1D (a transposed Linear)
    total += sum(m.weight.numel() for m in model.modules() if type(m).__name__ == "Conv1D")
    return total


def training_flops_per_token(model: nn.Module, *, attention_layers: int = 0, width: int = 0,
                             context: int = 0) -> float:
    """Training FLOPs per input position: 6 per matrix weight, plus 12 x layers x width x context
    for a Transformer's attention (give its ``attention_layers``, ``width`` and ``context``)."""
    return 6 * matrix_weights(model) + 12 * attention_layers * width * context


def peak_flops(device_name: str) -> float | None:
    """The dense bfloat16 peak of a GPU named like ``torch.cuda.get_device_name`` says, or None."""
    for key, peak in PEAKS.items():
        if key in device_name:
            return peak
    return None
