"""An nbgrader course nobody here wrote, graded as plain nbgrader grades it.

nbgrader's own example course (``tests/nbgrader_course``: assignment ``ps1`` of two
notebooks and an image, students ``bitdiddle`` and ``hacker``) uses plain ``assert`` tests,
an assignment id that is not a chapter folder, and files shipped beside the notebooks.
``python -m autograder grade`` must give every cell the score that nbgrader 0.9.6 itself
gives, run here on the same files as the trusted reference.  The one deliberate difference
(a deleted test cell is put back) does not arise in this course.

A second, small assignment (``lab_2``) checks what the example course cannot show: the
kernel reads a data file shipped with the assignment, a failing hidden ``assert`` beside a
passing check is a failure, and the hidden test's text reaches no feedback page.
"""
from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from conftest import repository_copy

COURSE = Path(__file__).parent / "nbgrader_course"
NBGRADER = Path(sys.executable).with_name("nbgrader")


def _grade_in_place(course: Path, assignment: str, *options: str) -> subprocess.CompletedProcess:
    """``python -m autograder grade ASSIGNMENT --course COURSE``, run from a folder of neither."""
    return subprocess.run([sys.executable, "-m", "autograder", "grade", assignment, "--course", str(course),
                           "--workers", "1", *options], cwd=course.parent, capture_output=True, text=True,
                          timeout=600)


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _scores(gradebook: Path, assignment: str, students: list[str]) -> dict[tuple, float | None]:
    """Every cell's automatic score, by (student, notebook, cell), from an nbgrader gradebook."""
    from nbgrader.api import Gradebook

    scores = {}
    with Gradebook(f"sqlite:///{gradebook}") as book:
        for student in students:
            submission = book.find_submission(assignment, student)
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    scores[(student, notebook.name, grade.name)] = grade.auto_score
    return scores


def _plain_nbgrader(tmp_path: Path, assignment: str, students: list[str]) -> Path:
    """Grade an assignment of the copied course with nbgrader's own commands, unsandboxed: the reference."""
    root = tmp_path / f"plain-{assignment}"
    shutil.copytree(COURSE / "source" / assignment, root / "source" / assignment)
    for student in students:
        shutil.copytree(COURSE / "submitted" / student / assignment, root / "submitted" / student / assignment)
    settings = [f"--CourseDirectory.root={root}", "--CourseDirectory.course_id=example"]
    # One autograde for the whole class, as an instructor runs it (nbgrader grades every submitted student).
    for command in (["generate_assignment", assignment], ["autograde", assignment]):
        # nbgrader runs the `alembic` command from the environment's bin folder.
        env = {**os.environ, "PATH": f"{NBGRADER.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        result = subprocess.run([str(NBGRADER), *command, *settings, "--force"], cwd=root, capture_output=True,
                                text=True, timeout=600, env=env)
        assert result.returncode == 0, result.stderr[-3000:]
    return root / "gradebook.db"


# nbgrader's example course (its user guide), and two of the fixtures of nbgrader's own autograde
# tests: students who changed a locked or a test cell, or tried to cheat, and a test that opens a
# file shipped with the assignment.
ASSIGNMENTS = {"ps1": ["bitdiddle", "hacker"],
               "fixtures": ["bar", "eggs", "foo", "grade-cell-changed", "locked-cell-changed", "spam"],
               "relative": ["reader"], "unanswered": ["bar", "foo"], "hidden": ["foo"],
               "partial": ["carol", "dave", "erin"]}
CELLS = {"ps1": 18, "fixtures": 24, "relative": 1, "unanswered": 8, "hidden": 4, "partial": 6}  # graded cells over all students
# Two sources whose tests fail on the source itself, which nbgrader grades all the same: the
# unanswered notebook (nbgrader's autograde tests use it as the source) and one whose solution
# passes only the visible tests. The cells that fail, as the grader must name them.
FAILING_ON_SOURCE = {"unanswered": ["bar (NameError: name 'a' is not defined"],
                     "hidden": ["correct_squares (AssertionError", "correct_sum_of_squares (AssertionError"]}


