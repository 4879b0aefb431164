import pytest
import torch

from nlpbook.data import PAD_ID, TASKS, adding_problem, make_sequence_task


def test_generation_is_deterministic_for_a_seeded_generator():
    first = make_sequence_task("reverse", size=8, length=6, generator=torch.Generator().manual_seed(3))
    second = make_sequence_task("reverse", size=8, length=6, generator=torch.Generator().manual_seed(3))
    assert torch.equal(first.source, second.source) and torch.equal(first.target, second.target)


@pytest.mark.parametrize("kind", TASKS)
def test_targets_follow_their_definition_on_the_real_tokens(kind):
    task = make_sequence_task(kind, size=50, length=9, min_length=2, vocab_size=7)
    for source, target, length in zip(task.source, task.target, task.lengths):
        real = source[:length]
        assert (source[length:] == PAD_ID).all() and (target[length:] == PAD_ID).all()
        assert (real != PAD_ID).all()
        expected = {"copy": real, "reverse": real.flip(0), "sort": real.sort().values,
                    "shift": torch.cat([torch.tensor([PAD_ID]), real[:-1]])}[kind]
        assert torch.equal(target[:length], expected)


def test_batches_cover_the_set_once():
    task = make_sequence_task("copy", size=10, length=3)
    seen = torch.cat([source for source, _ in task.batches(4, generator=torch.Generator().manual_seed(0))])
    assert sorted(map(tuple, seen.tolist())) == sorted(map(tuple, task.source.tolist()))


def test_batches_are_shuffled_by_their_generator_and_keep_each_source_with_its_target():
    task = make_sequence_task("reverse", size=64, length=6)
    orders = [torch.cat([source for source, _ in task.batches(16, generator=torch.Generator().manual_seed(seed))])
              for seed in (0, 0, 1)]
    assert torch.equal(orders[0], orders[1]) and not torch.equal(orders[0], orders[2])
    assert not torch.equal(orders[0], task.source)  # not in the set's own order
    pairs = {tuple(s): tuple(t) for s, t in zip(task.source.tolist(), task.target.tolist())}
    for source, target in task.batches(16, generator=torch.Generator().manual_seed(2)):
        assert all(pairs[tuple(s)] == tuple(t) for s, t in zip(source.tolist(), target.tolist()))


@pytest.mark.parametrize("kwargs, message", [
    ({"kind": "rotate"}, "unknown task 'rotate'"),
    ({"vocab_size": 2}, "vocab_size must be at least 3"),
    ({"min_length": 0}, "need 1 <= min_length <= length"),
])
def test_bad_arguments_are_named(kwargs, message):
    arguments = {"kind": "copy", "size": 2, "length": 4, **kwargs}
    kind = arguments.pop("kind")
    with pytest.raises(ValueError, match=message):
        make_sequence_task(kind, **arguments)


def test_adding_problem_marks_one_value_in_each_half_and_sums_them():
    inputs, targets = adding_problem(200, 10, generator=torch.Generator().manual_seed(4))
    assert inputs.shape == (200, 10, 2) and targets.shape == (200,)
    markers = inputs[..., 1]
    assert (markers.sum(1) == 2).all()
    assert (markers[:, :5].sum(1) == 1).all() and (markers[:, 5:].sum(1) == 1).all()
    assert torch.allclose((inputs[..., 0] * markers).sum(1), targets)
    # Predicting the mean of the targets gives a mean squared error near 1/6.
    assert abs(float(((targets - 1.0) ** 2).mean()) - 1 / 6) < 0.04
    with pytest.raises(ValueError, match="at least 2"):
        adding_problem(3, 1)


def test_another_generator_draws_another_task():
    # A training set and a test set drawn with different generators must differ: a generator that
    # is ignored makes them the same examples.
    first, second = (make_sequence_task("copy", size=8, length=5, generator=torch.Generator().manual_seed(seed))
                     for seed in (1, 2))
    assert not torch.equal(first.source, second.source)
    first, second = (adding_problem(8, 6, generator=torch.Generator().manual_seed(seed)) for seed in (1, 2))
    assert not torch.equal(first[0], second[0])


def test_every_token_of_the_vocabulary_but_padding_is_drawn():
    task = make_sequence_task("copy", size=200, length=8, vocab_size=5, min_length=2)
    real = task.source[task.source != PAD_ID]
    assert set(real.unique().tolist()) == {1, 2, 3, 4}
    assert set(task.lengths.unique().tolist()) == set(range(2, 9))  # every length, the longest too
