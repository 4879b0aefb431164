import numpy as np
import pytest
import torch

from nlpbook.spread import mean_range, mean_std


def test_mean_range_gives_the_mean_then_the_lowest_and_highest_run():
    assert mean_range([9.0, 10.1, 9.7]) == "9.6 (9.0 to 10.1)"
    assert mean_range(np.array([4.536, 4.459]), digits=3) == "4.497 (4.459 to 4.536)"
    assert mean_range([77.0]) == "77.0"


def test_mean_std_uses_the_sample_standard_deviation_as_torch_does():
    values = torch.tensor([0.5, 0.4, 0.6])
    assert mean_std(values) == f"0.500 ± {values.std().item():.3f}" == "0.500 ± 0.100"
    assert mean_std(np.array([0.25]), digits=2) == "0.25"


def test_an_empty_list_is_an_error_not_nan():
    for summarize in (mean_range, mean_std):
        with pytest.raises(ValueError, match="empty"):
            summarize([])


def test_mean_range_shows_runs_that_differ_as_different():
    assert mean_range([11.709, 11.744]) == "11.7 (11.71 to 11.74)"
    assert mean_range([2.0, 2.0]) == "2.0 (2.0 to 2.0)"


def test_over_seeds_says_how_many_runs_a_figure_rests_on():
    from nlpbook.spread import over_seeds

    assert over_seeds([4.6125]) == "4.61 with 1 seed"
    assert over_seeds([1.0, 2.0, 3.0], digits=1) == "2.0 ± 1.0 over 3 seeds"
