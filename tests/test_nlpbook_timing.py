import pytest

from nlpbook.timing import time_call


def test_counts_warmup_and_repeats_and_returns_a_duration():
    calls = []
    seconds = time_call(lambda: calls.append(1), repeats=5, warmup=2)
    assert len(calls) == 7
    assert 0 <= seconds < 1


def test_needs_one_repeat():
    with pytest.raises(ValueError, match="repeats"):
        time_call(lambda: None, repeats=0)


def test_duration_picks_the_unit_a_reader_expects():
    from nlpbook.timing import duration

    assert [duration(s) for s in (0.04, 9.96, 45.2, 89.4, 192.0)] == [
        "0.0 s", "10.0 s", "45 s", "89 s", "3.2 minutes"]
    with pytest.raises(ValueError, match="negative"):
        duration(-1.0)
