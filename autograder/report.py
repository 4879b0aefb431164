"""The class report: one HTML page an instructor reads after grading (``OUT/report.html``).

Per part, how the class scored (mean, share at full marks and at zero, a histogram); the
checks that failed most often, by the names the tests give them (a hidden test's own lines
are never quoted); the time each notebook took; and every submission flagged for a human
look.  It is built from what grading already wrote (``parts.csv`` and the autograded
notebooks), so it costs no kernel time, and it is self-contained (no script, no download).
"""
from __future__ import annotations

import csv
import html
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder.preprocessors import hidden_lines, scrub
from autograder.verdicts import HIDDEN_BEGIN, HIDDEN_END, is_test_cell

BINS = 5  # histogram bins from 0 to a part's points


@dataclass
class Part:
    """One graded cell over the class."""

    notebook: str
    name: str
    points: float
    scores: list[float] = field(default_factory=list)
    waiting: int = 0  # students whose answer waits for manual grading

    def histogram(self) -> list[int]:
        counts = [0] * BINS
        for score in self.scores:
            counts[min(BINS - 1, int(BINS * score / self.points)) if self.points else 0] += 1
        return counts


def parts(parts_csv: Path) -> list[Part]:
    """The parts of ``parts.csv`` in its order, each with every student's score."""
    found: dict[tuple[str, str], Part] = {}
    with open(parts_csv, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            key = (row["notebook"], row["part"])
            part = found.setdefault(key, Part(row["notebook"], row["part"], float(row["max_score"])))
            if row["needs_manual_grade"] == "True":  # no score yet: a person grades it
                part.waiting += 1
            elif row["score"] not in ("", "None"):
                part.scores.append(float(row["score"]))
    return list(found.values())


def failed_checks(autograded: Path, assignment: str, secret: set[str]) -> Counter:
    """How many students each failing check cost points: (notebook, part, the check's words) -> count.

    The words are the verdict's first clause (a check's name, as its test gives it), scrubbed
    of any line of the hidden tests (``secret``); a plain test's error is its exception's name.
    """
    counts: Counter = Counter()
    for path in sorted(autograded.glob(f"*/{assignment}/*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            if not is_test_cell(cell):
                continue
            errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
            if not errors:
                continue
            words = errors[-1].get("evalue", "") if errors[-1].get("ename") == "TestFailed" else errors[-1].get("ename", "")
            # scrubbed whole, then cut: a cut could keep part of a hidden line that no longer matches it
            words = scrub(words.split("\n")[0], secret).split(": ")[0][:120]
            counts[(path.stem, cell.metadata.nbgrader["grade_id"], words or "(no message)")] += 1
    return counts


def _bars(counts: list[int], labels: list[str]) -> str:
    top = max(counts) or 1
    return "".join(f'<span class="bar" title="{html.escape(label)}: {count}" style="height:{3 + 40 * count / top:.0f}px">'
                   f"</span>" for count, label in zip(counts, labels))


def render(assignment: str, class_parts: list[Part], checks: Counter, submissions, warnings: list[str]) -> str:
    """The page, from the class's parts, its failed checks, its submissions and the run's warnings."""
    e = html.escape
    rows = []
    for part in class_parts:
        n = len(part.scores)
        mean = sum(part.scores) / n if n else 0.0
        full = sum(s >= part.points for s in part.scores) / n if n else 0.0
        zero = sum(s == 0 for s in part.scores) / n if n else 0.0
        edges = [f"{part.points * i / BINS:g} to {part.points * (i + 1) / BINS:g}" for i in range(BINS)]
        rows.append(f"<tr><td>{e(part.notebook)}</td><td>{e(part.name)}</td><td>{part.points:g}</td>"
                    + (f"<td colspan=4>{part.waiting} answer(s) wait for manual grading</td>" if not n else
                       f"<td>{mean:.2f}</td><td>{full:.0%}</td><td>{zero:.0%}</td>"
                       f'<td class="hist">{_bars(part.histogram(), edges)}</td>') + "</tr>")
    check_rows = "".join(f"<tr><td>{e(notebook)}</td><td>{e(part)}</td><td>{e(words)}</td><td>{count}</td></tr>"
                         for (notebook, part, words), count in checks.most_common(20))
    graded = [s for s in submissions if s.status != "missing"]
    slowest = max((s.seconds for s in graded), default=0.0) or 1.0
    time_rows = "".join(f"<tr><td>{e(s.student)}</td><td>{s.seconds:.1f}</td><td>"
                        f'<span class="hbar" style="width:{200 * s.seconds / slowest:.0f}px"></span></td></tr>'
                        for s in sorted(graded, key=lambda s: -s.seconds))
    flagged = "".join(f"<li><b>{e(s.student)}</b> ({e(s.status)}): {e('; '.join(s.problems))}</li>"
                      for s in submissions if s.needs_review or s.status == "failed")
    totals = [s.score for s in graded]
    maximum = max((s.max_score for s in submissions), default=0.0)
    summary = (f"{len(graded)} of {len(submissions)} students handed in; mean {sum(totals) / len(totals):.2f} "
               f"of {maximum:g} automatic and manual points so far") if totals else "nobody handed in"
    warning_items = "".join(f"<li>{e(w)}</li>" for w in warnings)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(assignment)}: class report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em; padding: 0 1em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }} th, td {{ border-bottom: 1px solid #ddd; padding: .3em .6em;
text-align: left; vertical-align: bottom; }} th {{ background: #f3f3f3; }}
.hist {{ white-space: nowrap; }} .bar {{ display: inline-block; width: 14px; margin-right: 2px; background: #3b6ea8; }}
.hbar {{ display: inline-block; height: 10px; background: #3b6ea8; }} .warn {{ color: #9a3412; }}
</style></head><body>
<h1>{e(assignment)}: class report</h1>
<p>{e(summary)}.</p>
{f'<h2>Warnings</h2><ul class="warn">{warning_items}</ul>' if warnings else ''}
<h2>Scores by part</h2>
<p>The histogram has {BINS} bins from 0 to the part's points (hover for counts).</p>
<table><tr><th>notebook</th><th>part</th><th>points</th><th>mean</th><th>full marks</th><th>zero</th>
<th>histogram</th></tr>{''.join(rows)}</table>
<h2>Checks that failed most</h2>
{f'<table><tr><th>notebook</th><th>part</th><th>check</th><th>students</th></tr>{check_rows}</table>'
 if check_rows else '<p>No check failed.</p>'}
<h2>Time per notebook</h2>
<table><tr><th>student</th><th>seconds</th><th></th></tr>{time_rows}</table>
<h2>Flagged for review</h2>
{f'<ul>{flagged}</ul>' if flagged else '<p>No submission was flagged.</p>'}
</body></html>
"""


def _without(text: str, secret: set[str]) -> str:
    """``text`` with every quoted line of a hidden test cut out, the rest of it kept."""
    for line in sorted(secret, key=len, reverse=True):
        text = text.replace(line, "[a line of the hidden tests]")
    return text


def write_report(folder: Path, assignment: str, course: Path, submissions, warnings: list[str],
                 delimiters: tuple[str, str] = (HIDDEN_BEGIN, HIDDEN_END)) -> Path:
    """``folder/report.html`` from ``folder/parts.csv`` and the course's autograded notebooks, whose
    hidden blocks ``delimiters`` mark."""
    path = folder / "report.html"
    # The report may be shared (with teaching assistants, in a meeting): no line of a hidden test in it.
    secret = set().union(*(hidden_lines(nbformat.read(source, as_version=4), *delimiters)
                           for source in sorted((course / "source" / assignment).glob("*.ipynb"))))
    checks = failed_checks(course / "autograded", assignment, secret)
    path.write_text(render(assignment, parts(folder / "parts.csv"), checks, submissions,
                           [_without(warning, secret) for warning in warnings]), encoding="utf-8",
                    errors="backslashreplace")  # a file name not in UTF-8 keeps its odd bytes as \xff
    return path
