import json
import math

import numpy as np
import pytest
import torch
from IPython.lib.pretty import pretty

from nlpbook.results import (NO_VERDICT, Runs, Table, _range_extra_digits, chance_words, false_positive_rate,
                             speed_verdict, verdict_table)


def test_runs_are_written_as_the_book_writes_a_result_over_seeds():
    values = torch.tensor([0.5, 0.4, 0.6])
    runs = Runs(values)
    # the sample standard deviation, divided by n - 1 as torch.std is
    assert str(runs) == f"0.500 ± {values.std().item():.3f}" == "0.500 ± 0.100"
    assert Runs([9.0, 10.1, 9.7], digits=1).range_text() == "9.6 (9.0 to 10.1)"
    assert Runs(np.array([4.536, 4.459])).range_text() == "4.497 (4.459 to 4.536)"
    assert Runs([77.0], digits=1).range_text() == "77.0"
    assert Runs([1.0, 2.0, 3.0], digits=1).seeds_text() == "2.0 ± 1.0 over 3 seeds"
    assert Runs([4.6125], digits=2).seeds_text() == "4.61 with 1 seed"
    assert str(Runs(np.array([0.25]), digits=2)) == "0.25"
    assert float(runs) == pytest.approx(0.5) and runs.std == pytest.approx(0.1) and runs.n == 3
    assert (runs.low, runs.high) == pytest.approx((0.4, 0.6))


def test_a_range_shows_runs_that_differ_as_different():
    assert Runs([11.709, 11.744], digits=1).range_text() == "11.7 (11.71 to 11.74)"
    assert Runs([2.0, 2.0], digits=1).range_text() == "2.0 (2.0 to 2.0)"


def test_glue_and_ipython_show_the_text_not_the_dataclass():
    # myst-nb's glue stores IPython's plain-text form of the object, which {glue:text} prints.
    assert pretty(Runs([2.633, 2.641])) == "2.637 ± 0.006"


def test_an_empty_measurement_is_an_error():
    with pytest.raises(ValueError, match="empty"):
        Runs([])


@pytest.mark.parametrize("ours, theirs, better, word", [
    ([2.63, 2.64, 2.62], [2.74, 2.75, 2.73], "lower", "ahead"),
    ([2.74, 2.75, 2.73], [2.63, 2.64, 2.62], "lower", "behind"),
    ([2.63, 2.76, 2.62], [2.74, 2.75, 2.73], "lower", "level"),   # the ranges overlap
    ([0.81, 0.83, 0.82], [0.78, 0.79, 0.80], "higher", "ahead"),  # an accuracy
    ([2.63, 2.64, 2.62], 2.70, "lower", "ahead"),                  # against one number
    ([2.63, 2.74, 2.62], 2.70, "lower", "level"),
])
def test_one_run_better_than_every_run_of_the_other_is_the_only_way_ahead(ours, theirs, better, word):
    other = Runs(theirs) if isinstance(theirs, list) else theirs
    assert Runs(ours).versus(other, better=better).word == word


def test_a_tie_between_runs_is_level():
    assert Runs([1.0, 2.0]).versus(Runs([2.0, 3.0])).word == "level"


def test_a_diverged_run_cannot_be_ordered():
    with pytest.raises(ValueError, match="NaN"):
        Runs([1.0, float("nan")]).versus(Runs([2.0, 3.0]))
    with pytest.raises(ValueError, match="lower"):
        Runs([1.0]).versus(2.0, better="smaller")


def test_the_false_positive_rates_the_docstring_states():
    assert false_positive_rate(1, 1) == 1.0
    assert false_positive_rate(2, 2) == pytest.approx(1 / 3)
    assert false_positive_rate(3, 3) == pytest.approx(1 / 10)
    assert false_positive_rate(5, 5) == pytest.approx(1 / 126)
    assert false_positive_rate(3) == pytest.approx(1 / 4) and false_positive_rate(5) == pytest.approx(1 / 16)
    assert Runs([1, 2, 3]).versus(Runs([4, 5, 6])).false_positive_rate == pytest.approx(0.1)


def test_a_false_positive_rate_is_written_as_one_time_in_n():
    assert chance_words(false_positive_rate(2, 2)) == "one time in 3"
    assert chance_words(false_positive_rate(3, 3)) == "one time in 10"
    assert chance_words(1.0) == "one time in 1"
    with pytest.raises(ValueError, match="false-positive rate"):
        chance_words(0.0)


