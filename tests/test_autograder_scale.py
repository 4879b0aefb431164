"""Grading at class scale: parallel workers, resuming, PostgreSQL, a Dask cluster, the exports.

One small class (correct, untouched, and three known mistakes) is graded
sequentially first; every other way of grading it must give the same
``parts.csv`` and ``grades.csv``, cell for cell.
"""
from __future__ import annotations

import csv
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_autograder
from processes import left_behind
from servers import dask_cluster, postgres_server
from autograder.handins import write
from attention_course import COURSE_ARGS, exercise, solved

from autograder.course import COURSE_ID, REPO_ROOT

ASSIGNMENT = "04-attention"
SDPA = "scaled_dot_product_attention"
CLASS = {
    "correct": {},
    "no-scaling": {SDPA: [(" / math.sqrt(d_k)", "")]},
    "causal-hides-diagonal": {"causal_mask": [("diagonal=1", "diagonal=0")]},
    "rotary-wrong-direction": {"apply_rotary": [
        ("(even * cos - odd * sin, even * sin + odd * cos)", "(even * cos + odd * sin, -even * sin + odd * cos)")]},
}


def _hand_in(folder: Path) -> Path:
    for student, edits in CLASS.items():
        write(solved(ASSIGNMENT, "attention", edits), folder / student / ASSIGNMENT, "attention")
    write(exercise(), folder / "untouched" / ASSIGNMENT, "attention")
    return folder


def _table(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return sorted(csv.reader(handle))


def _grade(submissions: Path, out: Path, *options: str, check: bool = True, env: dict[str, str] | None = None):
    result = run_autograder("grade", ASSIGNMENT, *COURSE_ARGS, "--submissions", str(submissions), "--out", str(out),
                            *options, env=env)
    if check:
        assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.fixture(scope="module")
def submissions(tmp_path_factory):
    return _hand_in(tmp_path_factory.mktemp("scale-submissions"))


@pytest.fixture(scope="module")
def sequential(submissions, tmp_path_factory):
    out = tmp_path_factory.mktemp("scale-sequential") / "out"
    _grade(submissions, out, "--workers", "1")
    return out


def _same_grades(out: Path, reference: Path) -> None:
    assert _table(out / "parts.csv") == _table(reference / "parts.csv")
    assert _table(out / "grades.csv") == _table(reference / "grades.csv")
    assert _table(out / "lms.csv") == _table(reference / "lms.csv")


def test_the_class_gets_the_scores_its_mistakes_deserve(sequential):
    totals = {row[0]: float(row[1]) for row in _table(sequential / "lms.csv") if row[0] != "student_id"}
    assert totals["correct"] == 17
    assert totals["untouched"] == 0
    assert all(0 < totals[name] < 17 for name in ("no-scaling", "causal-hides-diagonal", "rotary-wrong-direction"))


def test_parallel_workers_give_the_same_grades_as_one(submissions, sequential, tmp_path):
    result = _grade(submissions, tmp_path / "out", "--workers", "3")
    assert "workers: 3 processes on this machine" in result.stderr
    # The sequential run's solution run, kept in the session's shared cache, serves this new folder.
    assert re.search(r"reference-\w+: reused from the shared cache", result.stderr), result.stderr[-3000:]
    _same_grades(tmp_path / "out", sequential)


def test_without_feedback_the_grades_are_the_same_and_a_later_run_writes_it(submissions, sequential, tmp_path):
    out = tmp_path / "out"
    _grade(submissions, out, "--no-feedback")
    _same_grades(out, sequential)
    assert not [p for p in (out / "feedback").rglob("*") if p.is_file()]
    result = _grade(submissions, out)  # results saved without feedback are not reused for a run that wants it
    assert "5 to grade, 0 already graded" in result.stderr
    assert sorted(p.parent.parent.name for p in (out / "feedback").rglob("*.html")) == sorted([*CLASS, "untouched"])
    _same_grades(out, sequential)


def test_lms_export_has_one_row_per_student_with_the_total(sequential):
    rows = _table(sequential / "lms.csv")
    header = [row for row in rows if row[0] == "student_id"][0]
    assert header == ["student_id", f"{ASSIGNMENT} (out of 17)"]  # the automatic points; 6 more are written
    assert sorted(row[0] for row in rows if row[0] != "student_id") == sorted([*CLASS, "untouched"])


def test_the_summary_names_the_slowest_notebooks(sequential):
    log = (sequential / "grading.log").read_text()
    assert "5 graded, 0 failed, 0 not handed in" in log
    assert "slowest: " in log


def test_a_second_run_over_an_unchanged_class_grades_nothing(submissions, sequential):
    before = _table(sequential / "parts.csv")
    result = _grade(submissions, sequential)
    assert "0 to grade, 5 already graded by an earlier run" in result.stderr
    assert _table(sequential / "parts.csv") == before
    result = _grade(submissions, sequential, "--regrade", "--workers", "2")
    assert "5 to grade, 0 already graded" in result.stderr
    assert _table(sequential / "parts.csv") == before


def test_a_changed_submission_is_the_only_one_graded_again(submissions, sequential, tmp_path):
    import shutil

    changed = tmp_path / "submissions"
    shutil.copytree(submissions, changed)
    out = tmp_path / "out"
    shutil.copytree(sequential, out)
    write(solved(ASSIGNMENT, "attention"), changed / "no-scaling" / ASSIGNMENT, "attention")  # fixed its mistake
    result = _grade(changed, out)
    assert "1 to grade, 4 already graded by an earlier run" in result.stderr
    totals = {row[0]: row[1] for row in _table(out / "lms.csv")}
    assert totals["no-scaling"] == "17"


def test_a_killed_run_resumes_to_identical_grades(submissions, sequential, tmp_path):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "autograder", "grade", ASSIGNMENT, *COURSE_ARGS, "--submissions", str(submissions),
               "--out", str(out), "--workers", "1"]
    env = {**os.environ, "NLPBOOK_PROFILE": "quick"}
    grader = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = out / ".work" / "results"
    deadline = time.monotonic() + 300
    while not (results.is_dir() and len([p for p in results.iterdir() if not p.name.startswith(".")]) >= 2):
        assert grader.poll() is None and time.monotonic() < deadline, "the grader ended before it could be killed"
        time.sleep(0.1)
    grader.send_signal(signal.SIGKILL)
    grader.wait()
    assert not (out / "grades.csv").exists()  # nothing was published
    time.sleep(2)  # workers, zygote and kernels follow their parent
    if os.geteuid() == 0:
        assert left_behind() == []
    result = _grade(submissions, out)
    graded = int(re.search(r"(\d+) to grade, \d+ already graded", result.stderr)[1])
    assert graded <= 3, result.stderr
    _same_grades(out, sequential)
    assert not list(out.glob(".staging-*"))


