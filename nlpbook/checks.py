"""Assertions for exercise tests that tell the student what is wrong, and that the grader can trust.

A bare ``AssertionError`` teaches nothing.  These helpers say which
quantity is off, what was expected, and by how much, for example::

    output has shape (2, 5, 8); expected (2, 4, 8): check which axis you sum over

While a notebook is graded (``NLPBOOK_GRADING`` is ``student`` or
``reference``), every check made by a test cell is also sent out of the
kernel as a *record*: a display output of type :data:`CHECK_MIME` holding the
student's value as plain numbers.  The grader compares these values with the
records of the instructor's solution, outside the student's kernel (see
``autograder.verdicts``), so nothing the student's code does inside its own
process (patching ``torch.allclose``, objects whose ``==`` is always true,
hiding tracebacks) passes a value check (``expect_close``, ``expect_score``).
The other checks send what the kernel computed (a yes or no, a shape, a dtype),
which code in the notebook can forge: a test needs a value check to be safe.

Expected values may be given as a function of no arguments (``lambda:
reference(x)``).  While a student's notebook is graded such a function is
never called, and the grader sends the test cells with every ``expect_close``'s
expected value replaced by ``None``: the expected value never exists in the
student's kernel, so student code cannot read it from the caller's frame, call
it from an ``expect_close`` of its own, or tamper with it.
"""
from __future__ import annotations

import base64
import contextlib
import functools
import importlib
import inspect
import os
import sys
from typing import Any, Callable

import torch

GRADING_ENV = "NLPBOOK_GRADING"
CHECK_MIME = "application/vnd.nlpbook.check+json"
_NOT_COMPUTED = object()


# --------------------------------------------------------------- checks


def expect_tensor(value, name: str) -> torch.Tensor:
    """``value`` must be a torch.Tensor (not a list, array or None)."""
    _record("tensor", name, isinstance(value, torch.Tensor), True)
    check_tensor(value, name)
    return value


def expect_shape(value, shape: tuple[int, ...], name: str, hint: str = "") -> None:
    """``value`` must be a tensor of exactly ``shape``."""
    _record("shape", name, _shape_of(value), list(shape), hint=hint)
    check_shape(value, shape, name, hint)


def expect_dtype(value, dtype: torch.dtype, name: str) -> None:
    """``value`` must be a tensor of ``dtype``."""
    _record("dtype", name, str(value.dtype) if isinstance(value, torch.Tensor) else None, str(dtype))
    check_tensor(value, name)
    if value.dtype != dtype:
        raise AssertionError(f"{name} has dtype {value.dtype}; expected {dtype}")


def expect_finite(value, name: str, hint: str = "") -> None:
    """``value`` must hold no NaN or infinity."""
    _record("finite", name, _all_finite(value), True, hint=hint)
    check_tensor(value, name)
    bad = ~torch.isfinite(value)
    if bad.any():
        where = tuple(bad.nonzero()[0].tolist())
        message = f"{name} holds {int(bad.sum())} NaN or infinite values (the first at index {where})"
        raise AssertionError(f"{message}: {hint}" if hint else message)


def expect_close(actual, expected, name: str, *, atol: float = 1e-5, rtol: float = 1e-4,
                 hint: str = "") -> None:
    """``actual`` must have ``expected``'s shape and match it within ``atol + rtol * |expected|``.

    ``expected`` is a tensor, something ``torch.as_tensor`` takes, or a
    function of no arguments that returns one (see the module's notes).
    """
    expected = _resolve(expected)
    _record("close", name, actual, expected, atol=atol, rtol=rtol, hint=hint)
    if expected is not _NOT_COMPUTED:
        compare_close(actual, expected, name, atol=atol, rtol=rtol, hint=hint)


def expect_score(state: dict, scorer: str, name: str, *, margin: float, options: dict | None = None,
                 hint: str = "") -> float | None:
    """A trained model must score within ``margin`` of the instructor's solution trained the same way.

    ``state`` is the trained model's state dict; ``scorer`` names one of :data:`SCORERS`, a
    function of ``nlpbook`` that scores such weights on held-out data (called with
    ``options``).  While a notebook is graded the weights leave the kernel and the grader
    scores them in its own process, so no code of the student's decides the figure; the
    target is the instructor's solution's score, recorded when the reference ran, give or
    take ``margin`` in the worse direction.  Returns the score, computed here except in a
    student's graded kernel (where it is not needed).
    """
    options = dict(options or {})
    if scorer not in SCORERS:
        raise ValueError(f"unknown scorer {scorer!r}; expected one of {sorted(SCORERS)}")
    score = None if grading_role() == "student" else score_state(scorer, state, options)
    _record("score", name, state, score, scorer=scorer, options=options, margin=margin, hint=hint)
    return score


def expect_true(condition, message: str) -> None:
    """A yes-or-no property (``isinstance``, a flag); ``message`` says what should hold."""
    value = _truth(condition)
    _record("true", message, value, True)
    if not value:
        raise AssertionError(message)


