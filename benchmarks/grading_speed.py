"""How fast does a class grade?  Plain sequential ``nbgrader autograde`` against ``python -m autograder grade``.

    python benchmarks/grading_speed.py [--students 30] [--assignment 04-attention]

Generates a class (half the students hand in the solution, the other half the
solution with one planted bug each, from :mod:`autograder.mutants`), then grades
it four ways on this machine:

1. plain nbgrader: a stock course folder, ``nbgrader generate_assignment`` then
   ``nbgrader autograde`` (one kernel after another, no sandbox, no feedback), from
   the source notebooks and the submissions to grades;
2. ``python -m autograder grade --workers 1``: sandboxed, with feedback, one at a time;
3. ``python -m autograder grade``: the same with the default workers (one per core);
4. ``python -m autograder grade --no-feedback``: the same work as plain nbgrader's
   autograde (grades, no feedback HTML), sandboxed, with the default workers.

It checks that every student gets the same total from all four, and prints the
times, the speed-up over plain nbgrader (like for like: run 4; and with the
feedback that plain autograde does not write: run 3), and the fixed cost per
notebook: the time per notebook beyond running its cells in a kernel that is
already warm.
This is a script that prints figures, not a test: times depend on the machine.
"""
from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autograder.course import SOLUTIONS  # noqa: E402
from autograder.handins import solved, write  # noqa: E402
from autograder.mutants import planted_bugs  # noqa: E402
from measure import machine_line  # noqa: E402


def make_class(assignment: str, notebook: str, students: int, folder: Path) -> None:
    """Even-numbered students hand in the solution; odd-numbered ones one planted bug each, parts taken in turn."""
    bugs = list(planted_bugs(assignment, notebook).values())
    for number in range(students):
        if number % 2 == 0:
            handed_in = solved(assignment, notebook)
        else:
            part_bugs = bugs[(number // 2) % len(bugs)]
            bug = part_bugs[(number // 2 // len(bugs)) % len(part_bugs)]
            handed_in = solved(assignment, notebook, replace={bug.part: bug.source})
        write(handed_in, folder / f"student{number:03d}" / assignment, notebook)


def plain_nbgrader(assignment: str, submissions: Path, folder: Path, env: dict) -> tuple[float, dict[str, float]]:
    course = folder / "course"
    shutil.copytree(SOLUTIONS / assignment, course / "source" / assignment)
    shutil.copytree(submissions, course / "submitted")
    (course / "nbgrader_config.py").write_text("c = get_config()\nc.CourseDirectory.course_id = 'benchmark'\n"
                                               "c.Execute.timeout = 120\n")
    start = time.perf_counter()
    subprocess.run(["nbgrader", "generate_assignment", assignment, "--force"], cwd=course, env=env, check=True,
                   capture_output=True)
    subprocess.run(["nbgrader", "autograde", assignment], cwd=course, env=env, check=True, capture_output=True)
    seconds = time.perf_counter() - start
    subprocess.run(["nbgrader", "export", "--to", str(folder / "grades.csv")], cwd=course, env=env, check=True,
                   capture_output=True)
    return seconds, _totals(folder / "grades.csv", "student_id", "raw_score")


def ours(assignment: str, submissions: Path, out: Path, env: dict, *options: str) -> tuple[float, dict[str, float]]:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "autograder", "grade", assignment, "--submissions", str(submissions),
                    "--out", str(out), *options], cwd=REPO, env=env, check=True, capture_output=True)
    return time.perf_counter() - start, _totals(out / "grades.csv", "student_id", "raw_score")


def _totals(path: Path, key: str, value: str) -> dict[str, float]:
    with open(path, newline="", encoding="utf-8") as handle:
        return {row[key]: float(row[value]) for row in csv.DictReader(handle)}


def warm_cell_seconds(assignment: str, notebook: str, env: dict) -> float:
    """The notebook's cells alone, in a kernel that has already imported what they import."""
    from nbclient import NotebookClient
    from nbformat.v4 import new_code_cell

    os.environ.update(env, NLPBOOK_GRADING="student")
    handed_in = solved(assignment, notebook)
    client = NotebookClient(handed_in, timeout=120)
    with client.setup_kernel():
        warm = new_code_cell("import torch, numpy, matplotlib.pyplot, nlpbook")
        client.execute_cell(warm, 0)
        start = time.perf_counter()
        for index, cell in enumerate(handed_in.cells):
            if cell.cell_type == "code":
                client.execute_cell(cell, index)
        return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assignment", default="04-attention")
    parser.add_argument("--notebook", default="attention")
    parser.add_argument("--students", type=int, default=60)
    args = parser.parse_args()
    # nbgrader and the alembic command it runs come from this environment's bin folder, activated or not.
    env = {**os.environ, "NLPBOOK_PROFILE": os.environ.get("NLPBOOK_PROFILE", "quick"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    folder = Path(tempfile.mkdtemp(prefix="grading-speed-"))
    try:
        submissions = folder / "submissions"
        make_class(args.assignment, args.notebook, args.students, submissions)
        cells = warm_cell_seconds(args.assignment, args.notebook, env)
        plain, plain_totals = plain_nbgrader(args.assignment, submissions, folder / "plain", env)
        sequential, sequential_totals = ours(args.assignment, submissions, folder / "sequential", env, "--workers", "1")
        parallel, parallel_totals = ours(args.assignment, submissions, folder / "parallel", env)
        bare, bare_totals = ours(args.assignment, submissions, folder / "bare", env, "--no-feedback")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    n = args.students
    print(f"machine: {machine_line()}; profile {env['NLPBOOK_PROFILE']}")
    print(f"class: {n} students of {args.assignment} ({(n + 1) // 2} solutions, {n // 2} with one planted bug)")
    print(f"cells alone, warm kernel:          {cells:6.2f} s per notebook")
    print(f"plain nbgrader autograde:          {plain:6.1f} s  {plain / n:5.2f} s per notebook  "
          f"(fixed cost {plain / n - cells:5.2f} s)")
    print(f"autograder grade --workers 1:      {sequential:6.1f} s  {sequential / n:5.2f} s per notebook  "
          f"(fixed cost {sequential / n - cells:5.2f} s; sandbox and feedback included)")
    print(f"autograder grade ({os.cpu_count()} workers):      {parallel:6.1f} s  {parallel / n:5.2f} s per notebook")
    print(f"  the same, --no-feedback:          {bare:6.1f} s  {bare / n:5.2f} s per notebook")
    print(f"speed-up over plain nbgrader autograde, like for like (grades, no feedback): {plain / bare:.1f}x")
    print(f"speed-up with feedback HTML as well: {plain / parallel:.1f}x (one worker: {plain / sequential:.1f}x)")
    differ = sorted(s for s in plain_totals
                    if not plain_totals[s] == sequential_totals.get(s) == parallel_totals.get(s) == bare_totals.get(s))
    if differ:
        for student in differ:
            print(f"GRADES DIFFER {student}: plain {plain_totals[student]}, one worker "
                  f"{sequential_totals.get(student)}, parallel {parallel_totals.get(student)}, "
                  f"no feedback {bare_totals.get(student)}")
        return 1
    print(f"grades: equal for all {len(plain_totals)} students in the four runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
