import pytest
import torch

from nlpbook.checks import (expect_close, expect_dtype, expect_finite, expect_shape, expect_tensor, forbid_autograd,
                            load_weights)

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


# ----------------------------------------------------------- records for the grader

import IPython.display  # noqa: E402

from nlpbook import checks  # noqa: E402


def _run_as_cell(code, namespace, filename):
    """Run ``code`` the way IPython runs a cell: module-level code with a file name of its own."""
    exec(compile(code, filename, "exec"), namespace)


@pytest.fixture
def shown(monkeypatch):
    records = []
    monkeypatch.setattr(IPython.display, "display", lambda data, raw: records.append(data[checks.CHECK_MIME]))
    return records


def test_no_records_outside_grading(shown, monkeypatch):
    monkeypatch.delenv(checks.GRADING_ENV, raising=False)
    _run_as_cell("expect_close(torch.ones(2), torch.ones(2), 'x')", {"torch": torch, "expect_close": expect_close},
                 "cell-1")
    assert shown == []


def test_a_student_run_records_values_but_never_computes_a_lazy_expected_value(shown, monkeypatch):
    monkeypatch.setenv(checks.GRADING_ENV, "student")
    called = []
    namespace = {"torch": torch, "expect_close": expect_close, "expect_shape": expect_shape,
                 "reference": lambda: called.append(1) or torch.zeros(2)}
    _run_as_cell("expect_close(torch.ones(2), reference, 'x')\nexpect_shape(torch.ones(2, 3), (2, 3), 'y')",
                 namespace, "cell-1")
    assert called == []  # and the wrong value did not raise in the kernel: the grader judges it
    assert [(r["kind"], r["name"]) for r in shown] == [("close", "x"), ("shape", "y")]
    assert "expected" not in shown[0]
    assert checks.decode(shown[0]["actual"]).tolist() == [1.0, 1.0]


def test_a_reference_run_records_expected_values_and_tolerances(shown, monkeypatch):
    monkeypatch.setenv(checks.GRADING_ENV, "reference")
    _run_as_cell("expect_close(torch.ones(2), lambda: torch.ones(2), 'x', atol=0.5)",
                 {"torch": torch, "expect_close": expect_close}, "cell-1")
    assert shown[0]["atol"] == 0.5 and checks.decode(shown[0]["expected"]).tolist() == [1.0, 1.0]


def test_checks_inside_student_functions_defined_in_another_cell_are_not_recorded(shown, monkeypatch):
    monkeypatch.setenv(checks.GRADING_ENV, "student")
    namespace = {"torch": torch, "expect_shape": expect_shape}
    _run_as_cell("def solution(x):\n    expect_shape(x, (2,), 'input')\n    return x", namespace, "cell-1")
    _run_as_cell("def helper():\n    expect_shape(solution(torch.ones(2)), (2,), 'output')\nhelper()",
                 namespace, "cell-2")
    assert [r["name"] for r in shown] == ["output"]


def test_encode_keeps_plain_numbers_and_decode_rejects_malformed_data():
    value = torch.tensor([[1.5, float("-inf")], [float("nan"), 0.0]])
    assert torch.equal(checks.decode(checks.encode(value)).isnan(), value.isnan())
    assert checks.encode([1, 2], strict=True) == {"invalid": "list"}
    for bad in ({"shape": [3], "data": "AAAA"}, {"shape": ["x"], "data": ""}, {"invalid": "Fake"}, "text"):
        with pytest.raises(ValueError):
            checks.decode(bad)


def test_a_state_goes_as_float32_where_that_loses_nothing():
    state = {"w": torch.randn(3, 4), "h": torch.randn(2).half(), "d": torch.randn(2, dtype=torch.float64),
             "n": torch.tensor([1, 2])}
    encoded = checks.encode_state(state)["state"]
    assert [encoded[k].get("dtype", "float64") for k in "whdn"] == ["float32", "float32", "float64", "float64"]
    decoded = checks.decode_state(checks.encode_state(state))
    assert decoded["w"].dtype == torch.float32 and torch.equal(decoded["w"], state["w"])
    assert torch.equal(decoded["d"], state["d"]) and decoded["n"].tolist() == [1.0, 2.0]
    assert len(encoded["w"]["data"]) * 2 == len(checks.encode(state["w"])["data"])  # half the bytes
    for bad in ({"shape": [2], "data": encoded["d"]["data"], "dtype": "float32"},  # 16 bytes are 4 float32s
                {"shape": [3, 4], "data": encoded["w"]["data"], "dtype": "int8"}):
        with pytest.raises(ValueError):
            checks.decode(bad)


