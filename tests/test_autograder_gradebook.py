"""The gradebook: created in this process the way nbgrader creates it, and read and written only
through autograder.gradebook (scores, cell grades, manual entries, a student's rows, publishing)."""
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from autograder import gradebook
from autograder.course import COURSE_ID, SOLUTIONS, CourseError
from autograder.generate import run_generate_assignment


def _schema(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as database:
        return sorted(database.execute("SELECT type, name, sql FROM sqlite_master"))


def _version(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as database:
        return database.execute("SELECT version_num FROM alembic_version").fetchall()


def test_a_new_gradebook_is_the_one_nbgrader_itself_creates(tmp_path):
    # nbgrader's own way, run in a fresh Python with the environment's bin folder on PATH
    # (it calls the `alembic` command): the reference for the tables and the migration stamp.
    script = ("import sys; from nbgrader.api import Gradebook; "
              f"Gradebook(sys.argv[1], {COURSE_ID!r}).close()")
    bin_folder = str(Path(sys.executable).parent)
    (tmp_path / "nbgrader").mkdir()
    (tmp_path / "ours").mkdir()
    subprocess.run([sys.executable, "-c", script, gradebook.url(tmp_path / "nbgrader")], check=True,
                   env={"PATH": f"{bin_folder}:/usr/bin:/bin"})
    gradebook.create(gradebook.url(tmp_path / "ours"))
    assert _schema(tmp_path / "ours" / "gradebook.db") == _schema(tmp_path / "nbgrader" / "gradebook.db")
    assert _version(tmp_path / "ours" / "gradebook.db") == _version(tmp_path / "nbgrader" / "gradebook.db")
    assert len(_version(tmp_path / "ours" / "gradebook.db")) == 1


def test_a_gradebook_with_tables_is_left_as_it_is(tmp_path):
    path = tmp_path / "gradebook.db"
    gradebook.create(gradebook.url(tmp_path))
    with sqlite3.connect(path) as database:
        database.execute("INSERT INTO student (id) VALUES ('ada')")
    gradebook.create(gradebook.url(tmp_path))
    with sqlite3.connect(path) as database:
        assert database.execute("SELECT id FROM student").fetchall() == [("ada",)]
    assert len(_version(path)) == 1


def test_registering_an_assignment_runs_no_alembic_command(tmp_path, monkeypatch):
    # Without the environment's bin folder on PATH nbgrader's own gradebook creation fails
    # ("No such file or directory: 'alembic'"); ours runs in this process.
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    shutil.copytree(SOLUTIONS / "04-attention", tmp_path / "source" / "04-attention")
    run_generate_assignment(tmp_path, "04-attention")
    assert sorted(p.name for p in (tmp_path / "release" / "04-attention").glob("*.ipynb")) == ["attention.ipynb"]
    assert len(_version(tmp_path / "gradebook.db")) == 1


@pytest.fixture
def registered(tmp_path):
    """04-attention registered by nbgrader, with one submission (ada) and one student who handed in nothing (bo)."""
    from nbgrader.api import Gradebook

    shutil.copytree(SOLUTIONS / "04-attention", tmp_path / "source" / "04-attention")
    run_generate_assignment(tmp_path, "04-attention")
    url = gradebook.url(tmp_path)
    gradebook.add_students(url, ["ada", "bo"])
    # The course as a worker receives it: registered, no submission yet (the rows' cell ids are these).
    shutil.copyfile(tmp_path / "gradebook.db", tmp_path / "before-submissions.db")
    with Gradebook(url, COURSE_ID) as book:
        book.add_submission("04-attention", "ada")
        grades = sorted(book.find_submission_notebook("attention", "04-attention", "ada").grades, key=lambda g: g.name)
        for grade in grades:
            grade.auto_score = grade.max_score if grade.name.startswith("test_causal") else 0.0
        book.db.commit()
    return tmp_path


def test_totals_and_cell_grades_read_what_nbgrader_recorded(registered):
    url = gradebook.url(registered)
    totals = gradebook.totals(url, "04-attention", ["ada", "bo"])
    assert totals["ada"] == gradebook.Total(2.0, totals["ada"].max_score, True, True)  # the causal mask's 1 + 1
    assert totals["bo"].handed_in is False and totals["bo"].max_score == totals["ada"].max_score
    rows = gradebook.cell_grades(url, "04-attention", ["ada", "bo"])
    assert {row[0] for row in rows} == {"ada"} and len(rows) == len({row[3] for row in rows})
    assert sum(row[4] or 0 for row in rows) == 2.0
    assert [row[3] for row in rows] == sorted(row[3] for row in rows)
    assert all(len(row) == len(gradebook.CELL_GRADE_COLUMNS) for row in rows)


def test_manual_entries_count_a_persons_grades_and_comments(registered, tmp_path_factory):
    from nbgrader.api import Gradebook

    url = gradebook.url(registered)
    assert gradebook.manual_entries(url) == 0
    with Gradebook(url, COURSE_ID) as book:
        grade = book.find_grade("answer_long_range", "attention", "04-attention", "ada")
        grade.manual_score = 2.5
        book.db.commit()
    assert gradebook.manual_entries(url) == 1
    empty = tmp_path_factory.mktemp("empty")
    assert gradebook.manual_entries(gradebook.url(empty)) == 0  # no tables yet
    (empty / "broken").mkdir()
    (empty / "broken" / "gradebook.db").write_text("not a database")
    with pytest.raises(CourseError, match="cannot read the gradebook"):
        gradebook.manual_entries(gradebook.url(empty / "broken"))


def test_a_students_rows_move_whole_into_another_copy_of_the_course(registered, tmp_path_factory):
    import sqlalchemy

    other = tmp_path_factory.mktemp("other")
    shutil.copyfile(registered / "before-submissions.db", other / "gradebook.db")
    rows = gradebook.student_rows(registered / "gradebook.db", "ada")
    assert set(rows) == set(gradebook.STUDENT_TABLES) and rows["grade"]
    engine = sqlalchemy.create_engine(gradebook.url(other))
    try:
        gradebook.merge_rows(engine, rows)
    finally:
        engine.dispose()
    assert (gradebook.totals(gradebook.url(other), "04-attention", ["ada"])
            == gradebook.totals(gradebook.url(registered), "04-attention", ["ada"]))


def test_a_private_gradebook_holding_another_students_rows_is_refused(registered):
    # A kernel of the weakest sandbox runs as the grader's user and can write the worker's
    # gradebook: a row for bo, merged, would be bo's grade.
    from nbgrader.api import Gradebook

    with Gradebook(gradebook.url(registered), COURSE_ID) as book:
        book.add_submission("04-attention", "bo")
    with pytest.raises(ValueError, match=r"rows of another student than ada \(in submitted_assignment, "
                                         r"submitted_notebook, grade, comment\)"):
        gradebook.student_rows(registered / "gradebook.db", "ada")


def test_publishing_copies_everything_and_refuses_another_courses_database(registered, tmp_path_factory):
    target = tmp_path_factory.mktemp("target")
    gradebook.copy_all(gradebook.url(registered), gradebook.url(target))
    assert (gradebook.cell_grades(gradebook.url(target), "04-attention", ["ada"])
            == gradebook.cell_grades(gradebook.url(registered), "04-attention", ["ada"]))
    with sqlite3.connect(target / "gradebook.db") as database:
        database.execute("INSERT INTO course (id) VALUES ('someone-else')")
    before = (target / "gradebook.db").read_bytes()
    with pytest.raises(CourseError, match=r"other courses \(someone-else\)"):
        gradebook.copy_all(gradebook.url(registered), gradebook.url(target))
    assert (target / "gradebook.db").read_bytes() == before


def test_publishing_refuses_a_grade_entered_in_the_target_and_holds_its_write_lock(registered, tmp_path_factory):
    # The grading run checks the target for manual grades before it grades and again before it
    # publishes; the copy checks a third time under its own write lock, so that a grade typed in
    # the formgrader between the last check and the copy is neither deleted nor lost.
    import sqlalchemy

    target = tmp_path_factory.mktemp("entered")
    gradebook.copy_all(gradebook.url(registered), gradebook.url(target))
    with sqlite3.connect(target / "gradebook.db") as database:
        database.execute("UPDATE grade SET manual_score = 1 WHERE id = (SELECT min(id) FROM grade)")
        database.execute("UPDATE comment SET manual_comment = '' WHERE id = (SELECT min(id) FROM comment)")
    before = (target / "gradebook.db").read_bytes()
    with pytest.raises(CourseError, match=r"entered\S* holds 1 manual grade\(s\) or comment\(s\).*"
                                          r"nothing was published.*--replace"):
        gradebook.copy_all(gradebook.url(registered), gradebook.url(target))
    assert (target / "gradebook.db").read_bytes() == before
    gradebook.copy_all(gradebook.url(registered), gradebook.url(target), keep_manual=False)  # --replace
    assert gradebook.manual_entries(gradebook.url(target)) == gradebook.manual_entries(gradebook.url(registered))

    engine = sqlalchemy.create_engine(gradebook.url(target))
    try:
        with engine.begin() as connection:
            gradebook._lock_for_writing(connection)
            with sqlite3.connect(target / "gradebook.db", timeout=0) as teaching_assistant:
                with pytest.raises(sqlite3.OperationalError, match="database is locked"):
                    teaching_assistant.execute("UPDATE grade SET manual_score = 1")
                teaching_assistant.execute("SELECT count(*) FROM grade").fetchall()  # reading goes on
    finally:
        engine.dispose()


def _rows(path: Path) -> dict[str, list[tuple]]:
    with sqlite3.connect(path) as database:
        tables = [name for (name,) in database.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {table: sorted(database.execute(f"SELECT * FROM {table}").fetchall(), key=repr) for table in tables}


def test_publishing_and_merging_keep_every_row_comments_included(registered, tmp_path_factory):
    # kills G8 (copy_all skips the comment table) and G7 (merge_rows skips it): nbgrader's comments
    # (and a person's manual ones, after --replace) vanished from the published gradebook.
    source = _rows(registered / "gradebook.db")
    assert source["comment"]
    target = tmp_path_factory.mktemp("published")
    gradebook.copy_all(gradebook.url(registered), gradebook.url(target))
    assert _rows(target / "gradebook.db") == source
    other = tmp_path_factory.mktemp("merged")
    shutil.copyfile(registered / "before-submissions.db", other / "gradebook.db")
    import sqlalchemy

    engine = sqlalchemy.create_engine(gradebook.url(other))
    try:
        gradebook.merge_rows(engine, gradebook.student_rows(registered / "gradebook.db", "ada"))
    finally:
        engine.dispose()
    merged = _rows(other / "gradebook.db")
    for table in gradebook.STUDENT_TABLES:
        assert merged[table] == source[table], table


def test_the_due_date_reaches_the_gradebook(registered):
    # kills GR13 (set_due_date returns without writing it): lateness is measured from nothing
    import datetime

    from nbgrader.api import Gradebook

    from autograder.grade import set_due_date

    url = gradebook.url(registered)
    set_due_date(SimpleNamespace(duedate="2026-03-01 17:00:00 Europe/Paris", db_url=url, assignment="04-attention"))
    with Gradebook(url, COURSE_ID) as book:
        assert book.find_assignment("04-attention").duedate == datetime.datetime(2026, 3, 1, 16, 0)
    with pytest.raises(CourseError, match="--duedate 'someday': not a date"):
        set_due_date(SimpleNamespace(duedate="someday", db_url=url, assignment="04-attention"))


def test_publishing_into_a_database_keeps_a_grade_entered_there_at_the_last_moment(registered, tmp_path_factory):
    # kills GR10 (publish_database passes keep_manual=False): a grade typed in the formgrader after
    # the last check is deleted by the copy, unless the copy itself refuses under its lock
    from autograder.grade import publish_database

    target = tmp_path_factory.mktemp("db")
    gradebook.copy_all(gradebook.url(registered), gradebook.url(target))
    with sqlite3.connect(target / "gradebook.db") as database:
        database.execute("UPDATE grade SET manual_score = 1 WHERE id = (SELECT min(id) FROM grade)")
    run = SimpleNamespace(db=gradebook.url(target), db_url=gradebook.url(registered), replace=False, course=registered)
    with pytest.raises(CourseError, match="holds 1 manual grade"):
        publish_database(run)
    assert gradebook.manual_entries(gradebook.url(target)) == 1 and (registered / "gradebook.db").exists()
