"""The grading command's answers to bad input: a clear message naming the problem, nothing written."""
from __future__ import annotations

import html
import json
import sqlite3
import subprocess
import sys

import nbformat
import pytest

from conftest import autograded, course_folder, run_autograder
from autograder.handins import write
from attention_course import COURSE, COURSE_ARGS, solved


def test_unknown_assignment_is_named(tmp_path):
    (tmp_path / "class" / "ada").mkdir(parents=True)
    result = run_autograder("grade", "99-nothing", "--submissions", str(tmp_path / "class"), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "solutions/99-nothing holds no source notebooks (known assignments: " in result.stderr
    assert "04-attention" in result.stderr.split("known assignments: ")[1]
    # Any folder name nbgrader accepts is an id ("attention" is simply not there); a path is not.
    assert "solutions/attention holds no source notebooks" in run_autograder(
        "grade", "attention", "--submissions", str(tmp_path / "class"), "--out", str(tmp_path / "out")).stderr
    assert "not an assignment id" in run_autograder("grade", "../attention", "--submissions", str(tmp_path / "class"),
                                                   "--out", str(tmp_path / "out")).stderr
    assert not (tmp_path / "out").exists()  # refused before the output folder and its log are made


def test_missing_submissions_folder_is_named(tmp_path):
    result = run_autograder("grade", "04-attention", "--submissions", str(tmp_path / "nope"), "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and f"--submissions {tmp_path / 'nope'}: no such folder" in result.stderr


def test_out_inside_submissions_is_refused(tmp_path):
    (tmp_path / "class").mkdir()
    result = run_autograder("grade", "04-attention", "--submissions", str(tmp_path / "class"),
                            "--out", str(tmp_path / "class" / "graded"))
    assert result.returncode == 2 and "must not contain each other" in result.stderr
    assert list((tmp_path / "class").iterdir()) == []  # not even the output folder or its log


def test_an_out_folder_that_no_grading_run_made_is_refused_and_left_as_it_was(tmp_path):
    # An nbgrader course's root has a feedback/ folder, and an instructor may keep a grades.csv of
    # their own: publishing replaced both.
    (tmp_path / "class").mkdir()
    course_root = tmp_path / "course"
    (course_root / "feedback" / "ada").mkdir(parents=True)
    (course_root / "grades.csv").write_text("student_id,score\nada,9\n")
    grade = ("grade", "04-attention", *COURSE_ARGS, "--submissions", str(tmp_path / "class"))
    result = run_autograder(*grade, "--out", str(course_root))
    assert result.returncode == 2
    assert f"--out {course_root} holds files that no grading run wrote (feedback, grades.csv)" in result.stderr
    assert sorted(path.name for path in course_root.iterdir()) == ["feedback", "grades.csv"]  # no log, no .work
    assert (course_root / "grades.csv").read_text() == "student_id,score\nada,9\n"
    (tmp_path / "a-file").write_text("")
    assert "--out " + str(tmp_path / "a-file") + " is a file" in run_autograder(*grade, "--out", str(tmp_path / "a-file")).stderr
    # check-tests fills its --out with release/, mutants/ and graded/ alike
    checking = run_autograder("check-tests", "04-attention", *COURSE_ARGS, "--out", str(course_root))
    assert checking.returncode == 2 and "holds files that check-tests did not write" in checking.stderr
    assert sorted(path.name for path in course_root.iterdir()) == ["feedback", "grades.csv"]


def test_results_of_another_assignment_or_course_are_not_replaced_without_asking(tmp_path):
    (tmp_path / "class").mkdir()
    out = tmp_path / "out"
    (out / ".work").mkdir(parents=True)
    (out / "grades.csv").write_text("earlier\n")
    grade = ("grade", "04-attention", *COURSE_ARGS, "--submissions", str(tmp_path / "class"), "--out", str(out))
    for record in ({"assignment": "05-transformers", "course": str(COURSE.resolve())},
                   {"assignment": "04-attention", "course": "/courses/another"}):
        (out / ".work" / "published.json").write_text(json.dumps(record))
        result = run_autograder(*grade)
        assert result.returncode == 2, result.stderr
        assert (f"holds the results of {record['assignment']} of the course {record['course']}" in result.stderr
                and "--out graded/04-attention" in result.stderr and "--replace" in result.stderr)
        assert (out / "grades.csv").read_text() == "earlier\n"


def test_a_gpu_the_sandboxed_kernels_cannot_reach_is_refused_before_anything_runs(tmp_path):
    # The sandbox binds no GPU device: a device asked for would fail every graded training cell,
    # the solution's too, and full would train on one CPU thread a kernel past every limit.
    from autograder import sandbox

    if sandbox.os.geteuid() != 0 or not sandbox.can_enter_namespaces("root"):
        pytest.skip("this machine cannot make the root sandbox")
    handed_in = tmp_path / "class" / "ada" / "04-attention"
    handed_in.mkdir(parents=True)
    args = ("grade", "04-attention", "--submissions", str(tmp_path / "class"), "--out", str(tmp_path / "out"),
            "--sandbox", "root")
    result = run_autograder(*args, env={"NLPBOOK_DEVICE": "cuda:0"})
    assert result.returncode == 2, result.stderr
    assert "NLPBOOK_DEVICE=cuda:0: kernels in the root sandbox reach no GPU" in result.stderr
    result = run_autograder(*args, env={"NLPBOOK_PROFILE": "full"})
    assert result.returncode == 2 and "NLPBOOK_PROFILE=full is sized for one GPU" in result.stderr
    # without a sandbox too, where kernels run on the CPU unless told otherwise
    result = run_autograder(*args[:-2], "--sandbox", "none", env={"NLPBOOK_PROFILE": "full"})
    assert result.returncode == 2 and "kernels run on the CPU unless NLPBOOK_DEVICE names a GPU" in result.stderr
    assert not (tmp_path / "out" / "grades.csv").exists()


def test_an_empty_class_is_an_error(tmp_path):
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "notes.txt").write_text("not a student")
    result = run_autograder("grade", "04-attention", "--submissions", str(tmp_path / "class"), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "skipped, not a folder" in result.stderr and "no student folders found" in result.stderr


def test_manual_grades_are_not_replaced_without_asking(tmp_path):
    classroom, out = tmp_path / "class", tmp_path / "out"
    write(solved("04-attention", "attention"), classroom / "ada" / "04-attention", "attention")
    grade = ("grade", "04-attention", *COURSE_ARGS, "--submissions", str(classroom), "--out", str(out))
    (classroom / "bad id!").mkdir()
    (classroom / "linked").symlink_to(classroom / "ada")
    # Hand-ins in the wrong place: a misnamed notebook, a misnamed assignment folder.
    write(solved("04-attention", "attention"), classroom / "bea" / "04-attention", "attention (1)")
    write(solved("04-attention", "attention"), classroom / "cy" / "attention", "attention")
    write(solved("04-attention", "attention"), classroom, "attention")  # no student folder at all
    first = run_autograder(*grade)
    assert first.returncode == 0, first.stderr
    # what later runs compare themselves with
    assert json.loads((out / ".work" / "published.json").read_text()) == {
        "assignment": "04-attention", "course": str(COURSE.resolve())}
    assert "'bad id!' is not a usable student id" in first.stderr and "a link is not a student folder" in first.stderr
    # Folders that are not graded are in no CSV: the summary asks a person to look at them.
    assert "NEEDS REVIEW (not graded)" in first.stderr.split("slowest:")[1]
    assert "NEEDS REVIEW bea: " in first.stderr and "(the folder holds attention (1).ipynb)" in first.stderr
    assert "NEEDS REVIEW cy: no 04-attention/ folder" in first.stderr and "attention/attention.ipynb" in first.stderr
    stray = f"{classroom}/attention.ipynb: skipped, a file where a student's folder belongs"
    assert stray in first.stderr.split("slowest:")[1]
    assert "not graded: " + html.escape(stray) in (out / "report.html").read_text(encoding="utf-8")
    grades = (out / "grades.csv").read_text()
    assert grades.count("\n") == 4  # header + ada, bea and cy
    # Nothing entered by hand yet: grading again is safe, and grades nobody twice.
    second = run_autograder(*grade)
    assert second.returncode == 0 and "0 to grade, 1 already graded" in second.stderr
    assert (out / "grades.csv").read_text() == grades
    # A run publishes a gradebook of its one assignment: one that holds another is refused.
    with sqlite3.connect(out / "course" / "gradebook.db") as database:
        database.execute("INSERT INTO assignment (id, name, course_id) VALUES ('x', '05-transformers', 'nlpbook')")
    other = run_autograder(*grade)
    assert other.returncode == 2 and "holds the grades of 05-transformers" in other.stderr
    assert "--out graded/04-attention" in other.stderr and (out / "grades.csv").read_text() == grades
    with sqlite3.connect(out / "course" / "gradebook.db") as database:
        database.execute("DELETE FROM assignment WHERE id = 'x'")
        database.execute("UPDATE comment SET manual_comment = 'Well argued.' WHERE rowid = 1")
    refused = run_autograder(*grade)
    assert refused.returncode == 2 and "holds 1 manual grade(s) or comment(s)" in refused.stderr
    assert (out / "grades.csv").read_text() == grades
    # Publishing into a database instead would replace the folder's gradebook, and the comment with it.
    into_database = run_autograder(*grade, "--db", f"sqlite:///{tmp_path / 'empty.db'}")
    assert into_database.returncode == 2 and "holds 1 manual grade(s) or comment(s)" in into_database.stderr
    third = run_autograder(*grade, "--replace")
    assert third.returncode == 0 and (out / "grades.csv").read_text().count("\n") == 4
    assert nbformat.read(autograded(out, "ada", "04-attention", "attention"), as_version=4)


def test_the_grading_command_builds_no_iri_grammar_and_still_validates_notebooks():
    # A fresh Python: this one has imported jsonschema already.
    script = (
        "import sys\n"
        "from autograder import cli\n"
        "cli._skip_iri_grammar()\n"
        "import nbformat\n"
        "from nbformat.v4 import new_notebook, new_code_cell\n"
        "assert sys.modules['rfc3987_syntax'] is None\n"
        "nbformat.validate(new_notebook(cells=[new_code_cell('x = 1')]))\n"
        "broken = new_notebook(cells=[new_code_cell('x = 1')])\n"
        "broken.cells[0].outputs = [{'output_type': 'stream', 'text': 'no name'}]\n"
        "try:\n"
        "    nbformat.validate(broken)\n"
        "except nbformat.ValidationError:\n"
        "    print('rejected')\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "rejected"


# ------------------------------------------------------------ a course graded where it lives

def test_time_limits_take_the_flag_then_the_course_then_nbgrader_s_default(tmp_path, monkeypatch):
    from autograder.cli import CELL_TIMEOUT, NOTEBOOK_TIMEOUT, _parser, _time_limits
    from autograder.course import Course

    course = course_folder(tmp_path, "c.Execute.timeout = 7\n")
    plain = _parser().parse_args(["grade", "lab"])
    given = _parser().parse_args(["grade", "lab", "--timeout", "3", "--notebook-timeout", "40"])
    assert _time_limits(plain, Course.at(course)) == (7, NOTEBOOK_TIMEOUT)
    assert _time_limits(given, Course.at(course)) == (3, 40)
    assert _time_limits(plain, Course.at(course_folder(tmp_path / "other"))) == (CELL_TIMEOUT, NOTEBOOK_TIMEOUT)
    monkeypatch.setenv("NLPBOOK_PROFILE", "standard")
    assert _time_limits(plain, Course.repository()) == (600, 1800)
    # check-tests has no --notebook-timeout; its cell limit is resolved the same way.
    checking = _parser().parse_args(["check-tests", "lab", "--timeout", "5"])
    assert _time_limits(checking, Course.at(course))[0] == 5


def test_a_course_folder_s_mistakes_are_named(tmp_path):
    missing = run_autograder("grade", "lab", "--course", str(tmp_path / "nope"))
    assert missing.returncode == 2 and f"--course {tmp_path / 'nope'}: no such folder" in missing.stderr
    course = course_folder(tmp_path)
    unknown = run_autograder("grade", "ps9", "--course", str(course))
    assert unknown.returncode == 2 and f"{course / 'instructor' / 'ps9'} holds no source notebooks" in unknown.stderr
    assert "(known assignments: lab)" in unknown.stderr
    (course / "nbgrader_config.py").write_text("c = get_config()\nc.CourseDirectory.source_directory = '../x'\n")
    bad = run_autograder("grade", "lab", "--course", str(course))
    assert bad.returncode == 2 and "CourseDirectory.source_directory = '../x' is not a folder name" in bad.stderr
    (course / "nbgrader_config.py").write_text("c = get_config()\nc.CourseDirectory.root = undefined_name\n")
    broken = run_autograder("grade", "lab", "--course", str(course))
    assert broken.returncode == 2 and "nbgrader_config.py: could not be read as nbgrader reads it" in broken.stderr
    # Without a course, the submissions and the output folder must be named.
    alone = run_autograder("grade", "04-attention")
    assert alone.returncode == 2 and "give --submissions DIR and --out DIR" in alone.stderr


def test_relative_folders_are_graded_from_where_the_command_runs(tmp_path):
    course = course_folder(tmp_path)
    (course / "handins" / "ada" / "lab").mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), course / "handins" / "ada" / "lab" / "lab.ipynb")
    # Before, a relative --out reached nbgrader as a relative database path, which it could not open.
    result = subprocess.run([sys.executable, "-m", "autograder", "grade", "lab", "--course", "course", "--out", "out",
                             "--workers", "1"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "out" / "grades.csv").read_text().splitlines()[1].startswith("lab,,,ada,")


def test_check_tests_takes_grade_s_sandbox_modes_so_it_runs_where_grade_does(monkeypatch):
    # On a machine without namespaces, grade's message says "pass --sandbox none": check-tests,
    # which grades every mutant with the same grader, must accept it too.
    import autograder.mutants
    from autograder.cli import main

    seen = {}
    monkeypatch.setattr(autograder.mutants, "check_tests",
                        lambda assignment, out, **options: seen.update(options) or [])
    monkeypatch.setattr(autograder.mutants, "format_report", lambda assignment, reports: "")
    assert main(["check-tests", "04-attention", "--sandbox", "none"]) == 0
    assert seen["sandbox_mode"] == "none"
    assert main(["check-tests", "04-attention"]) == 0
    assert seen["sandbox_mode"] == "auto"


def test_a_full_disk_is_named_in_one_line_not_a_traceback(tmp_path, monkeypatch, capsys):
    from autograder import grade
    from autograder.cli import main

    (tmp_path / "class").mkdir()

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device", str(tmp_path / "out" / ".staging-1" / "grades.csv"))

    monkeypatch.setattr(grade, "grade", full)
    assert main(["grade", "04-attention", "--submissions", str(tmp_path / "class"), "--out", str(tmp_path / "out")]) == 2
    said = capsys.readouterr().err
    assert f"{tmp_path}/out/.staging-1/grades.csv: No space left on device; the command stopped." in said
    assert "--out holds those of the last complete run" in said and "Traceback" not in said
    assert "No space left on device" in (tmp_path / "out" / "grading.log").read_text()


def test_a_result_that_cannot_be_kept_for_later_runs_does_not_stop_the_class(tmp_path, monkeypatch, caplog):
    from autograder import grade
    from autograder.jobs import Result

    def full(path, data):
        path.write_bytes(data[:3])  # cut short by the full disk
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(grade, "_write_synced", full)
    grade._save_result(tmp_path / "key", Result("ada", True))
    assert list(tmp_path.iterdir()) == []  # neither the result nor the part of it that was written
    assert "could not keep the result for later runs" in caplog.text and "grades ada again" in caplog.text
