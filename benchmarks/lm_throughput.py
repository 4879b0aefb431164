"""How fast the book's language models train: tokens a second and model FLOP utilisation.

    python benchmarks/lm_throughput.py                  # the sizes this machine is meant for
    python benchmarks/lm_throughput.py --sizes standard full 10M --steps 20

For each size, three models train on random tokens with the book's recipe (AdamW, clipping,
bfloat16 autocast on a GPU, float32 on a CPU), one step at a time as the pages train them:

- ``GPT-2``: ``transformers``' ``GPT2LMHeadModel`` built from a ``GPT2Config`` of the same shape
  (random weights, nothing downloaded, PyTorch's fused attention), the reference;
- ``ours``: ``nlpbook.transformer.DecoderOnlyLM`` (pre-LN, GPT-2's initialisation, tied embeddings,
  no dropout; its fused attention takes ``is_causal`` rather than a mask, so a GPU may use
  FlashAttention, as the reference's may);
- ``LSTM``: ``nlpbook.charlm.CharRNN`` with an LSTM cell, as many weights as ours.

It prints tokens a second (input positions trained on), the model's FLOPs a second (6 per
weight in a matrix product per token, plus the attention's 12 x layers x width x context, as
PaLM counts them) and, on a GPU it knows, that figure over the chip's dense bfloat16 peak
(model FLOP utilisation); on a CPU, GFLOP/s.  It prints figures; it is not a timed test.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from measure import machine_line
from nlpbook.charlm import CharRNN
from nlpbook.flops import peak_flops as chip_peak, training_flops_per_token
from nlpbook.recipe import Recipe
from nlpbook.scaling import lstm_hidden
from nlpbook.transformer import DecoderOnlyLM

VOCAB = 96  # about the number of characters of the book's Bible corpus

@dataclass(frozen=True)
class Size:
    name: str
    width: int
    layers: int
    heads: int
    context: int
    batch: int


# The language-model page's sizes (standard on a CPU, full on a GPU), and one of 10M weights with
# 32k tokens a step, the size at which the issue asks a GPU to show its rate.
SIZES = {size.name: size for size in (
    Size("quick", 32, 2, 4, 128, 8),
    Size("standard", 128, 2, 4, 128, 8),
    Size("full", 256, 4, 4, 128, 64),
    Size("10M", 384, 6, 6, 256, 128),
)}


def flops_per_token(model: nn.Module, size: Size, attention: bool) -> float:
    """Training FLOPs per input position (``nlpbook.flops``), the attention's counted for a Transformer."""
    if not attention:
        return training_flops_per_token(model)
    return training_flops_per_token(model, attention_layers=size.layers, width=size.width, context=size.context)


def lstm_matching(weights: int, embed: int = 64) -> CharRNN:
    """A one-layer CharRNN LSTM with about ``weights`` weights (``nlpbook.scaling.lstm_hidden``)."""
    return CharRNN(VOCAB, embed=embed, hidden=lstm_hidden(weights, VOCAB, embed, layers=1), cell="lstm")


def gpt2_reference(size: Size) -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=VOCAB, n_positions=size.context, n_embd=size.width, n_layer=size.layers,
                        n_head=size.heads, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                        bos_token_id=None, eos_token_id=None)
    config._attn_implementation = "sdpa"  # PyTorch's fused attention, as ours uses
    model = GPT2LMHeadModel(config)
    model.forward_logits = lambda ids: model(input_ids=ids).logits
    return model


def models(size: Size, compiled: bool = False) -> dict[str, nn.Module]:
    """The reference, ours, (ours through ``torch.compile``,) and the LSTM, at ``size``."""
    torch.manual_seed(0)
    ours = DecoderOnlyLM(VOCAB, width=size.width, heads=size.heads, layers=size.layers, context=size.context,
                         tie=True, init="gpt2")
    found = {"GPT-2": gpt2_reference(size), "ours": ours}
    if compiled:
        twin = DecoderOnlyLM(VOCAB, width=size.width, heads=size.heads, layers=size.layers, context=size.context,
                             tie=True, init="gpt2")
        twin.load_state_dict(ours.state_dict())
        found["ours, compiled"] = CompiledLM(twin)
    found["LSTM"] = lstm_matching(sum(p.numel() for p in ours.parameters()))
    return found


