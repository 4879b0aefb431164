"""Where the test suite's time goes: seconds per test module and the slowest tests.

    python benchmarks/suite_time.py                      # run the whole suite (as .ci/run does), then report
    python benchmarks/suite_time.py -- tests/test_book.py  # run part of it
    python benchmarks/suite_time.py --junit report.xml   # report on a run already made (pytest --junitxml)

A test's time is pytest's: its set-up, call and tear-down, so a module-scoped fixture (a class
graded once, the book built once) counts towards the first test that asks for it.  The report
prints the machine, the wall-clock time of the run when it made one, then one line per module
(seconds, share of the suite, tests) and the slowest tests.  It prints figures; it is not a
timed test, and it exits with pytest's status so that a failing suite is not mistaken for a fast one.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from measure import REPO, machine_line


@dataclass(frozen=True)
class TestTime:
    module: str   # the file, relative to the repository: tests/test_book.py, solutions/03-lstms/lstms.ipynb
    name: str     # the test within it, with its parameters
    seconds: float


def read_junit(path: Path) -> list[TestTime]:
    """Every test case of a pytest JUnit XML report, with the module it belongs to."""
    found = []
    for case in ElementTree.parse(path).iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        # pytest writes tests/test_x.py::TestY::test_z as classname "tests.test_x.TestY"; a notebook
        # cell of solutions/03-lstms/lstms.ipynb as "solutions.03-lstms.lstms.ipynb".
        parts = classname.split(".")
        if parts[-1] == "ipynb":
            module = "/".join(parts[:-2]) + f"/{parts[-2]}.ipynb"
        else:
            while parts and parts[-1][:1].isupper():  # test classes
                name = f"{parts.pop()}::{name}"
            module = "/".join(parts) + ".py"
        found.append(TestTime(module, name, float(case.get("time", 0.0))))
    return found


def report(tests: list[TestTime], slowest: int = 10) -> str:
    by_module: dict[str, list[TestTime]] = defaultdict(list)
    for test in tests:
        by_module[test.module].append(test)
    total = sum(test.seconds for test in tests)
    lines = [f"{len(tests)} tests, {total:.0f} s in tests ({total / 60:.1f} min)", "",
             f"{'seconds':>8} {'share':>6} {'tests':>6}  module"]
    for module, cases in sorted(by_module.items(), key=lambda item: -sum(t.seconds for t in item[1])):
        seconds = sum(test.seconds for test in cases)
        lines.append(f"{seconds:8.1f} {seconds / total if total else 0:6.1%} {len(cases):6d}  {module}")
    lines += ["", f"the {slowest} slowest tests:"]
    lines += [f"{test.seconds:8.1f}  {test.module}::{test.name}"
              for test in sorted(tests, key=lambda test: -test.seconds)[:slowest]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--junit", type=Path, help="report on this JUnit XML file instead of running the suite")
    parser.add_argument("--slowest", type=int, default=10, help="how many of the slowest tests to list")
    parser.add_argument("pytest_args", nargs="*", help="after --: what to pass to pytest (default: the whole suite)")
    args = parser.parse_args(argv)
    print(machine_line())
    if args.junit:
        if not args.junit.is_file():
            raise SystemExit(f"{args.junit}: no such JUnit XML file")
        print(report(read_junit(args.junit), args.slowest))
        return 0
    with tempfile.TemporaryDirectory() as folder:
        junit = Path(folder) / "suite.xml"
        start = time.perf_counter()
        status = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                 f"--junitxml={junit}", *args.pytest_args], cwd=REPO).returncode
        wall = time.perf_counter() - start
        print(f"\npytest exited with {status} after {wall:.0f} s of wall-clock time ({wall / 60:.1f} min)")
        if junit.is_file():
            print(report(read_junit(junit), args.slowest))
    return status


if __name__ == "__main__":
    sys.exit(main())
