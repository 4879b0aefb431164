"""benchmarks/lm_scaling.py: the table it prints from a file of runs."""
from __future__ import annotations

import json
import sys

from conftest import REPO
from nlpbook.results import Runs

sys.path.insert(0, str(REPO / "benchmarks"))
import lm_scaling  # noqa: E402


def _run(family, size, lr, *losses):
    return {"family": family, "size": {"name": size}, "lr": lr, "curve": [{"valid_loss": loss} for loss in losses]}


def test_the_report_gives_one_row_per_family_size_and_rate_from_each_run_s_last_loss(tmp_path, capsys):
    # The seeds of one setting are pooled, the rates of a sweep are not, and a run counts by where
    # it ended (its best point would favour the noisiest run); rows go by size, smallest first.
    runs = [_run("LSTM", "M", 0.003, 3.0, 2.6), _run("LSTM", "M", 0.003, 3.1, 2.5),
            _run("Transformer", "M", 0.001, 3.2, 2.4), _run("Transformer", "M", 0.002, 3.0, 2.2, 2.3),
            _run("LSTM", "S", 0.003, 2.9)]
    saved = tmp_path / "runs.json"
    saved.write_text(json.dumps({"device": "CPU", "jobs": 2, "runs": runs}))
    lm_scaling.report(saved)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "on CPU (2 runs at a time):"
    rows = [line.split() for line in lines[1:]]
    assert [row[:4] for row in rows] == [["S", "LSTM", "lr", "0.003"], ["M", "LSTM", "lr", "0.003"],
                                         ["M", "Transformer", "lr", "0.001"], ["M", "Transformer", "lr", "0.002"]]
    assert Runs([2.6, 2.5], digits=3).range_text() in lines[2] and "(2 seeds)" in lines[2]
    assert " 2.300 " in lines[4] and "(1 seed)" in lines[4]
