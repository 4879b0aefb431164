import pytest
import torch

from nlpbook.timing import time_call


def test_counts_warmup_and_repeats_and_returns_a_duration():
    calls = []
    seconds = time_call(lambda: calls.append(1), repeats=5, warmup=2, device="cpu")
    assert len(calls) == 7
    assert 0 <= seconds < 1


def test_the_fastest_of_the_timed_runs_not_their_mean_or_the_warmup(monkeypatch):
    # A clock that moves 3, 100 and 2 s in the three timed runs (the warm-up reads no clock):
    # the run of 100 s is one that something else on the machine held up.
    ticks = iter([0, 3, 3, 103, 103, 105])
    monkeypatch.setattr("nlpbook.timing.time.perf_counter", lambda: next(ticks))
    assert time_call(lambda: None, repeats=3, warmup=1) == 2


def test_needs_one_repeat():
    with pytest.raises(ValueError, match="repeats"):
        time_call(lambda: None, repeats=0)


def test_duration_picks_the_unit_a_reader_expects():
    from nlpbook.timing import duration

    assert [duration(s) for s in (0.04, 9.96, 45.2, 89.4, 192.0)] == [
        "0.0 s", "10.0 s", "45 s", "89 s", "3.2 minutes"]
    for wrong in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="finite time"):
            duration(wrong)


def test_on_a_gpu_each_run_is_timed_to_its_end(monkeypatch):
    # CUDA runs asynchronously: a sync after the warm-up and after every repeat, or the times are
    # those of the launches.  (The sync is recorded, not run, so this holds on a CPU too.)
    events = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: events.append("sync"))
    time_call(lambda: events.append("run"), repeats=3, warmup=2, device="cuda")
    assert events == ["run", "run", "sync"] + ["run", "sync"] * 3
    events.clear()
    time_call(lambda: events.append("run"), repeats=2, warmup=1, device="cpu")
    assert events == ["run"] * 3
