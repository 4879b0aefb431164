"""The script behind the GPU workflow runs anywhere: here on one chapter, on the CPU."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from autograder.course import REPO_ROOT as REPO

SCRIPT = REPO / "benchmarks" / "solution_suite.py"
sys.path.insert(0, str(REPO / "benchmarks"))
import solution_suite  # noqa: E402


def run_script(*args):
    env = {**os.environ, "NLPBOOK_PROFILE": "quick"}
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=REPO, env=env, capture_output=True, text=True)


def test_the_suite_runs_one_chapter_and_prints_its_time():
    result = run_script("--profile", "quick", "--only", "07-adam")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[0].startswith(("CPU only", "GPU:"))
    row = next(line for line in lines if line.startswith("07-adam/adam.ipynb"))
    assert row.split()[1] == "passed" and float(row.split()[2]) > 0
    # The peak includes the kernel, which imports torch: far above a bare pytest process.
    assert float(row.split()[3]) > 150
    assert any(line.startswith("total") for line in lines)


def test_require_gpu_fails_clearly_without_one():
    if torch.cuda.is_available():
        return
    result = run_script("--require-gpu", "--only", "07-adam")
    assert result.returncode == 2 and "torch.cuda.is_available() is False" in result.stdout


def test_an_unknown_chapter_is_named():
    result = run_script("--only", "99-nothing")
    assert result.returncode != 0 and "99-nothing" in result.stderr


def test_the_summary_adds_the_notebooks_passes_the_deadline_and_keeps_failures_and_code(monkeypatch, tmp_path, capsys):
    timeouts = []

    def fake_run(path, profile, extra=None, timeout=None):
        timeouts.append(timeout)
        failed = path.parent.name == "02-rnns"
        return not failed, {"02-rnns": 30.0, "07-adam": 12.5}[path.parent.name], 400.0, "the error" if failed else ""

    monkeypatch.setattr(solution_suite, "run", fake_run)
    saved = tmp_path / "results.json"
    assert solution_suite.main(["--profile", "quick", "--only", "02-rnns", "07-adam", "--deadline", "100",
                                "--json", str(saved)]) == 1
    assert len(timeouts) == 2 and all(t is not None and t <= 100 for t in timeouts)
    total = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("total"))
    assert total.split()[1] == "42.5"
    notebooks = {n["notebook"]: n for n in json.loads(saved.read_text())["notebooks"]}
    assert notebooks["02-rnns/rnns.ipynb"]["passed"] is False and notebooks["07-adam/adam.ipynb"]["passed"] is True
    assert notebooks["07-adam/adam.ipynb"]["code_sha256"] == solution_suite.notebook_code_sha256(
        solution_suite.SOLUTIONS / "07-adam" / "adam.ipynb")


def test_a_notebook_that_fails_under_nbval_is_not_passed(monkeypatch):
    path = solution_suite.SOLUTIONS / "07-adam" / "adam.ipynb"
    monkeypatch.setattr(solution_suite, "run_measured", lambda command, env, timeout: (1, 3.0, 300.0, "1 failed"))
    assert solution_suite.run(path, "quick")[0] is False
    monkeypatch.setattr(solution_suite, "run_measured", lambda command, env, timeout: (-9, 50.0, 300.0, ""))
    ok, _, _, output = solution_suite.run(path, "quick", timeout=50)
    assert ok is False and output.startswith("killed at the deadline")


def test_record_keeps_the_notebooks_that_passed_run_one_at_a_time(monkeypatch, tmp_path):
    from nlpbook import running_times

    monkeypatch.setattr(solution_suite, "run", lambda path, profile, extra=None, timeout=None:
                        (path.parent.name == "07-adam", 12.5, 400.0, ""))
    monkeypatch.setattr(running_times, "RECORD", tmp_path / "times.json")
    assert solution_suite.main(["--profile", "standard", "--only", "02-rnns", "07-adam", "--record"]) == 1
    runs = running_times.timings(path=tmp_path / "times.json")
    assert [(run.kind, run.name, run.profile, run.seconds, run.peak_mib) for run in runs] == [
        ("exercise", "07-adam", "standard", 12.5, 400)]
    with pytest.raises(SystemExit):
        solution_suite.main(["--only", "07-adam", "--record", "--jobs", "2"])
