"""How strong are the hidden tests?  ``python -m autograder check-tests ASSIGNMENT [--course DIR]``.

Mutation testing for an exercise: plant one small bug in one solution cell
(:func:`mutants`), hand the result in as if a student had written it, grade
the whole set with the real grader, and count, per graded part, the bugs that
cost points.  A bug that costs nothing "survives": either the tests miss it,
or it does not change what the code computes (a human decides which).

The bugs are the ones students make:

- operator swaps: ``+``/``-``, ``*``/``/``, ``@``/``*``, comparisons, ``and``/``or``;
- off-by-one constants: an integer ``n`` becomes ``n + 1``;
- dropped calls: ``f(x)`` becomes ``x``, ``x.f()`` becomes ``x``;
- dropped statements: a statement becomes ``pass``.
"""
from __future__ import annotations

import ast
import copy
import csv
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from autograder.course import SOLUTIONS, Course, CourseError, check_own_folder
from autograder.handins import MARKERS, load, solution_sources, solved, write

SWAPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.MatMult: ast.Mult,
         ast.FloorDiv: ast.Div, ast.Pow: ast.Mult, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE,
         ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.And: ast.Or, ast.Or: ast.And,
         ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}


@dataclass
class Mutant:
    part: str  # the grade id of the solution cell it changes
    line: int  # line in that cell's solution
    kind: str
    before: str
    after: str
    source: str  # the whole mutated cell

    def describe(self) -> str:
        return f"{self.part} line {self.line}, {self.kind}: {self.before}  ->  {self.after}"


def _mutations(node: ast.AST):
    """Every (kind, replacement node) for one node of the tree."""
    if isinstance(node, ast.BinOp) and type(node.op) in SWAPS:
        yield "operator swap", ast.BinOp(node.left, SWAPS[type(node.op)](), node.right)
    if isinstance(node, ast.Compare):
        for index, op in enumerate(node.ops):
            if type(op) in SWAPS:
                ops = list(node.ops)
                ops[index] = SWAPS[type(op)]()
                yield "operator swap", ast.Compare(node.left, ops, node.comparators)
    if isinstance(node, ast.BoolOp):
        yield "operator swap", ast.BoolOp(SWAPS[type(node.op)](), node.values)
    if isinstance(node, ast.Constant) and type(node.value) is int:
        yield "off-by-one constant", ast.Constant(node.value + 1)
    if isinstance(node, ast.Call):
        if len(node.args) == 1 and not node.keywords:
            yield "dropped call", node.args[0]
        elif not node.args and not node.keywords and isinstance(node.func, ast.Attribute):
            yield "dropped call", node.func.value


class _Replace(ast.NodeTransformer):
    def __init__(self, target: ast.AST, replacement: ast.AST):
        self.target, self.replacement = target, replacement

    def visit(self, node):
        if node is self.target:
            return self.replacement
        return super().visit(node)


def _statements(tree: ast.AST):
    """Statements that can become ``pass`` without breaking the syntax: not imports, not definitions."""
    for node in ast.walk(tree):
        for body in (getattr(node, "body", None), getattr(node, "orelse", None)):
            if isinstance(body, list):
                for statement in body:
                    if not isinstance(statement, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef,
                                                  ast.Pass, ast.Expr)):
                        yield statement


def solution_lines(cell_source: str) -> set[int]:
    """The lines (1-based, markers removed) between ``### BEGIN SOLUTION`` and ``### END SOLUTION``."""
    lines, inside, number = set(), False, 0
    for line in cell_source.split("\n"):
        if line.strip() == MARKERS[0]:
            inside = True
            continue
        if line.strip() == MARKERS[1]:
            inside = False
            continue
        number += 1
        if inside:
            lines.add(number)
    return lines


def mutants(part: str, source: str, lines: set[int] | None = None) -> list[Mutant]:
    """Every single-change mutant of one solution cell (only on ``lines``, if given), without duplicates."""
    tree = ast.parse(source)
    statements = {id(statement) for statement in _statements(tree)}
    plans = []
    for index, node in enumerate(ast.walk(tree)):
        if lines is not None and getattr(node, "lineno", None) not in lines:
            continue
        plans += [(index, number, kind) for number, (kind, _) in enumerate(_mutations(node))]
        if id(node) in statements:
            plans.append((index, -1, "dropped statement"))
    found, seen = [], {ast.unparse(tree)}
    for index, number, kind in plans:
        mutated = copy.deepcopy(tree)
        target = list(ast.walk(mutated))[index]
        replacement = ast.Pass() if number < 0 else list(_mutations(target))[number][1]
        before, after = ast.unparse(target), ast.unparse(replacement)
        text = ast.unparse(ast.fix_missing_locations(_Replace(target, replacement).visit(mutated)))
        if text not in seen:
            seen.add(text)
            found.append(Mutant(part, target.lineno, kind, before.split("\n")[0][:70], after.split("\n")[0][:70],
                                text))
    return found