def expect_raises(exception: type[BaseException], function: Callable[[], Any], message: str) -> None:
    """``function()`` must raise ``exception``; ``message`` says when."""
    try:
        function()
    except exception:
        raised = True
    except Exception:
        raised = False
    else:
        raised = False
    _record("true", message, raised, True)
    if not raised:
        raise AssertionError(message)


# ------------------------------------------------- trained models

# name -> (module, function, "lower" or "higher": which scores are better)
SCORERS = {
    "char_rnn_perplexity": ("nlpbook.charlm", "scored_perplexity", "lower"),
    "char_transformer_perplexity": ("nlpbook.charlm", "scored_transformer_perplexity", "lower"),
    "fine_tuned_accuracy": ("nlpbook.bert", "scored_fine_tuned_accuracy", "higher"),
    "masked_char_accuracy": ("nlpbook.masked_chars", "scored_masked_accuracy", "higher"),
    "sentiment_accuracy": ("nlpbook.bert", "scored_sentiment_accuracy", "higher"),
    "translation_perplexity": ("nlpbook.translation", "scored_translation_perplexity", "lower"),
    "wordsim_spearman": ("nlpbook.similarity", "scored_wordsim", "higher"),
}


def load_weights(model: torch.nn.Module, state: dict, what: str) -> torch.nn.Module:
    """``model``, built by a scorer, with a student's weights ``state`` put in as float32. A missing,
    unexpected or misshapen weight is the student's model's fault, not the grader's: ``ValueError``,
    saying that the weights do not fit ``what``."""
    try:
        model.load_state_dict({name: value.float() for name, value in state.items()})
    except RuntimeError as error:
        raise ValueError(f"the weights do not fit {what}: " + " ".join(str(error).split())[:500]) from None
    return model


def score_state(scorer: str, state: dict, options: dict) -> float:
    """``SCORERS[scorer]``'s score of the weights ``state``, a float (NaN for weights that hold NaN)."""
    module, function, _ = SCORERS[scorer]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ValueError("the weights should be a state dict: parameter names to tensors")
    return float(getattr(importlib.import_module(module), function)(state, **options))


def score_verdict(scorer: str, score: float, reference: float, margin: float, name: str, hint: str = "") -> str | None:
    """``None`` if ``score`` is within ``margin`` of ``reference`` or better, else what is wrong."""
    lower = SCORERS[scorer][2] == "lower"
    bound = reference + margin if lower else reference - margin
    if (score <= bound) if lower else (score >= bound):  # False for NaN
        return None
    message = (f"{name} is {score:.3f}; the target is {'at most' if lower else 'at least'} {bound:.3f} "
               f"(the instructor's solution, trained the same way, reached {reference:.3f}, and the margin "
               f"{margin:g} covers its spread over seeds)")
    return f"{message}: {hint}" if hint else message


def encode_state(state) -> dict:
    """A state dict's JSON form: its tensors encoded one by one (see :func:`encode`), a float32 (or
    narrower) tensor as float32, which loses nothing and halves what a large model sends."""
    if not isinstance(state, dict):
        return {"invalid": type(state).__name__}
    return {"state": {str(key): encode(value, strict=True, narrow=True) for key, value in state.items()}}


def decode_state(encoded) -> dict:
    """The inverse of :func:`encode_state`; ``ValueError`` for anything malformed."""
    if not isinstance(encoded, dict) or not isinstance(encoded.get("state"), dict):
        raise ValueError("not a state dict" + (f" (a {encoded['invalid']})" if isinstance(encoded, dict)
                                               and "invalid" in encoded else ""))
    return {key: decode(value) for key, value in encoded["state"].items()}


# ------------------------------------------------- comparisons (no records)


