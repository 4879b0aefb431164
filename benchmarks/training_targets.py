"""Measure the spread of an exercise's graded training over seeds, to set its margin.

    python benchmarks/training_targets.py [--profile standard] [--seeds 5]

A graded training part (chapter 2's part 7) passes when the student's trained model
scores within a margin of the instructor's solution trained the same way.  A correct
loop written differently (another order of the calls, a sum divided by the count in
place of a mean) follows another path through the same training, as another seed
does, so the margin is set from the solution's spread over seeds: this script runs
the solution's own ``train_language_model`` (read from ``solutions/``) with the hidden
test's settings (read from its ``nlpbook.choose`` call) under several seeds, the graded
pair of seeds first, and prints each score, their range, and the time each took.
It prints figures; it is not a test.
"""
from __future__ import annotations

import argparse
import ast
import os
import time

import nbformat
import torch

from measure import REPO, machine_line

NOTEBOOK = REPO / "solutions" / "02-rnns" / "rnns.ipynb"
GRADED_SEEDS = (2026, 7)  # the hidden test's: torch.manual_seed for the model, the windows' generator


def solution_namespace(notebook) -> dict:
    """The setup and solution cells of ``notebook`` run in one namespace (no tests, no demos)."""
    namespace: dict = {}
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and (meta.get("grade_id") == "setup" or meta.get("solution")):
            exec(compile(cell.source, f"<{meta['grade_id']}>", "exec"), namespace)
    return namespace


def hidden_setting(notebook, grade_id: str, namespace: dict) -> dict:
    """The value of the ``_setting = nlpbook.choose(...)`` assignment in the test cell ``grade_id``,
    under the current ``NLPBOOK_PROFILE``."""
    cell = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    for node in ast.walk(ast.parse(cell.source)):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_setting" for t in node.targets):
            return eval(compile(ast.Expression(node.value), grade_id, "eval"), namespace)
    raise ValueError(f"{grade_id} has no _setting assignment")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default=os.environ.get("NLPBOOK_PROFILE", "standard"))
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    os.environ["NLPBOOK_PROFILE"] = args.profile

    from nlpbook.charlm import CharRNN, bible_char_data
    from nlpbook.checks import score_state

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    namespace = solution_namespace(notebook)
    setting = hidden_setting(notebook, "test_train_language_model_hidden", namespace)
    data = bible_char_data()
    print(machine_line())
    print(f"chapter 2, part 7, profile {args.profile}: {setting}")
    seeds = [GRADED_SEEDS] + [(seed, seed) for seed in range(args.seeds - 1)]
    scores = []
    for model_seed, window_seed in seeds:
        torch.manual_seed(model_seed)
        model = CharRNN(len(data.chars), setting["embed"], setting["hidden"])
        start = time.perf_counter()
        namespace["train_language_model"](model, data.train_ids, setting["steps"], setting["batch_size"],
                                          setting["length"], setting["lr"], 1.0,
                                          torch.Generator().manual_seed(window_seed))
        seconds = time.perf_counter() - start
        score = score_state("char_rnn_perplexity", model.state_dict(),
                            {"characters": setting["characters"], "chunk": 256})
        scores.append(score)
        print(f"  seeds {model_seed}/{window_seed}: validation perplexity {score:.3f}, trained in {seconds:.1f} s",
              flush=True)
    print(f"range {min(scores):.3f} to {max(scores):.3f} (width {max(scores) - min(scores):.3f}); "
          f"graded seeds {scores[0]:.3f}; margin in use {setting['margin']}")


if __name__ == "__main__":
    main()
