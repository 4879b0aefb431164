"""Command line: ``python -m autograder {generate,collect,grade,check-tests} ...``."""
from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from pathlib import Path

from autograder.course import (CELL_TIMEOUT, FEEDBACK_OUTPUTS, NOTEBOOK_TIMEOUT, REPOSITORY_CELL_TIMEOUT,
                               REPOSITORY_NOTEBOOK_TIMEOUT, Course, CourseError, first_line)

log = logging.getLogger("autograder")


SANDBOX_MODES = ("auto", "root", "userns", "none")
SANDBOX_HELP = ("how to isolate student kernels (default: root or userns, the strongest this machine allows; "
                "'none', without namespaces, leaves the solutions readable and must be asked for by name; the "
                "gaps are logged)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    course_help = ("an nbgrader course where it lives: its source/ASSIGNMENT/ notebooks and its nbgrader_config.py "
                   "(source, release and submitted folder names{}); its gradebook is never written")
    generate = commands.add_parser(
        "generate", help="regenerate exercises/ from solutions/ (or a course's release/ from its source/) with "
                         "nbgrader generate_assignment")
    generate.add_argument("assignments", nargs="*", metavar="ASSIGNMENT",
                          help="assignment ids: folder names in solutions/ (such as 04-attention), or in the source "
                               "folder of --course (such as ps1) (default: every assignment)")
    generate.add_argument("--course", type=Path, metavar="DIR", help=course_help.format(""))

    collect = commands.add_parser("collect", help="unpack a zip of STUDENT_ID/ASSIGNMENT/FILE safely into a new folder")
    collect.add_argument("zip", type=Path, metavar="ZIP")
    collect.add_argument("--out", required=True, type=Path, metavar="DIR", help="a new folder for the submissions")
    collect.add_argument("--assignment", metavar="ASSIGNMENT",
                         help="the zip is a flat LMS download (Canvas by default): file them under STUDENT/ASSIGNMENT/")
    collect.add_argument("--pattern", metavar="REGEX", help="how LMS file names read, with named groups "
                         "student, file and optionally ext (default: Canvas's NAME_USERID_SUBMISSIONID_FILE, "
                         "filed under the USERID)")

    check = commands.add_parser(
        "check-tests", help="plant small bugs in the solution and report, per graded part, how many the tests catch")
    check.add_argument("assignment", metavar="ASSIGNMENT",
                       help="assignment id: a folder name in solutions/ (such as 04-attention), or in the source "
                            "folder of --course (such as ps1)")
    check.add_argument("--course", type=Path, metavar="DIR", help=course_help.format(""))
    check.add_argument("--out", type=Path, metavar="DIR",
                       help="keep the mutants, their grading and check-tests.csv here (default: a new temporary folder)")
    check.add_argument("--workers", type=int, default=None, metavar="N", help="parallel workers (default: cores)")
    check.add_argument("--limit", type=int, default=None, metavar="N", help="at most N bugs per part")
    check.add_argument("--part", action="append", metavar="GRADE_ID",
                       help="plant bugs only in this solution cell (repeat for several; default: every part)")
    check.add_argument("--timeout", type=int, default=None, metavar="SECONDS",
                       help="time limit per cell (default: as for grade; a training cell needs its grading time)")
    check.add_argument("--sandbox", choices=SANDBOX_MODES, default="auto", help=SANDBOX_HELP)

    grade = commands.add_parser("grade", help="grade each student's DIR/STUDENT_ID/ASSIGNMENT/ notebooks (those "
                                "named as in the assignment's source folder) with nbgrader")
    grade.add_argument("assignment", metavar="ASSIGNMENT",
                       help="assignment id: a folder name in solutions/ (such as 04-attention), or in the "
                            "source folder of --course (such as ps1)")
    grade.add_argument("--course", type=Path, metavar="DIR",
                       help=course_help.format(", cell timeout") + "; the submissions default to its submitted/ "
                            "folder, the results to DIR/graded/ASSIGNMENT")
    grade.add_argument("--submissions", type=Path, metavar="DIR",
                       help="folder with one sub-folder per student: DIR/STUDENT_ID/ASSIGNMENT/NOTEBOOK.ipynb, "
                            "each notebook named as in the source folder (required without --course)")
    grade.add_argument("--out", type=Path, metavar="DIR",
                       help="where the gradebook, grades.csv, parts.csv, feedback/ and grading.log go "
                            "(required without --course)")
    grade.add_argument("--strict", action="store_true",
                       help="refuse an assignment whose test cells fail on its own source notebook "
                            "(by default they are graded by nbgrader's rules, with a warning naming them)")
    grade.add_argument("--timeout", type=int, default=None, metavar="SECONDS",
                       help="time limit for one notebook cell (default: this book's own limit for $NLPBOOK_PROFILE, "
                            + ", ".join(f"{limit} s in {profile}" for profile, limit in REPOSITORY_CELL_TIMEOUT.items())
                            + f"; another course's Execute.timeout, else {CELL_TIMEOUT})")
    grade.add_argument("--notebook-timeout", type=int, default=None, metavar="SECONDS",
                       help="time limit for one whole notebook (default: this book's own limit for $NLPBOOK_PROFILE, "
                            + ", ".join(f"{limit} s in {profile}" for profile, limit in REPOSITORY_NOTEBOOK_TIMEOUT.items())
                            + f"; another course's {NOTEBOOK_TIMEOUT})")
    grade.add_argument("--memory-mb", type=int, default=4096, metavar="MiB",
                       help="address-space limit of each process of a student kernel (default 4096); as root, where "
                            "the machine allows memory control groups, all of a kernel's processes together may "
                            "use this much plus its 512 MiB scratch folder")
    grade.add_argument("--sandbox", choices=SANDBOX_MODES, default="auto", help=SANDBOX_HELP)
    grade.add_argument("--duedate", metavar="'YYYY-MM-DD HH:MM:SS TZ'",
                       help="the assignment's due date; nbgrader measures each submission's lateness from it, "
                            "using the timestamp.txt that nbgrader collect leaves in a submission")
    grade.add_argument("--workers", type=int, default=None, metavar="N",
                       help="students graded at the same time on this machine (default: the number of cores)")
    grade.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                       help="grade on the workers of this Dask distributed cluster instead of this machine")
    grade.add_argument("--db", metavar="URL",
                       help="publish the gradebook to this database (postgresql://USER@HOST/DB) instead of "
                            "--out/course/gradebook.db; give each assignment its own database")
    grade.add_argument("--regrade", action="store_true",
                       help="grade every student again, even those an earlier run in --out already graded")
    grade.add_argument("--replace", action="store_true",
                       help="replace a graded class that holds manual grades (they are lost)")
    grade.add_argument("--no-feedback", dest="feedback", action="store_false",
                       help="skip the students' feedback HTML (a few per cent of the time per notebook on 2 "
                            "cores where the cells train); grades are the same, and a later run without this "
                            "flag grades the class again to write it")
    grade.add_argument("--feedback-outputs", choices=FEEDBACK_OUTPUTS, default="all",
                       help="what the feedback shows of the outputs of the students' code: all of them "
                            "(nbgrader's way), or before-hidden-tests: from the first hidden test on, the "
                            "students' cells show a note and test cells their verdict alone, since code run "
                            "after a hidden test could print it in disguise (choose it when feedback reaches "
                            "students before the deadline)")
    grade.add_argument("-v", "--verbose", action="store_true", help="print nbgrader's own log too")
    return parser


