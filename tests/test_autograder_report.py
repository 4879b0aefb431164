"""The class report, from a hand-made parts.csv and autograded notebooks (no kernel, no nbgrader run)."""
import os
import csv
from collections import Counter
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output

from autograder.grade import Submission
from autograder.preprocessors import SCRUBBED
from autograder.report import Part, failed_checks, parts, render, write_report

HIDDEN = "assert _reverse_words('a b') == 'b a'  # the secret rule"


def _test_cell(grade_id, source, outputs=()):
    cell = new_code_cell(source, outputs=list(outputs))
    cell.metadata.nbgrader = dict(grade=True, solution=False, grade_id=grade_id, points=2)
    return cell


def _error(ename, evalue):
    return new_output("error", ename=ename, evalue=evalue, traceback=[])


def _course(root: Path, autograded: dict[str, list]) -> Path:
    """course/source/hw/hw.ipynb with a hidden block, and each student's autograded copy of it."""
    source = new_notebook(cells=[_test_cell("reverse", "### BEGIN HIDDEN TESTS\n" + HIDDEN + "\n### END HIDDEN TESTS")])
    (root / "source" / "hw").mkdir(parents=True)
    nbformat.write(source, root / "source" / "hw" / "hw.ipynb")
    for student, outputs in autograded.items():
        (root / "autograded" / student / "hw").mkdir(parents=True)
        nbformat.write(new_notebook(cells=[_test_cell("reverse", "", outputs)]),
                       root / "autograded" / student / "hw" / "hw.ipynb")
    return root


def _parts_csv(path: Path, rows: list[tuple]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "notebook", "part", "score", "max_score", "needs_manual_grade"])
        writer.writerows(rows)
    return path


def test_a_histogram_puts_zero_in_the_first_bin_and_full_marks_in_the_last():
    part = Part("hw", "reverse", 5.0, scores=[0.0, 0.9, 1.0, 2.5, 4.99, 5.0, 5.0])
    assert part.histogram() == [2, 1, 1, 0, 3]
    assert Part("hw", "free", 0.0, scores=[0.0, 0.0]).histogram() == [2, 0, 0, 0, 0]  # a part worth nothing


def test_parts_keep_the_csvs_order_and_count_answers_waiting_for_a_person(tmp_path):
    found = parts(_parts_csv(tmp_path / "parts.csv", [
        ("ada", "hw", "reverse", 2, 2, False), ("ada", "hw", "essay", "", 3, True),
        ("bob", "hw", "reverse", 0, 2, False), ("bob", "hw", "essay", 1.5, 3, False),
        ("cy", "hw", "reverse", "None", 2, False)]))  # cy's score was never written: not a zero
    assert [(p.name, p.points, p.scores, p.waiting) for p in found] == [
        ("reverse", 2.0, [2.0, 0.0], 0), ("essay", 3.0, [1.5], 1)]


def test_failed_checks_count_students_by_the_checks_name_and_never_quote_a_hidden_line(tmp_path):
    course = _course(tmp_path, {
        "ada": [_error("TestFailed", "reverse('a b'): expected 'b a'\ngot 'a b'")],
        "bob": [_error("TestFailed", "reverse('a b'): expected 'b a'\nmore")],
        "cy": [_error("AssertionError", HIDDEN)],  # a bare assert: its error is named, its text not read
        "dee": [_error("TestFailed", HIDDEN)],  # a message that quotes a hidden line
        "eve": [new_output("stream", name="stdout", text="passed")]})
    assert failed_checks(course / "autograded", "hw", {HIDDEN}) == {
        ("hw", "reverse", "reverse('a b')"): 2, ("hw", "reverse", "AssertionError"): 1,
        ("hw", "reverse", SCRUBBED): 1}


def test_a_hidden_line_is_scrubbed_before_the_check_name_is_cut_from_it(tmp_path):
    # The check's name is the message up to its first ": ", at most 120 characters: cut first, a
    # hidden line with a colon or longer than that would leave a piece of itself that no longer matches.
    colon = "_expected = {'first': 1, 'second': 2}"
    long = "_cases = [" + ", ".join(f"({i}, {i * i})" for i in range(30)) + "]"
    course = _course(tmp_path, {"ada": [_error("TestFailed", colon)], "bob": [_error("TestFailed", long)]})
    assert failed_checks(course / "autograded", "hw", {colon, long}) == {("hw", "reverse", SCRUBBED): 2}


def test_the_report_escapes_what_students_chose_and_leaves_hidden_lines_out_of_warnings(tmp_path):
    course = _course(tmp_path / "course", {"ada": [_error("TestFailed", "<b>bold</b>: no")]})
    out = tmp_path / "out"
    out.mkdir()
    _parts_csv(out / "parts.csv", [("ada", "hw", "reverse", 0, 2, False)])
    submissions = [
        Submission("<script>alert(1)</script>", tmp_path, status="graded", score=0.0, max_score=2.0, seconds=3.0),
        Submission("bob", tmp_path, status="missing", max_score=2.0)]
    submissions[0].flag("its notebook was renamed")
    path = write_report(out, "hw", course, submissions, [f"a student printed {HIDDEN} in a warning"])
    page = path.read_text(encoding="utf-8")
    assert path == out / "report.html"
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;bold&lt;/b&gt;" in page and "<b>bold</b>" not in page
    assert "_reverse_words" not in page and "[a line of the hidden tests]" in page
    assert "1 of 2 students handed in; mean 0.00 of 2" in page
    assert "its notebook was renamed" in page  # flagged for review


def test_a_file_name_that_is_not_utf8_is_written_into_the_report(tmp_path):
    # os.listdir keeps the bytes of a name that is not UTF-8 as surrogates, which UTF-8 cannot write:
    # the report failed after the whole class was graded.
    course = _course(tmp_path / "course", {})
    out = tmp_path / "out"
    out.mkdir()
    _parts_csv(out / "parts.csv", [])
    name = os.fsdecode(b"\xffattention.ipynb")
    page = write_report(out, "hw", course, [], [f"{name}: skipped"]).read_text(encoding="utf-8")
    assert "\\udcffattention.ipynb: skipped" in page


def test_a_class_where_nobody_handed_in_still_gets_a_report():
    page = render("hw", [Part("hw", "reverse", 2.0)], Counter(), [Submission("ada", Path("."), status="missing")], [])
    assert "nobody handed in" in page and "No check failed." in page and "No submission was flagged." in page


def test_the_part_table_counts_full_marks_zeros_and_the_mean_of_the_scored_answers():
    # kills R1 (full marks counted with >) and R8 (the mean divided by answers still waiting for a person)
    page = render("hw", [Part("hw", "reverse", 2.0, scores=[2.0, 1.0, 0.0, 2.0]),
                         Part("hw", "essay", 3.0, scores=[3.0], waiting=1)], Counter(), [], [])
    assert "<td>reverse</td><td>2</td><td>1.25</td><td>50%</td><td>25%</td>" in page
    assert "<td>essay</td><td>3</td><td>3.00</td><td>100%</td><td>0%</td>" in page


def test_a_flagged_problem_quoting_a_students_file_name_is_escaped(tmp_path):
    # kills R3: problems quote names the student chose (misnamed notebooks, timestamp text)
    ada = Submission("ada", tmp_path, status="graded", score=0.0, max_score=2.0)
    ada.flag(f"{tmp_path}/ada/hw/hw.ipynb: missing (the folder holds <img src=x onerror=alert(1)>.ipynb); scored 0")
    page = render("hw", [], Counter(), [ada], [])
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;.ipynb" in page
