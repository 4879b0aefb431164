"""Chapter 1's exercise through the real grading command: the classic mistakes of word vectors.

Each mistake is a small edit of the instructor's solution; it must lose the points
of its own part (all of them when the visible tests see it, the hidden ones'
when only they do) and nothing elsewhere.
"""
from __future__ import annotations

from chapter_grading import ChapterGrading


COOC, PPMI, PAIRS, LOSS, WINDOWS = (
    "cooccurrence_matrix", "ppmi", "skipgram_pairs", "negative_sampling_loss", "context_windows")
SOFTMAX, SAMPLING, TRAIN = "naive_softmax_gradients", "negative_sampling_gradients", "train_skipgram"


class TestWordVectorsExercise(ChapterGrading):
    ASSIGNMENT, NOTEBOOK = "01-word-vectors", "word_vectors"
    AUTO_POINTS = 20.0
    # Handed in on its own as well as packed beside other parts' mistakes (chapter_grading.py).
    ALONE = ("pmi-nan-for-empty-rows",)
    # Part 7 trains skip-gram vectors: it runs only in the hand-ins that carry its own entries.
    COSTLY = (TRAIN,)
    # Correct code written another way: full marks.
    VARIANTS = {
        # Pairs counted through a flat view of the matrix, one index a pair.
        "cooccurrence-flat-index-add": {COOC: [
            ("counts.index_put_((left, right), ones, accumulate=True)", "counts.view(-1).index_add_(0, left * vocab_size + right, ones)"),
            ("counts.index_put_((right, left), ones, accumulate=True)", "counts.view(-1).index_add_(0, right * vocab_size + left, ones)")]},
        "ppmi-nan-to-num": {PPMI: [(
            "pmi = torch.where(counts > 0, pmi, torch.zeros_like(pmi))", "pmi = pmi.nan_to_num(nan=0.0, neginf=0.0)")]},
        "pairs-reversed-by-flip": {PAIRS: [(
            "        pairs.append(torch.stack((left, right), dim=1))  # the context to the right of the center\n"
            "        pairs.append(torch.stack((right, left), dim=1))  # and to its left\n",
            "        to_the_right = torch.stack((left, right), dim=1)  # (T - distance, 2)\n"
            "        pairs += [to_the_right, to_the_right.flip(1)]\n")]},
        # log sigmoid(x) = -softplus(-x), and the negatives' scores by einsum.
        "loss-by-softplus-and-einsum": {LOSS: [
            ("negative = (negatives @ center.unsqueeze(-1)).squeeze(-1)", "negative = torch.einsum(\"bkd,bd->bk\", negatives, center)"),
            ("loss = -F.logsigmoid(positive) - F.logsigmoid(-negative).sum(dim=-1)",
             "loss = F.softplus(-positive) + F.softplus(negative).sum(dim=-1)")]},
        "windows-by-fancy-indexing": {WINDOWS: [(
            "return padded.unfold(0, 2 * window + 1, 1)",
            "return padded[torch.arange(len(ids))[:, None] + torch.arange(2 * window + 1)]")]},
        # The stable softmax by hand: each row's maximum taken out before exp.
        "softmax-max-subtracted": {SOFTMAX: [(
            "    log_probs = (center @ outside_vectors.T).log_softmax(dim=-1)  # (B, V), exact for large scores\n",
            "    scores = center @ outside_vectors.T\n"
            "    scores = scores - scores.max(dim=-1, keepdim=True).values\n"
            "    log_probs = scores - scores.exp().sum(dim=-1, keepdim=True).log()\n")]},
        # Repeated rows accumulated by index_put_ instead of index_add_.
        "sampling-index-put-accumulate": {SAMPLING: [
            ("grad_outside.index_add_(0, context, pull.unsqueeze(-1) * center)",
             "grad_outside.index_put_((context,), pull.unsqueeze(-1) * center, accumulate=True)"),
            ("    grad_outside.index_add_(0, negatives.flatten(),\n"
             "                            (push.unsqueeze(-1) * center.unsqueeze(1)).flatten(0, 1))  # (B * K, d)\n",
             "    grad_outside.index_put_((negatives.flatten(),),\n"
             "                            (push.unsqueeze(-1) * center.unsqueeze(1)).flatten(0, 1), accumulate=True)\n")]},
        # The decay written as the remaining fraction of the steps.
        "train-rate-as-fraction": {TRAIN: [(
            "rate = lr * max(1 - step / steps, 1e-4)", "rate = max(lr * (steps - step) / steps, lr * 1e-4)")]},
        # The loop run in inference mode, which autograd's enable_grad does not switch off.
        "train-in-inference-mode": {TRAIN: [("def train_skipgram(", "@torch.inference_mode()\ndef train_skipgram(")]},
    }
    # student id -> (the part it breaks, its score in that part, edits to the solution)
    MISTAKES = {
        "window-exclusive": (COOC, 0.0, {COOC: [("range(1, window + 1)", "range(1, window)")]}),
        "one-direction-only": (COOC, 0.0, {COOC: [(
            "            counts.index_put_((right, left), ones, accumulate=True)  # and to the left\n", "")]}),
        "documents-joined": (COOC, 0.0, {COOC: [(
            "for ids in documents:", "for ids in [torch.cat([torch.as_tensor(d, dtype=torch.long) for d in documents])]:")]}),
        # Part 6 by autograd, out of inference mode on copies (as part 7's visible test computes it)
        "sampling-by-autograd": (SAMPLING, 0.0, {SAMPLING: [(
            "    batch = center.shape[0]\n    true = outside_vectors[context]",
            "    with torch.inference_mode(False), torch.enable_grad():\n"
            "        leaves = [t.detach().clone().requires_grad_(True) for t in (center, outside_vectors)]\n"
            "        scores = (leaves[1][context] * leaves[0]).sum(-1)\n"
            "        noise_scores = (leaves[1][negatives] @ leaves[0].unsqueeze(-1)).squeeze(-1)\n"
            "        total = (-F.logsigmoid(scores) - F.logsigmoid(-noise_scores).sum(-1)).mean()\n"
            "        total.backward()\n"
            "    return total.detach(), leaves[0].grad, leaves[1].grad\n"
            "    batch = center.shape[0]\n    true = outside_vectors[context]")]}),
        "pmi-not-clipped": (PPMI, 0.0, {PPMI: [("return pmi.clamp_min(0.0)", "return pmi")]}),
        "pmi-log2": (PPMI, 0.0, {PPMI: [("torch.log(counts / expected)", "torch.log2(counts / expected)")]}),
        "pmi-marginals-swapped": (PPMI, 0.0, {PPMI: [
            ("words = counts.sum(dim=1, keepdim=True)", "words = counts.sum(dim=0, keepdim=True).T"),
            ("contexts = counts.sum(dim=0, keepdim=True)", "contexts = counts.sum(dim=1, keepdim=True).T")]}),
        "pmi-nan-for-empty-rows": (PPMI, 0.0, {PPMI: [
            ("    pmi = torch.where(counts > 0, pmi, torch.zeros_like(pmi))\n", "")]}),
        "pmi-always-float32": (PPMI, 1.0, {PPMI: [("return pmi.clamp_min(0.0)", "return pmi.clamp_min(0.0).float()")]}),
        "pairs-window-exclusive": (PAIRS, 0.0, {PAIRS: [("range(1, window + 1)", "range(1, window)")]}),
        "pairs-right-context-only": (PAIRS, 0.0, {PAIRS: [(
            "        pairs.append(torch.stack((right, left), dim=1))  # and to its left\n", "")]}),
        "pairs-deduplicated": (PAIRS, 1.0, {PAIRS: [("return torch.cat(pairs)", "return torch.cat(pairs).unique(dim=0)")]}),
        "loss-mean-over-negatives": (LOSS, 0.0, {LOSS: [("F.logsigmoid(-negative).sum(dim=-1)", "F.logsigmoid(-negative).mean(dim=-1)")]}),
        "loss-summed-over-batch": (LOSS, 0.0, {LOSS: [("return loss.mean()", "return loss.sum()")]}),
        "loss-negatives-not-negated": (LOSS, 0.0, {LOSS: [("F.logsigmoid(-negative)", "F.logsigmoid(negative)")]}),
        "loss-unstable-log-sigmoid": (LOSS, 1.0, {LOSS: [(
            "-F.logsigmoid(positive) - F.logsigmoid(-negative)",
            "-torch.log(torch.sigmoid(positive)) - torch.log(torch.sigmoid(-negative))")]}),
        "loss-center-detached": (LOSS, 1.0, {LOSS: [("center.unsqueeze(-1)", "center.detach().unsqueeze(-1)")]}),
        "softmax-not-averaged": (SOFTMAX, 0.0, {SOFTMAX: [("    error = error / batch  # the mean's 1/B\n", "")]}),
        "softmax-y-not-subtracted": (SOFTMAX, 0.0, {SOFTMAX: [(
            "    error[torch.arange(batch), context] -= 1  # ... - y\n", "")]}),
        "softmax-unstable-exp": (SOFTMAX, 1.0, {SOFTMAX: [(
            "log_probs = (center @ outside_vectors.T).log_softmax(dim=-1)",
            "log_probs = torch.log((center @ outside_vectors.T).exp()\n"
            "                          / (center @ outside_vectors.T).exp().sum(-1, keepdim=True))")]}),
        "softmax-loss-summed-over-batch": (SOFTMAX, 1.0, {SOFTMAX: [(
            "context.unsqueeze(1)).mean()", "context.unsqueeze(1)).sum()")]}),
        "sampling-repeated-words-dropped": (SAMPLING, 0.0, {SAMPLING: [(
            "    grad_outside.index_add_(0, negatives.flatten(),\n"
            "                            (push.unsqueeze(-1) * center.unsqueeze(1)).flatten(0, 1))  # (B * K, d)\n",
            "    grad_outside[negatives.flatten()] += (push.unsqueeze(-1) * center.unsqueeze(1)).flatten(0, 1)\n")]}),
        "sampling-negative-sign": (SAMPLING, 0.0, {SAMPLING: [(
            "push = torch.sigmoid(negative) / batch", "push = (torch.sigmoid(negative) - 1) / batch")]}),
        "sampling-center-ignores-negatives": (SAMPLING, 0.0, {SAMPLING: [(
            "grad_center = pull.unsqueeze(-1) * true + (push.unsqueeze(-1) * noise).sum(dim=1)",
            "grad_center = pull.unsqueeze(-1) * true")]}),
        "sampling-not-averaged": (SAMPLING, 1.0, {SAMPLING: [
            ("pull = (torch.sigmoid(positive) - 1) / batch", "pull = torch.sigmoid(positive) - 1"),
            ("push = torch.sigmoid(negative) / batch", "push = torch.sigmoid(negative)")]}),
        "train-gradient-ascent": (TRAIN, 0.0, {TRAIN: [
            ("grad_center, alpha=-rate)", "grad_center, alpha=rate)"),
            ("outside.add_(grad_outside, alpha=-rate)", "outside.add_(grad_outside, alpha=rate)")]}),
        "train-rate-not-decayed": (TRAIN, 0.0, {TRAIN: [("rate = lr * max(1 - step / steps, 1e-4)", "rate = lr")]}),
        "train-repeated-centers-dropped": (TRAIN, 2.0, {TRAIN: [(
            "center.index_add_(0, batch[:, 0], grad_center, alpha=-rate)",
            "center[batch[:, 0]] -= rate * grad_center")]}),
        "train-outside-never-updated": (TRAIN, 0.0, {TRAIN: [(
            "        outside.add_(grad_outside, alpha=-rate)\n", "")]}),
        "train-noise-ignored": (TRAIN, 2.0, {TRAIN: [(
            "torch.multinomial(noise,", "torch.multinomial(torch.ones_like(noise),")]}),
        "windows-padded-on-one-side": (WINDOWS, 0.0, {WINDOWS: [("(window, window)", "(2 * window, 0)")]}),
        "windows-too-narrow": (WINDOWS, 0.0, {WINDOWS: [("unfold(0, 2 * window + 1, 1)", "unfold(0, 2 * window, 1)")]}),
        "windows-pad-id-ignored": (WINDOWS, 1.0, {WINDOWS: [("value=pad_id", "value=0")]}),
    }