@pytest.mark.parametrize("n, m", [(2, 2), (3, 3), (3, 5)])
def test_the_false_positive_rate_is_what_equal_models_get_by_chance(n, m):
    # The reference: draw both models' runs from one distribution many times, count the verdicts that are not level.
    rng = np.random.default_rng(0)
    trials = 20_000
    called = sum(Runs(rng.normal(size=n)).versus(Runs(rng.normal(size=m))).word != "level" for _ in range(trials))
    rate = false_positive_rate(n, m)
    assert abs(called / trials - rate) < 4 * math.sqrt(rate * (1 - rate) / trials)


def test_runs_survive_json():
    runs = Runs([2.633, 2.641], digits=2)
    assert Runs.from_json(json.loads(json.dumps(runs.to_json()))) == runs


def _table() -> Table:
    return (Table(["model", "weights", "loss (nats)"], formats={"weights": ","})
            .add("LSTM", 3_300_000, Runs([2.633, 2.641]))
            .add("6-gram | counted", np.int64(1_200_000), 3.01))


def test_a_table_renders_as_a_pipe_table_with_each_cell_written_as_the_book_writes_it():
    assert _table()._repr_markdown_().splitlines() == [
        "| model | weights | loss (nats) |",
        "|---|---|---|",
        "| LSTM | 3,300,000 | 2.637 ± 0.006 |",
        "| 6-gram \\| counted | 1,200,000 | 3.01 |",
    ]


def test_a_whole_number_without_a_format_is_written_in_full():
    table = Table(["n-gram", "contexts"])
    table.add("7-gram", 4826372)
    table.add("8-gram", np.int64(12000000))
    assert table._repr_markdown_().splitlines()[2:] == ["| 7-gram | 4826372 |", "| 8-gram | 12000000 |"]


def test_a_column_of_runs_can_show_the_range_or_the_seed_count_instead():
    table = Table(["model", "accuracy", "loss"], {"accuracy": "range", "loss": "seeds"})
    table.add("BERT", Runs([80.0, 82.0, 81.0], digits=1), Runs([2.5, 2.7]))
    assert table._repr_markdown_().splitlines()[-1] == "| BERT | 81.0 (80.0 to 82.0) | 2.600 ± 0.141 over 2 seeds |"
    table.add("chance", "50.0", "")  # text passes as it is
    assert table._repr_markdown_().splitlines()[-1] == "| chance | 50.0 |  |"
    table.add("chance", 50.0, "")
    with pytest.raises(ValueError, match="for a column of Runs, not for the number 50.0"):
        table._repr_markdown_()


def test_a_column_of_ranges_does_not_print_apart_rows_as_touching():
    # warmup's pre-LN rows: every seed with warm-up below every seed without (7.188 < 7.193), yet
    # at two decimals the ranges read "6.64 to 7.19" and "7.19 to 8.76".
    table = Table(["setting", "perplexity"], {"perplexity": "range"})
    table.add("warm-up", Runs([6.64, 7.11, 7.188], digits=2))
    table.add("no warm-up", Runs([7.193, 7.84, 8.76], digits=2))
    warm, cold = table._repr_markdown_().splitlines()[-2:]
    assert warm == "| warm-up | 6.98 (6.640 to 7.188) |" and cold == "| no warm-up | 7.93 (7.193 to 8.760) |"
    # ranges that do overlap, or are far apart, keep their digits
    table.add("far", Runs([20.0, 21.0], digits=2))
    table.rows[1][1] = Runs([7.0, 8.0], digits=2)
    assert table._repr_markdown_().splitlines()[-3:] == [
        "| warm-up | 6.98 (6.64 to 7.19) |", "| no warm-up | 7.50 (7.00 to 8.00) |", "| far | 20.50 (20.00 to 21.00) |"]
    # ends that three more digits cannot tell apart, and runs that failed (NaN), add nothing
    for cells in ([Runs([1.0, 2.0000001]), Runs([2.0000002, 3.0])], [Runs([1.0, math.nan]), Runs([math.nan, 2.0])]):
        assert _range_extra_digits(cells) == 0


def test_a_table_gives_its_objects_back_and_survives_json():
    table = _table()
    assert table.column("loss (nats)")[0] == Runs([2.633, 2.641])
    assert table.row("LSTM")["weights"] == 3_300_000
    again = Table.from_json(json.loads(json.dumps(table.to_json())))
    assert again == table and again._repr_markdown_() == table._repr_markdown_()
    assert isinstance(again.row("LSTM")["loss (nats)"], Runs)