@pytest.mark.parametrize("shape", [(0,), (0, 2), (3, 0, 1)])
def test_empty_tensors_round_trip(shape):
    decoded = checks.decode(checks.encode(torch.zeros(shape, dtype=torch.long)))
    assert decoded.shape == shape and decoded.dtype == torch.float64


def test_a_stand_in_accepts_exactly_the_calls_the_original_accepts():
    class Layer:
        def add_norm(self, input, output, dense_layer, dropout, ln_layer=None, *, scale=1):
            raise AssertionError("the student's version is never called")

    replaced = checks.stand_in(Layer.add_norm, lambda self, x, y, dense, drop, ln, *, scale: (x, y, dense, drop, ln,
                                                                                             scale))
    Layer.add_norm = replaced
    layer = Layer()
    # By position, by keyword (the student's own parameter names), with defaults: all the same call.
    assert layer.add_norm(1, 2, 3, 4) == (1, 2, 3, 4, None, 1)
    assert layer.add_norm(input=1, output=2, dense_layer=3, dropout=4, ln_layer=5, scale=2) == (1, 2, 3, 4, 5, 2)
    with pytest.raises(TypeError):
        layer.add_norm(x=1, y=2, dense=3, drop=4)  # the stand-in's own names are not the method's


def test_load_weights_puts_a_state_in_as_float32_and_names_what_does_not_fit():
    state = {"weight": torch.ones(2, 3, dtype=torch.float64), "bias": torch.zeros(2, dtype=torch.float64)}
    model = load_weights(torch.nn.Linear(3, 2), state, "a Linear")
    assert model.weight.dtype == torch.float32 and torch.equal(model.weight, torch.ones(2, 3))
    for wrong in ({"weight": torch.ones(3, 3), "bias": torch.zeros(2)}, {"weight": torch.ones(2, 3)},
                  {**state, "extra": torch.zeros(1)}):
        with pytest.raises(ValueError, match="the weights do not fit a Linear: Error"):
            load_weights(torch.nn.Linear(3, 2), wrong, "a Linear")


def test_forbid_autograd_refuses_a_backward_pass_even_out_of_inference_mode_and_then_allows_it():
    def by_autograd(x):  # how a hand-written gradient can be dodged under inference_mode
        with torch.inference_mode(False), torch.enable_grad():
            leaf = x.detach().clone().requires_grad_(True)
            (leaf ** 2).sum().backward()
        return leaf.grad

    def by_grad(x):
        with torch.inference_mode(False), torch.enable_grad():
            leaf = x.detach().clone().requires_grad_(True)
            return torch.autograd.grad((leaf ** 2).sum(), leaf)[0]

    x = torch.tensor([1.0, -2.0])
    for function in (by_autograd, by_grad):
        with torch.inference_mode(), forbid_autograd("part 6"), pytest.raises(AssertionError, match="part 6 should"):
            function(x)
        assert torch.equal(function(x), 2 * x)  # as before, outside it
    with forbid_autograd("part 6"):
        assert torch.equal(2 * x, x + x)  # plain arithmetic is fine


def test_a_score_that_is_better_when_higher_is_held_to_the_reference_minus_the_margin():
    # The margin goes the student's way for either kind of scorer: below the reference for an
    # accuracy, above it for a perplexity.
    assert checks.score_verdict("sentiment_accuracy", 0.79, 0.80, 0.02, "accuracy") is None
    assert "at least 0.780" in checks.score_verdict("sentiment_accuracy", 0.77, 0.80, 0.02, "accuracy")
    assert checks.score_verdict("char_rnn_perplexity", 3.70, 3.68, 0.05, "perplexity") is None
    assert "at most 3.730" in checks.score_verdict("char_rnn_perplexity", 3.75, 3.68, 0.05, "perplexity")


def test_expect_close_allows_the_relative_tolerance_of_large_values():
    # 0.05 apart at 1000 is within atol + rtol * 1000 = 0.10001; an absolute test alone would fail it.
    expect_close(torch.tensor([1000.05]), torch.tensor([1000.0]), "x")
    with pytest.raises(AssertionError):
        expect_close(torch.tensor([1000.2]), torch.tensor([1000.0]), "x")
