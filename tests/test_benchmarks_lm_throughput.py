"""benchmarks/lm_throughput.py: the FLOPs it counts, the models it compares, and a small run of it."""
from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
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
