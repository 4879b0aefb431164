"""The real grading command on a class of known submissions, in the grader's own test course
(attention_course: chapter 4's exercise without its training part).

One class is graded once (module fixture) through ``python -m autograder grade``:
the instructor's solution, the untouched exercise, correct solutions that write
to stderr, a student with nothing handed in, and one student per classic mistake.
Every classic mistake must cost exactly the points it costs below, in its own
part, and no point anywhere else.
"""
from __future__ import annotations

import csv
import hashlib
import html
import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from chapter_grading import check_mistake, read_part_scores
from conftest import run_autograder
from autograder import jobs
from autograder.course import CourseError
from autograder.handins import write
from attention_course import COURSE_ARGS, SOURCE, exercise, solved

ASSIGNMENT, NOTEBOOK = "04-attention", "attention"
AUTO_POINTS = 17.0

# part -> its graded cells (grade ids); each part is graded on its own.
PARTS = {
    "attention": ("test_scaled_dot_product_attention_visible", "test_scaled_dot_product_attention_hidden"),
    "causal": ("test_causal_mask_visible", "test_causal_mask_hidden"),
    "padding": ("test_padding_mask_visible", "test_padding_mask_hidden"),
    "multi_head": ("test_multi_head_visible", "test_multi_head_hidden"),
    "sinusoidal": ("test_sinusoidal_visible", "test_sinusoidal_hidden"),
    "rotary": ("test_rotary_visible", "test_rotary_hidden"),
}

