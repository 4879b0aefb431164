"""benchmarks/translation_rates.py: the rates it tries, and a small sweep of it."""
from __future__ import annotations

import subprocess
import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
from translation_rates import DEFAULT_RATES  # noqa: E402

from nlpbook.translation import RACE_MODELS, RACE_RATES  # noqa: E402


def test_the_sweep_tries_the_kept_rate_between_others_for_each_race_model():
    assert set(DEFAULT_RATES) == set(RACE_MODELS)
    for kind, rates in DEFAULT_RATES.items():
        # the kept rate is one the sweep tries, and not at either end of its grid
        assert min(rates) < RACE_RATES[kind] < max(rates) and RACE_RATES[kind] in rates


def test_a_small_sweep_prints_a_row_a_rate_and_the_best():
    done = subprocess.run([sys.executable, "translation_rates.py", "--model", "Transformer", "--rates", "1e-3",
                           "3e-3", "--seconds", "0.5", "--width", "16", "--valid-verses", "10"],
                          cwd=REPO / "benchmarks", capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith("Transformer ")]
    assert [row[1] for row in rows] == ["1e-03", "3e-03"]
    assert all(int(row[2]) >= 1 and float(row[3]) > 0 for row in rows)  # steps, validation loss
    # the rate it names is the first with the highest BLEU of the column it printed
    scores = [float(row[4]) for row in rows]
    best = rows[scores.index(max(scores))][1]
    assert f"Transformer: highest validation BLEU at rate {best}" in done.stdout
