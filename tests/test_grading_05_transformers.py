"""Chapter 5's exercise through the real grading command: the classic mistakes of BPE, Transformer
layers, a decoder-only language model trained for a target, and the paper's schedule and training loop."""
from __future__ import annotations

from chapter_grading import ChapterGrading


MERGES, ENCODE, ENCODER, DECODER, SAMPLING, MODEL, NOAM, PAPER = (
    "bpe_merges", "bpe_encode", "encoder_layer", "decoder_layer", "sampling_probs", "transformer_lm", "noam_rate",
    "train_like_the_paper")
BEST = "best = min(pairs, key=lambda pair: (-pairs[pair], pair))"
SPELL = "tuple(word[:-1]) + (word[-1] + END,)"
CHOSEN = "merge_pair(symbols, min(candidates, key=rank.get))"
POST_ATTENTION = "x = self.norm1(x + self.dropout1(self.self_attn(x, x, x, mask)))"
POST_FEED = "return self.norm2(x + self.dropout2(self.feed_forward(x)))"
PRE_FEED = "return x + self.dropout2(self.feed_forward(self.norm2(x)))"
PRE_CROSS = "y = y + self.dropout2(self.cross_attn(self.norm2(y), memory, memory, memory_mask))"
POST_CROSS = "y = self.norm2(y + self.dropout2(self.cross_attn(y, memory, memory, memory_mask)))"
PRE_SELF = "            h = self.norm1(y)\n            y = y + self.dropout1(self.self_attn(h, h, h, self_mask))\n"
EMBED = "x = self.dropout(self.embed(ids) + self.position(torch.arange(T, device=ids.device)))"
RATE = "return width ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)"
ADAM = "optimizer = torch.optim.Adam(model.parameters(), betas=(0.9, 0.98), eps=1e-9)"
SET_RATE = ("        for group in optimizer.param_groups:\n"
            "            group[\"lr\"] = noam_rate(step, width, warmup)\n")
CLIP = "        nn.utils.clip_grad_norm_(model.parameters(), max_norm)\n"
STEP = "        optimizer.step()\n"
TOP_K = ("        kth = scaled.topk(top_k, dim=-1).values[..., -1:]                # (..., 1), the k-th largest\n"
         "        scaled = scaled.masked_fill(scaled < kth, float(\"-inf\"))\n")


