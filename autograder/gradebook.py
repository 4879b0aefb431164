"""The gradebook: nbgrader's database of students, cells and grades, read and written here only.

nbgrader keeps one SQLite file per course directory (or any SQLAlchemy database). The
grader creates it (:func:`create`), registers students and the due date, takes each
worker's rows for one student (:func:`student_rows` in the worker, :func:`merge_rows` in
the coordinator, all or nothing), reads the scores back (:func:`totals`,
:func:`cell_grades`, :func:`export_csv`), refuses to overwrite a person's manual grades
(:func:`manual_entries`) and publishes the whole book to another database in one
transaction (:func:`copy_all`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from autograder.course import COURSE_ID, CourseError, first_line

# Rows of these tables belong to one student's submission; everything else is the course's.
STUDENT_TABLES = ("submitted_assignment", "submitted_notebook", "grade", "comment")


def url(root: Path) -> str:
    """The gradebook of the course directory ``root``: SQLite, where nbgrader puts it by default."""
    return f"sqlite:///{root / 'gradebook.db'}"


def create(database: str) -> None:
    """Give the database at ``database`` nbgrader's tables, stamped with the newest migration, unless it has tables.

    nbgrader's ``Gradebook`` does the same when it opens an empty database, but it learns
    the migration's name by running the ``alembic`` command: a new Python that imports
    alembic and nbgrader again, 4.4 s on a 2-core machine, and an error when the
    environment's bin folder is not on PATH.  Here the name is read from nbgrader's own
    migration scripts, in this process; ``Gradebook`` then finds its tables and goes on.
    """
    import sqlalchemy
    from alembic.script import ScriptDirectory
    from nbgrader.api import Base
    from nbgrader.dbutil import ALEMBIC_DIR

    engine = sqlalchemy.create_engine(database)
    try:
        with engine.begin() as connection:
            if sqlalchemy.inspect(connection).get_table_names():
                return
            Base.metadata.create_all(connection)
            connection.execute(sqlalchemy.text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
            connection.execute(sqlalchemy.text("INSERT INTO alembic_version (version_num) VALUES (:head)"),
                               {"head": ScriptDirectory(ALEMBIC_DIR).get_current_head()})
    finally:
        engine.dispose()


def _read(database: str, table: str, query: Callable):
    """``query(connection)`` on the gradebook at ``database``, or ``None`` when it has no ``table`` yet;
    a database that cannot be opened or read is a ``CourseError`` that never names the password."""
    import sqlalchemy

    where = database.split("@")[-1]
    try:
        engine = sqlalchemy.create_engine(database)
    except (sqlalchemy.exc.SQLAlchemyError, ImportError) as error:
        raise CourseError(f"cannot open the gradebook at {where}: {first_line(error)}") from None
    try:
        with engine.connect() as connection:
            if table not in sqlalchemy.inspect(connection).get_table_names():
                return None
            return query(connection)
    except (sqlalchemy.exc.SQLAlchemyError, ImportError) as error:
        raise CourseError(f"cannot read the gradebook at {where}: {first_line(error)}") from None
    finally:
        engine.dispose()


def manual_entries(database: str) -> int:
    """How many grades and comments a person entered in the gradebook at ``database`` (0 if it has no tables)."""
    return _read(database, "grade", _count_manual) or 0


def _count_manual(connection) -> int:
    from sqlalchemy import text

    return connection.execute(text(
        "SELECT (SELECT count(*) FROM grade WHERE manual_score IS NOT NULL) + "
        "(SELECT count(*) FROM comment WHERE manual_comment IS NOT NULL AND manual_comment != '')")).scalar()


def refuse_manual_entries(database: str, count: int, why: str) -> None:
    """The error for a gradebook holding ``count`` grades or comments a person entered, which a run would replace."""
    if count:
        raise CourseError(
            f"{database.split('@')[-1]} holds {count} manual grade(s) or comment(s) for this course; {why}. "
            "Choose a new --out folder (and database), or pass --replace to discard them.")


def _lock_for_writing(connection) -> None:
    """Hold the gradebook's write lock from here to the commit, so that what is read next (the
    courses, the manual grades) is still true when the copy replaces it: a teaching assistant's
    grade typed in the formgrader meanwhile waits for the commit instead of being deleted."""
    from sqlalchemy import text

    if connection.dialect.name == "postgresql":  # reads go on; writes wait
        connection.execute(text("LOCK TABLE course, grade, comment IN SHARE ROW EXCLUSIVE MODE"))
    elif connection.dialect.name == "sqlite":
        # Python's sqlite3 begins the transaction at the first write, and a write takes the
        # database's one write lock, even one that deletes nothing.
        connection.execute(text("DELETE FROM grade WHERE 0 = 1"))


def other_assignments(database: str, assignment: str) -> list[str]:
    """The assignments other than ``assignment`` that the gradebook at ``database`` holds ([] if it has no tables).

    A grading run rebuilds its gradebook with one assignment: publishing it into a gradebook that
    holds another would drop that one's grades."""
    from sqlalchemy import text

    return _read(database, "assignment", lambda connection: sorted(connection.execute(
        text("SELECT name FROM assignment WHERE name != :name"), {"name": assignment}).scalars())) or []


def add_students(database: str, students: list[str]) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(database, COURSE_ID) as gradebook:
        for student in students:
            gradebook.update_or_create_student(student)


def set_duedate(database: str, assignment: str, duedate) -> None:
    """The date (UTC) from which nbgrader measures each submission's lateness."""
    from nbgrader.api import Gradebook

    with Gradebook(database, COURSE_ID) as gradebook:
        gradebook.update_or_create_assignment(assignment, duedate=duedate)


