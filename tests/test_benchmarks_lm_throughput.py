"""benchmarks/lm_throughput.py: the FLOPs it counts, the models it compares, and a small run of it."""
from __future__ import annotations

import json
import subprocess
import sys
import types

import pytest
import torch

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import lm_throughput  # noqa: E402
from lm_throughput import SIZES, flops_per_token, models  # noqa: E402

from nlpbook.flops import matrix_weights  # noqa: E402


def test_ours_and_the_reference_have_the_same_shape_and_the_same_flops():
    size = SIZES["quick"]
    found = models(size)
    ours, reference, lstm = found["ours"], found["GPT-2"], found["LSTM"]
    # ours tied: the output map is the embedding; GPT-2 ties the same way
    assert matrix_weights(ours) == matrix_weights(reference)
    assert flops_per_token(ours, size, attention=True) == flops_per_token(reference, size, attention=True)
    # the attention's products: 12 x layers x width x context on top of the weights' 6 per token
    assert (flops_per_token(ours, size, attention=True) - flops_per_token(ours, size, attention=False)
            == 12 * size.layers * size.width * size.context)
    weights = sum(p.numel() for p in ours.parameters())
    assert abs(sum(p.numel() for p in lstm.parameters()) - weights) / weights < 0.02


def test_a_small_run_prints_every_model_and_writes_its_rows(tmp_path):
    out = tmp_path / "rows.json"
    done = subprocess.run([sys.executable, "lm_throughput.py", "--sizes", "quick", "--steps", "2",
                           "--device", "cpu", "--json", str(out)], cwd=REPO / "benchmarks",
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert [line.split()[1] for line in done.stdout.splitlines() if line.startswith("quick")] == [
        "GPT-2", "ours", "LSTM"]
    rows = json.loads(out.read_text())["rows"]
    assert [row["model"] for row in rows] == ["GPT-2", "ours", "LSTM"]
    assert all(row["tokens_per_second"] > 0 and row["utilisation"] is None for row in rows)


def test_tokens_a_second_are_the_input_positions_of_the_timed_steps(monkeypatch):
    clock = iter([100.0, 102.0])
    monkeypatch.setattr(lm_throughput, "time", types.SimpleNamespace(perf_counter=lambda: next(clock)))
    size = lm_throughput.SIZES["quick"]
    rate = lm_throughput.tokens_per_second(lm_throughput.lstm_matching(5000), size, torch.device("cpu"), 3, warmup=1)
    assert rate == 3 * size.batch * size.context / 2.0


def test_the_rows_count_attention_only_for_transformers_and_divide_by_the_chips_peak(monkeypatch, tmp_path, capsys):
    # main()'s arithmetic with known rates: 6 per matrix weight, attention for the Transformers only,
    # utilisation over the chip's peak, and each model's rate against GPT-2's.
    rates = {"GPT2LMHeadModel": 1000.0, "DecoderOnlyLM": 2000.0, "CharRNN": 4000.0}
    monkeypatch.setattr(lm_throughput, "tokens_per_second",
                        lambda model, size, device, steps, warmup=3: rates[type(model).__name__])
    monkeypatch.setattr(lm_throughput, "peak_flops", lambda device: ("NVIDIA H100 80GB HBM3", 989e12))
    out = tmp_path / "rows.json"
    assert lm_throughput.main(["--sizes", "quick", "--device", "cpu", "--json", str(out)]) == 0
    size = lm_throughput.SIZES["quick"]
    found = lm_throughput.models(size)
    rows = {row["model"]: row for row in json.loads(out.read_text())["rows"]}
    attention = 12 * size.layers * size.width * size.context
    for label, model in found.items():
        rate = rates[type(model).__name__]
        expected = rate * (6 * matrix_weights(model) + (0 if label == "LSTM" else attention))
        assert rows[label]["model_flops_per_second"] == pytest.approx(expected)
        assert rows[label]["utilisation"] == pytest.approx(expected / 989e12)
        assert rows[label]["tokens_per_step"] == size.batch * size.context
    ratios = {line.split()[1]: line.split()[4] for line in capsys.readouterr().out.splitlines()
              if line.startswith("quick") and line.split()[1] in ("ours", "LSTM")}
    assert ratios == {"ours": "2.00", "LSTM": "4.00"}
