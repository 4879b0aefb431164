"""Chapter 7's exercise through the real grading command: the classic mistakes of optimizers and schedules."""
from __future__ import annotations

from chapter_grading import ChapterGrading


MOMENTUM, RMSPROP, ADAM, ADAMW, SCHEDULE = "momentum_step", "rmsprop_step", "adam_step", "adamw", "warmup_linear_decay"
TRAIN = "train_with_adamw"


class TestAdamExercise(ChapterGrading):
    ASSIGNMENT, NOTEBOOK = "07-adam", "adam"
    AUTO_POINTS = 15.0
    # Forms the notebook says it accepts: full marks (the review's students lost a point to the first).
    VARIANTS = {
        # The velocity kept out of place, and the step by -=.
        "momentum-out-of-place": {MOMENTUM: [
            ('state["velocity"].mul_(momentum).add_(grad)', 'state["velocity"] = momentum * state["velocity"] + grad'),
            ('param.sub_(lr * state["velocity"])', 'param -= lr * state["velocity"]')]},
        "rmsprop-out-of-place": {RMSPROP: [
            ("    square_avg = state[\"square_avg\"]\n"
             "    square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)\n"
             "    param.addcdiv_(grad, square_avg.sqrt().add_(eps), value=-lr)",
             "    state[\"square_avg\"] = alpha * state[\"square_avg\"] + (1 - alpha) * grad * grad\n"
             "    param.sub_(lr * grad / (state[\"square_avg\"].sqrt() + eps))")]},
        "schedule-decay-as-one-minus": {SCHEDULE: [(
            "return max(0.0, (total_steps - step) / (total_steps - warmup_steps))",
            "return max(0.0, 1 - (step - warmup_steps) / (total_steps - warmup_steps))")]},
        # Kingma and Ba's efficient form as the paper writes it: epsilon not rescaled.
        "adamw-paper-epsilon": {ADAMW: [('add_(group["eps"] * correction2)', 'add_(group["eps"])')]},
        # The bias-corrected moments built explicitly, as in part 3.
        "adamw-corrected-moments": {ADAMW: [(
            "                correction2 = math.sqrt(1 - beta2 ** t)\n"
            "                step_size = group[\"lr\"] * correction2 / (1 - beta1 ** t)\n"
            "                denominator = state[\"exp_avg_sq\"].sqrt().add_(group[\"eps\"] * correction2)\n"
            "                param.addcdiv_(state[\"exp_avg\"], denominator, value=-step_size)\n",
            "                m_hat = state[\"exp_avg\"] / (1 - beta1 ** t)\n"
            "                v_hat = state[\"exp_avg_sq\"] / (1 - beta2 ** t)\n"
            "                param.sub_(group[\"lr\"] * m_hat / (v_hat.sqrt() + group[\"eps\"]))\n")]},
        # Part 3 in the efficient form, epsilon rescaled.
        "adam-efficient-form": {ADAM: [(
            "    m_hat = state[\"exp_avg\"] / (1 - beta1 ** t)\n"
            "    v_hat = state[\"exp_avg_sq\"] / (1 - beta2 ** t)\n"
            "    param.sub_(lr * m_hat / (v_hat.sqrt() + eps))",
            "    correction2 = (1 - beta2 ** t) ** 0.5\n"
            "    step_size = lr * correction2 / (1 - beta1 ** t)\n"
            "    param.sub_(step_size * state[\"exp_avg\"] / (state[\"exp_avg_sq\"].sqrt() + eps * correction2))")]},
        # Part 6's gradients cleared after the step instead of before the backward pass: every backward
        # pass still starts from zero (the visible test's NaN, left in the gradients after each step, shows it).
        "train-clears-after-the-step": {TRAIN: [("        optimizer.zero_grad()\n", ""),
                                                ("        scheduler.step()\n",
                                                 "        scheduler.step()\n        optimizer.zero_grad()\n")]},
    }
    # Handed in on its own as well as packed beside other parts' mistakes (chapter_grading.py).
    ALONE = ("adam-no-bias-correction",)
    # Part 6 trains a Transformer: it runs only in the hand-ins that carry its own entries (5 of 10).
    COSTLY = (TRAIN,)
    # student id -> (the part it breaks, its score in that part, edits to the solution)
    MISTAKES = {
        "momentum-as-an-average": (MOMENTUM, 0.0, {MOMENTUM: [("state[\"velocity\"].mul_(momentum).add_(grad)",
                                                               "state[\"velocity\"].mul_(momentum).add_(grad, alpha=1 - momentum)")]}),
        "momentum-steps-along-the-gradient": (MOMENTUM, 0.0, {MOMENTUM: [("param.sub_(lr * state[\"velocity\"])",
                                                                          "param.sub_(lr * grad)")]}),
        "momentum-aliases-the-gradient": (MOMENTUM, 0.0, {MOMENTUM: [('state["velocity"] = grad.clone()',
                                                                      'state["velocity"] = grad')]}),
        "momentum-velocity-not-kept": (MOMENTUM, 0.0, {MOMENTUM: [("if \"velocity\" not in state:", "if True:")]}),
        "rmsprop-eps-inside-the-root": (RMSPROP, 1.0, {RMSPROP: [("square_avg.sqrt().add_(eps)", "square_avg.add(eps).sqrt()")]}),
        "rmsprop-alpha-swapped": (RMSPROP, 0.0, {RMSPROP: [("square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)",
                                                            "square_avg.mul_(1 - alpha).addcmul_(grad, grad, value=alpha)")]}),
        "rmsprop-no-root": (RMSPROP, 0.0, {RMSPROP: [("square_avg.sqrt().add_(eps)", "square_avg.add(eps)")]}),
        "adam-no-bias-correction": (ADAM, 0.0, {ADAM: [("m_hat = state[\"exp_avg\"] / (1 - beta1 ** t)", "m_hat = state[\"exp_avg\"]"),
                                                       ("v_hat = state[\"exp_avg_sq\"] / (1 - beta2 ** t)", "v_hat = state[\"exp_avg_sq\"]")]}),
        "adam-counts-from-zero": (ADAM, 0.0, {ADAM: [("    state[\"step\"] += 1\n    t = state[\"step\"]\n",
                                                      "    t = state[\"step\"]\n    state[\"step\"] += 1\n")]}),
        "adam-counts-one-ahead": (ADAM, 0.0, {ADAM: [("    t = state[\"step\"]\n", "    t = state[\"step\"] + 1\n")]}),
        "adam-betas-swapped": (ADAM, 1.0, {ADAM: [("beta1, beta2 = betas", "beta2, beta1 = betas")]}),
        "adam-no-root-in-the-correction": (ADAM, 0.0, {ADAM: [("v_hat.sqrt() + eps", "state[\"exp_avg_sq\"].sqrt() / (1 - beta2 ** t) + eps")]}),
        "adamw-decay-through-the-gradient": (ADAMW, 0.0, {ADAMW: [
            ("                param.mul_(1 - group[\"lr\"] * group[\"weight_decay\"])  # decoupled decay, before the step\n",
             "                grad = grad + group[\"weight_decay\"] * param\n")]}),
        "adamw-decay-not-scaled-by-lr": (ADAMW, 0.0, {ADAMW: [("param.mul_(1 - group[\"lr\"] * group[\"weight_decay\"])",
                                                               "param.mul_(1 - group[\"weight_decay\"])")]}),
        "adamw-decay-after-the-step": (ADAMW, 1.0, {ADAMW: [
            ("                param.mul_(1 - group[\"lr\"] * group[\"weight_decay\"])  # decoupled decay, before the step\n", ""),
            ("                param.addcdiv_(state[\"exp_avg\"], denominator, value=-step_size)\n",
             "                param.addcdiv_(state[\"exp_avg\"], denominator, value=-step_size)\n"
             "                param.mul_(1 - group[\"lr\"] * group[\"weight_decay\"])\n")]}),
        "adamw-ignores-the-group-lr": (ADAMW, 1.0, {ADAMW: [("            beta1, beta2 = group[\"betas\"]\n",
                                                             "            beta1, beta2 = group[\"betas\"]\n"
                                                             "            group = dict(group, lr=self.defaults[\"lr\"])\n")]}),
        "adamw-bias-correction-one-step-ahead": (ADAMW, 0.0, {ADAMW: [("                t = state[\"step\"]\n",
                                                                      "                t = state[\"step\"] + 1\n")]}),
        # The visible test calls step(closure) too (the hidden test's groups run needs it).
        "adamw-loss-not-returned": (ADAMW, 0.0, {ADAMW: [("        return loss", "        return None")]}),
        "adamw-closure-without-enable-grad": (ADAMW, 0.0, {ADAMW: [("            with torch.enable_grad():\n"
                                                                    "                loss = closure()",
                                                                    "            loss = closure()")]}),
        "adamw-decays-a-parameter-without-gradient": (ADAMW, 0.0, {ADAMW: [(
            "                if param.grad is None:\n                    continue\n",
            "                if param.grad is None:\n"
            "                    param.mul_(1 - group[\"lr\"] * group[\"weight_decay\"])\n"
            "                    continue\n")]}),
        "schedule-warmup-one-step-ahead": (SCHEDULE, 0.0, {SCHEDULE: [("return step / warmup_steps", "return (step + 1) / warmup_steps")]}),
        "schedule-decay-ignores-warmup": (SCHEDULE, 0.0, {SCHEDULE: [("(total_steps - step) / (total_steps - warmup_steps)",
                                                                      "(total_steps - step) / total_steps")]}),
        "schedule-negative-after-the-end": (SCHEDULE, 0.0, {SCHEDULE: [("return max(0.0, (total_steps - step) / (total_steps - warmup_steps))",
                                                                        "return (total_steps - step) / (total_steps - warmup_steps)")]}),
        # A float32 step counter (torch.optim keeps a tensor, but takes its value in float64):
        # the docstring asks for float64 bias corrections, and a visible test checks them.
        "adamw-step-counter-as-a-float32-tensor": (ADAMW, 0.0, {ADAMW: [
            ('state["step"] = 0', 'state["step"] = torch.zeros(())'),
            ("param.addcdiv_(state[\"exp_avg\"], denominator, value=-step_size)",
             "param.addcdiv_(state[\"exp_avg\"], denominator, value=-float(step_size))")]}),
        # Training for a target (part 6): the grader scores the trained weights itself.
        "train-never-clears-gradients": (TRAIN, 0.0, {TRAIN: [("        optimizer.zero_grad()\n", "")]}),
        "train-scheduler-never-stepped": (TRAIN, 0.0, {TRAIN: [("        scheduler.step()\n", "")]}),
        # Decay on the biases and LayerNorms too: the visible test sees it (the watched optimizer's
        # groups); the score cannot (quick: 9.67 against the solution's 9.61, within the margin of
        # 0.4; standard: 5.43 against 5.34, margin 0.5), so it costs the visible point only.
        "train-decays-biases-and-norms": (TRAIN, 2.0, {TRAIN: [(
            '    groups = [{"params": [p for p in parameters if p.dim() >= 2], "weight_decay": weight_decay},\n'
            '              {"params": [p for p in parameters if p.dim() < 2], "weight_decay": 0.0}]\n',
            '    groups = [{"params": parameters, "weight_decay": weight_decay}]\n')]}),
    }
