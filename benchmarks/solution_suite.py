"""Run every solution notebook under nbval in one profile, and print how long each took.

    python benchmarks/solution_suite.py [--profile full] [--require-gpu] [--only 06-bert]

The GPU workflow (``.github/workflows/gpu.yml``) runs it with ``--profile full
--require-gpu``; by hand it runs anywhere, with or without a GPU, since no notebook
assumes one (``nlpbook.get_device`` picks the GPU when there is one).  Each notebook
runs in its own pytest process (nbval, errors only, this environment's kernel), so a
failure in one does not hide the others.  The script prints the device, each notebook's
time, peak memory (the kernel's included) and result, and the suite's total, and exits non-zero when any notebook fails or
``--require-gpu`` finds no GPU.  It prints figures; it is not a timed test.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

from measure import REPO, machine_line, run_measured
from nlpbook.profile import PROFILES

SOLUTIONS = REPO / "solutions"


def device_line() -> str:
    import torch

    if torch.cuda.is_available():
        return f"GPU: {torch.cuda.get_device_name(0)} (torch {torch.__version__}, CUDA {torch.version.cuda})"
    return f"CPU only: {platform.processor() or platform.machine()}, {os.cpu_count()} cores (torch {torch.__version__})"


def notebooks(only: list[str]) -> list[Path]:
    found = sorted(SOLUTIONS.glob("*/*.ipynb"))
    if only:
        found = [path for path in found if path.parent.name in only]
        missing = sorted(set(only) - {path.parent.name for path in found})
        if missing:
            raise SystemExit(f"no solution notebooks for {', '.join(missing)} under {SOLUTIONS}")
    return found


def run(path: Path, profile: str) -> tuple[bool, float, float, str]:
    env = {**os.environ, "NLPBOOK_PROFILE": profile, "NLPBOOK_PROGRESS": "0"}
    status, seconds, peak_mib, output = run_measured(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax", "--nbval-current-env",
         str(path.relative_to(REPO))], env)
    return status == 0, seconds, peak_mib, output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="full", choices=PROFILES)
    parser.add_argument("--require-gpu", action="store_true", help="fail at once when torch sees no GPU")
    parser.add_argument("--only", nargs="*", default=[], help="chapter folders to run (default: all)")
    args = parser.parse_args(argv)

    print(device_line())
    print(machine_line())
    if args.require_gpu:
        import torch

        if not torch.cuda.is_available():
            print("--require-gpu: torch.cuda.is_available() is False (is the CUDA build of torch installed?)")
            return 2
    print(f"profile {args.profile}, {time.strftime('%Y-%m-%d %H:%M')}\n")
    print(f"{'notebook':42s} {'result':8s} {'seconds':>8s} {'peak MiB':>9s}")
    total, failed = 0.0, []
    for path in notebooks(args.only):
        ok, seconds, peak_mib, output = run(path, args.profile)
        total += seconds
        name = str(path.relative_to(SOLUTIONS))
        print(f"{name:42s} {'passed' if ok else 'FAILED':8s} {seconds:8.1f} {peak_mib:9.0f}", flush=True)
        if not ok:
            failed.append((name, output))
    print(f"{'total':42s} {'':8s} {total:8.1f}")
    for name, output in failed:
        print(f"\n---- {name} ----\n{output}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
