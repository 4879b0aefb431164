"""The script behind the GPU workflow runs anywhere: here on one chapter, on the CPU."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "benchmarks" / "solution_suite.py"


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
