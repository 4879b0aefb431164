import importlib
import math
import types
from collections import namedtuple

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from nlpbook.recipe import Recipe
from nlpbook.training import History, StepWatch, evaluates, length_grouped_batches, linear_warmup, to_device, train
from tiny_lm import lm_batches, lm_loss, tiny_lm


def _regression(seed=0):
    torch.manual_seed(seed)
    x = torch.randn(64, 3)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.1
    batches = [(x[i:i + 16], y[i:i + 16]) for i in range(0, 64, 16)]
    return nn.Linear(3, 1), batches


def _mse(model, batch):
    inputs, targets = batch
    return F.mse_loss(model(inputs), targets)


def test_training_lowers_the_loss_and_records_evaluations():
    model, batches = _regression()
    history = train(model, batches, _mse, torch.optim.SGD(model.parameters(), lr=0.1), steps=60,
                    evaluate=lambda m: {"weight_error": (m.weight - torch.tensor([[1.0, -2.0, 0.5]])).abs().max()},
                    eval_every=20, progress=False)
    assert history.steps == list(range(1, 61))
    assert history.loss[-1] < history.loss[0] / 100
    assert history.eval_steps == [20, 40, 60]
    assert history.last("weight_error") < 0.05
    assert history.seconds > 0 and not model.training


def test_same_seed_same_history():
    runs = []
    for _ in range(2):
        model, batches = _regression()
        runs.append(train(model, batches, _mse, torch.optim.SGD(model.parameters(), lr=0.1), steps=10,
                          progress=False).loss)
    assert runs[0] == runs[1]


def test_clipping_bounds_the_gradient():
    model, batches = _regression()
    seen = []
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    original_step = optimizer.step

    def step(*args, **kwargs):
        seen.append(torch.cat([p.grad.flatten() for p in model.parameters()]).norm().item())
        return original_step(*args, **kwargs)

    optimizer.step = step
    train(model, [(b[0] * 100, b[1]) for b in batches], _mse, optimizer, steps=4, clip_grad_norm=1.0, progress=False)
    assert max(seen) <= 1.0 + 1e-5


def test_a_diverging_loss_stops_training_with_the_step():
    model, batches = _regression()
    with pytest.raises(FloatingPointError, match="at step 1"):
        train(model, batches, lambda m, b: torch.tensor(float("nan"), requires_grad=True),
              torch.optim.SGD(model.parameters(), lr=0.1), steps=3, progress=False)


def test_empty_batches_and_zero_steps_are_errors():
    model, _ = _regression()
    with pytest.raises(ValueError, match="batches yielded nothing"):
        train(model, [], _mse, torch.optim.SGD(model.parameters(), lr=0.1), steps=1, progress=False)
    with pytest.raises(ValueError, match="steps must be at least 1"):
        train(model, [], _mse, torch.optim.SGD(model.parameters(), lr=0.1), steps=0, progress=False)


def test_a_one_shot_generator_that_runs_out_is_an_error():
    model, batches = _regression()
    with pytest.raises(ValueError, match="one-shot generator"):
        train(model, iter(batches), _mse, torch.optim.SGD(model.parameters(), lr=0.1), steps=5, progress=False)


def test_to_device_walks_nested_batches():
    batch = {"a": (torch.zeros(1), [torch.ones(1)]), "b": 3}
    moved = to_device(batch, torch.device("cpu"))
    assert isinstance(moved["a"], tuple) and isinstance(moved["a"][1], list) and moved["b"] == 3


def test_history_last_reads_the_loss_or_a_metric():
    history = History(loss=[3.0, 2.0])
    history.record_eval(2, {"accuracy": 0.5})
    assert history.last("loss") == 2.0 and history.last("accuracy") == 0.5


