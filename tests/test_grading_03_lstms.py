"""Chapter 3's exercise through the real grading command: the classic mistakes of gated cells, decoding, BLEU
and of training a translator."""
from __future__ import annotations

from chapter_grading import ChapterGrading


LSTM, GRU, GREEDY, BEAM, BLEU = "lstm_cell", "gru_cell", "greedy_decode", "beam_search", "corpus_bleu"
TRANSLATOR = "translator"


class TestLstmsExercise(ChapterGrading):
    ASSIGNMENT, NOTEBOOK = "03-lstms", "lstms"
    AUTO_POINTS = 19.0
    # Handed in on its own as well as packed beside other parts' mistakes (chapter_grading.py).
    ALONE = ("greedy-keeps-eos",)
    # Part 6 trains a translator (about 15 s a notebook in quick): it runs only in the hand-ins that
    # carry its own entries, every packed one, and not again beside an entry handed in alone.
    COSTLY = (TRANSLATOR,)
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
        "greedy-stops-when-the-first-ends": (GREEDY, 1.0, {GREEDY: [("if all(finished):", "if finished[0]:")]}),
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
        "translator-encoder-reads-padding": (TRANSLATOR, 3.0, {TRANSLATOR: [(
            "        packed = nn.utils.rnn.pack_padded_sequence(self.encoder[\"embed\"](source), lengths.cpu(),\n"
            "                                                   batch_first=True, enforce_sorted=False)\n"
            "        states, (h, c) = self.encoder[\"lstm\"](packed)",
            "        states, (h, c) = self.encoder[\"lstm\"](self.encoder[\"embed\"](source))"), (
            "        states, _ = nn.utils.rnn.pad_packed_sequence(states, batch_first=True,\n"
            "                                                     total_length=source.shape[1])  # (B, S, 2H)\n",
            "")]}),
        # pads the encoder's states to the longest source of the batch, not to its columns
        "translator-states-shorter-than-the-source": (TRANSLATOR, 4.0, {TRANSLATOR: [(
            "        states, _ = nn.utils.rnn.pad_packed_sequence(states, batch_first=True,\n"
            "                                                     total_length=source.shape[1])  # (B, S, 2H)\n",
            "        states, _ = nn.utils.rnn.pad_packed_sequence(states, batch_first=True)\n")]}),
        "translator-attends-to-padding": (TRANSLATOR, 3.0, {TRANSLATOR: [
            ("torch.softmax(scores.masked_fill(~mask[:, None, :], float(\"-inf\")), dim=-1)", "torch.softmax(scores, dim=-1)")]}),
        "translator-decoder-ignores-the-encoder-state": (TRANSLATOR, 3.0, {TRANSLATOR: [
            ("outputs, _ = self.decoder(self.embed(target_in), state)", "outputs, _ = self.decoder(self.embed(target_in))")]}),
        "translator-decode-step-returns-logits": (TRANSLATOR, 3.0, {TRANSLATOR: [
            ("log_probs = torch.log_softmax(self.attend(output, states, mask)[:, 0], dim=-1)",
             "log_probs = self.attend(output, states, mask)[:, 0]")]}),
        "translation-targets-not-shifted": (TRANSLATOR, 0.0, {TRANSLATOR: [
            ("logits = model(source, lengths, target[:, :-1])", "logits = model(source, lengths, target[:, 1:])")]}),
        "translation-counts-padding": (TRANSLATOR, 3.0, {TRANSLATOR: [
            ("target[:, 1:].flatten(), ignore_index=0)", "target[:, 1:].flatten())")]}),
        "translation-without-zero-grad": (TRANSLATOR, 0.0, {TRANSLATOR: [("        optimizer.zero_grad()\n", "")]}),
        "translation-without-clipping": (TRANSLATOR, 4.0, {TRANSLATOR: [
            ("        nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n", "")]}),
        "translation-ignores-the-learning-rate": (TRANSLATOR, 1.0, {TRANSLATOR: [
            ("torch.optim.Adam(model.parameters(), lr=lr)", "torch.optim.Adam(model.parameters())")]}),
    }
    # Correct forms written otherwise, as students write them: each must keep every point (the hidden
    # tests' tolerances must admit their rounding).
    VARIANTS = {
        "lstm-through-f-linear": {LSTM: [(
            "z = x_t @ weight_ih.T + bias_ih + h_prev @ weight_hh.T + bias_hh  # (B, 4H)",
            "z = (torch.nn.functional.linear(x_t, weight_ih, bias_ih)\n"
            "         + torch.nn.functional.linear(h_prev, weight_hh, bias_hh))  # (B, 4H)")]},
        "gru-interpolation-as-a-step-towards-h": {GRU: [(
            "return (1 - z) * n + z * h_prev", "return n + z * (h_prev - n)")]},
        "bleu-product-of-precisions": {BLEU: [(
            "log_precision = sum(math.log(matches[n] / totals[n]) for n in orders) / max_order",
            "log_precision = math.log(math.prod(matches[n] / totals[n] for n in orders) ** (1 / max_order))")]},
        "greedy-max-indices": {GREEDY: [("tokens = log_probs.argmax(dim=-1)", "tokens = log_probs.max(dim=-1).indices")]},
        # Attention scores by torch.bmm, and the loss summed then divided by the real tokens' count:
        # the mean that ignore_index gives.
        "translator-bmm-and-summed-loss": {TRANSLATOR: [
            ("scores = outputs @ self.score(states).transpose(1, 2)",
             "scores = torch.bmm(outputs, self.score(states).transpose(1, 2))"),
            ("return F.cross_entropy(logits.flatten(0, 1), target[:, 1:].flatten(), ignore_index=0)",
             "total = F.cross_entropy(logits.flatten(0, 1), target[:, 1:].flatten(), ignore_index=0, reduction=\"sum\")\n"
             "    return total / (target[:, 1:] != 0).sum()")]},
        # the book's pruning: only a hypothesis's beam_size best tokens can make the beam
        "beam-topk-per-hypothesis": {BEAM: [(
            "            for token, log_prob in enumerate(log_probs[k].tolist()):\n",
            "            top = log_probs[k].topk(min(beam_size, log_probs.shape[-1]))\n"
            "            for log_prob, token in zip(top.values.tolist(), top.indices.tolist()):\n")]},
    }