class CompiledLM(nn.Module):
    """A model and its ``torch.compile``d forward: the weights counted are the model's own."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        self.compiled = torch.compile(model)

    def forward(self, ids):
        return self.compiled(ids)


def logits(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    if hasattr(model, "forward_logits"):
        return model.forward_logits(ids)
    out = model(ids)
    return out[0] if isinstance(out, tuple) else out


def tokens_per_second(model: nn.Module, size: Size, device: torch.device, steps: int, warmup: int = 3) -> float:
    """Training steps on random tokens with the recipe; input positions a second over the timed steps."""
    model.to(device).train()
    recipe = Recipe(lr=1e-3, warmup=1)
    optimizer = recipe.optimizer(model)
    generator = torch.Generator().manual_seed(0)
    batches = [torch.randint(0, VOCAB, (size.batch, size.context + 1), generator=generator).to(device)
               for _ in range(4)]

    def step(batch):
        with recipe.autocast(device):
            out = logits(model, batch[:, :-1])
            loss = F.cross_entropy(out.flatten(0, 1).float(), batch[:, 1:].flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), recipe.clip)
        optimizer.step()
        return loss

    for i in range(warmup):
        step(batches[i % 4])
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for i in range(steps):
        loss = step(batches[i % 4])
    loss.item()  # waits for the device
    seconds = time.perf_counter() - start
    return steps * size.batch * size.context / seconds


def peak_flops(device: torch.device) -> tuple[str, float | None]:
    if device.type != "cuda":
        return "CPU", None
    name = torch.cuda.get_device_name(device)
    return name, chip_peak(name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    on_gpu = torch.cuda.is_available()
    parser.add_argument("--sizes", nargs="*", choices=list(SIZES),
                        default=["standard", "full", "10M"] if on_gpu else ["standard", "full"])
    parser.add_argument("--steps", type=int, default=20, help="timed training steps per model and size")
    parser.add_argument("--device", default="cuda" if on_gpu else "cpu")
    parser.add_argument("--compile", nargs="*", default=[], choices=list(SIZES),
                        help="sizes at which ours also runs through torch.compile (the first steps compile it)")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    chip, peak = peak_flops(device)
    print(machine_line())
    print(f"device: {chip}; {'bfloat16 autocast' if device.type == 'cuda' else 'float32'}, "
          f"{torch.get_num_threads()} CPU threads; {args.steps} timed steps after 3 untimed")
    header = f"{'size':9} {'model':14} {'weights':>11} {'tokens/s':>11} {'vs GPT-2':>8} {'GFLOP/s':>9}"
    print(header + (f" {'MFU':>6}" if peak else ""))
    rows = []
    for name in args.sizes:
        size = SIZES[name]
        rates = {}
        for label, model in models(size, compiled=name in args.compile).items():
            try:
                rate = tokens_per_second(model, size, device, args.steps, warmup=8 if "compiled" in label else 3)
            except Exception as error:  # a compiler that fails on one machine should not lose the other rows
                print(f"{name:9} {label:14} failed: {type(error).__name__}: {str(error)[:300]}", flush=True)
                model.to("cpu")
                continue
            rates[label] = rate
            flops = rate * flops_per_token(model, size, attention=label != "LSTM")
            weights = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
            ratio = f"{rate / rates['GPT-2']:8.2f}" if "GPT-2" in rates else f"{'':8}"
            line = f"{name:9} {label:14} {weights:>11,} {rate:>11,.0f} {ratio} {flops / 1e9:>9,.1f}"
            print(line + (f" {flops / peak:>6.1%}" if peak else ""), flush=True)
            rows.append(dict(size=name, model=label, weights=weights, tokens_per_second=rate,
                             tokens_per_step=size.batch * size.context, model_flops_per_second=flops,
                             utilisation=flops / peak if peak else None))
            model.to("cpu")
    if args.json:
        args.json.write_text(json.dumps(dict(device=chip, machine=machine_line(), torch=torch.__version__,
                                             steps=args.steps, date=time.strftime("%Y-%m-%d"), rows=rows), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
