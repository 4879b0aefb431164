"""benchmarks/suite_time.py: a JUnit report read back into modules, and a small run of the suite reported."""
from __future__ import annotations

import subprocess
import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
from suite_time import read_junit, report  # noqa: E402

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
<testcase classname="tests.test_grading_03_lstms.TestLstmsExercise" name="test_x[a-b]" time="170.5"/>
<testcase classname="tests.test_book" name="test_book_builds" time="380.0"/>
<testcase classname="tests.test_book" name="test_links" time="2.0"/>
<testcase classname="solutions.03-lstms.lstms.ipynb" name="Cell 19" time="13.4"/>
</testsuite></testsuites>
"""


def test_tests_are_read_into_their_files_with_classes_and_notebook_cells(tmp_path):
    path = tmp_path / "suite.xml"
    path.write_text(JUNIT)
    tests = read_junit(path)
    assert [(t.module, t.name, t.seconds) for t in tests] == [
        ("tests/test_grading_03_lstms.py", "TestLstmsExercise::test_x[a-b]", 170.5),
        ("tests/test_book.py", "test_book_builds", 380.0),
        ("tests/test_book.py", "test_links", 2.0),
        ("solutions/03-lstms/lstms.ipynb", "Cell 19", 13.4),
    ]
    lines = report(tests, slowest=2).splitlines()
    assert lines[0] == "4 tests, 566 s in tests (9.4 min)"
    modules = [line.split()[-1] for line in lines[3:6]]
    assert modules == ["tests/test_book.py", "tests/test_grading_03_lstms.py", "solutions/03-lstms/lstms.ipynb"]
    assert lines[3].split()[:3] == ["382.0", "67.5%", "2"]
    assert lines[-2:] == ["   380.0  tests/test_book.py::test_book_builds",
                          "   170.5  tests/test_grading_03_lstms.py::TestLstmsExercise::test_x[a-b]"]


def test_the_script_runs_part_of_the_suite_and_reports_it():
    result = subprocess.run([sys.executable, str(REPO / "benchmarks" / "suite_time.py"), "--",
                             "tests/test_nlpbook_seed.py"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "pytest exited with 0 after" in result.stdout
    assert any(line.endswith("  tests/test_nlpbook_seed.py") for line in result.stdout.splitlines()), result.stdout


def test_a_missing_report_is_named(tmp_path):
    result = subprocess.run([sys.executable, str(REPO / "benchmarks" / "suite_time.py"), "--junit",
                             str(tmp_path / "none.xml")], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "none.xml: no such JUnit XML file" in result.stderr
