"""Chapter 3's exercise through the real grading command: the classic mistakes of gated cells, decoding and BLEU."""
from __future__ import annotations

from chapter_grading import ChapterGrading


LSTM, GRU, GREEDY, BEAM, BLEU = "lstm_cell", "gru_cell", "greedy_decode", "beam_search", "corpus_bleu"


class TestLstmsExercise(ChapterGrading):
    ASSIGNMENT, NOTEBOOK = "03-lstms", "lstms"
    AUTO_POINTS = 13.0
    # student id -> (the part it breaks, its score in that part, edits to the solution)
    MISTAKES = {
        "lstm-h-from-old-cell": (LSTM, 0.0, {LSTM: [("torch.sigmoid(o) * torch.tanh(c)", "torch.sigmoid(o) * torch.tanh(c_prev)")]}),
        "lstm-gate-order": (LSTM, 1.0, {LSTM: [("i, f, g, o = z.chunk(4, dim=-1)", "i, f, o, g = z.chunk(4, dim=-1)")]}),
        "lstm-no-forget-gate": (LSTM, 0.0, {LSTM: [("torch.sigmoid(f) * c_prev", "c_prev")]}),
        "lstm-sigmoid-candidate": (LSTM, 0.0, {LSTM: [("torch.sigmoid(i) * torch.tanh(g)", "torch.sigmoid(i) * torch.sigmoid(g)")]}),
        "gru-update-gate-swapped": (GRU, 1.0, {GRU: [("return (1 - z) * n + z * h_prev", "return z * n + (1 - z) * h_prev")]}),
        "gru-no-reset-gate": (GRU, 1.0, {GRU: [("torch.tanh(gi_n + r * gh_n)", "torch.tanh(gi_n + gh_n)")]}),
        "greedy-keeps-eos": (GREEDY, 0.0, {GREEDY: [("                finished[b] = True\n",
                                                     "                finished[b] = True\n                outputs[b].append(token)\n")]}),
        "greedy-stops-when-one-ends": (GREEDY, 1.0, {GREEDY: [("if all(finished):", "if any(finished):")]}),
        "greedy-one-token-short": (GREEDY, 0.0, {GREEDY: [("for _ in range(max_length):", "for _ in range(max_length - 1):")]}),
        "greedy-decodes-to-max-length": (GREEDY, 1.0, {GREEDY: [("        if all(finished):\n            break\n", "")]}),
        "greedy-returns-tensors": (GREEDY, 1.0, {GREEDY: [("enumerate(tokens.tolist())", "enumerate(tokens)")]}),
        "beam-decodes-after-the-end": (BEAM, 1.0, {BEAM: [("        if not live:\n            break\n", "")]}),
        "beam-score-as-a-tensor": (BEAM, 1.0, {BEAM: [("enumerate(log_probs[k].tolist())", "enumerate(log_probs[k])")]}),
        "beam-drops-finished": (BEAM, 0.0, {BEAM: [("candidates = [h for h in beam if h[2]]", "candidates = []")]}),
        "beam-keeps-the-worst": (BEAM, 0.0, {BEAM: [("key=lambda h: h[1], reverse=True", "key=lambda h: h[1]")]}),
        "beam-returns-eos": (BEAM, 0.0, {BEAM: [("return (tokens[:-1] if finished else tokens), score", "return tokens, score")]}),
        "bleu-unclipped": (BLEU, 0.0, {BLEU: [("sum((ours & ngrams(reference, n)).values())", "sum(ours.values())")]}),
        "bleu-brevity-inverted": (BLEU, 1.0, {BLEU: [("math.exp(1 - reference_length / hypothesis_length)",
                                                      "math.exp(1 - hypothesis_length / reference_length)")]}),
        "bleu-three-grams": (BLEU, 0.0, {BLEU: [("max_order=4", "max_order=3")]}),
        "bleu-arithmetic-mean": (BLEU, 0.0, {BLEU: [
            ("log_precision = sum(math.log(matches[n] / totals[n]) for n in orders) / max_order",
             "log_precision = math.log(sum(matches[n] / totals[n] for n in orders) / max_order)")]}),
    }
