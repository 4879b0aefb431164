"""Chapter 2's exercise through the real grading command: the classic mistakes of recurrent networks."""
from __future__ import annotations

from chapter_grading import ChapterGrading


STEP, FORWARD, BIDIRECTIONAL, CLIP, PPL = "rnn_step", "rnn_forward", "bidirectional_rnn", "clip_grad_norm", "perplexity"
MODEL, TRAIN, CARRIED = "rnn_language_model", "train_language_model", "train_carried_state"


class TestRnnsExercise(ChapterGrading):
    ASSIGNMENT, NOTEBOOK = "02-rnns", "rnns"
    AUTO_POINTS = 23.0
    # Part 8's last test trains the student's whole model (parts 1, 2, 4, 6 and 8 together).
    WHOLE = (CARRIED,)
    # Handed in on its own as well as packed beside other parts' mistakes (chapter_grading.py).
    ALONE = ("forward-returns-first-state",)
    # Part 7 trains a language model: it runs only in the hand-ins that carry its own entries.
    COSTLY = (TRAIN,)
    # student id -> (the part it breaks, its score in that part, edits to the solution)
    MISTAKES = {
        "step-without-tanh": (STEP, 0.0, {STEP: [("return torch.tanh(", "return (")]}),
        "step-relu": (STEP, 0.0, {STEP: [("torch.tanh(", "torch.relu(")]}),
        "step-drops-hidden-bias": (STEP, 0.0, {STEP: [(" + bias_hh)", ")")]}),
        "forward-reads-previous-input": (FORWARD, 0.0, {FORWARD: [("for x_t in x.unbind(1):",
                                                                   "for x_t in x.roll(1, dims=1).unbind(1):")]}),
        "forward-ignores-h0": (FORWARD, 1.0, {FORWARD: [
            ("h = h0 if h0 is not None else x.new_zeros(", "h = x.new_zeros(")]}),
        "forward-returns-first-state": (FORWARD, 0.0, {FORWARD: [("return torch.stack(outputs, dim=1), h",
                                                                  "return torch.stack(outputs, dim=1), outputs[0]")]}),
        "forward-time-major-output": (FORWARD, 0.0, {FORWARD: [("torch.stack(outputs, dim=1)", "torch.stack(outputs, dim=0)")]}),
        "backward-not-flipped-back": (BIDIRECTIONAL, 0.0, {BIDIRECTIONAL: [("    backward = backward.flip(1)", "    pass")]}),
        "directions-swapped": (BIDIRECTIONAL, 0.0, {BIDIRECTIONAL: [("torch.cat([forward, backward]", "torch.cat([backward, forward]")]}),
        "backward-final-state-at-wrong-end": (BIDIRECTIONAL, 0.0, {BIDIRECTIONAL: [
            ("torch.stack([forward_last, backward_last])", "torch.stack([forward_last, backward[:, -1]])")]}),
        "backward-uses-forward-weights": (BIDIRECTIONAL, 1.0, {BIDIRECTIONAL: [
            ("rnn_forward(x.flip(1), None, backward_weights)", "rnn_forward(x.flip(1), None, forward_weights)")]}),
        "clip-without-sqrt": (CLIP, 0.0, {CLIP: [("total = torch.sqrt(sum(", "total = (sum(")]}),
        "clip-scales-up": (CLIP, 0.0, {CLIP: [("scale = (max_norm / (total + 1e-6)).clamp(max=1.0)",
                                             "scale = max_norm / (total + 1e-6)")]}),
        # Reads its parameters twice: a generator such as model.parameters() is empty the second time.
        # The visible tests pass lists, so it keeps their point; the hidden generator case takes the other.
        "clip-reads-parameters-twice": (CLIP, 1.0, {CLIP: [
            ("    grads = [p.grad for p in parameters if p.grad is not None]\n"
             "    total = torch.sqrt(sum((g ** 2).sum() for g in grads))",
             "    total = torch.sqrt(sum((p.grad ** 2).sum() for p in parameters if p.grad is not None))\n"
             "    grads = [p.grad for p in parameters if p.grad is not None]")]}),
        "clip-returns-clipped-norm": (CLIP, 0.0, {CLIP: [("        g.mul_(scale)\n    return total",
                                                        "        g.mul_(scale)\n    return torch.sqrt(sum((g ** 2).sum() for g in grads))")]}),
        "perplexity-counts-padding": (PPL, 0.0, {PPL: [("picked[keep].mean()", "picked.mean()")]}),
        "perplexity-without-log-softmax": (PPL, 0.0, {PPL: [("torch.log_softmax(logits, dim=-1)", "logits")]}),
        "perplexity-mean-over-sequences": (PPL, 1.0, {PPL: [("torch.exp(-picked[keep].mean())",
                                                             "torch.exp(-(picked * keep).sum(1) / keep.sum(1)).mean()")]}),
        "model-ignores-h0": (MODEL, 0.0, {MODEL: [("rnn_forward(self.embedding(ids), h0, weights)",
                                                   "rnn_forward(self.embedding(ids), None, weights)")]}),
        "model-unit-normal-init": (MODEL, 1.0, {MODEL: [("torch.empty(*shape).uniform_(-bound, bound)",
                                                         "torch.randn(*shape)")]}),
        "model-returns-states": (MODEL, 0.0, {MODEL: [("return self.head(states), h_last", "return states, h_last")]}),
        # Training for a target (part 7): the grader scores the trained weights itself.
        "train-ignores-lr": (TRAIN, 0.0, {TRAIN: [("torch.optim.Adam(model.parameters(), lr=lr)",
                                                   "torch.optim.Adam(model.parameters())")]}),
        "train-never-clears-gradients": (TRAIN, 1.0, {TRAIN: [("        optimizer.zero_grad()\n", "")]}),
        # Clipping never fires in these runs (their gradients stay under the norm): the calls show it.
        "train-never-clips": (TRAIN, 0.0, {TRAIN: [("        clip_grad_norm(model.parameters(), max_norm)\n", "")]}),
        "train-clips-before-backward": (TRAIN, 0.0, {TRAIN: [
            ("        loss.backward()\n        clip_grad_norm(model.parameters(), max_norm)\n",
             "        clip_grad_norm(model.parameters(), max_norm)\n        loss.backward()\n")]}),
        "train-targets-not-shifted": (TRAIN, 0.0, {TRAIN: [("window[:, 1:].flatten()", "window[:, :-1].flatten()")]}),
        # Truncated backpropagation through time (part 8), the last test training the whole model.
        "carried-state-not-detached": (CARRIED, 0.0, {CARRIED: [("        state = state.detach()", "        pass")]}),
        "carried-state-reset-every-window": (CARRIED, 2.0, {CARRIED: [("model(window[:, :-1], state)",
                                                                       "model(window[:, :-1])")]}),
        "carried-state-targets-not-shifted": (CARRIED, 0.0, {CARRIED: [("window[:, 1:].flatten()",
                                                                        "window[:, :-1].flatten()")]}),
        "carried-state-ignores-lr": (CARRIED, 0.0, {CARRIED: [("torch.optim.Adam(model.parameters(), lr=lr)",
                                                               "torch.optim.Adam(model.parameters())")]}),
    }
    # Other correct ways to write the loop: they take another path through the same training,
    # which the margin allows for.
    VARIANTS = {
        "step-by-f-linear": {STEP: [(
            "return torch.tanh(x_t @ weight_ih.T + bias_ih + h_prev @ weight_hh.T + bias_hh)",
            "return torch.tanh(F.linear(x_t, weight_ih, bias_ih) + F.linear(h_prev, weight_hh, bias_hh))")]},
        # x[:, t] at each step: slower backward pass, the same values.
        "forward-indexes-each-step": {FORWARD: [(
            "for x_t in x.unbind(1):", "for x_t in (x[:, t] for t in range(T)):")]},
        "bidirectional-reversed-by-index": {BIDIRECTIONAL: [(
            "rnn_forward(x.flip(1), None, backward_weights)",
            "rnn_forward(x[:, list(range(x.shape[1] - 1, -1, -1))], None, backward_weights)")]},
        # The norm of the per-tensor norms, and a scale applied only when it is needed.
        "clip-norm-of-norms-when-needed": {CLIP: [
            ("total = torch.sqrt(sum((g ** 2).sum() for g in grads))", "total = torch.stack([g.norm() for g in grads]).norm()"),
            ("    scale = (max_norm / (total + 1e-6)).clamp(max=1.0)\n"
             "    for g in grads:\n"
             "        g.mul_(scale)\n",
             "    if total > max_norm:\n"
             "        for g in grads:\n"
             "            g.mul_(max_norm / (total + 1e-6))\n")]},
        "perplexity-by-cross-entropy": {PPL: [(
            "    log_probs = torch.log_softmax(logits, dim=-1)  # (B, T, V)\n"
            "    keep = targets != ignore_index  # (B, T)\n"
            "    picked = log_probs.gather(-1, targets.clamp_min(0)[..., None])[..., 0]  # (B, T): log p(y_n)\n"
            "    return torch.exp(-picked[keep].mean())",
            "    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=ignore_index).exp()")]},
        "model-weights-by-nn-init": {MODEL: [(
            "return nn.Parameter(torch.empty(*shape).uniform_(-bound, bound))",
            "return nn.init.uniform_(nn.Parameter(torch.empty(*shape)), -bound, bound)")]},
        "train-summed-loss": {TRAIN: [("window[:, 1:].flatten())", "window[:, 1:].flatten(), reduction='sum')")]},
        "train-clears-after-step": {TRAIN: [("        optimizer.zero_grad()\n", ""),
                                            ("        optimizer.step()\n", "        optimizer.step()\n        optimizer.zero_grad()\n")]},
        "carried-state-detached-when-passed": {CARRIED: [
            ("model(window[:, :-1], state)", "model(window[:, :-1], None if state is None else state.detach())"),
            ("        state = state.detach()", "        pass")]},
    }
