"""Assertions for exercise tests that tell the student what is wrong.

A bare ``AssertionError`` teaches nothing.  These helpers say which
quantity is off, what was expected, and by how much, for example::

    output has shape (2, 5, 8); expected (2, 4, 8): check which axis you sum over

They are shared by the visible tests in every exercise notebook.
"""
from __future__ import annotations

import torch


def expect_tensor(value, name: str) -> torch.Tensor:
    """``value`` must be a torch.Tensor (not a list, array or None)."""
    if not isinstance(value, torch.Tensor):
        raise AssertionError(f"{name} should be a torch.Tensor, got {type(value).__name__}")
    return value


def expect_shape(value, shape: tuple[int, ...], name: str, hint: str = "") -> None:
    """``value`` must be a tensor of exactly ``shape``."""
    expect_tensor(value, name)
    if tuple(value.shape) != tuple(shape):
        message = f"{name} has shape {tuple(value.shape)}; expected {tuple(shape)}"
        raise AssertionError(f"{message}: {hint}" if hint else message)


def expect_dtype(value, dtype: torch.dtype, name: str) -> None:
    """``value`` must be a tensor of ``dtype``."""
    expect_tensor(value, name)
    if value.dtype != dtype:
        raise AssertionError(f"{name} has dtype {value.dtype}; expected {dtype}")


def expect_finite(value, name: str, hint: str = "") -> None:
    """``value`` must hold no NaN or infinity."""
    expect_tensor(value, name)
    bad = ~torch.isfinite(value)
    if bad.any():
        where = tuple(bad.nonzero()[0].tolist())
        message = f"{name} holds {int(bad.sum())} NaN or infinite values (the first at index {where})"
        raise AssertionError(f"{message}: {hint}" if hint else message)


def expect_close(actual, expected, name: str, *, atol: float = 1e-5, rtol: float = 1e-4,
                 hint: str = "") -> None:
    """``actual`` must have ``expected``'s shape and match it within ``atol + rtol * |expected|``."""
    expected = torch.as_tensor(expected)
    expect_shape(actual, tuple(expected.shape), name, hint)
    actual_values = actual.detach().to("cpu", torch.float64)
    expected_values = expected.detach().to("cpu", torch.float64)
    # Equal values (the same infinity included) and NaN against NaN match. An
    # infinity must be matched exactly: rtol * |inf| would accept any number.
    same = (actual_values == expected_values) | (torch.isnan(actual_values) & torch.isnan(expected_values))
    finite = torch.isfinite(actual_values) & torch.isfinite(expected_values)
    difference = (actual_values - expected_values).abs()
    allowed = atol + rtol * expected_values.abs()
    wrong = ~same & ~(finite & (difference <= allowed))
    if wrong.any():
        index = tuple(wrong.nonzero()[0].tolist())
        message = (
            f"{name} differs from the expected values at {int(wrong.sum())} of {wrong.numel()} "
            f"positions; at index {index} it is {actual_values[index].item():.6g}, "
            f"expected {expected_values[index].item():.6g}"
        )
        raise AssertionError(f"{message}: {hint}" if hint else message)