@dataclass(frozen=True)
class Total:
    """One student's automatic and manual points so far; ``handed_in`` False for a student without a submission."""

    score: float
    max_score: float
    handed_in: bool
    needs_manual_grade: bool = False


def totals(database: str, assignment: str, students: list[str]) -> dict[str, Total]:
    from nbgrader.api import Gradebook, MissingEntry

    found = {}
    with Gradebook(database, COURSE_ID) as gradebook:
        maximum = gradebook.find_assignment(assignment).max_score
        for student in students:
            try:
                record = gradebook.find_submission(assignment, student)
            except MissingEntry:
                found[student] = Total(0.0, maximum, False)
                continue
            found[student] = Total(record.score, record.max_score, True, bool(record.needs_manual_grade))
    return found


CELL_GRADE_COLUMNS = ("student_id", "assignment", "notebook", "part", "score", "max_score", "needs_manual_grade")


def cell_grades(database: str, assignment: str, students: list[str]) -> list[tuple]:
    """One row per student and graded cell (:data:`CELL_GRADE_COLUMNS`), students in the order given."""
    from nbgrader.api import Gradebook, MissingEntry

    rows = []
    with Gradebook(database, COURSE_ID) as gradebook:
        for student in students:
            try:
                record = gradebook.find_submission(assignment, student)
            except MissingEntry:
                continue
            for notebook in record.notebooks:
                for grade in sorted(notebook.grades, key=lambda g: g.name):
                    rows.append((student, assignment, notebook.name, grade.name, grade.score, grade.max_score,
                                 grade.needs_manual_grade))
    return rows


def export_csv(database: str, assignment: str, path: Path) -> None:
    """nbgrader's own CSV export of ``assignment``: one row per student."""
    from nbgrader.api import Gradebook
    from nbgrader.plugins import CsvExportPlugin

    with Gradebook(database, COURSE_ID) as gradebook:
        CsvExportPlugin(to=str(path), assignment=[assignment]).export(gradebook)


def student_rows(database: Path, student: str) -> dict[str, list[dict]]:
    """The rows of :data:`STUDENT_TABLES` in a worker's private gradebook, all of them ``student``'s.

    The course a job carries is read before any result is merged, so its gradebook has no
    submission rows, and autograde writes only this student's. A row of anyone else (a kernel
    of the weakest sandbox runs as the grader's user and could write the file) is refused with
    ``ValueError``: merged, it would change another student's grade.
    """
    import sqlalchemy
    from nbgrader.api import Base

    engine = sqlalchemy.create_engine(f"sqlite:///{database}")
    try:
        with engine.connect() as connection:
            rows = {name: [dict(row) for row in connection.execute(Base.metadata.tables[name].select()).mappings()]
                    for name in STUDENT_TABLES}
    finally:
        engine.dispose()
    assignments = {row["id"] for row in rows["submitted_assignment"] if row["student_id"] == student}
    notebooks = {row["id"] for row in rows["submitted_notebook"] if row["assignment_id"] in assignments}
    own = {"submitted_assignment": len(assignments), "submitted_notebook": len(notebooks),
           "grade": sum(row["notebook_id"] in notebooks for row in rows["grade"]),
           "comment": sum(row["notebook_id"] in notebooks for row in rows["comment"])}
    others = [name for name in STUDENT_TABLES if own[name] != len(rows[name])]
    if others:
        raise ValueError(f"the grading's gradebook holds rows of another student than {student} "
                         f"(in {', '.join(others)})")
    return rows


def merge_rows(engine, rows: dict[str, list[dict]]) -> None:
    """Add one student's rows to the gradebook behind ``engine``, all or nothing (the coordinator's job)."""
    from nbgrader.api import Base

    with engine.begin() as connection:
        for name in STUDENT_TABLES:
            if rows.get(name):
                connection.execute(Base.metadata.tables[name].insert(), rows[name])


def copy_all(source: str, target: str, *, keep_manual: bool = True) -> None:
    """Replace the gradebook at ``target`` by the one at ``source``, in one transaction (nothing half-written).

    Refuses a target that holds another course's gradebook, and (``keep_manual``) one that holds
    grades or comments a person entered, checked under the write lock that the copy then holds
    (another check before would leave a moment in which a grade typed in is lost). Errors are
    ``CourseError``s that name the target without its password.
    """
    import sqlalchemy
    from nbgrader.api import Base

    where = target.split("@")[-1]
    try:
        create(target)  # nbgrader's tables (and their migration stamp), if they are new
        reading_engine, writing_engine = sqlalchemy.create_engine(source), sqlalchemy.create_engine(target)
        try:
            with reading_engine.connect() as reading, writing_engine.begin() as writing:
                _lock_for_writing(writing)
                if keep_manual:
                    refuse_manual_entries(target, _count_manual(writing), "they were entered while this run "
                                          "graded, and publishing would replace them (nothing was published)")
                # nbgrader adds a "default_course" row to every gradebook it creates.
                courses = {row[0] for row in writing.execute(sqlalchemy.text("SELECT id FROM course"))}
                others = sorted(courses - {COURSE_ID, "default_course"})
                if others:
                    raise CourseError(f"--db {where}: it holds other courses ({', '.join(others)}); "
                                      "give each assignment of each course a database of its own")
                for table in reversed(Base.metadata.sorted_tables):
                    writing.execute(table.delete())
                for table in Base.metadata.sorted_tables:
                    rows = [dict(row) for row in reading.execute(table.select()).mappings()]
                    if rows:
                        writing.execute(table.insert(), rows)
        finally:
            reading_engine.dispose()
            writing_engine.dispose()
    except (sqlalchemy.exc.SQLAlchemyError, ImportError) as error:
        raise CourseError(f"--db {where}: {first_line(error)} (nothing was published)") from None