def _log_to(stream_level: int, file: Path | None = None) -> None:
    root = logging.getLogger("autograder")
    root.setLevel(logging.DEBUG)
    root.handlers.clear()
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(stream_level)
    console.setFormatter(logging.Formatter("%(levelname)-7s %(message)s"))
    root.addHandler(console)
    if file is not None:
        # errors: a hand-in's file name need not be UTF-8 (Python keeps its bytes as surrogates)
        handler = logging.FileHandler(file, mode="a", encoding="utf-8", errors="backslashreplace")
        handler.setLevel(logging.DEBUG)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(message)s"))
        root.addHandler(handler)


def _skip_iri_grammar() -> None:
    """Keep jsonschema from compiling a grammar for a format that grading never checks (2.3 s a run).

    nbformat imports jsonschema, whose format checkers import ``rfc3987_syntax`` when it is
    installed (jupyter-events brings it in), and that module builds a Lark parser for IRIs as
    it is imported.  Only a validation with a format checker uses it; nbformat validates
    notebooks without one.  A ``None`` in ``sys.modules`` makes that import fail, and
    jsonschema goes on without its "iri" checker.
    """
    sys.modules.setdefault("rfc3987_syntax", None)


def _time_limits(args: argparse.Namespace, course: Course) -> tuple[int, int]:
    """The limits for one cell and for one whole notebook: each flag if given, else the course's own
    limit, else nbgrader's default (check-tests has no ``--notebook-timeout`` and uses the cell's)."""
    cell = args.timeout or course.cell_timeout or CELL_TIMEOUT
    notebook = getattr(args, "notebook_timeout", None) or course.notebook_timeout or NOTEBOOK_TIMEOUT
    return cell, notebook


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _skip_iri_grammar()
    # nbgrader's gradebook code triggers SQLAlchemy warnings on every student; they say nothing useful.
    warnings.filterwarnings("ignore", message=".*not in session.*")
    try:
        course = Course.at(args.course) if getattr(args, "course", None) is not None else Course.repository()
        if args.command == "generate":
            from autograder.generate import generate_release

            _log_to(logging.INFO)
            for assignment in args.assignments or course.assignments():
                for path in generate_release(assignment, course=course):
                    print(path)
            return 0

        if args.command == "collect":
            from autograder.collect import extract_zip

            _log_to(logging.INFO)
            from autograder.collect import CANVAS

            files = extract_zip(args.zip, args.out, args.assignment, args.pattern or CANVAS)
            log.info("%d file(s) unpacked into %s", len(files), args.out)
            return 0

        if args.command == "check-tests":
            from autograder.mutants import check_tests, format_report

            _log_to(logging.WARNING)
            reports = check_tests(args.assignment, args.out, workers=args.workers, limit=args.limit,
                                  timeout=_time_limits(args, course)[0], parts=args.part, course=course,
                                  sandbox_mode=args.sandbox)
            print(format_report(args.assignment, reports))
            return 0

        from autograder.grade import check_apart, check_out, grade, kernel_limits

        if args.course is None and (args.submissions is None or args.out is None):
            raise CourseError("grade: give --submissions DIR and --out DIR (or --course DIR, whose submitted/ "
                              "folder and DIR/graded/ASSIGNMENT are then the defaults)")
        submissions = args.submissions or course.submitted
        args.out = args.out or course.root / "graded" / args.assignment
        timeout, notebook_timeout = _time_limits(args, course)
        # Before the folder and its log are made: nothing is written for a command that cannot run.
        course.source_notebooks(args.assignment)  # a CourseError for an unknown assignment
        check_apart(args.out, submissions)
        check_out(args.out)
        args.out.mkdir(parents=True, exist_ok=True)
        _log_to(logging.DEBUG if args.verbose else logging.INFO, args.out / "grading.log")
        log.info("=== grading %s%s: submissions %s, out %s, started %s", args.assignment,
                 f" of the course {course.root}" if args.course is not None else "", submissions, args.out,
                 time.strftime("%Y-%m-%d %H:%M:%S"))
        for setting in course.unfollowed:
            log.warning("%s/nbgrader_config.py sets %s, which this grader does not follow (it grades with "
                        "its own settings for it)", course.root, setting)
        limits = kernel_limits(notebook_timeout, memory_mb=args.memory_mb)
        if args.workers is not None and args.workers < 1:
            raise CourseError(f"--workers {args.workers}: give at least 1")
        run = grade(args.assignment, submissions, args.out, timeout=timeout, course=course, strict=args.strict,
                    notebook_timeout=notebook_timeout, replace=args.replace, regrade=args.regrade,
                    sandbox_mode=args.sandbox, limits=limits, workers=args.workers, scheduler=args.scheduler,
                    db=args.db, feedback=args.feedback, duedate=args.duedate,
                    feedback_outputs=args.feedback_outputs)
        return 0 if all(s.status != "failed" for s in run.submissions) else 3
    except CourseError as error:
        log.error("%s", error)
        return 2
    except OSError as error:  # a full disk, a folder the command may not write: named, not a traceback
        where = f"{error.filename}: " if error.filename else ""
        after = (" A grading run publishes its results only once it has finished, so --out holds those of the "
                 "last complete run (one stopped while publishing is put right by the next)."
                 if args.command == "grade" else "")
        log.error("%s%s; the command stopped.%s", where, error.strerror or first_line(error), after)
        return 2
