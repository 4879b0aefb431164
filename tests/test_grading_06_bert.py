"""Chapter 6's exercise through the real grading command: the classic mistakes of BERT's pieces,
of a linear probe on it trained for a target accuracy, and of fine-tuning it with BERT's recipe."""
from __future__ import annotations

from chapter_grading import ChapterGrading


WORDPIECE, ATTENTION, ADD_NORM, LAYER, EMBED, MASKING, PROBE, FINE_TUNE = (
    "wordpiece", "attention", "add_norm", "layer_forward", "embed", "mask_tokens", "sentiment_classifier", "fine_tune")
SUM = "ln_layer(input + dropout(dense_layer(output)))"
POOL = "return (hidden * weights).sum(1) / weights.sum(1)"
SCORES = "scores = query @ key.transpose(-2, -1) / math.sqrt(self.attention_head_size)"
FACTOR = "factor = min(step / warmup, (steps + 1 - step) / (steps + 1 - warmup))"
SET_RATE = ("        for group, peak in zip(optimizer.param_groups, peaks):\n"
            "            group[\"lr\"] = peak * factor\n")
SOFTMAX = "probs = self.dropout(torch.softmax(scores + attention_mask, dim=-1))"
EMBEDDINGS = ("summed = (self.word_embedding(input_ids) + self.pos_embedding(self.position_ids[:, :T])\n"
              "                  + self.tk_type_embedding(token_type_ids))")


