"""Chapter 1's exercise through the real grading command: the classic mistakes of word vectors.

Each mistake is a small edit of the instructor's solution; it must lose the points
of its own part (all of them when the visible tests see it, the hidden ones'
when only they do) and nothing elsewhere.
"""
from __future__ import annotations

from chapter_grading import ChapterGrading


COOC, PPMI, PAIRS, LOSS, WINDOWS = (
    "cooccurrence_matrix", "ppmi", "skipgram_pairs", "negative_sampling_loss", "context_windows")


class TestWordVectorsExercise(ChapterGrading):
    ASSIGNMENT, NOTEBOOK = "01-word-vectors", "word_vectors"
    AUTO_POINTS = 11.0
    # Handed in on its own as well as packed beside other parts' mistakes (chapter_grading.py).
    ALONE = ("pmi-nan-for-empty-rows",)
    # student id -> (the part it breaks, its score in that part, edits to the solution)
    MISTAKES = {
        "window-exclusive": (COOC, 0.0, {COOC: [("range(1, window + 1)", "range(1, window)")]}),
        "one-direction-only": (COOC, 0.0, {COOC: [(
            "            counts.index_put_((right, left), ones, accumulate=True)  # and to the left\n", "")]}),
        "documents-joined": (COOC, 0.0, {COOC: [(
            "for ids in documents:", "for ids in [torch.cat([torch.as_tensor(d, dtype=torch.long) for d in documents])]:")]}),
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
        "windows-padded-on-one-side": (WINDOWS, 0.0, {WINDOWS: [("(window, window)", "(2 * window, 0)")]}),
        "windows-too-narrow": (WINDOWS, 0.0, {WINDOWS: [("unfold(0, 2 * window + 1, 1)", "unfold(0, 2 * window, 1)")]}),
        "windows-pad-id-ignored": (WINDOWS, 1.0, {WINDOWS: [("value=pad_id", "value=0")]}),
    }