SDPA, MHA = "scaled_dot_product_attention", "MultiHeadSelfAttention"
# student id -> (the part it breaks, its score in that part, edits to the solution)
MISTAKES = {
    "mask-multiplied": ("attention", 0.0, {SDPA: [("scores = scores + attention_mask", "scores = scores * attention_mask")]}),
    "no-scale": ("attention", 0.0, {SDPA: [(" / math.sqrt(d_k)", "")]}),
    "scale-by-dk": ("attention", 0.0, {SDPA: [("/ math.sqrt(d_k)", "/ d_k")]}),
    "scale-by-dv": ("attention", 1.0, {SDPA: [("d_k = query.shape[-1]", "d_k = value.shape[-1]")]}),
    "scale-by-sequence-length": ("attention", 1.0, {SDPA: [("d_k = query.shape[-1]", "d_k = key.shape[-2]")]}),
    "softmax-over-queries": ("attention", 0.0, {SDPA: [("0.0), dim=-1)", "0.0), dim=-2)")]}),
    "nan-on-fully-masked": ("attention", 1.0, {SDPA: [
        ("torch.softmax(scores.masked_fill(blocked, 0.0), dim=-1)", "torch.softmax(scores, dim=-1)"),
        ("probs = probs.masked_fill(blocked, 0.0)", "pass")]}),
    # zeros in the output, NaN in the gradients: the softmax's backward pass multiplies by its NaN row
    "guard-after-the-softmax-only": ("attention", 1.0, {SDPA: [
        ("torch.softmax(scores.masked_fill(blocked, 0.0), dim=-1)", "torch.softmax(scores, dim=-1)")]}),
    "squeezed-batch": ("attention", 0.0, {SDPA: [("return probs @ value, probs",
                                                  "return (probs @ value).squeeze(0), probs.squeeze(0)")]}),
    "causal-hides-diagonal": ("causal", 0.0, {"causal_mask": [("diagonal=1", "diagonal=0")]}),
    "causal-shows-next": ("causal", 0.0, {"causal_mask": [("diagonal=1", "diagonal=2")]}),
    "padding-not-broadcastable": ("padding", 0.0, {"padding_mask": [("return mask[:, None, None, :]", "return mask")]}),
    "padding-hides-tokens": ("padding", 0.0, {"padding_mask": [("input_ids == pad_id", "input_ids != pad_id")]}),
    "heads-split-without-transpose": ("multi_head", 1.0, {MHA: [(
        "t.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)", "t.view(B, self.num_heads, T, self.head_dim)")]}),
    "heads-merged-without-transpose": ("multi_head", 1.0, {MHA: [(
        "context.transpose(1, 2).contiguous().view(B, T, E)", "context.reshape(B, T, E)")]}),
    "squeezed-length-one": ("multi_head", 1.0, {MHA: [("return self.out_proj(context), probs",
                                                       "return self.out_proj(context).squeeze(1), probs")]}),
    "sin-cos-swapped": ("sinusoidal", 0.0, {"sinusoidal_positions": [
        ("table[:, 0::2] = torch.sin(angles)", "table[:, 0::2] = torch.cos(angles)"),
        ("table[:, 1::2] = torch.cos(angles)", "table[:, 1::2] = torch.sin(angles)")]}),
    "sin-cos-halves": ("sinusoidal", 0.0, {"sinusoidal_positions": [
        ("table[:, 0::2] = torch.sin(angles)", "table[:, : dim // 2] = torch.sin(angles)"),
        ("table[:, 1::2] = torch.cos(angles)", "table[:, dim // 2 :] = torch.cos(angles)")]}),
    "frequency-exponent-i": ("sinusoidal", 1.0, {"sinusoidal_positions": [
        ("-torch.arange(0, dim, 2, dtype=torch.float64) / dim", "-torch.arange(0, dim // 2, dtype=torch.float64) / dim")]}),
    "rotary-rotates-halves": ("rotary", 0.0, {"apply_rotary": [
        ("even, odd = x[..., 0::2], x[..., 1::2]", "even, odd = x[..., : dim // 2], x[..., dim // 2 :]"),
        ("return rotated.flatten(-2)", "return torch.cat((rotated[..., 0], rotated[..., 1]), dim=-1)")]}),
    "rotary-wrong-direction": ("rotary", 0.0, {"apply_rotary": [
        ("(even * cos - odd * sin, even * sin + odd * cos)", "(even * cos + odd * sin, -even * sin + odd * cos)")]}),
    "rotary-ignores-positions": ("rotary", 0.0, {"apply_rotary": [
        ("positions.to(torch.float64)", "torch.arange(x.shape[-2], dtype=torch.float64, device=x.device)")]}),
    # angles in float32: off by about 2e-7 in float64, inside the default rtol but not the checks' 1e-8
    "rotary-angles-in-float32": ("rotary", 0.0, {"apply_rotary": [
        ("dtype=torch.float64, device=x.device)", "dtype=torch.float32, device=x.device)"),
        ("positions.to(torch.float64)", "positions.to(torch.float32)")]}),
}

# Correct solutions that write to stderr: nbgrader alone would score such test cells 0.
NOISY_EDITS = {SDPA: [("    d_k = query.shape[-1]", "    warnings.warn('a student left a warning in')\n"
                                                       "    import sys; print('debug output', file=sys.stderr)\n"
                                                       "    d_k = query.shape[-1]")]}
TORCH_WARNING_EDITS = {"sinusoidal_positions": [("return table.float()", "return torch.tensor(table).float()")]}


def _sha256_tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    submissions = tmp_path_factory.mktemp("submissions")
    out = tmp_path_factory.mktemp("graded") / "out"

    def hand_in(student, notebook):
        write(notebook, submissions / student / ASSIGNMENT, NOTEBOOK)

    hand_in("solution", solved(ASSIGNMENT, NOTEBOOK))
    hand_in("untouched", exercise())
    hand_in("noisy-stderr", solved(ASSIGNMENT, NOTEBOOK, NOISY_EDITS))
    hand_in("torch-warning", solved(ASSIGNMENT, NOTEBOOK, TORCH_WARNING_EDITS))
    for student, (_, _, edits) in MISTAKES.items():
        hand_in(student, solved(ASSIGNMENT, NOTEBOOK, edits, answers=False))
    (submissions / "absent").mkdir()  # a student folder with nothing for this assignment
    before = _sha256_tree(submissions)
    result = run_autograder("grade", ASSIGNMENT, *COURSE_ARGS, "--submissions", str(submissions), "--out", str(out))
    return {"submissions": submissions, "out": out, "result": result, "before": before}