def test_a_malformed_table_says_what_is_wrong():
    with pytest.raises(ValueError, match="2 cells for 3 columns"):
        Table(["a", "b", "c"]).add(1, 2)
    with pytest.raises(ValueError, match="distinct"):
        Table(["a", "a"])
    with pytest.raises(ValueError, match="does not have"):
        Table(["a"], formats={"b": ","})
    with pytest.raises(KeyError, match="no column 'z'"):
        _table().column("z")
    with pytest.raises(TypeError, match="Runs, a number or text"):
        Table(["a"]).add([1, 2]).to_json()


def test_runs_and_tables_come_back_from_a_record_as_the_objects_they_were():
    from nlpbook.results import from_record, to_record

    table = Table(["model", "loss"], formats={"loss": "range"}).add("LSTM", Runs([2.0, 2.5]))
    value = {"loss": Runs([1.0, 1.5, 2.0], digits=2), "table": table, "curve": [1, 2.5], "name": "x"}
    back = from_record(json.loads(json.dumps(to_record(value))))
    assert back["table"] == table and back["curve"] == [1, 2.5] and back["name"] == "x"
    assert isinstance(back["loss"], Runs) and back["loss"].values == value["loss"].values
    assert str(back["loss"]) == str(value["loss"])
    assert from_record({"type": "elsewhere", "runs": [1]}) == {"type": "elsewhere", "runs": [1]}


@pytest.mark.parametrize("times_faster, word", [(3.0, "faster"), (1.25, "faster"), (1.1, "level"),
                                                (1 / 1.1, "level"), (0.8, "slower"), (1 / 3, "slower")])
def test_a_speed_up_is_named_by_one_rule_with_a_fifth_of_tolerance(times_faster, word):
    assert speed_verdict(times_faster) == word


@pytest.mark.parametrize("ratio", [0.0, -2.0, float("nan"), float("inf")])
def test_a_speed_up_must_be_a_positive_finite_ratio(ratio):
    with pytest.raises(ValueError, match="positive, finite"):
        speed_verdict(ratio)


def test_a_verdict_table_gives_each_result_against_each_other_by_the_one_rule():
    results = {"LSTM": Runs([2.63, 2.64, 2.62]), "Transformer": Runs([2.74, 2.75, 2.73]),
               "RNN": Runs([2.70, 3.10, 3.00])}
    table = verdict_table(results, against={"6-gram": 3.01})
    assert table.columns == ["model", "LSTM", "Transformer", "RNN", "6-gram"]
    assert table.row("LSTM") == {"model": "LSTM", "LSTM": "", "Transformer": "ahead", "RNN": "ahead",
                                 "6-gram": "ahead"}
    assert table.row("Transformer")["LSTM"] == "behind" and table.row("Transformer")["RNN"] == "level"
    assert table.row("RNN")["6-gram"] == "level"   # one run below the baseline, two above
    # higher is better for an accuracy: the words turn round
    assert verdict_table(results, better="higher").row("LSTM")["Transformer"] == "behind"


def test_a_verdict_table_gives_no_verdict_where_too_few_runs_support_one():
    one_each = {"a": Runs([1.0]), "b": Runs([2.0])}
    table = verdict_table(one_each, against={"baseline": 3.0}, first_column="optimizer")
    assert table.row("a") == {"optimizer": "a", "a": "", "b": NO_VERDICT, "baseline": NO_VERDICT}
    # equal models get a word 1 time in 3 with 2 runs a side, 1 in 2 with 2 runs against a number
    two_each = {"a": Runs([1.0, 1.1]), "b": Runs([2.0, 2.1])}
    assert verdict_table(two_each, against={"baseline": 3.0}).row("a") == {
        "model": "a", "a": "", "b": NO_VERDICT, "baseline": NO_VERDICT}
    # 3 runs against a number (1 in 4) and 3 against 3 (1 in 10) are the least the book rests one on
    three_each = {"a": Runs([1.0, 1.1, 1.2]), "b": Runs([2.0, 2.1, 2.2])}
    assert verdict_table(three_each, against={"baseline": 3.0}).row("a") == {
        "model": "a", "a": "", "b": "ahead", "baseline": "ahead"}


def test_overlapping_ranges_are_level_from_either_side():
    assert Runs([2.0, 3.0]).versus(Runs([1.0, 2.0])).word == "level"
    assert Runs([1.0, 2.0]).versus(Runs([2.0, 3.0])).word == "level"
