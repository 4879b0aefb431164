import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from nlpbook.train import History, to_device, train


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