@pytest.fixture(scope="module")
def part_scores(graded_class):
    """student -> part -> (score, max) summed over the part's cells, from parts.csv."""
    return read_part_scores(graded_class["out"], PARTS)


def test_grading_command_succeeds(graded_class):
    result = graded_class["result"]
    assert result.returncode == 0, result.stdout + result.stderr


def test_grades_csv_has_nbgrader_columns_and_one_row_per_student(graded_class):
    with open(graded_class["out"] / "grades.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name",
                             "email", "raw_score", "late_submission_penalty", "score", "max_score"]
    students = sorted(row["student_id"] for row in rows)
    expected = sorted(["solution", "untouched", "noisy-stderr", "torch-warning", "absent", *MISTAKES])
    assert students == expected
    by_student = {row["student_id"]: row for row in rows}
    assert float(by_student["solution"]["max_score"]) == AUTO_POINTS + 6
    assert float(by_student["solution"]["score"]) == AUTO_POINTS  # written answers wait for a human
    assert float(by_student["untouched"]["score"]) == 0.0
    assert float(by_student["absent"]["score"]) == 0.0


@pytest.mark.parametrize("student", ["solution", "noisy-stderr", "torch-warning"])
def test_correct_solutions_get_every_automatic_point(part_scores, student):
    assert part_scores[student] == {part: [pytest.approx(m), m] for part, (_, m) in part_scores["solution"].items()}
    assert sum(score for score, _ in part_scores[student].values()) == AUTO_POINTS


def test_untouched_exercise_scores_zero(part_scores):
    assert all(score == 0.0 for score, _ in part_scores["untouched"].values())


@pytest.mark.parametrize("student", sorted(MISTAKES))
def test_each_mistake_costs_its_own_part_and_nothing_else(part_scores, student):
    broken, expected, _ = MISTAKES[student]
    check_mistake(part_scores, student, broken, expected)


def _hidden_test_lines() -> set[str]:
    """Every distinctive line of hidden test code that a student cannot see anywhere else."""
    source = nbformat.read(SOURCE, as_version=4)
    lines, hidden = set(), False
    for cell in source.cells:
        for line in cell.source.split("\n"):
            if "### BEGIN HIDDEN TESTS" in line or "### END HIDDEN TESTS" in line:
                hidden = "BEGIN" in line
            elif hidden and len(line.strip()) > 24:
                lines.add(line.strip())
    visible = {line.strip() for cell in solved(ASSIGNMENT, NOTEBOOK).cells for line in cell.source.split("\n")}
    return lines - visible


def test_every_graded_student_gets_feedback_without_hidden_tests(graded_class):
    feedback = graded_class["out"] / "feedback"
    secret = _hidden_test_lines()
    assert len(secret) > 50
    for student in ["solution", "untouched", "noisy-stderr", *MISTAKES]:
        page = html.unescape(re.sub(r"<[^>]+>", "", (feedback / student / ASSIGNMENT / f"{NOTEBOOK}.html").read_text()))
        leaked = [line for line in secret if line in page]
        assert not leaked, f"{student}'s feedback quotes hidden tests: {leaked[:3]}"
    assert not (feedback / "absent").exists()


def test_submissions_are_never_modified(graded_class):
    assert _sha256_tree(graded_class["submissions"]) == graded_class["before"]


def test_log_names_every_student_and_the_course_opens_in_formgrader(graded_class):
    log = (graded_class["out"] / "grading.log").read_text()
    for student in ["solution", "absent", *MISTAKES]:
        assert student in log
    assert "absent: no 04-attention/ folder" in log
    course = graded_class["out"] / "course"
    assert (course / "gradebook.db").is_file() and (course / "nbgrader_config.py").is_file()
    assert not list(graded_class["out"].glob(".staging-*"))


