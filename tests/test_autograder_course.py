"""The course directory's gradebook: created in this process the way nbgrader creates it."""
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from autograder.course import COURSE_ID, SOLUTIONS, create_gradebook, gradebook_url
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
    subprocess.run([sys.executable, "-c", script, gradebook_url(tmp_path / "nbgrader")], check=True,
                   env={"PATH": f"{bin_folder}:/usr/bin:/bin"})
    create_gradebook(gradebook_url(tmp_path / "ours"))
    assert _schema(tmp_path / "ours" / "gradebook.db") == _schema(tmp_path / "nbgrader" / "gradebook.db")
    assert _version(tmp_path / "ours" / "gradebook.db") == _version(tmp_path / "nbgrader" / "gradebook.db")
    assert len(_version(tmp_path / "ours" / "gradebook.db")) == 1


def test_a_gradebook_with_tables_is_left_as_it_is(tmp_path):
    path = tmp_path / "gradebook.db"
    create_gradebook(gradebook_url(tmp_path))
    with sqlite3.connect(path) as database:
        database.execute("INSERT INTO student (id) VALUES ('ada')")
    create_gradebook(gradebook_url(tmp_path))
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