class TestBertExercise(ChapterGrading):
    ASSIGNMENT, NOTEBOOK = "06-bert", "bert"
    AUTO_POINTS = 26.0
    # Handed in on its own as well as packed beside other parts' mistakes (chapter_grading.py).
    ALONE = ("attention-mask-multiplied",)
    # Part 7 trains a probe and part 8 fine-tunes MiniLM (about 15 s): each runs only in the hand-ins
    # that carry its own entries.
    COSTLY = (PROBE, FINE_TUNE)
    # student id -> (the part it breaks, its score in that part, edits to the solution)
    MISTAKES = {
        "wordpiece-without-continuation-marks": (WORDPIECE, 0.0, {WORDPIECE: [
            ('candidate = word[start:end] if start == 0 else "##" + word[start:end]', "candidate = word[start:end]")]}),
        "wordpiece-shortest-match-first": (WORDPIECE, 0.0, {WORDPIECE: [
            ("end, piece = len(word), None", "end, piece = start + 1, None"),
            ("while end > start:", "while end <= len(word):"), ("end -= 1", "end += 1")]}),
        "wordpiece-unknown-part-only": (WORDPIECE, 0.0, {WORDPIECE: [
            ("        if piece is None:\n            return [unk_token]\n",
             "        if piece is None:\n            pieces.append(unk_token)\n            break\n")]}),
        "wordpiece-no-length-limit": (WORDPIECE, 1.0, {WORDPIECE: [
            ("    if len(word) > max_chars:\n        return [unk_token]\n", "")]}),
        "wordpiece-length-limit-off-by-one": (WORDPIECE, 1.0, {WORDPIECE: [
            ("if len(word) > max_chars:", "if len(word) >= max_chars:")]}),
        "attention-mask-multiplied": (ATTENTION, 0.0, {ATTENTION: [
            ("scores + attention_mask", "scores * attention_mask")]}),
        "attention-mask-added-after-softmax": (ATTENTION, 0.0, {ATTENTION: [
            ("torch.softmax(scores + attention_mask, dim=-1)", "torch.softmax(scores, dim=-1) + attention_mask")]}),
        "attention-not-scaled": (ATTENTION, 1.0, {ATTENTION: [(SCORES, "scores = query @ key.transpose(-2, -1)")]}),
        "attention-scaled-by-the-hidden-size": (ATTENTION, 1.0, {ATTENTION: [
            ("math.sqrt(self.attention_head_size)", "math.sqrt(self.all_head_size)")]}),
        "attention-softmax-over-queries": (ATTENTION, 0.0, {ATTENTION: [
            ("attention_mask, dim=-1)", "attention_mask, dim=-2)")]}),
        "attention-heads-mixed-by-a-view": (ATTENTION, 1.0, {ATTENTION: [
            ("context.transpose(1, 2).reshape(B, T, H * Dh)", "context.reshape(B, T, H * Dh)")]}),
        "attention-without-dropout": (ATTENTION, 1.0, {ATTENTION: [
            (SOFTMAX, "probs = torch.softmax(scores + attention_mask, dim=-1)")]}),
        "add-norm-normalizes-before-the-add": (ADD_NORM, 0.0, {ADD_NORM: [
            (SUM, "input + ln_layer(dropout(dense_layer(output)))")]}),
        "add-norm-without-the-residual": (ADD_NORM, 0.0, {ADD_NORM: [(SUM, "ln_layer(dropout(dense_layer(output)))")]}),
        "add-norm-dropout-after-the-norm": (ADD_NORM, 1.0, {ADD_NORM: [(SUM, "dropout(ln_layer(input + dense_layer(output)))")]}),
        "add-norm-dropout-on-the-residual": (ADD_NORM, 1.0, {ADD_NORM: [(SUM, "ln_layer(dropout(input + dense_layer(output)))")]}),
        "gelu-tanh-approximation": (LAYER, 0.0, {LAYER: [
            ("return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))",
             "return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))")]}),
        "gelu-from-the-seed-notes": (LAYER, 0.0, {LAYER: [
            ("return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))",
             "return 0.5 * (1.0 + math.tanh(math.pi / 2)) * (x + 0.044715 * x ** 3)")]}),
        "layer-relu-instead-of-gelu": (LAYER, 1.0, {LAYER: [
            ("intermediate = gelu(self.interm_dense(attended))", "intermediate = torch.relu(self.interm_dense(attended))")]}),
        "layer-second-residual-from-the-input": (LAYER, 1.0, {LAYER: [
            ("return self.add_norm(attended, intermediate,", "return self.add_norm(hidden_states, intermediate,")]}),
        "layer-without-the-second-add-norm": (LAYER, 1.0, {LAYER: [
            ("return self.add_norm(attended, intermediate, self.out_dense, self.out_dropout, self.out_layer_norm)",
             "return attended + self.out_dense(intermediate)")]}),
        "embed-without-token-types": (EMBED, 0.0, {EMBED: [
            (EMBEDDINGS, "summed = self.word_embedding(input_ids) + self.pos_embedding(self.position_ids[:, :T])")]}),
        "embed-without-positions": (EMBED, 0.0, {EMBED: [
            (EMBEDDINGS, "summed = self.word_embedding(input_ids) + self.tk_type_embedding(token_type_ids)")]}),
        "embed-positions-from-one": (EMBED, 1.0, {EMBED: [("self.position_ids[:, :T]", "self.position_ids[:, 1:T + 1]")]}),
        "embed-dropout-before-the-norm": (EMBED, 1.0, {EMBED: [
            ("return self.embed_dropout(self.embed_layer_norm(summed))", "return self.embed_layer_norm(self.embed_dropout(summed))")]}),
        "embed-without-layer-norm": (EMBED, 0.0, {EMBED: [
            ("return self.embed_dropout(self.embed_layer_norm(summed))", "return self.embed_dropout(summed)")]}),
        "masking-selects-special-tokens": (MASKING, 0.0, {MASKING: [
            ("torch.bernoulli(chance, generator=generator).bool() & ~special",
             "torch.bernoulli(chance, generator=generator).bool()")]}),
        "masking-labels-everywhere": (MASKING, 0.0, {MASKING: [
            ("labels = torch.where(selected, input_ids, torch.full_like(input_ids, IGNORE_INDEX))", "labels = input_ids.clone()")]}),
        "masking-always-mask": (MASKING, 1.0, {MASKING: [
            ("corrupted = torch.where(decile < 8, mask_id, torch.where(decile < 9, random_ids, input_ids))",
             "corrupted = torch.full_like(input_ids, mask_id)")]}),
        "masking-changes-its-input": (MASKING, 0.0, {MASKING: [
            ("inputs = torch.where(selected, corrupted, input_ids)",
             "input_ids[selected] = corrupted[selected]\n    inputs = input_ids")]}),
        "masking-random-ids-ignore-the-generator": (MASKING, 1.0, {MASKING: [
            ("torch.randint(vocab_size, input_ids.shape, generator=generator)", "torch.randint(vocab_size, input_ids.shape)")]}),
        # Part 7, the linear probe. The training bugs end below the target accuracy (the notebook's
        # table: quick 0.703 for the solution, target 0.663; a head that always answers "fresh" gets 0.54).
        "probe-mean-over-padding": (PROBE, 3.0, {PROBE: [
            (POOL, "return hidden.mean(1)")]}),
        "probe-first-token-vector": (PROBE, 3.0, {PROBE: [
            (POOL, "return hidden[:, 0]")]}),
        "probe-encoder-not-frozen": (PROBE, 3.0, {PROBE: [
            ("self.bert = bert.requires_grad_(False)", "self.bert = bert")]}),
        "probe-without-dropout": (PROBE, 4.0, {PROBE: [
            ("return self.classifier(self.dropout(features))", "return self.classifier(features)")]}),
        "probe-left-in-training-mode": (PROBE, 5.0, {PROBE: [("    model.eval()\n    return losses", "    return losses")]}),
        "probe-labels-drawn-apart-from-rows": (PROBE, 2.0, {PROBE: [
            ("labels[rows])", "labels[torch.randint(len(labels), (batch_size,), generator=generator)])")]}),
        "probe-without-zero-grad": (PROBE, 4.0, {PROBE: [("        optimizer.zero_grad()\n", "")]}),
        "probe-ignores-the-learning-rate": (PROBE, 3.0, {PROBE: [
            ("torch.optim.Adam(model.classifier.parameters(), lr=lr)", "torch.optim.Adam(model.classifier.parameters())")]}),
        # Part 8, fine-tuning: the watched steps catch each slip in the recipe (visible 1 point, recipe 2);
        # the target (3) catches those that spoil the training.
        # One rate for the whole network, the classifier's: ten times too fast for pretrained weights,
        # which it wrecks (quick: 0.540, the share of fresh reviews, against a target of 0.59).
        "fine-tune-one-rate-for-both": (FINE_TUNE, 0.0, {FINE_TUNE: [
            ("(model.encoder, encoder_lr)", "(model.encoder, head_lr)")]}),
        "fine-tune-decays-every-weight": (FINE_TUNE, 3.0, {FINE_TUNE: [
            ('"weight_decay": 0.0}', '"weight_decay": weight_decay}')]}),
        "fine-tune-without-warm-up": (FINE_TUNE, 3.0, {FINE_TUNE: [
            (FACTOR, "factor = min(1.0, (steps + 1 - step) / (steps + 1 - warmup))")]}),
        "fine-tune-trains-the-frozen-weights": (FINE_TUNE, 3.0, {FINE_TUNE: [
            ("    groups = []\n", "    model.requires_grad_(True)\n    groups = []\n")]}),
        # harmless to the training (AdamW skips a weight without a gradient), but not the recipe asked for
        "fine-tune-puts-frozen-weights-in-the-optimizer": (FINE_TUNE, 3.0, {FINE_TUNE: [
            ("trained = [p for p in part.parameters() if p.requires_grad]", "trained = list(part.parameters())")]}),
        "fine-tune-left-in-eval-mode": (FINE_TUNE, 3.0, {FINE_TUNE: [("    model.train()\n", "")]}),
        "fine-tune-without-zero-grad": (FINE_TUNE, 3.0, {FINE_TUNE: [("        optimizer.zero_grad()\n", "")]}),
        "fine-tune-rate-set-after-the-step": (FINE_TUNE, 3.0, {FINE_TUNE: [
            (SET_RATE, ""), ("        optimizer.step()\n", "        optimizer.step()\n" + SET_RATE)]}),
    }
    # Correct code written another way keeps every point: the hidden layer test swaps in stand-ins
    # for attention and add & norm, which must take the student's keyword calls.
    VARIANTS = {
        # The longest piece found by a for loop over the ends, with its else for a word that has none.
        "wordpiece-for-else-over-the-ends": {WORDPIECE: [(
            "        end, piece = len(word), None\n"
            "        while end > start:\n"
            "            candidate = word[start:end] if start == 0 else \"##\" + word[start:end]\n"
            "            if candidate in vocab:\n"
            "                piece = candidate\n"
            "                break\n"
            "            end -= 1\n"
            "        if piece is None:\n"
            "            return [unk_token]\n",
            "        for end in range(len(word), start, -1):\n"
            "            piece = (\"##\" if start else \"\") + word[start:end]\n"
            "            if piece in vocab:\n"
            "                break\n"
            "        else:\n"
            "            return [unk_token]\n")]},
        "attention-matmul-and-permute": {ATTENTION: [
            (SCORES, "scores = torch.matmul(query, key.transpose(-1, -2)) * self.attention_head_size ** -0.5"),
            ("context.transpose(1, 2).reshape(B, T, H * Dh)", "context.permute(0, 2, 1, 3).flatten(2)")]},
        "add-norm-residual-added-second": {ADD_NORM: [(SUM, "ln_layer(dropout(dense_layer(output)) + input)")]},
        "embed-positions-by-arange": {EMBED: [(
            "self.pos_embedding(self.position_ids[:, :T])", "self.pos_embedding(torch.arange(T, device=input_ids.device))")]},
        "masking-special-ids-one-by-one": {MASKING: [(
            "    special = torch.isin(input_ids, torch.as_tensor(special_ids, dtype=input_ids.dtype))\n",
            "    special = torch.zeros_like(input_ids, dtype=torch.bool)\n"
            "    for special_id in special_ids:\n"
            "        special |= input_ids == special_id\n")]},
        # The mean over real tokens with the padding zeroed by masked_fill, and the cross-entropy
        # written as the log-softmax's negative log-likelihood.
        "probe-masked-fill-and-nll-loss": {PROBE: [
            (POOL,
             "return hidden.masked_fill(weights == 0, 0.0).sum(1) / weights.sum(1)"),
            ("loss = F.cross_entropy(model(features[rows]), labels[rows])",
             "loss = F.nll_loss(F.log_softmax(model(features[rows]), dim=-1), labels[rows])")]},
        "fine-tune-with-lambda-lr": {FINE_TUNE: [
            ("    peaks = [group[\"lr\"] for group in optimizer.param_groups]\n",
             "    schedule = torch.optim.lr_scheduler.LambdaLR(\n"
             "        optimizer, lambda s: min((s + 1) / warmup, (steps - s) / (steps + 1 - warmup)))\n"),
            ("        " + FACTOR + "\n" + SET_RATE, ""),
            ("        optimizer.step()\n", "        optimizer.step()\n        schedule.step()\n")]},
        "layer-calls-its-parts-by-keyword": {LAYER: [
            ("attended = self.add_norm(hidden_states, attended, self.attention_dense, self.attention_dropout,\n"
             "                             self.attention_layer_norm)",
             "attended = self.add_norm(input=hidden_states, output=attended, dense_layer=self.attention_dense,\n"
             "                             dropout=self.attention_dropout, ln_layer=self.attention_layer_norm)"),
            ("return self.add_norm(attended, intermediate, self.out_dense, self.out_dropout, self.out_layer_norm)",
             "return self.add_norm(input=attended, output=intermediate, dense_layer=self.out_dense,\n"
             "                     dropout=self.out_dropout, ln_layer=self.out_layer_norm)")]},
    }