def test_a_notebook_too_large_to_parse_is_refused_before_it_is_read(tmp_path):
    from autograder.grade import MAX_NOTEBOOK_MB, _unreadable

    huge = tmp_path / "attention.ipynb"
    with open(huge, "wb") as handle:  # a sparse file: no disk used, and never read
        handle.truncate(MAX_NOTEBOOK_MB * 2**20 + 1)
    assert _unreadable(huge) == f"64.0 MiB, more than the {MAX_NOTEBOOK_MB} MiB a notebook may have"
    fine = tmp_path / "fine.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), fine)
    assert _unreadable(fine) is None


@pytest.mark.parametrize("fields, why", [
    ({"nbformat": 4.0}, '"nbformat" is 4.0, not a whole number'),
    ({"nbformat_minor": "5"}, '"nbformat_minor" is "5", not a whole number'),
    ({"cells": "none"}, "ValidationError: The notebook is invalid and is missing an expected key: "
                         "'str' object has no attribute 'get'"),
])
def test_a_notebook_nbformat_cannot_validate_is_named_with_its_fault(tmp_path, fields, why):
    # nbformat checks the version numbers with a bare assert, whose message is empty: the whole
    # class stopped on an IndexError that named no file.
    from autograder.grade import _unreadable

    path = tmp_path / "attention.ipynb"
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [], **fields}))
    assert _unreadable(path) == f"not a valid notebook ({why})"


def test_a_hand_ins_file_is_hashed_a_block_at_a_time(tmp_path, monkeypatch):
    from autograder.grade import _sha256

    path = tmp_path / "model.pt"
    path.write_bytes(b"x" * (3 << 20))
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail("read whole"))
    assert _sha256(path) == hashlib.sha256(b"x" * (3 << 20)).hexdigest()


def _class_of_two(tmp_path):
    """A GradingRun over ada's and bea's hand-ins of the solution, as check_inputs leaves it."""
    from autograder.grade import GradingRun

    for student in ("ada", "bea"):
        write(solved(ASSIGNMENT, NOTEBOOK), tmp_path / "class" / student / ASSIGNMENT, NOTEBOOK)
    run = GradingRun(ASSIGNMENT, tmp_path / "class", tmp_path / "out")
    run.expected_notebooks = [NOTEBOOK]
    return run


def test_a_hand_in_the_grader_may_not_read_is_flagged_and_the_others_graded(tmp_path, monkeypatch):
    # Files a hand-in's owner keeps from the grader (an exchange folder's permissions) stopped the
    # whole class with a PermissionError traceback. Root reads them all: the test makes them unreadable.
    from autograder import grade

    run = _class_of_two(tmp_path)
    (run.submissions_dir / "ada" / ASSIGNMENT / "notes.txt").write_text("mine")
    refused = {run.submissions_dir / "bea" / ASSIGNMENT / f"{NOTEBOOK}.ipynb",
               run.submissions_dir / "ada" / ASSIGNMENT / "notes.txt"}
    real_read_bytes, real_sha256 = Path.read_bytes, grade._sha256

    def deny(path):
        if path in refused:
            raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(Path, "read_bytes", lambda self: deny(self) or real_read_bytes(self))
    monkeypatch.setattr(grade, "_sha256", lambda path: deny(path) or real_sha256(path))
    grade.find_submissions(run)
    ada, bea = run.submissions
    assert ada.notebooks and not ada.problems
    assert not bea.notebooks and bea.status == "missing" and bea.needs_review
    assert bea.problems == [f"{run.submissions_dir}/bea/{ASSIGNMENT}/{NOTEBOOK}.ipynb: cannot be read "
                            "(Permission denied); scored 0"]
    grade.hash_submissions(run)
    assert run.hashes[run.submissions_dir / "ada" / ASSIGNMENT / "notes.txt"] == "cannot be read (Permission denied)"
    grade.check_submissions_unchanged(run)  # an unreadable file is not taken for a changed one