def test_two_runs_cannot_share_an_output_folder(submissions, tmp_path):
    import fcntl

    out = tmp_path / "out"
    (out / ".work").mkdir(parents=True)
    with open(out / ".work" / "lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        result = _grade(submissions, out, check=False)
    assert result.returncode == 2
    assert "another grading run is using this folder" in result.stderr


def test_grading_into_postgresql(submissions, sequential, tmp_path):
    import sqlalchemy
    from nbgrader.api import Gradebook

    with postgres_server() as url:
        out = tmp_path / "out"
        result = _grade(submissions, out, "--db", url)
        assert "gradebook published to postgresql://grader@127.0.0.1" in result.stderr
        _same_grades(out, sequential)
        assert not (out / "course" / "gradebook.db").exists()
        assert f"c.CourseDirectory.db_url = '{url}'" in (out / "course" / "nbgrader_config.py").read_text()
        with Gradebook(url, COURSE_ID) as gradebook:
            scores = {s.student.id: s.score for s in gradebook.assignment_submissions(ASSIGNMENT)}
        lms = {row[0]: float(row[1]) for row in _table(sequential / "lms.csv") if row[0] != "student_id"}
        assert scores == lms

        # A teaching assistant grades a written answer; a new run must not silently discard it.
        engine = sqlalchemy.create_engine(url)
        with engine.begin() as connection:
            connection.execute(sqlalchemy.text("UPDATE grade SET manual_score = 1 WHERE id IN "
                                               "(SELECT id FROM grade WHERE needs_manual_grade LIMIT 1)"))
        engine.dispose()
        refused = _grade(submissions, out, "--db", url, check=False)
        assert refused.returncode == 2
        assert "holds 1 manual grade(s)" in refused.stderr
        _grade(submissions, out, "--db", url, "--replace")
        with Gradebook(url, COURSE_ID) as gradebook:
            assert {s.student.id: s.score for s in gradebook.assignment_submissions(ASSIGNMENT)} == lms


def test_grading_on_a_dask_cluster_with_two_workers(submissions, sequential, tmp_path):
    folder = tmp_path / "dask"
    folder.mkdir()
    with dask_cluster(folder, workers=2) as address:
        result = _grade(submissions, tmp_path / "out", "--scheduler", address)
    assert f"workers: 2 on the Dask cluster at {address}" in result.stderr
    _same_grades(tmp_path / "out", sequential)


def test_an_unreachable_scheduler_is_a_clear_error(submissions, tmp_path):
    from servers import free_port

    # Dask waits 30 s for a scheduler by default; its own setting shortens the wait.
    result = _grade(submissions, tmp_path / "out", "--scheduler", f"tcp://127.0.0.1:{free_port()}", check=False,
                    env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "3s"})
    assert result.returncode == 2
    assert "cannot reach the Dask scheduler" in result.stderr