def stand_in(original: Callable, reference: Callable) -> Callable:
    """``reference`` behind ``original``'s exact signature: a test's stand-in for an earlier part.

    A test that grades one part with the instructor's version of another swaps the
    student's method for a stand-in.  The student's own code calls that method as they
    wrote it (by keyword, with defaults), so the stand-in must accept exactly what the
    original accepts: the call is bound to ``original``'s signature, then passed on to
    ``reference`` by position (keyword-only parameters by keyword)::

        BertLayer.add_norm = stand_in(BertLayer.add_norm, lambda self, x, y, dense, drop, ln: ln(x + drop(dense(y))))
    """
    signature = inspect.signature(original)

    @functools.wraps(original)
    def replaced(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return reference(*bound.args, **bound.kwargs)

    return replaced


@contextlib.contextmanager
def forbid_autograd(what: str):
    """Within it a backward pass (``Tensor.backward``, ``torch.autograd.backward`` or ``.grad``) raises
    ``AssertionError``: a test of a part whose gradients are to be written by hand calls the part in it.

    ``torch.inference_mode()`` alone does not do this, since code can leave it
    (``torch.inference_mode(False)`` with ``torch.enable_grad()``) and run autograd on copies.
    """
    def refuse(*args, **kwargs):
        raise AssertionError(f"{what} should compute its gradients by hand, without autograd; it called "
                             "backward() or torch.autograd.grad")

    saved = torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad
    torch.Tensor.backward = torch.autograd.backward = torch.autograd.grad = refuse
    try:
        yield
    finally:
        torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad = saved


def check_tensor(value, name: str) -> None:
    if not isinstance(value, torch.Tensor):
        raise AssertionError(f"{name} should be a torch.Tensor, got {type(value).__name__}")


def check_shape(value, shape, name: str, hint: str = "") -> None:
    check_tensor(value, name)
    if tuple(value.shape) != tuple(shape):
        message = f"{name} has shape {tuple(value.shape)}; expected {tuple(shape)}"
        raise AssertionError(f"{message}: {hint}" if hint else message)


def compare_close(actual, expected, name: str, *, atol: float = 1e-5, rtol: float = 1e-4, hint: str = "") -> None:
    """The comparison of :func:`expect_close`, also run by the grader on recorded values."""
    expected = torch.as_tensor(expected)
    check_shape(actual, tuple(expected.shape), name, hint)
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


# --------------------------------------------------------------- records


def grading_role() -> str:
    """``student``, ``reference``, or ``""`` outside grading."""
    role = os.environ.get(GRADING_ENV, "")
    return role if role in ("student", "reference") else ""


def _resolve(expected):
    # In a student's graded run the grader judges from the reference's records and sends test
    # cells with their expected values blanked (autograder.execute.without_expected_values), so
    # the kernel compares nothing and computes no expected value.
    if grading_role() == "student":
        return _NOT_COMPUTED
    if callable(expected) and not isinstance(expected, torch.Tensor):
        return expected()
    return expected


def _shape_of(value):
    return list(value.shape) if isinstance(value, torch.Tensor) else None


def _all_finite(value):
    return bool(torch.isfinite(value).all()) if isinstance(value, torch.Tensor) else None


def _truth(condition) -> bool:
    try:
        return bool(condition)
    except Exception:
        return False


def encode(value, *, strict: bool = False, narrow: bool = False) -> dict:
    """A JSON form of ``value`` that holds plain numbers only (tensors as float64 bytes).

    ``strict``: only a real tensor is encoded as one (a student's list stays "not a tensor").
    ``narrow``: a floating tensor of at most 32 bits goes as float32 bytes (marked ``"dtype"``).
    """
    if strict and not isinstance(value, torch.Tensor):
        return {"invalid": type(value).__name__}
    if value is None or isinstance(value, (bool, str, list)):
        return {"value": value}
    try:
        tensor = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
        dtype = (torch.float32 if narrow and tensor.is_floating_point() and tensor.element_size() <= 4
                 else torch.float64)
        tensor = tensor.detach().to("cpu", dtype).contiguous()
    except Exception:
        return {"invalid": type(value).__name__}
    encoded = {"shape": list(tensor.shape), "data": base64.b64encode(tensor.numpy().tobytes()).decode("ascii")}
    if dtype == torch.float32:
        encoded["dtype"] = "float32"
    return encoded


def decode(encoded: dict):
    """The inverse of :func:`encode`; ``ValueError`` for anything malformed."""
    if not isinstance(encoded, dict):
        raise ValueError("a record value must be an object")
    if "value" in encoded:
        return encoded["value"]
    if "invalid" in encoded:
        raise ValueError(f"not a tensor (a {encoded['invalid']})")
    shape, data = encoded.get("shape"), base64.b64decode(encoded.get("data", ""), validate=True)
    if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise ValueError("malformed shape")
    dtypes = {"float64": torch.float64, "float32": torch.float32}
    if encoded.get("dtype", "float64") not in dtypes:
        raise ValueError(f"unknown dtype {encoded.get('dtype')!r}")
    dtype = dtypes[encoded.get("dtype", "float64")]
    count = 1
    for n in shape:
        count *= n
    if count * dtype.itemsize != len(data):
        raise ValueError("data does not match the shape")
    if count == 0:  # frombuffer refuses an empty buffer
        return torch.zeros(shape, dtype=dtype)
    return torch.frombuffer(bytearray(data), dtype=dtype).reshape(shape)


def _called_from_test_cell() -> bool:
    """Whether the check was called by the running cell's own code (a test), not by a function
    defined in another cell (the student's code, which may use these helpers too)."""
    frame = sys._getframe(3)  # _called_from_test_cell <- _record <- expect_* <- caller
    caller = frame.f_code.co_filename
    while frame is not None and frame.f_code.co_name != "<module>":
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename == caller


def _record(kind: str, name: str, actual, expected, **details) -> None:
    role = grading_role()
    if not role or not _called_from_test_cell():
        return
    from IPython.display import display

    record = {"kind": kind, "name": name,
              "actual": encode_state(actual) if kind == "score" else encode(actual, strict=kind == "close")}
    if role == "reference":
        record.update(expected=encode(expected), **details)
    display({CHECK_MIME: record}, raw=True)