def test_a_file_where_the_assignment_folder_belongs_is_flagged_for_review(tmp_path):
    from autograder.grade import find_submissions

    run = _class_of_two(tmp_path)
    (run.submissions_dir / "cy").mkdir()
    (run.submissions_dir / "cy" / ASSIGNMENT).write_bytes(b"PK\x05\x06" + bytes(18))  # a zip of it
    find_submissions(run)
    cy = run.submissions[-1]
    assert cy.student == "cy" and cy.status == "missing" and cy.needs_review
    assert cy.problems == [f"{run.submissions_dir}/cy/{ASSIGNMENT}: a file where the {ASSIGNMENT}/ folder belongs; "
                           "scored 0"]


def test_a_timestamp_nbgrader_cannot_read_is_left_out_and_flagged(tmp_path):
    # nbgrader failed the whole hand-in over it, naming neither the file nor the cause.
    from autograder.grade import find_submissions

    run = _class_of_two(tmp_path)
    (run.submissions_dir / "ada" / ASSIGNMENT / "timestamp.txt").write_text("2026-03-01 12:00:00.000000 UTC")
    (run.submissions_dir / "bea" / ASSIGNMENT / "timestamp.txt").write_text("the day before the deadline")
    find_submissions(run)
    ada, bea = run.submissions
    assert ada.timestamp is not None and not ada.problems
    assert bea.timestamp is None and bea.notebooks and bea.needs_review
    assert bea.problems == [f"{run.submissions_dir}/bea/{ASSIGNMENT}/timestamp.txt: 'the day before the deadline' "
                            "is not a date nbgrader can read; graded without it, as if handed in on time"]