@pytest.fixture(scope="module", params=sorted(ASSIGNMENTS))
def example_course(request, tmp_path_factory):
    assignment = request.param
    tmp_path = tmp_path_factory.mktemp(f"nbgrader-{assignment}")
    before = _tree(COURSE)
    # Plain nbgrader grades the same class in a folder of its own meanwhile: both run one kernel at a
    # time, so side by side they use the machine's two cores instead of one after the other. Ours
    # grades the course where it lives (its sources and submitted/ folder), writing only to --out.
    with ThreadPoolExecutor(1) as pool:
        reference = pool.submit(_plain_nbgrader, tmp_path, assignment, ASSIGNMENTS[assignment])
        result = _grade_in_place(COURSE, assignment, "--out", str(tmp_path / "out"))
        reference.exception()  # wait; a failure is raised by the test that reads the reference
    return {"assignment": assignment, "result": result, "out": tmp_path / "out", "tmp": tmp_path,
            "students": ASSIGNMENTS[assignment], "reference": reference, "unchanged": before == _tree(COURSE)}


def test_the_course_is_graded_with_its_own_assignment_ids_and_notebooks(example_course):
    result, out = example_course["result"], example_course["out"]
    assert result.returncode == 0, result.stderr[-3000:]
    log = (out / "grading.log").read_text(encoding="utf-8")
    assert f"{len(example_course['students'])} graded, 0 failed" in log
    if example_course["assignment"] == "ps1":
        # Its tests are plain asserts: the instructor is told, naming every such cell at once, when
        # the exercise is generated and again when the class is graded.
        cells = "correct_squares, squares_invalid_input, correct_sum_of_squares, sum_of_squares_uses_squares"
        assert "WEAKER GRADING in problem1.ipynb: 4 test cell(s)" in log and cells in log
        repo = repository_copy(example_course["tmp"] / "repo")
        shutil.copytree(COURSE / "source" / "ps1", repo / "solutions" / "ps1")
        generated = subprocess.run([sys.executable, "-m", "autograder", "generate", "ps1"], cwd=repo,
                                   capture_output=True, text=True, timeout=300)
        assert generated.returncode == 0, generated.stderr[-2000:]
        assert "WEAKER GRADING in ps1" in generated.stderr and f"problem1.ipynb: {cells}" in generated.stderr


def test_the_course_folder_is_graded_where_it_lives_and_left_unchanged(example_course):
    assert example_course["unchanged"]
    log = (example_course["out"] / "grading.log").read_text(encoding="utf-8")
    assert f"of the course {COURSE}: submissions {COURSE / 'submitted'}" in log


def test_tests_that_fail_on_the_source_are_graded_as_nbgrader_does_and_named_loudly(example_course):
    assignment = example_course["assignment"]
    log = (example_course["out"] / "grading.log").read_text(encoding="utf-8")
    if assignment not in FAILING_ON_SOURCE:
        assert "INSTRUCTOR TESTS FAIL" not in log
        return
    cells = FAILING_ON_SOURCE[assignment]
    warning = f"INSTRUCTOR TESTS FAIL ON THE SOLUTION in {assignment}/p1.ipynb: {len(cells)} test cell(s)"
    for where in (log, example_course["result"].stderr):
        assert warning in where and all(cell in where for cell in cells), where[-3000:]
    # Said again at the end, beside the submissions that need a look, in the same words.
    assert warning in log.rstrip().splitlines()[-1]
    strict = _grade_in_place(COURSE, assignment, "--out", str(example_course["tmp"] / "strict"), "--strict")
    assert strict.returncode == 2 and warning in strict.stderr and "--strict: nothing was graded" in strict.stderr
    assert not (example_course["tmp"] / "strict" / "grades.csv").exists()


