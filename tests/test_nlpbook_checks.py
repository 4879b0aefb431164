import pytest
import torch

from nlpbook.checks import expect_close, expect_dtype, expect_finite, expect_shape, expect_tensor

INF = float("inf")


def test_close_values_pass_including_equal_infinities_and_nans():
    expect_close(torch.tensor([1.0, -INF, float("nan")]), torch.tensor([1.000001, -INF, float("nan")]), "x")


@pytest.mark.parametrize("actual, expected", [
    ([0.0], [-INF]),      # rtol * |inf| must not accept a finite number
    ([-INF], [0.0]),
    ([INF], [-INF]),
    ([float("nan")], [0.0]),
    ([1.1], [1.0]),
])
def test_wrong_values_fail_with_the_position_and_both_values(actual, expected):
    with pytest.raises(AssertionError, match=r"x differs from the expected values at 1 of 1 positions; at index \(0,\)"):
        expect_close(torch.tensor(actual), torch.tensor(expected), "x")


def test_messages_name_the_quantity_and_the_hint():
    with pytest.raises(AssertionError, match=r"probs has shape \(2, 3\); expected \(3, 2\): transpose"):
        expect_shape(torch.zeros(2, 3), (3, 2), "probs", "transpose")
    with pytest.raises(AssertionError, match="out should be a torch.Tensor, got list"):
        expect_tensor([1], "out")
    with pytest.raises(AssertionError, match="has dtype torch.float32; expected torch.float64"):
        expect_dtype(torch.zeros(1), torch.float64, "out")
    with pytest.raises(AssertionError, match=r"holds 1 NaN or infinite values \(the first at index \(1,\)\)"):
        expect_finite(torch.tensor([0.0, float("nan")]), "out")


def test_shape_is_checked_before_values():
    with pytest.raises(AssertionError, match="has shape"):
        expect_close(torch.zeros(2), torch.zeros(3), "x")