def planted_bugs(assignment: str, notebook: str, sources: Path = SOLUTIONS) -> dict[str, list[Mutant]]:
    """Every mutant of every solution code cell of one source notebook, by the cell's grade id."""
    solutions = solution_sources(assignment, notebook, sources)
    bugs = {}
    for cell in load(sources / assignment / f"{notebook}.ipynb").cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution"):
            part = cell.metadata["nbgrader"]["grade_id"]
            bugs[part] = mutants(part, solutions[part], solution_lines(cell.source))
    return bugs


@dataclass
class PartReport:
    part: str
    caught: list[Mutant]
    survived: list[Mutant]

    @property
    def score(self) -> float:
        total = len(self.caught) + len(self.survived)
        return len(self.caught) / total if total else 1.0


OWN_FOLDER = ".check-tests"  # an empty folder that marks an --out check-tests made, and may fill again


def _own_folder(out: Path) -> Path:
    """``out``, made and marked as check-tests' own; a ``CourseError`` for a file or for a folder that
    holds anything check-tests did not write (a course's root holds a ``release/``)."""
    check_own_folder(out, OWN_FOLDER, maker="check-tests run", unwritten="check-tests did not write",
                     replaces="it replaces release/, mutants/ and graded/ there")
    (out / OWN_FOLDER).mkdir(parents=True, exist_ok=True)
    return out


def check_tests(assignment: str, out: Path | None = None, *, workers: int | None = None, timeout: int = 30,
                limit: int | None = None, parts: list[str] | None = None, sandbox_mode: str = "auto",
                course: Course | None = None) -> list[PartReport]:
    """Grade every mutant of every solution cell of ``assignment`` of ``course`` (this repository's by
    default), or of the cells whose grade ids are in ``parts``; one report per part.  The course's
    folders are only read: the student version the mutants start from is generated afresh into
    ``out/release``.  A name in ``parts`` that no notebook's solution cell has is a ``CourseError``."""
    from autograder.generate import generate_release
    from autograder.grade import grade

    course = course or Course.repository()
    every = {path: planted_bugs(assignment, path.stem, course.sources) for path in course.source_notebooks(assignment)}
    unknown = sorted(set(parts or ()) - {part for bugs in every.values() for part in bugs})
    if unknown:
        raise CourseError(f"{assignment} has no solution cell {', '.join(map(repr, unknown))}; its parts are "
                          f"{', '.join(part for bugs in every.values() for part in bugs)}")
    out = _own_folder(Path(out or tempfile.mkdtemp(prefix=f"check-tests-{assignment}-")).absolute())
    submissions, release = out / "mutants", out / "release"
    shutil.rmtree(submissions, ignore_errors=True)  # an earlier run's mutants, which this one may not plant
    generate_release(assignment, release / assignment, course=course, warn=False)  # grade() warns
    planted: dict[str, tuple[str, Mutant | None]] = {}
    hand_in = dict(sources=course.sources, release=release)  # where solved() reads the notebooks
    for path, by_part in every.items():
        for part, bugs in by_part.items():
            if parts and part not in parts:
                continue
            for number, mutant in enumerate(bugs[:limit]):
                student = f"{path.stem}-{part}-{number:03d}".replace("_", "-")
                write(solved(assignment, path.stem, replace={part: mutant.source}, **hand_in),
                      submissions / student / assignment, path.stem)
                planted[student] = (path.stem, mutant)
        write(solved(assignment, path.stem, **hand_in), submissions / f"{path.stem}-control" / assignment, path.stem)
        planted[f"{path.stem}-control"] = (path.stem, None)
    run = grade(assignment, submissions, out / "graded", timeout=timeout, notebook_timeout=20 * timeout,
                workers=workers, sandbox_mode=sandbox_mode, replace=True, course=course)
    scores = {s.student: (s.score if s.status == "graded" else -1.0) for s in run.submissions}
    reports: dict[str, PartReport] = {}
    for student, (notebook, mutant) in planted.items():
        if mutant is None:
            if scores[student] < max(scores.values()):
                raise RuntimeError(f"the unchanged solution of {notebook} loses points: the tests are broken")
            continue
        report = reports.setdefault(mutant.part, PartReport(mutant.part, [], []))
        control = scores[f"{notebook}-control"]
        (report.caught if scores[student] < control else report.survived).append(mutant)
    _write_report(out / "check-tests.csv", reports.values())
    return list(reports.values())


def _write_report(path: Path, reports) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["part", "line", "kind", "before", "after", "caught"])
        for report in reports:
            for mutant in report.caught + report.survived:
                writer.writerow([mutant.part, mutant.line, mutant.kind, mutant.before, mutant.after,
                                 mutant in report.caught])


def format_report(assignment: str, reports: list[PartReport]) -> str:
    lines = [f"Test strength of {assignment}: bugs planted in each graded part, and how many the tests catch", ""]
    for report in reports:
        total = len(report.caught) + len(report.survived)
        lines.append(f"{report.part:32s} {len(report.caught):4d} / {total:<4d} caught  {report.score:6.1%}")
        lines += [f"    survived: {mutant.describe()}" for mutant in report.survived]
    caught = sum(len(r.caught) for r in reports)
    total = sum(len(r.caught) + len(r.survived) for r in reports)
    lines += ["", f"{'all parts':32s} {caught:4d} / {total:<4d} caught  {caught / max(total, 1):6.1%}"]
    return "\n".join(lines)