def test_a_time_budget_stops_training_and_spreads_its_evaluations_without_counting_them(monkeypatch):
    module = importlib.import_module("nlpbook.training")
    # A clock of its own, so that the test says the same on a slow day: every step takes 0.05 s of
    # it (two readings, 0.05 apart), and every evaluation a whole second, which must not count.
    clock = types.SimpleNamespace(now=0.0)

    def perf_counter():
        clock.now += 0.05
        return clock.now

    def slow_evaluation(model):
        clock.now += 1.0
        return {"loss": 0.0}

    monkeypatch.setattr(module, "time", types.SimpleNamespace(perf_counter=perf_counter))
    history = train(tiny_lm(), lm_batches(), lm_loss, Recipe(lr=1e-2, warmup=2), seconds=0.29,
                    evaluate=slow_evaluation, evals=4, progress=False)
    # it stops at the first step that crosses the budget, the 6th (0.30 s), with the 4 seconds of
    # evaluation left out; the evaluations come at the first steps past 1/4, 2/4, 3/4 and 4/4 of it
    assert history.steps == [1, 2, 3, 4, 5, 6] and history.step_seconds == pytest.approx([0.05] * 6)
    assert history.seconds == pytest.approx(0.30)
    assert history.eval_steps == [2, 3, 5, 6]
    assert history.eval_seconds == pytest.approx([0.10, 0.15, 0.25, 0.30])


def test_a_run_needs_a_budget_and_a_recipe_schedules_itself():
    model = tiny_lm()
    with pytest.raises(ValueError, match="needs a budget"):
        train(model, lm_batches(), lm_loss, Recipe(lr=1e-2), progress=False)
    with pytest.raises(ValueError, match="clips and schedules itself"):
        train(model, lm_batches(), lm_loss, Recipe(lr=1e-2), steps=2, clip_grad_norm=1.0, progress=False)
    with pytest.raises(ValueError, match="evals"):
        train(model, lm_batches(), lm_loss, Recipe(lr=1e-2), steps=2, evals=2, eval_every=1, progress=False)


def test_history_curve_pairs_each_evaluation_with_the_seconds_trained_by_then():
    history = History()
    history.record_eval(10, {"perplexity": 9.0}, seconds=1.5)
    history.record_eval(20, {"perplexity": 5.0}, seconds=3.0)
    assert history.curve("perplexity") == [(1.5, 9.0), (3.0, 5.0)]
    with pytest.raises(KeyError):
        history.curve("accuracy")


def test_step_watch_sees_each_step_of_any_optimizer_and_poisons_gradients_left_behind():
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    x, y = torch.randn(8, 3), torch.randn(8, 2)

    def run(clear: bool, steps: int = 3):
        optimizer = torch.optim.Adam([{"params": [model.weight], "lr": 0.1}, {"params": [model.bias], "lr": 0.2}],
                                     betas=(0.9, 0.98), eps=1e-9)
        for _ in range(steps):
            if clear:
                optimizer.zero_grad()
            F.mse_loss(model(x), y).backward()
            optimizer.step()

    with StepWatch(poison=True) as watch:
        run(clear=True)
        run(clear=True, steps=2)  # a second optimizer
    assert watch.rates == [[0.1, 0.2]] * 5
    assert len(watch.optimizers) == 2 and watch.optimizers[0] is not watch.optimizers[1]
    assert [p for group in watch.optimizers[0].param_groups for p in group["params"]] == [model.weight, model.bias]
    other = nn.Parameter(torch.zeros(1))  # in no optimizer: NaN
    rates = watch.per_weight([model.bias, model.weight, other])
    assert rates[:, :2].tolist() == [[0.2, 0.1]] * 5 and rates[:, 2].isnan().all()
    assert watch.per_weight([model.weight], "eps").flatten().tolist() == [1e-9] * 5
    assert watch.per_weight([model.weight], "betas").isnan().all()  # not a number
    assert all(group["betas"] == (0.9, 0.98) and group["eps"] == 1e-9 for step in watch.settings for group in step)
    assert all(math.isfinite(norm) and norm > 0 for norm in watch.norms)
    model.zero_grad(set_to_none=True)  # the poisoned gradients of the last step
    with StepWatch(poison=True) as watch:
        run(clear=False)
    assert math.isfinite(watch.norms[0]) and all(math.isnan(norm) for norm in watch.norms[1:])
    model.zero_grad(set_to_none=True)
    # outside the block nothing is watched
    run(clear=True)
    assert len(watch.norms) == 3


