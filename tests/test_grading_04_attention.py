"""Chapter 4's exercise through the real grading command: each part handed in blank costs only its own points,
the classic mistakes of the training part (part 7) cost that part's hidden points, and every part written
correctly in another way keeps all of its points.

Its classic mistakes in the attention parts and hostile submissions are graded in test_autograder_hostile.py
and test_autograder_mutants.py.
"""
from __future__ import annotations

from chapter_grading import ChapterGrading

SDPA, CAUSAL, PADDING, HEADS, SINUSOIDS, ROTARY, TRAIN = (
    "scaled_dot_product_attention", "causal_mask", "padding_mask", "MultiHeadSelfAttention", "sinusoidal_positions",
    "apply_rotary", "masked_char_model")


class TestAttentionExercise(ChapterGrading):
    ASSIGNMENT, NOTEBOOK = "04-attention", "attention"
    AUTO_POINTS = 20.0
    # Part 7 trains an encoder: it runs only in the hand-ins that carry its own entries.
    COSTLY = (TRAIN,)
    # student id -> (the part it breaks, its score in that part, edits to the solution)
    MISTAKES = {
        # Training for a target (part 7): the grader scores the trained weights itself.
        "train-never-clears-gradients": (TRAIN, 1.0, {TRAIN: [("        optimizer.zero_grad()\n", "")]}),
        "train-ignores-lr": (TRAIN, 1.0, {TRAIN: [("torch.optim.Adam(model.parameters(), lr=lr)",
                                                   "torch.optim.Adam(model.parameters())")]}),
    }
    # Correct code written another way, as students write it: each keeps every point (the hidden tests'
    # tolerances must admit its rounding).
    VARIANTS = {
        "attention-einsum-scores": {SDPA: [(
            "scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)",
            "scores = torch.einsum(\"...ld,...sd->...ls\", query, key) * d_k ** -0.5")]},
        "causal-mask-from-a-boolean-upper-triangle": {CAUSAL: [(
            "    blocked = torch.full((seq_len, seq_len), float(\"-inf\"), dtype=dtype, device=device)\n"
            "    return torch.triu(blocked, diagonal=1)",
            "    above = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).triu(1)\n"
            "    return torch.zeros(seq_len, seq_len, dtype=dtype, device=device).masked_fill(above, float(\"-inf\"))")]},
        "padding-mask-by-where-and-unsqueeze": {PADDING: [
            ("    mask = torch.zeros(input_ids.shape, dtype=dtype, device=input_ids.device)  # (B, S)\n"
             "    mask = mask.masked_fill(input_ids == pad_id, float(\"-inf\"))\n"
             "    return mask[:, None, None, :]",
             "    mask = torch.where(input_ids == pad_id, float(\"-inf\"), 0.0).to(dtype)  # (B, S)\n"
             "    return mask.unsqueeze(1).unsqueeze(2)")]},
        "heads-by-reshape-and-permute": {HEADS: [
            ("return t.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)",
             "return t.reshape(B, T, self.num_heads, self.head_dim).permute(0, 2, 1, 3)"),
            ("context = context.transpose(1, 2).contiguous().view(B, T, E)",
             "context = context.permute(0, 2, 1, 3).reshape(B, T, E)")]},
        "sinusoids-stacked-and-flattened": {SINUSOIDS: [(
            "    table = torch.empty(seq_len, dim, dtype=torch.float64)\n"
            "    table[:, 0::2] = torch.sin(angles)\n"
            "    table[:, 1::2] = torch.cos(angles)\n",
            "    table = torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(1)  # (T, dim), sin and cos interleaved\n")]},
        "rotary-pairs-by-unflatten": {ROTARY: [(
            "    even, odd = x[..., 0::2], x[..., 1::2]  # (..., T, d/2) each",
            "    even, odd = x.unflatten(-1, (-1, 2)).unbind(-1)  # (..., T, d/2) each")]},
        "train-clears-after-the-step": {TRAIN: [
            ("        optimizer.zero_grad()\n", ""),
            ("        optimizer.step()\n", "        optimizer.step()\n        optimizer.zero_grad()\n")]},
    }
