"""check-tests: the planted bugs are the intended ones, and the report counts what the real grader catches."""
from __future__ import annotations

import csv
from pathlib import Path
from types import SimpleNamespace

import pytest

from attention_course import COURSE_ARGS
from conftest import run_autograder

from autograder.grade import Submission
from autograder.mutants import mutants, solution_lines

CELL = '''def mean_of_positive(values, start=0):
    """Students write the body."""
    ### BEGIN SOLUTION
    kept = [v for v in values[start:] if v > 0]
    total = sum(kept)
    return total / len(kept) if kept and total >= 0 else 0.0
    ### END SOLUTION'''


def _source() -> str:
    return "\n".join(line for line in CELL.split("\n") if "### " not in line)


def test_only_the_lines_between_the_markers_are_mutated():
    assert solution_lines(CELL) == {3, 4, 5}
    found = mutants("mean", _source(), solution_lines(CELL))
    assert found and all(m.line in {3, 4, 5} for m in found)
    assert not any("start=1" in m.source for m in found)  # the signature is the instructor's


def test_each_kind_of_bug_is_planted_once_and_the_code_still_parses():
    import ast

    found = mutants("mean", _source(), solution_lines(CELL))
    kinds = {m.kind for m in found}
    assert kinds == {"operator swap", "off-by-one constant", "dropped call", "dropped statement"}
    described = {(m.kind, m.before, m.after) for m in found}
    assert ("operator swap", "total / len(kept)", "total * len(kept)") in described
    assert ("operator swap", "v > 0", "v >= 0") in described
    assert ("operator swap", "kept and total >= 0", "kept or total >= 0") in described
    assert ("off-by-one constant", "0", "1") in described
    assert ("dropped call", "sum(kept)", "kept") in described
    assert ("dropped statement", "total = sum(kept)", "pass") in described
    sources = [m.source for m in found]
    assert len(sources) == len(set(sources)), "a mutant was planted twice"
    for source in sources:
        ast.parse(source)
        assert source != ast.unparse(ast.parse(_source()))


def test_check_tests_reports_each_part_and_lists_survivors(tmp_path):
    # The grader's own test course: chapter 4 without its training part (attention_course).
    result = run_autograder("check-tests", "04-attention", *COURSE_ARGS, "--out", str(tmp_path), "--limit", "2")
    assert result.returncode == 0, result.stderr[-3000:]
    report = result.stdout
    for part in ("scaled_dot_product_attention", "causal_mask", "padding_mask", "MultiHeadSelfAttention",
                 "sinusoidal_positions", "apply_rotary"):
        assert part in report
    assert "all parts" in report and "caught" in report
    with open(tmp_path / "check-tests.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 12  # 2 per part
    caught = sum(row["caught"] == "True" for row in rows)
    assert f"{caught:4d} / 12" in report
    assert caught >= 10  # the first bugs in each part are drops and swaps that these tests must catch


def test_check_tests_plants_bugs_in_the_parts_named_and_refuses_a_part_that_is_not_there(tmp_path):
    result = run_autograder("check-tests", "04-attention", *COURSE_ARGS, "--out", str(tmp_path / "one"),
                            "--limit", "2", "--part", "causal_mask")
    assert result.returncode == 0, result.stderr[-3000:]
    with open(tmp_path / "one" / "check-tests.csv", newline="", encoding="utf-8") as handle:
        assert {row["part"] for row in csv.DictReader(handle)} == {"causal_mask"}
    assert "padding_mask" not in result.stdout
    result = run_autograder("check-tests", "04-attention", *COURSE_ARGS, "--out", str(tmp_path / "two"),
                            "--part", "causal_mask", "--part", "no_such_part")
    assert result.returncode == 2
    assert "no solution cell 'no_such_part'" in result.stderr and "causal_mask" in result.stderr
    assert not (tmp_path / "two").exists()  # refused before anything is written


def test_check_tests_counts_a_bug_as_caught_only_when_it_costs_points_and_refuses_broken_tests(tmp_path, monkeypatch):
    # kills MU1 (a mutant scoring as much as the control counted as caught) and MU2 (the control's
    # check dropped: tests that fail the unchanged solution reported as strong)
    import autograder.grade
    from attention_course import COURSE
    from autograder.course import Course
    from autograder.mutants import check_tests

    def fake_grade(assignment, submissions, out, **options):
        students = sorted(p.name for p in Path(submissions).iterdir())
        return SimpleNamespace(submissions=[Submission(s, Path(submissions), status="graded", score=scores(s))
                                            for s in students])

    monkeypatch.setattr(autograder.grade, "grade", fake_grade)
    course = Course.at(COURSE)
    # the control scores 17; the first mutant too (survived), the second less (caught)
    scores = lambda student: 17.0 if student.endswith(("control", "-000")) else 15.0  # noqa: E731
    [report] = check_tests("04-attention", tmp_path / "one", limit=2, parts=["causal_mask"], course=course)
    assert (len(report.caught), len(report.survived)) == (1, 1)
    scores = lambda student: 15.0 if student.endswith("control") else 17.0  # noqa: E731
    with pytest.raises(RuntimeError, match="the unchanged solution of attention loses points"):
        check_tests("04-attention", tmp_path / "two", limit=2, parts=["causal_mask"], course=course)
