"""benchmarks/training_targets.py: what it reads from the solution notebooks and the grading tests."""
from __future__ import annotations

import sys

import nbformat
import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import training_targets  # noqa: E402

RNNS = REPO / "solutions" / "02-rnns" / "rnns.ipynb"


def test_the_reference_schedule_is_transformers_linear_schedule_with_warmup():
    import torch
    from transformers import get_linear_schedule_with_warmup

    for warmup, total in ((3, 10), (0, 5), (4, 4)):
        optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
        (factor,) = get_linear_schedule_with_warmup(optimizer, warmup, total).lr_lambdas
        assert [training_targets.linear_schedule(step, warmup, total) for step in range(total + 3)] == \
            pytest.approx([factor(step) for step in range(total + 3)])


def test_the_hidden_setting_is_read_for_the_profile_the_script_runs_in(monkeypatch):
    notebook = nbformat.read(RNNS, as_version=4)
    namespace = training_targets.solution_namespace(notebook)
    steps = {}
    for profile in ("quick", "standard"):
        monkeypatch.setenv("NLPBOOK_PROFILE", profile)
        setting, scorer, options = training_targets.hidden_setting(notebook, "test_train_language_model_hidden",
                                                                   dict(namespace))
        assert scorer == "char_rnn_perplexity" and options["characters"] == setting["characters"]
        steps[profile] = setting["steps"]
    assert steps["quick"] < steps["standard"]


def test_a_planted_mistake_is_the_grading_test_s_own_and_must_apply():
    from test_grading_02_rnns import TestRnnsExercise

    edits = training_targets.planted("02-rnns", "train-ignores-lr")
    assert edits == TestRnnsExercise.MISTAKES["train-ignores-lr"][2]
    with pytest.raises(SystemExit, match="plants no 'no-such-mistake'"):
        training_targets.planted("02-rnns", "no-such-mistake")
    notebook = nbformat.read(RNNS, as_version=4)
    with pytest.raises(SystemExit, match="the edit of rnn_step does not apply"):
        training_targets.solution_namespace(notebook, {"rnn_step": [("text that is not there", "")]})