def test_every_cell_scores_as_plain_nbgrader_scores_it(example_course):
    assignment, students = example_course["assignment"], example_course["students"]
    ours = _scores(example_course["out"] / "course" / "gradebook.db", assignment, students)
    theirs = _scores(example_course["reference"].result(), assignment, students)
    assert len(theirs) == CELLS[assignment] and ours == theirs
    if assignment == "partial":  # nbgrader's partial credit, a visible and a hidden cell's last value
        assert ours[("erin", "partial", "square_visible")] == 1.0 and ours[("dave", "partial", "square_hidden")] == 0.5


def test_the_submission_time_is_kept_and_lateness_is_measured_from_the_due_date(example_course):
    from nbgrader.api import Gradebook

    if example_course["assignment"] != "ps1":
        pytest.skip("only the example course's submissions carry a timestamp")
    with Gradebook(f"sqlite:///{example_course['out'] / 'course' / 'gradebook.db'}") as book:
        stamp = book.find_submission("ps1", "hacker").timestamp
    assert (stamp.year, stamp.month, stamp.day) == (2015, 2, 1)
    # hacker submitted at 09:28:58.749302 Los Angeles time: due at 09:00, that is 1738.749302 s late.
    out = example_course["tmp"] / "out-due"
    result = _grade_in_place(COURSE, "ps1", "--out", str(out), "--duedate", "2015-02-01 09:00:00 America/Los_Angeles")
    assert result.returncode == 0, result.stderr[-3000:]
    with Gradebook(f"sqlite:///{out / 'course' / 'gradebook.db'}") as book:
        late = {student: book.find_submission("ps1", student).total_seconds_late for student in ("hacker",)}
    assert late == {"hacker": 1738.749302}
    bad = _grade_in_place(COURSE, "ps1", "--out", str(example_course["tmp"] / "out-bad"), "--duedate", "next tuesday")
    assert bad.returncode == 2 and "--duedate 'next tuesday': not a date nbgrader reads" in bad.stderr


# ------------------------------------------------------------ a lab with a data file

def _graded_cell(source: str, grade_id: str, *, solution: bool = False, points: int = 1):
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": not solution, "solution": solution, "locked": not solution,
                                 "grade_id": grade_id, "schema_version": 3, **({} if solution else {"points": points})}
    return cell


# The hidden block as nbgrader marks it by default, and as a course marks it with delimiters of its
# own (its nbgrader_config.py's ClearHiddenTests settings), which the grader must follow alike.
HIDDEN_MARKS = {"default": ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS"), "own": ("BEGIN SECRET TESTS", "END SECRET TESTS")}


def _lab_notebook(name: str, marks: tuple[str, str] = HIDDEN_MARKS["default"]) -> nbformat.NotebookNode:
    notebook = new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                     "language": "python"}})
    notebook.cells = [
        _graded_cell("def answer():\n    ### BEGIN SOLUTION\n    return int(open('data.txt').read())\n"
                     "    ### END SOLUTION", f"{name}_answer", solution=True),
        _graded_cell("import torch\nfrom nlpbook.checks import expect_close\n"
                     "expect_close(torch.tensor(float(answer())), torch.tensor(42.0), 'answer()', atol=2)\n"
                     f"### {marks[0]}\nassert answer() % 2 == 0, 'secret-parity-rule'\n"
                     f"### {marks[1]}", f"{name}_test"),
    ]
    return notebook


@pytest.fixture(scope="module", params=sorted(HIDDEN_MARKS))
def lab(request, tmp_path_factory):
    marks = HIDDEN_MARKS[request.param]
    tmp_path = tmp_path_factory.mktemp(f"lab-{request.param}")
    # A course folder of nbgrader's layout, graded where it lives with its default --out.
    course = tmp_path / "course"
    source = course / "source" / "lab_2"
    source.mkdir(parents=True)
    (source / "data.txt").write_text("42\n")
    if request.param == "own":
        (course / "nbgrader_config.py").write_text(
            f"c = get_config()\nc.ClearHiddenTests.begin_test_delimeter = {marks[0]!r}\n"
            f"c.ClearHiddenTests.end_test_delimeter = {marks[1]!r}\n")
    for name in ("first", "second"):
        nbformat.write(_lab_notebook(name, marks), source / f"{name}.ipynb")
    submissions = course / "submitted"
    for student, value in (("reads", None), ("right", "return 42"), ("odd", "return 43")):
        (submissions / student / "lab_2").mkdir(parents=True)
        for name in ("first", "second"):
            notebook = _lab_notebook(name, marks)
            if value:
                notebook.cells[0].source = f"def answer():\n    {value}"
            nbformat.write(notebook, submissions / student / "lab_2" / f"{name}.ipynb")
    result = _grade_in_place(course, "lab_2")
    assert result.returncode == 0, result.stderr[-3000:]
    out = course / "graded" / "lab_2"
    with open(out / "grades.csv", newline="") as handle:
        grades = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}
    assert "does not follow" not in result.stderr  # the delimiters are followed, not merely named
    return {"grades": grades, "out": out}


