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
