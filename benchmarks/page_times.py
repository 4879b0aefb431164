"""Run book pages alone, one after another, in one profile, and print (and record) each one's time and memory.

    python benchmarks/page_times.py --profile standard [--record] 05-transformers/bpe 06-bert/wordpiece ...
    python benchmarks/page_times.py --profile standard --chapter 07-adam [--record] [--keep DIR]

Each page runs in its own process, as the build runs it: its MyST source read by jupytext and executed
by nbclient in a fresh kernel, in the page's folder.  The time is the process's, kernel start
included; the memory is the largest resident set of the process and its kernel (``wait4``).  A page
that fails prints its error and is not recorded.  ``--record`` appends each page that ran to
``nlpbook/recorded_runs/running-times.json``, from which each chapter's opening page shows its pages'
latest `standard` times.  ``--keep DIR`` writes each executed notebook to ``DIR/CHAPTER/STEM.ipynb``,
outputs and nbclient's per-cell timestamps included, so that the figures a timed run printed and
glued can be read without running the page again.  Run nothing else on the machine meanwhile: the
pages are timed, and a page counted in training steps takes as long as the machine needs for them.
It prints figures; it is not a timed test.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from measure import REPO, machine_line, machine_name, record_timings, run_measured
from nlpbook.profile import PROFILES
from nlpbook.running_times import ALONE, Timing
from nlpbook.toc import chapter_pages

# What the subprocess runs: one page, executed as the build executes it (in its own folder).
RUNNER = """
import sys
from pathlib import Path

import jupytext
from nbclient import NotebookClient

page = Path(sys.argv[1])
notebook = jupytext.read(page)
try:
    NotebookClient(notebook, timeout=float(sys.argv[2]), kernel_name="python3",
                   resources={"metadata": {"path": str(page.parent)}}).execute()
finally:  # a page that fails is kept too: its outputs show how far it got
    if len(sys.argv) > 3:
        import nbformat
        Path(sys.argv[3]).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, sys.argv[3])
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="*", help="pages as CHAPTER/STEM (05-transformers/bpe)")
    parser.add_argument("--chapter", action="append", default=[], help="every page of this chapter too")
    parser.add_argument("--profile", default="standard", choices=PROFILES)
    parser.add_argument("--record", action="store_true", help="append each page that ran to the record")
    parser.add_argument("--keep", type=Path, help="write each executed notebook under this folder")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds a page may take")
    args = parser.parse_args(argv)
    pages = list(args.pages) + [page for chapter in args.chapter for page in chapter_pages(chapter)]
    if not pages:
        parser.error("name pages or a --chapter")
    missing = [page for page in pages if not (REPO / "book" / f"{page}.md").is_file()]
    if missing:
        parser.error(f"no page book/{missing[0]}.md")

    print(machine_line())
    print(f"profile {args.profile}, {time.strftime('%Y-%m-%d %H:%M')}\n")
    print(f"{'page':44s} {'result':8s} {'minutes':>8s} {'peak MiB':>9s}", flush=True)
    env = {**os.environ, "NLPBOOK_PROFILE": args.profile, "NLPBOOK_PROGRESS": "0"}
    timed, failed = [], []
    for page in pages:
        kept = [str((args.keep / page).with_suffix(".ipynb").resolve())] if args.keep else []
        status, seconds, peak_mib, output = run_measured(
            [sys.executable, "-c", RUNNER, str(REPO / "book" / f"{page}.md"), str(args.timeout), *kept], env)
        print(f"{page:44s} {'ran' if status == 0 else 'FAILED':8s} {seconds / 60:8.1f} {peak_mib:9.0f}", flush=True)
        if status:
            failed.append(f"---- {page} ----\n{output}")
            continue
        timed.append(Timing("page", page, args.profile, round(seconds, 1), round(peak_mib), time.strftime("%Y-%m-%d"),
                            machine_name(), ALONE, "benchmarks/page_times.py"))
    for failure in failed:
        print(f"\n{failure}")
    if args.record and timed:
        record_timings(timed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
