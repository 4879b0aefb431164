"""Every sentence of the book that states a measured result, and whether it held.

    python benchmarks/claims_report.py [--profile standard] [--out FOLDER]
    python benchmarks/claims_report.py --log claims.jsonl      # sum up an earlier run

Pages state their qualitative results through ``nlpbook.claim`` (``nlpbook/claims.py``).  This
script builds the whole book into an empty folder (no execution cache, so every page runs) in
the chosen profile, with ``$NLPBOOK_CLAIMS_LOG`` pointing at a fresh file, then prints every
claim with its status, chapter and figures, and a count per status.  In ``standard`` (about two
and a half hours on 2 cores) and ``full`` a false claim also fails its page's build; in
``quick`` claims are recorded as unchecked.  Exit status: 1 when a claim failed or the build
failed, else 0.  It is not a timed test.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

from book_budget import build
from measure import machine_line
from nlpbook.claims import LOG_VARIABLE
from nlpbook.profile import PROFILES


def read_log(path: Path) -> list[dict]:
    """The claims of a log, one JSON object a line; a line that is not JSON names the file and line."""
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise SystemExit(f"{path}:{number}: not a JSON claim record ({error})")
    return records


def report(records: list[dict]) -> str:
    """A table of the claims (status, chapter, statement, figures) and the count per status."""
    lines = ["| status | chapter | claim | figures |", "|---|---|---|---|"]
    for record in records:
        figures = ", ".join(f"{name} = {value:.4g}" for name, value in record.get("figures", {}).items())
        lines.append(f"| {record['status']} | {record.get('where', '')} | {record['statement']} | {figures} |")
    counts = Counter(record["status"] for record in records)
    lines.append("")
    lines.append(f"{len(records)} claims: " + ", ".join(f"{counts[s]} {s}" for s in ("held", "FAILED", "unchecked")))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", choices=PROFILES, default="standard")
    parser.add_argument("--out", type=Path, help="build folder (default: a new temporary one)")
    parser.add_argument("--log", type=Path, help="sum up this claims log instead of building")
    args = parser.parse_args(argv)
    build_status = 0
    if args.log is None:
        out = args.out or Path(tempfile.mkdtemp(prefix="claims-build-"))
        log = out / "claims.jsonl"
        out.mkdir(parents=True, exist_ok=True)
        log.unlink(missing_ok=True)
        env = {**os.environ, "NLPBOOK_PROFILE": args.profile, LOG_VARIABLE: str(log)}
        print(f"building the book in the {args.profile} profile into {out} ({machine_line()})", flush=True)
        build_status, seconds, _, _, tail = build(out, env)
        print(f"build: exit {build_status} after {seconds / 60:.1f} min")
        if build_status:
            print(tail)
        if not log.exists():
            log.touch()
    else:
        log = args.log
    records = read_log(log)
    print(report(records))
    return 1 if build_status or any(r["status"] == "FAILED" for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
