"""Measure the book's build budgets: a cold build, a rebuild with nothing changed, and each page.

    python benchmarks/book_budget.py [--profile quick] [--out FOLDER] [--record]

1. **Cold build**: the README's build command into an empty folder (no execution cache),
   in the chosen profile. Every page runs once; the script reads each page's run time from
   the build's log and samples the memory of the kernel that runs it (every 0.2 s).
2. **No-change rebuild**: the same command again over the same folder. The execution
   cache should re-run nothing; the script counts the pages that ran and the seconds.
3. A table per page and per chapter (minutes, peak memory of the kernel), the form the
   preface's table takes, with the machine and date.

Targets (issue: the published book): cold quick build under 10 minutes on 2 cores, no-change
rebuild under 20 seconds. ``--record`` appends each page's run and the build's to
``nlpbook/recorded_runs/running-times.json``, from which the preface's `quick` columns come. The
script prints figures and whether each target is met; it exits non-zero only when a build fails.
It is not a timed test.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import psutil

from measure import REPO, machine_line, machine_name, record_timings
from nlpbook.profile import PROFILES

COLD_TARGET_S = 600
REBUILD_TARGET_S = 20
ANSI = re.compile(r"\x1b\[[0-9;]*m")
EXECUTING = re.compile(r"^(?P<path>\S+)\.(md|ipynb): Executing notebook")
EXECUTED = re.compile(r"^(?P<path>\S+)\.(md|ipynb): Executed notebook in (?P<seconds>[0-9.]+) seconds")


class KernelMemory:
    """Peak resident memory of the kernels a build starts, credited to the page that was executing.

    myst-nb runs one page at a time, each in a kernel it starts after logging
    'Executing notebook'; a process first seen while page P executes belongs to P.
    """

    def __init__(self, build: psutil.Process, every: float = 0.2):
        self.build, self.every = build, every
        self.page: str | None = None
        self.owner: dict[int, str] = {}
        self.peak_mib: dict[str, float] = defaultdict(float)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _sample(self):
        while not self._stop.wait(self.every):
            try:
                children = self.build.children(recursive=True)
            except psutil.NoSuchProcess:
                return
            for child in children:
                page = self.owner.setdefault(child.pid, self.page) if self.page else self.owner.get(child.pid)
                if page is None:
                    continue
                try:
                    rss = child.memory_info().rss / 2**20
                except psutil.NoSuchProcess:
                    continue
                self.peak_mib[page] = max(self.peak_mib[page], rss)


def build(out: Path, env: dict[str, str]) -> tuple[int, float, dict[str, float], dict[str, float], str]:
    """One `jupyter-book build`: exit status, seconds, each executed page's seconds and peak MiB, the log's tail."""
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    start = time.perf_counter()
    process = subprocess.Popen([str(jupyter_book), "build", "--path-output", str(out), str(REPO)], cwd=REPO, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds_by_page: dict[str, float] = {}
    log: list[str] = []
    with KernelMemory(psutil.Process(process.pid)) as memory:
        for raw in process.stdout:
            line = ANSI.sub("", raw).rstrip()
            log.append(line)
            if match := EXECUTING.match(line):
                memory.page = str(Path(match["path"]).relative_to(REPO))
            elif match := EXECUTED.match(line):
                seconds_by_page[str(Path(match["path"]).relative_to(REPO))] = float(match["seconds"])
                memory.page = None
        status = process.wait()
    return status, time.perf_counter() - start, seconds_by_page, dict(memory.peak_mib), "\n".join(log[-60:])


def chapter_of(page: str) -> str:
    parts = Path(page).parts
    return parts[1] if parts[0] == "book" and len(parts) > 2 else parts[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="quick", choices=PROFILES)
    parser.add_argument("--out", type=Path, help="build folder (default: a temporary one, removed at the end)")
    parser.add_argument("--record", action="store_true", help="append the pages' runs and the build's to the record")
    args = parser.parse_args(argv)
    # Unbuffered, so that each log line arrives as the page it names starts: the memory sampler
    # credits kernels to the page being executed.
    env = {**os.environ, "NLPBOOK_PROFILE": args.profile, "NLPBOOK_PROGRESS": "0", "PYTHONUNBUFFERED": "1"}

    with tempfile.TemporaryDirectory(prefix="nlpbook-budget-") as scratch:
        out = args.out or Path(scratch)
        if out.exists() and any(out.iterdir()) and args.out:
            raise SystemExit(f"--out {out} is not empty: a cold build needs an empty folder")
        print(machine_line())
        print(f"profile {args.profile}, {time.strftime('%Y-%m-%d %H:%M')}\n", flush=True)

        status, cold, seconds, peaks, tail = build(out, env)
        if status:
            print(f"the cold build failed (exit {status}):\n{tail}")
            return 1
        status, rebuild, rerun, _, tail = build(out, env)
        if status:
            print(f"the rebuild failed (exit {status}):\n{tail}")
            return 1

    print(f"{'page':48s} {'seconds':>8s} {'peak MiB':>9s}")
    for page in sorted(seconds):
        print(f"{page:48s} {seconds[page]:8.1f} {peaks.get(page, 0):9.0f}")
    print(f"\n{'chapter':24s} {'pages':>5s} {'minutes':>8s} {'peak MiB':>9s}")
    chapters: dict[str, list[str]] = defaultdict(list)
    for page in seconds:
        chapters[chapter_of(page)].append(page)
    for chapter in sorted(chapters):
        pages = chapters[chapter]
        print(f"{chapter:24s} {len(pages):5d} {sum(seconds[p] for p in pages) / 60:8.1f} "
              f"{max(peaks.get(p, 0) for p in pages):9.0f}")
    print(f"\ncold build:        {cold:7.1f} s ({cold / 60:.1f} min; {len(seconds)} pages executed, "
          f"{sum(seconds.values()):.1f} s of it in the pages)"
          + (f"  target < {COLD_TARGET_S / 60:.0f} min: {'met' if cold < COLD_TARGET_S else 'MISSED'}"
             if args.profile == "quick" else ""))
    print(f"no-change rebuild: {rebuild:7.1f} s ({len(rerun)} pages executed)  target < {REBUILD_TARGET_S} s and "
          f"none executed: {'met' if rebuild < REBUILD_TARGET_S and not rerun else 'MISSED'}")
    if args.record:
        record_timings(build_entries(args.profile, cold, seconds, peaks, rebuild, rerun))
    return 0


def build_entries(profile: str, cold: float, seconds: dict[str, float], peaks: dict[str, float], rebuild: float,
            rerun: dict[str, float]) -> list:
    """The record's entries for one cold build: each book page's run, then the build's own."""
    from nlpbook.running_times import IN_A_BUILD, Timing
    from nlpbook.toc import chapter_pages, chapters

    # The chapters' teaching pages only: the opening pages and the preface show times, they are not timed.
    teaching = {page for chapter in chapters() for page in chapter_pages(chapter)}
    day, machine = time.strftime("%Y-%m-%d"), machine_name()
    pages = [Timing("page", page.removeprefix("book/"), profile, round(seconds[page], 1),
                    round(peaks[page]) if peaks.get(page) else None, day, machine, IN_A_BUILD,
                    "benchmarks/book_budget.py")
             for page in sorted(seconds) if page.removeprefix("book/") in teaching]
    build = Timing("build", "book", profile, round(cold, 1), round(max(peaks.values())) if peaks else None, day,
                   machine, "jupyter-book build into an empty folder, then again with nothing changed",
                   "benchmarks/book_budget.py",
                   dict(pages=len(seconds), pages_seconds=round(sum(seconds.values()), 1),
                        rebuild_seconds=round(rebuild, 1), rebuild_pages=len(rerun)))
    return pages + [build]


if __name__ == "__main__":
    sys.exit(main())