class TestTransformersExercise(ChapterGrading):
    ASSIGNMENT, NOTEBOOK = "05-transformers", "transformers"
    AUTO_POINTS = 26.0
    # Handed in on its own as well as packed beside other parts' mistakes (chapter_grading.py).
    ALONE = ("encoder-without-the-second-residual",)
    # Parts 6 and 8 train a language model each: they run only in the hand-ins that carry their own entries.
    COSTLY = (MODEL, PAPER)
    # student id -> (the part it breaks, its score in that part, edits to the solution)
    MISTAKES = {
        "merges-counts-ignore-word-frequency": (MERGES, 0.0, {MERGES: [("pairs[pair] += count", "pairs[pair] += 1")]}),
        "merges-without-end-of-word-mark": (MERGES, 0.0, {MERGES: [(SPELL, "tuple(word)")]}),
        "merges-ties-go-to-the-first-seen-pair": (MERGES, 0.0, {MERGES: [(BEST, "best = pairs.most_common(1)[0][0]")]}),
        "merges-ties-go-to-the-pair-that-sorts-last": (MERGES, 0.0, {MERGES: [
            (BEST, "best = max(pairs, key=lambda pair: (pairs[pair], pair))")]}),
        "merges-one-too-few": (MERGES, 0.0, {MERGES: [("for _ in range(num_merges):", "for _ in range(num_merges - 1):")]}),
        "merges-never-stop": (MERGES, 0.0, {MERGES: [("        if not pairs:\n            break\n", "")]}),
        "encode-latest-merge-first": (ENCODE, 1.0, {ENCODE: [(CHOSEN, "merge_pair(symbols, max(candidates, key=rank.get))")]}),
        "encode-leftmost-pair-first": (ENCODE, 1.0, {ENCODE: [(CHOSEN, "merge_pair(symbols, candidates[0])")]}),
        "encode-without-end-of-word-mark": (ENCODE, 0.0, {ENCODE: [(SPELL, "tuple(word)")]}),
        "encode-one-merge-only": (ENCODE, 0.0, {ENCODE: [("while len(symbols) > 1:", "if len(symbols) > 1:")]}),
        "encoder-post-ln-norm-before-the-add": (ENCODER, 0.0, {ENCODER: [
            (POST_ATTENTION, "x = x + self.norm1(self.dropout1(self.self_attn(x, x, x, mask)))")]}),
        "encoder-pre-ln-residual-from-the-normalized-input": (ENCODER, 0.0, {ENCODER: [
            ("x = x + self.dropout1(self.self_attn(h, h, h, mask))", "x = h + self.dropout1(self.self_attn(h, h, h, mask))")]}),
        "encoder-dropout-after-the-norm": (ENCODER, 1.0, {ENCODER: [
            (POST_FEED, "return self.dropout2(self.norm2(x + self.feed_forward(x)))")]}),
        "encoder-without-the-second-residual": (ENCODER, 0.0, {ENCODER: [
            (POST_FEED, "return self.norm2(self.dropout2(self.feed_forward(x)))")]}),
        "encoder-pre-ln-first-norm-twice": (ENCODER, 0.0, {ENCODER: [
            (PRE_FEED, "return x + self.dropout2(self.feed_forward(self.norm1(x)))")]}),
        "encoder-feed-forward-reads-the-layer-input": (ENCODER, 0.0, {ENCODER: [
            (PRE_FEED, "return x + self.dropout2(self.feed_forward(h))")]}),
        "encoder-mask-ignored": (ENCODER, 1.0, {ENCODER: [(POST_ATTENTION, "x = self.norm1(x + self.dropout1(self.self_attn(x, x, x)))")]}),
        "decoder-cross-attention-reads-the-decoder": (DECODER, 0.0, {DECODER: [
            (PRE_CROSS, "y = y + self.dropout2(self.cross_attn(self.norm2(y), self.norm2(y), self.norm2(y)))")]}),
        "decoder-queries-from-the-memory": (DECODER, 0.0, {DECODER: [
            (POST_CROSS, "y = self.norm2(y + self.dropout2(self.cross_attn(memory, y, y)))")]}),
        "decoder-source-padding-ignored": (DECODER, 1.0, {DECODER: [
            (PRE_CROSS, "y = y + self.dropout2(self.cross_attn(self.norm2(y), memory, memory))")]}),
        "decoder-causal-mask-on-cross-attention": (DECODER, 0.0, {DECODER: [
            (POST_CROSS, "y = self.norm2(y + self.dropout2(self.cross_attn(y, memory, memory, self_mask)))")]}),
        "decoder-memory-normalized": (DECODER, 0.0, {DECODER: [
            (PRE_CROSS, "y = y + self.dropout2(self.cross_attn(self.norm2(y), self.norm2(memory), self.norm2(memory), memory_mask))")]}),
        "decoder-cross-attention-before-self-attention": (DECODER, 0.0, {DECODER: [
            (PRE_SELF + "            " + PRE_CROSS + "\n",
             "            " + PRE_CROSS + "\n" + PRE_SELF)]}),
        "decoder-dropout-after-the-norm": (DECODER, 1.0, {DECODER: [
            ("return self.norm3(y + self.dropout3(self.feed_forward(y)))", "return self.dropout3(self.norm3(y + self.feed_forward(y)))")]}),
        "sampling-temperature-multiplied": (SAMPLING, 0.0, {SAMPLING: [("scaled = logits / temperature", "scaled = logits * temperature")]}),
        "sampling-top-k-keeps-one-more": (SAMPLING, 0.0, {SAMPLING: [
            ("scaled.topk(top_k, dim=-1)", "scaled.topk(min(top_k + 1, logits.shape[-1]), dim=-1)")]}),
        "sampling-top-k-drops-ties": (SAMPLING, 1.0, {SAMPLING: [(TOP_K, (
            "        chosen = scaled.topk(top_k, dim=-1).indices\n"
            "        scaled = torch.full_like(scaled, float(\"-inf\")).scatter(-1, chosen, scaled.gather(-1, chosen))\n"))]}),
        "sampling-greedy-divides-by-zero": (SAMPLING, 0.0, {SAMPLING: [
            ("    if temperature == 0:\n        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)\n", "")]}),
        "sampling-softmax-over-the-batch": (SAMPLING, 0.0, {SAMPLING: [("torch.softmax(scaled, dim=-1)", "torch.softmax(scaled, dim=0)")]}),
        "sampling-changes-the-logits": (SAMPLING, 0.0, {SAMPLING: [("scaled = logits / temperature", "scaled = logits.div_(temperature)")]}),
        "lm-without-causal-mask": (MODEL, 0.0, {MODEL: [("mask = causal_mask(T, ids.device)", "mask = None")]}),
        "lm-mask-shows-the-next-token": (MODEL, 0.0, {MODEL: [
            ("mask = causal_mask(T, ids.device)", "mask = causal_mask(T, ids.device).roll(1, dims=1) | causal_mask(T, ids.device)")]}),
        "lm-without-positions": (MODEL, 0.0, {MODEL: [(EMBED, "x = self.dropout(self.embed(ids))")]}),
        "lm-without-final-norm": (MODEL, 1.0, {MODEL: [("return self.out(self.norm(x))", "return self.out(x)")]}),
        "lm-post-ln-layers": (MODEL, 1.0, {MODEL: [("4 * width, dropout, norm_first=True)", "4 * width, dropout)")]}),
        # A plain list hides the layers from the module: they are neither trained nor saved.
        "lm-layers-in-a-python-list": (MODEL, 0.0, {MODEL: [
            ("nn.ModuleList(EncoderLayer(width, heads, 4 * width, dropout, norm_first=True)\n"
             "                                    for _ in range(layers))",
             "[EncoderLayer(width, heads, 4 * width, dropout, norm_first=True)\n"
             "                                    for _ in range(layers)]")]}),
        "noam-warmup-to-the-minus-half": (NOAM, 0.0, {NOAM: [(RATE, RATE.replace("-1.5", "-0.5"))]}),
        "noam-without-the-width-factor": (NOAM, 0.0, {NOAM: [(RATE, RATE.replace("width ** -0.5 * ", ""))]}),
        "noam-max-instead-of-min": (NOAM, 0.0, {NOAM: [(RATE, RATE.replace("min(", "max("))]}),
        # Training as the paper did (part 8): the watched steps and the grader's perplexity.
        "paper-counts-updates-from-zero": (PAPER, 0.0, {PAPER: [("for step in range(1, steps + 1):",
                                                                 "for step in range(steps):")]}),
        "paper-never-clears-gradients": (PAPER, 0.0, {PAPER: [("        optimizer.zero_grad()\n", "")]}),
        "paper-rate-set-after-the-step": (PAPER, 3.0, {PAPER: [(SET_RATE, ""), (STEP, STEP + SET_RATE)]}),
        "paper-adam-defaults": (PAPER, 3.0, {PAPER: [(ADAM, "optimizer = torch.optim.Adam(model.parameters())")]}),
        "paper-clips-after-the-step": (PAPER, 3.0, {PAPER: [(CLIP, ""), (STEP, STEP + CLIP)]}),
        "paper-targets-not-shifted": (PAPER, 2.0, {PAPER: [("window[:, 1:].flatten()", "window[:, :-1].flatten()")]}),
    }
    # Other correct ways to write the model (position rows sliced, the mask built in place) and the
    # loop (PyTorch's LambdaLR, stepped after the optimizer, in place of setting each group's rate).
    VARIANTS = {
        # The most frequent pair, ties to the pair that sorts first, found in two passes.
        "merges-top-count-then-smallest-pair": {MERGES: [(
            BEST, "top = max(pairs.values())\n"
                  "        best = min(pair for pair, count in pairs.items() if count == top)")]},
        "encode-rank-by-lookup": {ENCODE: [(CHOSEN, "merge_pair(symbols, min(candidates, key=lambda pair: rank[pair]))")]},
        "encoder-sub-layer-outputs-named": {ENCODER: [
            (POST_ATTENTION, "attended = self.self_attn(x, x, x, mask)\n"
                             "        x = self.norm1(x + self.dropout1(attended))"),
            (POST_FEED, "fed = self.feed_forward(x)\n"
                        "        return self.norm2(x + self.dropout2(fed))")]},
        "decoder-pre-ln-normalized-inputs-named": {DECODER: [(
            PRE_CROSS, "queries = self.norm2(y)\n"
                       "            y = y + self.dropout2(self.cross_attn(queries, memory, memory, memory_mask))")]},
        "sampling-k-th-largest-by-sort": {SAMPLING: [(
            "kth = scaled.topk(top_k, dim=-1).values[..., -1:]",
            "kth = scaled.sort(dim=-1, descending=True).values[..., top_k - 1:top_k]")]},
        "noam-branches-at-the-warm-up": {NOAM: [(
            RATE, "return width ** -0.5 * (step ** -0.5 if step >= warmup else step * warmup ** -1.5)")]},
        "lm-positions-sliced-mask-built": {MODEL: [
            ("self.position(torch.arange(T, device=ids.device))", "self.position.weight[:T]"),
            ("mask = causal_mask(T, ids.device)", "mask = torch.ones(T, T, dtype=torch.bool, device=ids.device).tril()")]},
        "paper-lambda-lr-scheduler": {PAPER: [
            (ADAM, ADAM.replace("betas", "lr=1.0, betas") + "\n    scheduler = torch.optim.lr_scheduler.LambdaLR(\n"
                   "        optimizer, lambda s: noam_rate(s + 1, width, warmup))"),
            (SET_RATE, ""), (STEP, STEP + "        scheduler.step()\n")]},
    }
