"""Train the Transformer and the LSTM at several sizes and seeds with the recipe, side by side on one device.

    python benchmarks/lm_scaling.py prepare --data .device/scaling.pt          # the characters
    python benchmarks/lm_scaling.py run --data .device/scaling.pt --out runs.json \\
        --sizes S M L --seeds 0 1 2 --steps 2000 --jobs 6                     # there (a GPU)
    python benchmarks/lm_scaling.py report runs.json                           # the table

``prepare`` saves the Bible's characters (World English, King James and Basic English for training,
the World English validation chapters for scoring) as bytes, read from the data packages or, with
``--bundle``, from a bundle of ``full_profile.py prepare`` on a machine without them.  ``run`` trains every (family, size, seed, learning
rate) with ``nlpbook.scaling.train_lm`` (``--sweep-size M`` adds one seed at half and twice
each family's peak rate at that size), ``--jobs`` processes at a time sharing the device, and
writes every run's curve to one JSON file.  Runs that share a device wait on each other, so their
seconds are an upper bound; FLOPs and characters do not depend on it.  ``report`` prints each
family and size's final validation loss over the seeds (``nlpbook.results.Runs``) and whether the
Transformer is ahead.  It prints figures; it is not a test.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from measure import gpu_name, threads_each  # noqa: E402
from nlpbook.charlm import CharData  # noqa: E402
from nlpbook.scaling import FAMILIES, SIZES, train_lm  # noqa: E402
from nlpbook.vocab import Vocabulary  # noqa: E402


def prepare(path: Path, bundle: Path | None = None) -> None:
    from nlpbook.charlm import bible_char_data

    if bundle is not None:  # a machine without the data packages: read the Bible from the bundle
        sys.path.insert(0, str(REPO / "benchmarks"))
        from full_profile import data_stand_ins

        data_stand_ins(bundle)

    data = bible_char_data("web", "kjv", "basic")
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(dict(chars=list(data.chars.tokens), train=data.train_ids.to(torch.uint8),
                    valid=data.valid_ids.to(torch.uint8)), path)
    print(f"{path}: {len(data.train_ids):,} training and {len(data.valid_ids):,} validation characters, "
          f"{len(data.chars)} symbols, {path.stat().st_size / 2**20:.1f} MiB")


def load(path: Path) -> CharData:
    saved = torch.load(path)
    return CharData(Vocabulary(saved["chars"]), saved["train"].long(), saved["valid"].long())


def one(args: argparse.Namespace) -> int:
    data = load(args.data)
    run = train_lm(args.family, SIZES[args.size], data, steps=args.steps, batch=args.batch, lr=args.lr,
                   seed=args.seed, context=args.context, dropout=args.dropout, evals=args.evals)
    args.out.write_text(json.dumps(run))
    last = run["curve"][-1]
    print(f"{args.family} {args.size} seed {args.seed} lr {args.lr:g}: {run['weights']:,} weights, "
          f"valid loss {last['valid_loss']:.3f} after {last['seconds']:.0f} s", flush=True)
    return 0


LR = {"Transformer": 1.5e-3, "LSTM": 3e-3}


def run_all(args: argparse.Namespace) -> int:
    jobs = [(family, size, seed, LR[family]) for size in args.sizes for family in FAMILIES for seed in args.seeds]
    # the sweep: one seed at one size, the peak rate halved and doubled around each family's default
    jobs += [(family, args.sweep_size, args.seeds[0], LR[family] * factor) for family in FAMILIES
             for factor in (0.5, 2.0) if args.sweep_size]
    # the largest first, so that the long runs do not start last
    order = list(SIZES)
    jobs.sort(key=lambda job: (-order.index(job[1]), job[0] != "LSTM", job[2]))
    folder = args.out.with_suffix(".runs")
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **threads_each(args.jobs), "PYTHONUNBUFFERED": "1"}
    end = time.monotonic() + args.deadline

    def launch(job):
        family, size, seed, lr = job
        out = folder / f"{family}-{size}-{seed}-{lr:g}.json"
        left = end - time.monotonic()
        if left < 10:
            return f"{family} {size} seed {seed}: not started, deadline"
        try:
            done = subprocess.run([sys.executable, __file__, "one", "--data", str(args.data), "--out", str(out),
                                   "--family", family, "--size", size, "--seed", str(seed), "--lr", str(lr),
                                   "--steps", str(args.steps), "--batch", str(args.batch), "--context",
                                   str(args.context), "--dropout", str(args.dropout), "--evals", str(args.evals)],
                                  env=env, capture_output=True, text=True, timeout=left)
        except subprocess.TimeoutExpired:
            return f"{family} {size} seed {seed}: cut off at the deadline"
        text = done.stdout.strip() or done.stderr.strip()[-1500:]
        print(text, flush=True)
        return text

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(launch, jobs))
    runs = [json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))]
    args.out.write_text(json.dumps(dict(device=gpu_name() or "CPU", jobs=args.jobs, torch=torch.__version__,
                                        date=time.strftime("%Y-%m-%d"), runs=runs)))
    print(f"{len(runs)} of {len(jobs)} runs in {args.out}")
    report(args.out)
    return 0


def report(path: Path) -> None:
    from nlpbook.results import Runs

    saved = json.loads(path.read_text())
    finals: dict[tuple[str, str, float], list[float]] = {}
    for run in saved["runs"]:
        finals.setdefault((run["family"], run["size"]["name"], run["lr"]), []).append(run["curve"][-1]["valid_loss"])
    print(f"on {saved['device']} ({saved['jobs']} runs at a time):")
    for (family, size, lr), values in sorted(finals.items(), key=lambda item: (list(SIZES).index(item[0][1]), item[0])):
        print(f"  {size:3} {family:12} lr {lr:<7g} {Runs(values, digits=3).range_text()}  "
              f"({len(values)} seed{'s' if len(values) > 1 else ''})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    preparing = verbs.add_parser("prepare")
    preparing.add_argument("--data", type=Path, required=True)
    preparing.add_argument("--bundle", type=Path, help="a bundle of full_profile.py prepare, where the data packages are missing")
    verbs.add_parser("report").add_argument("path", type=Path)
    for verb in ("run", "one"):
        sub = verbs.add_parser(verb)
        sub.add_argument("--data", type=Path, required=True)
        sub.add_argument("--out", type=Path, required=True)
        sub.add_argument("--steps", type=int, default=2000)
        sub.add_argument("--batch", type=int, default=64)
        sub.add_argument("--context", type=int, default=256)
        sub.add_argument("--dropout", type=float, default=0.1)
        sub.add_argument("--evals", type=int, default=8)
    runs = verbs.choices["run"]
    runs.add_argument("--sizes", nargs="+", default=["S", "M", "L"], choices=list(SIZES))
    runs.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    runs.add_argument("--sweep-size", choices=list(SIZES), help="also train at half and twice the peak rate here")
    runs.add_argument("--jobs", type=int, default=6)
    runs.add_argument("--deadline", type=float, default=600, help="seconds; runs not started by then are skipped")
    single = verbs.choices["one"]
    single.add_argument("--family", choices=FAMILIES, required=True)
    single.add_argument("--size", choices=list(SIZES), required=True)
    single.add_argument("--seed", type=int, default=0)
    single.add_argument("--lr", type=float, required=True)
    args = parser.parse_args(argv)
    if args.verb == "prepare":
        prepare(args.data, args.bundle)
        return 0
    if args.verb == "report":
        report(args.path)
        return 0
    return one(args) if args.verb == "one" else run_all(args)


if __name__ == "__main__":
    sys.exit(main())