def test_length_grouped_batches_cover_the_epoch_once_and_cut_the_padding():
    lengths = torch.randint(5, 80, (1000,), generator=torch.Generator().manual_seed(0))
    batches = length_grouped_batches(lengths, 32, torch.Generator().manual_seed(1))
    assert sorted(torch.cat(batches).tolist()) == list(range(1000))
    assert [len(b) for b in batches].count(32) == len(batches) - 1  # 1000 = 31 * 32 + 8

    def padded(batches):  # the positions a batch padded to its longest member computes
        return sum(len(b) * int(lengths[b].max()) for b in batches)

    shuffled = list(torch.randperm(1000, generator=torch.Generator().manual_seed(1)).split(32))
    assert padded(batches) < 0.7 * padded(shuffled)
    # the same generator seed gives the same epoch, another seed another grouping
    again = length_grouped_batches(lengths, 32, torch.Generator().manual_seed(1))
    other = length_grouped_batches(lengths, 32, torch.Generator().manual_seed(2))
    assert all(torch.equal(a, b) for a, b in zip(batches, again))
    assert {tuple(sorted(b.tolist())) for b in batches} != {tuple(sorted(b.tolist())) for b in other}
    # fewer examples than a batch make one batch
    assert len(length_grouped_batches(lengths[:5], 32, torch.Generator())) == 1
    with pytest.raises(ValueError, match="batch_size"):
        length_grouped_batches(lengths, 0, torch.Generator())


@pytest.mark.parametrize("steps, evals", [(10, 10), (100, 10), (800, 5), (30, 3), (10, 3), (7, 4)])
def test_evaluations_fall_on_the_exact_shares_of_a_budget_of_steps(steps, evals):
    # Adding up 1 / evals drifted: 10 evaluations of 10 steps once skipped step 3, 5 of 800 came at 481.
    # Each comes at the first step that has used its share: 3 of 10 steps at 4, 7 and 10.
    model = tiny_lm()
    history = train(model, lm_batches(), lm_loss, torch.optim.SGD(model.parameters(), lr=0.0), steps=steps,
                    evaluate=lambda model: {"seen": 1.0}, evals=evals, progress=False)
    assert history.eval_steps == [-(-steps * k // evals) for k in range(1, evals + 1)]


def test_a_budget_shorter_than_the_warm_up_or_a_loss_of_many_numbers_is_refused():
    model = tiny_lm()
    with pytest.raises(ValueError, match="warms up over 100 steps, longer than the run's 50"):
        train(model, lm_batches(), lm_loss, Recipe(lr=1e-2), steps=50, progress=False)
    with pytest.raises(ValueError, match="one number"):
        train(model, lm_batches(), lambda m, batch: lm_loss(m, batch).repeat(3), torch.optim.SGD(
            model.parameters(), lr=0.0), steps=2, progress=False)
    with pytest.raises(ValueError, match="eval_every must be at least 1"):
        train(model, lm_batches(), lm_loss, torch.optim.SGD(model.parameters(), lr=0.0), steps=2, eval_every=0,
              evaluate=lambda m: {}, progress=False)


def test_a_namedtuple_batch_keeps_its_fields_on_the_device():
    Pair = namedtuple("Pair", "inputs targets")
    moved = to_device(Pair(torch.zeros(2), [torch.ones(1)]), torch.device("cpu"))
    assert isinstance(moved, Pair) and torch.equal(moved.targets[0], torch.ones(1))


def test_evaluation_runs_in_eval_mode_without_gradients_and_training_resumes():
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    batches = [(torch.randn(4, 3), torch.randn(4, 1))]
    modes = []

    def loss_fn(m, batch):
        modes.append(m.training)
        return F.mse_loss(m(batch[0]), batch[1])

    history = train(model, batches, loss_fn, torch.optim.SGD(model.parameters(), lr=0.01), steps=4,
                    evaluate=lambda m: {"training": float(m.training), "grad": float(torch.is_grad_enabled())},
                    eval_every=2, progress=False)
    assert modes == [True] * 4
    assert history.metrics["training"] == [0.0, 0.0] and history.metrics["grad"] == [0.0, 0.0]


def test_evaluates_leaves_the_model_in_the_mode_it_found():
    @evaluates
    def mode(model):
        return model.training

    model = nn.Linear(2, 2)
    assert mode(model.train()) is False and model.training
    assert mode(model.eval()) is False and not model.training


def test_a_scheduler_is_stepped_once_per_update_and_linear_warmup_rises():
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    batches = [(torch.randn(4, 3), torch.randn(4, 1))]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with StepWatch() as watch:
        train(model, batches, lambda m, b: F.mse_loss(m(b[0]), b[1]), optimizer, steps=5,
              scheduler=linear_warmup(optimizer, 4), progress=False)
    assert [rates[0] for rates in watch.rates] == pytest.approx([0.0025, 0.005, 0.0075, 0.01, 0.01])