def test_a_shipped_data_file_is_beside_every_notebook_of_the_solution_and_the_students(lab):
    assert lab["grades"]["reads"] == 2.0 and lab["grades"]["right"] == 2.0


def test_a_failing_hidden_assert_beside_a_passing_check_is_a_failure_and_is_never_quoted(lab):
    assert lab["grades"]["odd"] == 0.0  # 43 is within the check's tolerance of 42, but odd
    pages = [p.read_text(encoding="utf-8") for p in (lab["out"] / "feedback").rglob("*.html")]
    assert len(pages) == 6 and not any("secret-parity-rule" in page for page in pages)
    assert "secret-parity-rule" not in (lab["out"] / "report.html").read_text(encoding="utf-8")



def test_the_class_report_opens_in_chromium_and_quotes_no_hidden_test(example_course):
    from playwright.sync_api import sync_playwright

    from autograder.preprocessors import hidden_lines

    assignment, out = example_course["assignment"], example_course["out"]
    report = out / "report.html"
    log = (out / "grading.log").read_text(encoding="utf-8")
    assert f"class report: {report}" in log
    chromium = os.environ.get("NLPBOOK_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium,
                                             args=["--no-sandbox"] if os.geteuid() == 0 else [])
        page = browser.new_page()
        errors = []
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.goto(report.as_uri())
        text = page.inner_text("body")
        tables = page.locator("table").count()
        browser.close()
    assert errors == [] and tables >= 2 and f"{assignment}: class report" in text
    # One row per graded cell of parts.csv, and every graded student's time.
    with open(out / "parts.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            assert row["part"] in text
    for student in example_course["students"]:
        assert student in text
    if assignment in FAILING_ON_SOURCE:
        assert f"INSTRUCTOR TESTS FAIL ON THE SOLUTION in {assignment}/p1.ipynb" in text
    if assignment == "ps1":
        # bitdiddle's squares fail their asserts: named by the exception, counted once.
        assert "correct_squares\tAssertionError\t1" in text
    secrets = set().union(*(hidden_lines(nbformat.read(p, as_version=4))
                            for p in (COURSE / "source" / assignment).glob("*.ipynb")))
    assert not any(line in text for line in secrets)


def test_the_student_version_is_generated_into_the_course_as_nbgrader_generates_it(example_course):
    # `generate --course` writes the course's release/ folder (nothing else of it, never its gradebook);
    # plain nbgrader's generate_assignment, run by the fixture, is the reference for every cell.
    assignment, copy = example_course["assignment"], example_course["tmp"] / "course-copy"
    shutil.copytree(COURSE, copy)
    result = subprocess.run([sys.executable, "-m", "autograder", "generate", assignment, "--course", str(copy)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    example_course["reference"].result()
    plain = example_course["tmp"] / f"plain-{assignment}" / "release" / assignment
    ours = copy / "release" / assignment
    assert sorted(_tree(ours)) == sorted(_tree(plain))
    for path in ours.glob("*.ipynb"):
        cells = [(c.cell_type, c.source, c.metadata.get("nbgrader")) for c in nbformat.read(path, as_version=4).cells]
        assert cells == [(c.cell_type, c.source, c.metadata.get("nbgrader"))
                         for c in nbformat.read(plain / path.name, as_version=4).cells]
    shutil.rmtree(copy / "release")
    assert _tree(copy) == _tree(COURSE)


def test_check_tests_plants_bugs_in_a_course_where_it_lives(tmp_path):
    result = subprocess.run([sys.executable, "-m", "autograder", "check-tests", "partial", "--course", str(COURSE),
                             "--out", str(tmp_path / "out"), "--workers", "1", "--limit", "2"],
                            capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "square                              2 / 2    caught" in result.stdout
    assert (tmp_path / "out" / "release" / "partial" / "partial.ipynb").is_file()
    assert not (COURSE / "release").exists() and not (COURSE / "gradebook.db").exists()


OWN_DELIMITERS = """c = get_config()
c.ClearSolutions.begin_solution_delimeter = "BEGIN MY SOLUTION"
c.ClearSolutions.end_solution_delimeter = "END MY SOLUTION"
c.ClearSolutions.code_stub = {"python": "# write your answer here\\nraise NotImplementedError()"}
c.ClearHiddenTests.begin_test_delimeter = "BEGIN SECRET TESTS"
c.ClearHiddenTests.end_test_delimeter = "END SECRET TESTS"
"""


def _own_delimiters_course(root: Path) -> Path:
    """A course whose nbgrader_config.py marks solutions and hidden tests with delimiters of its own."""
    meta = lambda **grading: {"nbgrader": {"schema_version": 3, "locked": False, "points": 0,  # noqa: E731
                                           "solution": False, "grade": False, **grading}}
    notebook = new_notebook(cells=[
        new_code_cell("def square(x):\n    ### BEGIN MY SOLUTION\n    return x * x\n    ### END MY SOLUTION",
                      metadata=meta(grade_id="square", solution=True)),
        new_code_cell("assert square(2) == 4\n### BEGIN SECRET TESTS\nassert square(-3) == 9  # the secret one\n"
                      "### END SECRET TESTS", metadata=meta(grade_id="square_tests", grade=True, points=1,
                                                            locked=True)),
    ])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (root / "source" / "lab").mkdir(parents=True)
    nbformat.write(notebook, root / "source" / "lab" / "lab.ipynb")
    (root / "nbgrader_config.py").write_text(OWN_DELIMITERS)
    return root


def test_generate_follows_the_course_s_own_delimiters_and_releases_no_hidden_test(tmp_path):
    # Plain nbgrader, run in a copy of the course (it reads the nbgrader_config.py of the folder it runs
    # in), is the reference; before the grader followed these settings, its release kept the secret test.
    ours, plain = _own_delimiters_course(tmp_path / "ours"), _own_delimiters_course(tmp_path / "plain")
    env = {**os.environ, "PATH": f"{NBGRADER.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    reference = subprocess.run([str(NBGRADER), "generate_assignment", "lab", "--force"], cwd=plain,
                               capture_output=True, text=True, timeout=300, env=env)
    assert reference.returncode == 0, reference.stderr[-3000:]
    result = subprocess.run([sys.executable, "-m", "autograder", "generate", "lab", "--course", str(ours)],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    released = nbformat.read(ours / "release" / "lab" / "lab.ipynb", as_version=4)
    text = "\n".join(cell.source for cell in released.cells)
    assert "the secret one" not in text and "return x * x" not in text and "# write your answer here" in text
    expected = nbformat.read(plain / "release" / "lab" / "lab.ipynb", as_version=4)
    assert [(c.source, c.metadata.get("nbgrader")) for c in released.cells] == [
        (c.source, c.metadata.get("nbgrader")) for c in expected.cells]
    # A setting of a release step generate does not follow is named, not silently dropped.
    (ours / "nbgrader_config.py").write_text(OWN_DELIMITERS + "c.LockCells.lock_all_cells = True\n")
    warned = subprocess.run([sys.executable, "-m", "autograder", "generate", "lab", "--course", str(ours)],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert warned.returncode == 0, warned.stderr[-3000:]
    assert "sets LockCells.lock_all_cells, which generate does not follow" in warned.stderr
