"""Run every solution notebook under nbval in one profile, and print how long each took.

    python benchmarks/solution_suite.py [--profile full] [--require-gpu] [--only 06-bert]
        [--jobs 7] [--bundle .device/bundle] [--json results.json] [--record]

The GPU workflow (``.github/workflows/gpu.yml``) runs it with ``--profile full
--require-gpu``; by hand it runs anywhere, with or without a GPU, since no notebook
assumes one (``nlpbook.get_device`` picks the GPU when there is one).  Each notebook
runs in its own pytest process (nbval, errors only, this environment's kernel), so a
failure in one does not hide the others.  The script prints the device, each notebook's
time, peak memory (the kernel's included) and result, and the suite's total, and exits non-zero when any notebook fails or
``--require-gpu`` finds no GPU.  ``--jobs N`` runs N notebooks side by side (on a GPU machine,
all seven at once); ``--bundle`` makes every kernel read its data from a bundle written by
``benchmarks/full_profile.py prepare`` (through an IPython start-up file), for a machine without
the data packages; ``--json`` keeps each notebook's result with the code it ran (the SHA-256 of its
code cells and the commit); ``--record`` appends each notebook that passed, run one at a time, to
``nlpbook/recorded_runs/running-times.json``, from which the preface's exercise columns come.  It
prints figures; it is not a timed test.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import platform
import sys
import time
from pathlib import Path

from measure import REPO, gpu_name, machine_line, machine_name, record_timings, run_measured, threads_each
from nlpbook.profile import PROFILES

SOLUTIONS = REPO / "solutions"


def device_line() -> str:
    import torch

    if name := gpu_name():
        return f"GPU: {name} (torch {torch.__version__}, CUDA {torch.version.cuda})"
    return f"CPU only: {platform.processor() or platform.machine()}, {os.cpu_count()} cores (torch {torch.__version__})"


def notebooks(only: list[str]) -> list[Path]:
    found = sorted(SOLUTIONS.glob("*/*.ipynb"))
    if only:
        found = [path for path in found if path.parent.name in only]
        missing = sorted(set(only) - {path.parent.name for path in found})
        if missing:
            raise SystemExit(f"no solution notebooks for {', '.join(missing)} under {SOLUTIONS}")
    return found


def run(path: Path, profile: str, extra: dict[str, str] | None = None,
        timeout: float | None = None) -> tuple[bool, float, float, str]:
    env = {**os.environ, "NLPBOOK_PROFILE": profile, "NLPBOOK_PROGRESS": "0", **(extra or {})}
    status, seconds, peak_mib, output = run_measured(
        # -o addopts=: not the suite's own options (pytest-xdist's workers, which the lent GPU machine
        # lacks and one notebook does not need); nbval's are given here.
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "--nbval-lax",
         "--nbval-current-env", str(path.relative_to(REPO))], env, timeout)
    if status == -9:  # run_measured's timeout
        output = f"killed at the deadline after {seconds:.0f} s\n{output}"
    return status == 0, seconds, peak_mib, output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="full", choices=PROFILES)
    parser.add_argument("--require-gpu", action="store_true", help="fail at once when torch sees no GPU")
    parser.add_argument("--only", nargs="*", default=[], help="chapter folders to run (default: all)")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks run side by side")
    parser.add_argument("--bundle", type=Path, help="read the data from this bundle (full_profile.py prepare)")
    parser.add_argument("--json", type=Path, help="write each notebook's result here")
    parser.add_argument("--record", action="store_true",
                        help="append each notebook that passed to the book's record of running times")
    parser.add_argument("--deadline", type=float, help="seconds for all: a notebook still running then is killed")
    args = parser.parse_args(argv)
    if args.record and (args.jobs > 1 or args.bundle):
        parser.error("--record times notebooks run one at a time on their own data: leave out --jobs and --bundle")

    print(device_line())
    print(machine_line())
    if args.require_gpu:
        import torch

        if not torch.cuda.is_available():
            print("--require-gpu: torch.cuda.is_available() is False (is the CUDA build of torch installed?)")
            return 2
    print(f"profile {args.profile}, {time.strftime('%Y-%m-%d %H:%M')}\n")
    extra = {}
    extra.update(threads_each(args.jobs))  # notebooks side by side share the cores
    if args.bundle:
        from full_profile import kernel_startup

        extra["IPYTHONDIR"] = str(kernel_startup(args.bundle, Path(tempfile.mkdtemp(prefix="nlpbook-ipython-"))))
    print(f"{'notebook':42s} {'result':8s} {'seconds':>8s} {'peak MiB':>9s}", flush=True)
    found = notebooks(args.only)
    start = time.perf_counter()

    def one(path: Path) -> dict:
        left = args.deadline - (time.perf_counter() - start) if args.deadline else None
        ok, seconds, peak_mib, output = run(path, args.profile, extra, max(1.0, left) if left is not None else None)
        name = str(path.relative_to(SOLUTIONS))
        print(f"{name:42s} {'passed' if ok else 'FAILED':8s} {seconds:8.1f} {peak_mib:9.0f}", flush=True)
        return dict(notebook=name, passed=ok, seconds=round(seconds, 1), peak_mib=round(peak_mib),
                    code_sha256=notebook_code_sha256(path), output="" if ok else output)

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(one, found))
    total = sum(result["seconds"] for result in results)
    print(f"{'total':42s} {'':8s} {total:8.1f}  ({time.perf_counter() - start:.0f} s of wall time, "
          f"{args.jobs} at a time)")
    for result in results:
        if not result["passed"]:
            print(f"\n---- {result['notebook']} ----\n{result['output']}")
    if args.json:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        args.json.write_text(json.dumps(dict(device=device_line(), machine=machine_line(), profile=args.profile,
                                             date=time.strftime("%Y-%m-%d"), jobs=args.jobs, commit=commit or None,
                                             notebooks=results), indent=1))
    if args.record:
        from nlpbook.running_times import Timing

        record_timings([Timing("exercise", result["notebook"].split("/")[0], args.profile, result["seconds"],
                               result["peak_mib"], time.strftime("%Y-%m-%d"), machine_name(),
                               "the solution notebook under nbval, one after another", "benchmarks/solution_suite.py")
                        for result in results if result["passed"]])
    return 0 if all(result["passed"] for result in results) else 1


def notebook_code_sha256(path: Path) -> str:
    """The SHA-256 of a notebook's code cells (``nlpbook.recorded.code_sha256``)."""
    from nlpbook.recorded import code_sha256

    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return code_sha256(["".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                        for cell in cells if cell["cell_type"] == "code"])


if __name__ == "__main__":
    sys.exit(main())
