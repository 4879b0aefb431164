import contextlib
import math
import warnings

import pytest
import torch
import torch.nn as nn

from nlpbook.recipe import Recipe, decay_groups
from nlpbook.training import train
from tiny_lm import lm_batches, lm_loss, tiny_lm


def test_the_recipe_trains_as_a_plain_loop_written_out_does():
    recipe = Recipe(lr=3e-2, weight_decay=0.1, warmup=3, min_lr_ratio=0.1, clip=0.5)
    steps = 12
    model = tiny_lm()
    history = train(model, lm_batches(), lm_loss, recipe, steps=steps, progress=False)

    # The reference: AdamW with the two groups, the rate set by hand, clipping, all written out.
    reference = tiny_lm()
    decayed = [p for p in reference.parameters() if p.dim() >= 2]
    plain = [p for p in reference.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decayed, "weight_decay": 0.1}, {"params": plain, "weight_decay": 0.0}],
                                  lr=3e-2, betas=(0.9, 0.95))
    losses, batches = [], lm_batches()
    for step in range(steps):
        warm = min(1.0, (step + 1) / 3)
        cosine = 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / steps))
        for group in optimizer.param_groups:
            group["lr"] = 3e-2 * warm * cosine
        loss = lm_loss(reference, batches[step % len(batches)])
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(reference.parameters(), 0.5)
        optimizer.step()
        losses.append(loss.item())
    assert history.loss == pytest.approx(losses, rel=1e-5)
    for ours, theirs in zip(model.parameters(), reference.parameters()):
        assert torch.allclose(ours, theirs, atol=1e-6)


def test_the_recipe_decays_matrices_only_and_counts_a_tied_weight_once():
    model = tiny_lm()
    model[2].weight = model[0].weight  # the output layer shares the embedding table
    groups = Recipe(lr=1e-3).optimizer(model).param_groups
    assert [group["weight_decay"] for group in groups] == [0.1, 0.0]
    assert [len(group["params"]) for group in groups] == [1, 3]  # the table; LN gain and shift, output bias


def test_decay_groups_give_each_module_its_own_rate_and_leave_frozen_weights_out():
    model = tiny_lm()
    model[0].weight.requires_grad_(False)  # a frozen embedding table
    groups = decay_groups(model, 0.01, lr=5e-5) + decay_groups(nn.Linear(3, 2), 0.01, lr=1e-3)
    assert [(group["weight_decay"], group["lr"], len(group["params"])) for group in groups] == [
        (0.01, 5e-5, 1), (0.0, 5e-5, 3), (0.01, 1e-3, 1), (0.0, 1e-3, 1)]  # the output matrix; LN, bias
    # nothing to decay: one group, without decay
    assert [group["weight_decay"] for group in decay_groups(nn.LayerNorm(4), 0.01)] == [0.0]


def test_the_schedule_warms_up_linearly_then_follows_a_cosine_to_its_floor():
    recipe = Recipe(lr=1.0, warmup=4, min_lr_ratio=0.1)
    assert [recipe.lr_factor(step, 0.0) for step in range(5)] == pytest.approx([0.25, 0.5, 0.75, 1.0, 1.0])
    assert recipe.lr_factor(100, 0.5) == pytest.approx(0.55)
    assert recipe.lr_factor(100, 1.0) == pytest.approx(0.1) == recipe.lr_factor(100, 1.7)
    assert Recipe(lr=1.0, warmup=0).lr_factor(0, 0.0) == 1.0
    # min_lr_ratio 1: no decay, the peak rate from the end of the warm-up on (chapter 5's copying race)
    constant = Recipe(lr=1.0, warmup=4, min_lr_ratio=1.0)
    assert [constant.lr_factor(step, step / 10) for step in range(2, 11)] == pytest.approx([0.75] + [1.0] * 8)
    with pytest.raises(ValueError, match="min_lr_ratio"):
        Recipe(lr=1.0, min_lr_ratio=2.0)
    # a clip of 0 zeroes every update and a negative one climbs the loss
    for clip in (0.0, -1.0):
        with pytest.raises(ValueError, match="clip > 0"):
            Recipe(lr=1.0, clip=clip)
    Recipe(lr=1.0, clip=None)  # no clipping at all is allowed


def test_the_recipe_computes_in_float32_on_a_cpu():
    assert isinstance(Recipe(lr=1.0).autocast(torch.device("cpu")), contextlib.nullcontext)
    with Recipe(lr=1.0).autocast(torch.device("cpu")):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float32


def test_the_recipe_computes_in_bfloat16_on_a_gpu_unless_told_not_to():
    with warnings.catch_warnings():  # this machine may have no CUDA: autocast warns and disables itself
        warnings.simplefilter("ignore")
        context = Recipe(lr=1.0).autocast(torch.device("cuda"))
    assert isinstance(context, torch.autocast)
    assert context.device == "cuda" and context.fast_dtype == torch.bfloat16
    assert isinstance(Recipe(lr=1.0, bf16=False).autocast(torch.device("cuda")), contextlib.nullcontext)