def test_a_saved_result_cut_short_is_graded_again_not_a_stop_for_every_rerun(tmp_path, caplog):
    import pickle

    from autograder.grade import _saved_result

    whole = pickle.dumps(jobs.Result("ada", True, "graded"))
    (tmp_path / "good").write_bytes(whole)
    (tmp_path / "cut").write_bytes(whole[: len(whole) // 2])  # a machine that stopped while writing
    assert _saved_result(tmp_path / "good") == jobs.Result("ada", True, "graded")
    assert _saved_result(tmp_path / "cut") is None and not (tmp_path / "cut").exists()
    assert f"{tmp_path / 'cut'}: a saved result that cannot be read" in caplog.text
    assert _saved_result(tmp_path / "absent") is None


def test_grades_entered_while_a_run_grades_stop_it_before_it_publishes(tmp_path, monkeypatch):
    # The formgrader can be open on the gradebook a run will replace (the documents suggest sharing
    # a PostgreSQL one with teaching assistants); check_inputs looked only before grading.
    from types import SimpleNamespace

    from autograder import gradebook as gradebook_module
    from autograder.grade import check_no_grades_entered_meanwhile, published_gradebooks

    (tmp_path / "course").mkdir()
    (tmp_path / "course" / "gradebook.db").touch()
    run = SimpleNamespace(out=tmp_path, db="postgresql://ta@host/grades", replace=False)
    assert published_gradebooks(run) == [run.db, gradebook_module.url(tmp_path / "course")]
    entered = {run.db: 0, gradebook_module.url(tmp_path / "course"): 0}
    monkeypatch.setattr(gradebook_module, "manual_entries", entered.get)
    check_no_grades_entered_meanwhile(run)  # none yet
    entered[run.db] = 2
    with pytest.raises(CourseError, match=r"host/grades holds 2 manual grade\(s\).*entered while this run "
                                          r"graded.*nothing was published"):
        check_no_grades_entered_meanwhile(run)
    check_no_grades_entered_meanwhile(SimpleNamespace(out=tmp_path, db=run.db, replace=True))


def _results(folder, text):
    from autograder.grade import PUBLISHED

    folder.mkdir(parents=True, exist_ok=True)
    for name in PUBLISHED:
        if "." in name:
            (folder / name).write_text(text)
        else:
            (folder / name).mkdir()
            (folder / name / "inside").write_text(text)


def _held(out):
    from autograder.grade import PUBLISHED

    texts = {(out / name).read_text() if "." in name else (out / name / "inside").read_text()
             for name in PUBLISHED if (out / name).exists()}
    present = sum((out / name).exists() for name in PUBLISHED)
    return texts, present


def _stopped_after_renames(monkeypatch, renames: int, step) -> bool:
    """Run ``step`` with a KeyboardInterrupt in place of its rename number ``renames`` (counting from 0);
    True if it finished first."""
    real_rename, done = Path.rename, []

    def rename(self, target):
        if len(done) == renames:
            raise KeyboardInterrupt
        done.append(self)
        return real_rename(self, target)

    monkeypatch.setattr(Path, "rename", rename)
    try:
        step()
        return True
    except KeyboardInterrupt:
        return False
    finally:
        monkeypatch.setattr(Path, "rename", real_rename)


@pytest.mark.parametrize("earlier", [True, False])
def test_a_publish_stopped_at_any_rename_leaves_one_runs_results(tmp_path, monkeypatch, earlier):
    # Publishing swapped each file in turn: a run stopped between two left a new gradebook beside
    # an old lms.csv. Now the next run finds the journal and puts the earlier results back.
    from types import SimpleNamespace

    from autograder.grade import PUBLISHED, finish_interrupted_publish, publish

    renames = 2 * len(PUBLISHED)
    for stop_after in range(renames + 1):
        out = tmp_path / f"{stop_after}"
        if earlier:
            _results(out, "earlier")
        _results(out / ".staging-1", "new")
        finished = _stopped_after_renames(monkeypatch, stop_after,
                                          lambda: publish(SimpleNamespace(out=out, staging=out / ".staging-1")))
        finish_interrupted_publish(out)
        texts, present = _held(out)
        if finished:
            assert texts == {"new"} and present == len(PUBLISHED)
        elif earlier:
            assert texts == {"earlier"} and present == len(PUBLISHED), stop_after
        else:
            assert present == 0, stop_after
        assert not list(out.glob(".previous-*")) and not (out / ".publishing").exists()


@pytest.mark.parametrize("earlier", [True, False])
def test_a_recovery_stopped_in_its_turn_still_leaves_one_runs_results(tmp_path, monkeypatch, earlier):
    # A recovery stopped after putting some earlier results back once removed them as new ones
    # when the next run recovered again: the journal now names what was set aside.
    from types import SimpleNamespace

    from autograder.grade import PUBLISHED, finish_interrupted_publish, publish

    set_aside = len(PUBLISHED) if earlier else 0  # the renames before the new results move in
    for stop_publish in range(set_aside, set_aside + len(PUBLISHED)):  # stopped while moving in
        for stop_recovery in range(len(PUBLISHED) + 1):
            out = tmp_path / f"{stop_publish}-{stop_recovery}"
            if earlier:
                _results(out, "earlier")
            _results(out / ".staging-1", "new")
            run = SimpleNamespace(out=out, staging=out / ".staging-1")
            _stopped_after_renames(monkeypatch, stop_publish, lambda: publish(run))
            _stopped_after_renames(monkeypatch, stop_recovery, lambda: finish_interrupted_publish(out))
            finish_interrupted_publish(out)
            texts, present = _held(out)
            if earlier:
                assert texts == {"earlier"} and present == len(PUBLISHED), (stop_publish, stop_recovery)
            else:
                assert present == 0, (stop_publish, stop_recovery)
            assert not list(out.glob(".previous-*")) and not (out / ".publishing").exists()


def test_the_lms_export_leaves_a_failed_grading_empty_for_a_person_to_fill(tmp_path):
    from autograder.grade import Submission, write_lms_csv

    submissions = [Submission("ada", tmp_path, status="graded", score=17.0, max_score=20.0),
                   Submission("bob", tmp_path, status="failed", max_score=20.0),  # the sandbox failed
                   Submission("cy", tmp_path, status="missing", max_score=20.0)]  # handed nothing in
    write_lms_csv(tmp_path / "lms.csv", ASSIGNMENT, submissions, 20.0)
    with open(tmp_path / "lms.csv", newline="", encoding="utf-8") as handle:
        assert list(csv.reader(handle)) == [["student_id", f"{ASSIGNMENT} (out of 20)"], ["ada", "17"],
                                            ["bob", ""], ["cy", "0"]]


def test_the_lms_export_is_out_of_the_automatic_points_the_written_answers_left_out():
    from autograder.grade import automatic_points

    # the course's notebook: 17 points of test cells, and written answers graded by hand besides
    assert automatic_points([SOURCE]) == AUTO_POINTS


def test_a_submission_changed_during_grading_stops_the_publish(tmp_path):
    # kills GR1: check_submissions_unchanged was only ever called on unchanged files
    from autograder.grade import check_submissions_unchanged, find_submissions, hash_submissions

    run = _class_of_two(tmp_path)
    find_submissions(run)
    hash_submissions(run)
    check_submissions_unchanged(run)
    notebook = run.submissions_dir / "ada" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    notebook.write_bytes(notebook.read_bytes() + b"\n")
    with pytest.raises(CourseError, match=f"submissions changed during grading .*{notebook}"):
        check_submissions_unchanged(run)


def test_the_publish_steps_check_before_they_publish():
    # kills GR11 and GR12 (either check dropped from STEPS: both are only unit-tested)
    from autograder import grade

    steps = grade.STEPS
    for check in (grade.check_submissions_unchanged, grade.check_no_grades_entered_meanwhile):
        assert check in steps and steps.index(check) < steps.index(grade.publish_database) < steps.index(grade.publish)


def test_out_folder_and_submissions_may_not_hold_each_other_either_way(tmp_path):
    # kills GR3: only --out inside --submissions was tested
    from autograder.grade import check_apart

    for out, submissions in ((tmp_path / "class" / "graded", tmp_path / "class"),
                             (tmp_path / "out", tmp_path / "out" / "course" / "submitted")):
        with pytest.raises(CourseError, match="must not contain each other"):
            check_apart(out, submissions)
    check_apart(tmp_path / "out", tmp_path / "class")


class _Pool:
    """A pool that grades ada and fails bea (a sandbox that broke), and remembers who it was given."""

    def __init__(self):
        self.given = []

    def run(self, todo):
        for job in todo:
            self.given.append(job.student)
            yield jobs.Result(job.student, job.student == "ada", "" if job.student == "ada" else "the sandbox broke")


def _run_ready_to_grade(tmp_path, duedate=None):
    from autograder.grade import find_submissions

    if (tmp_path / "class").exists():  # a later run over the same hand-ins
        shutil.rmtree(tmp_path / "class")
        shutil.rmtree(tmp_path / "out" / ".staging-test")
    run = _class_of_two(tmp_path)
    find_submissions(run)
    run.staging = run.out / ".staging-test"
    (run.course / "reference").mkdir(parents=True)
    run.work.mkdir(parents=True, exist_ok=True)
    run.pool, run.progress, run.duedate = _Pool(), False, duedate
    return run


def test_a_failed_grading_is_not_kept_and_a_changed_due_date_grades_again(tmp_path):
    # kills GR4 (a failed result saved, so every rerun reuses the failure) and GR17 (the due date
    # left out of the key, so a rerun with a new --duedate reuses results measured from the old one)
    from autograder.grade import grade_submissions

    run = _run_ready_to_grade(tmp_path, "2026-03-01 17:00:00 UTC")
    grade_submissions(run)
    assert [(s.student, s.status) for s in run.submissions] == [("ada", "graded"), ("bea", "failed")]
    assert len(list((run.work / "results").iterdir())) == 1  # ada's only
    again = _run_ready_to_grade(tmp_path, "2026-03-01 17:00:00 UTC")
    grade_submissions(again)
    assert again.pool.given == ["bea"]  # ada's result reused, bea graded again
    later = _run_ready_to_grade(tmp_path, "2026-03-08 17:00:00 UTC")
    grade_submissions(later)
    assert sorted(later.pool.given) == ["ada", "bea"]
