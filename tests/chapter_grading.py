"""Grading a chapter's exercise on a class of known mistakes, shared by the per-chapter tests.

A chapter test names its classic mistakes as edits to the instructor's solution
(``autograder.handins.solved``); the class is graded once by the real command,
and every mistake must cost exactly the points it is expected to cost, in its
own part, and nothing anywhere else.  A part is a solution cell together with
the graded test cells that follow it.

The parts of a notebook are graded independently (no test of one part runs the
student's code for another), so one hand-in can carry a mistake in each of
several parts: hand-in k holds the k-th mistake of every part, the k-th correct
variant and, beside them, a part handed in blank.  Every part of a packed
hand-in must score exactly what its own entry predicts (full marks where it has
none), so a mistake that leaked into another part fails the test of every entry
in that hand-in.  A chapter's class then runs its training part once per
training mistake instead of once per mistake anywhere.  A few entries
(:attr:`ChapterGrading.ALONE`) are also handed in on their own, and must score
the same there: the independence the packing relies on, shown rather than assumed.

A part that trains for long (:attr:`ChapterGrading.COSTLY`) is handed in blank in every packed
hand-in that carries none of its entries, and must score 0 there: its training then runs only
where a mistake or variant of its own is graded, not once per hand-in.  A crash at the top (the
first part handed in blank) must cost no training part a point, shown where no mistake of theirs
could hide it: packed beside a correct variant of every costly part, which must keep full marks,
or, in a chapter where some costly part has no variant, in a hand-in of its own with the costly
parts run beside it (:meth:`ChapterGrading.crash_witness`).

A part whose graded run trains the student's whole model (:attr:`ChapterGrading.WHOLE`) uses the
other parts by design, so a mistake anywhere may cost its points: its entries are handed in on
their own, each beside a solved rest, and the part is handed in blank in every other hand-in.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

from autograder.course import EXERCISES, SOLUTIONS
from autograder.execute import STOP_KEY
from autograder.handins import solved, write
from conftest import autograded, run_autograder


def parts_of(assignment: str, notebook: str) -> dict[str, tuple[str, ...]]:
    """Solution cell id -> the grade ids of the auto-graded test cells after it (up to the next part)."""
    parts: dict[str, list[str]] = {}
    current = None
    for cell in nbformat.read(SOLUTIONS / assignment / f"{notebook}.ipynb", as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":
            current = meta["grade_id"]
            parts[current] = []
        elif meta.get("grade") and cell.cell_type == "code":
            assert current is not None, f"{assignment}/{notebook}: test cell {meta['grade_id']} comes before any part"
            parts[current].append(meta["grade_id"])
    return {part: tuple(cells) for part, cells in parts.items()}


def read_part_scores(out: Path, parts: dict[str, tuple[str, ...]]) -> dict[str, dict[str, list[float]]]:
    """student -> part -> [score, max], summed over the part's graded cells, from ``out/parts.csv``."""
    part_of = {cell: part for part, cells in parts.items() for cell in cells}
    scores: dict[str, dict[str, list[float]]] = {}
    with open(out / "parts.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["part"] not in part_of:  # a written answer, graded by hand
                continue
            entry = scores.setdefault(row["student_id"], {}).setdefault(part_of[row["part"]], [0.0, 0.0])
            entry[0] += float(row["score"])
            entry[1] += float(row["max_score"])
    return scores


def blank_student(part: str) -> str:
    return f"blank-{part}"


@dataclass(frozen=True)
class Entry:
    """One thing a class hands in: a classic mistake, a part left blank, or a correct variant.

    ``expected`` is its score in ``part``; None means full marks (a correct variant).
    ``edits`` change the solution's cells (``solved``'s edits); ``replace`` swaps whole cells.
    """

    name: str
    part: str
    expected: float | None
    edits: dict = field(default_factory=dict, compare=False)
    replace: dict = field(default_factory=dict, compare=False)

    def cells(self) -> set[str]:
        return set(self.edits) | set(self.replace)


@dataclass
class HandIn:
    """A notebook handed in under ``student``, carrying ``entries`` (at most one per part, on disjoint cells)."""

    student: str
    entries: list[Entry] = field(default_factory=list)

    def takes(self, entry: Entry) -> bool:
        return all(entry.part != other.part and not entry.cells() & other.cells() for other in self.entries)

    def notebook(self, assignment: str, notebook: str) -> nbformat.NotebookNode:
        edits = {cell: changes for entry in self.entries for cell, changes in entry.edits.items()}
        replace = {cell: source for entry in self.entries for cell, source in entry.replace.items()}
        return solved(assignment, notebook, edits, replace=replace, answers=False)

    def describe(self) -> str:
        return f"{self.student} (carrying {', '.join(entry.name for entry in self.entries)})"


def stubs_of(assignment: str, notebook: str) -> dict[str, str]:
    """Solution cell id -> the exercise's stub of that cell (what a student starts from)."""
    exercise = nbformat.read(EXERCISES / assignment / f"{notebook}.ipynb", as_version=4)
    return {cell.metadata["nbgrader"]["grade_id"]: cell.source for cell in exercise.cells
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution")}


def pack(entries: list[Entry]) -> list[HandIn]:
    """As few hand-ins as there are entries in the busiest part: each entry goes into the first that takes it."""
    hand_ins: list[HandIn] = []
    for entry in entries:
        home = next((hand_in for hand_in in hand_ins if hand_in.takes(entry)), None)
        if home is None:
            home = HandIn(f"packed-{len(hand_ins) + 1:02d}")
            hand_ins.append(home)
        home.entries.append(entry)
    return hand_ins


@dataclass
class ClassScores:
    """What a graded class scored: ``parts[student][part] = [score, max]``, and which hand-in carried each entry."""

    parts: dict[str, dict[str, list[float]]]
    hand_in_of: dict[str, HandIn]  # entry name -> the packed hand-in that carried it
    alone: dict[str, HandIn]       # student id -> the entry handed in again on its own (class_hand_ins says what runs beside it)
    out: Path                      # the grading's --out folder

    def __getitem__(self, student: str) -> dict[str, list[float]]:
        return self.parts[student]


def blank_costly_parts(hand_ins: list[HandIn], costly: tuple[str, ...], stubs: dict[str, str]) -> None:
    """Hand each costly part in blank (expected 0) in every hand-in that carries no entry of it (and no
    entry whose edits reach its cell)."""
    for hand_in in hand_ins:
        for part in costly:
            blank = Entry(f"{blank_student(part)}-in-{hand_in.student}", part, 0.0, replace={part: stubs[part]})
            if hand_in.takes(blank):
                hand_in.entries.append(blank)


def class_hand_ins(entries: list[Entry], alone: tuple[str, ...], stubs: dict[str, str],
                   costly: tuple[str, ...] = (), whole: tuple[str, ...] = (),
                   live: tuple[str, ...] = (), lead: tuple[str, ...] = ()) -> tuple[list[HandIn], list[HandIn]]:
    """What a class hands in: (the hand-ins each entry is checked in, the ``alone`` entries' own).

    The entries of other parts than ``whole`` are packed, those named in ``lead`` first (so that
    they share the first hand-in where they can), with the ``costly`` and ``whole`` parts
    blank where a hand-in carries none of their entries; each entry of a ``whole`` part is a
    hand-in of its own; an ``alone`` entry is handed in again on its own, the ``costly`` and
    ``whole`` parts blank beside it (what it shows is about its own part and the cheap ones),
    except that the ``costly`` parts run beside the alone entries named in ``live``."""
    by_name = {entry.name: entry for entry in entries}
    unknown = sorted((set(alone) | set(lead)) - set(by_name))
    assert not unknown, f"ALONE or lead names entries that do not exist: {unknown}"
    ordered = [by_name[name] for name in lead] + [entry for entry in entries if entry.name not in lead]
    packed = pack([entry for entry in ordered if entry.part not in whole])
    blank_costly_parts(packed, costly + whole, stubs)
    own = [HandIn(entry.name, [entry]) for entry in entries if entry.part in whole]
    again = [HandIn(name, [by_name[name]]) for name in alone if by_name[name].part not in whole]
    for hand_in in again:
        blank_costly_parts([hand_in], whole if hand_in.student in live else costly + whole, stubs)
    return packed + own, again


def grade_class(assignment: str, notebook: str, entries: list[Entry], alone: tuple[str, ...],
                folder: Path, costly: tuple[str, ...] = (), whole: tuple[str, ...] = (),
                live: tuple[str, ...] = (), lead: tuple[str, ...] = ()) -> ClassScores:
    """Grade the solution, the untouched exercise and what ``class_hand_ins`` hands in."""
    submissions, out = folder / "submissions", folder / "out"
    write(solved(assignment, notebook), submissions / "solution" / assignment, notebook)
    write(nbformat.read(EXERCISES / assignment / f"{notebook}.ipynb", as_version=4),
          submissions / "untouched" / assignment, notebook)
    checked, again = class_hand_ins(entries, alone, stubs_of(assignment, notebook), costly, whole, live, lead)
    for hand_in in checked + again:
        write(hand_in.notebook(assignment, notebook), submissions / hand_in.student / assignment, notebook)
    # --strict: a hidden test that fails on the solution itself stops the grading (by default it is
    # graded by nbgrader's rules with a warning, and the solution graded as a student would not show it).
    result = run_autograder("grade", assignment, "--strict", "--submissions", str(submissions), "--out", str(out))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return ClassScores(parts=read_part_scores(out, parts_of(assignment, notebook)),
                       hand_in_of={entry.name: hand_in for hand_in in checked for entry in hand_in.entries},
                       alone={hand_in.student: hand_in for hand_in in again}, out=out)


def check_hand_in(scores, hand_in: HandIn) -> None:
    """Every part of ``hand_in`` scores what its entry predicts (less than the maximum for a mistake or a
    blank, full marks for a variant) and every part without an entry scores full marks."""
    got = scores[hand_in.student]
    for entry in hand_in.entries:
        assert entry.part in got, f"{entry.part} is not a part: {sorted(got)}"
    predicted = {entry.part: entry for entry in hand_in.entries}
    for part, (score, maximum) in got.items():
        entry = predicted.get(part)
        if entry is None:
            assert score == maximum, (f"{hand_in.describe()}: {part} lost points ({score} of {maximum}) "
                                      f"though no entry of this hand-in is in it")
        elif entry.expected is None:
            assert score == maximum, f"{hand_in.describe()}: {entry.name}, a correct variant, scored {score} of {maximum}"
        else:
            assert score == entry.expected and score < maximum, (
                f"{hand_in.describe()}: {entry.name} scored {score} of {maximum} in {part}, expected {entry.expected}")


def check_mistake(scores, student: str, broken: str, expected: float) -> None:
    """``student``, who handed in one mistake, scores ``expected`` in part ``broken`` and full marks elsewhere."""
    check_hand_in(scores, HandIn(student, [Entry(student, broken, expected)]))


class ChapterGrading:
    """The tests every chapter's exercise must pass, for a subclass that names its assignment and
    mistakes (``MISTAKES``: student id -> (part, expected score there, edits)).  ``conftest.py``
    parametrizes ``student`` over the subclass's mistakes."""

    ASSIGNMENT: str
    NOTEBOOK: str
    AUTO_POINTS: float
    MISTAKES: dict
    VARIANTS: dict = {}  # student id -> edits that keep the solution correct: full marks
    # Entries also handed in on their own (mistake or variant ids, or blank_student(part)).  Beside the
    # ones a chapter names, the first part handed in blank: a crash at the top must cost nothing below it.
    ALONE: tuple[str, ...] = ()
    # Parts that train for long: handed in blank in the packed hand-ins that carry none of their entries.
    COSTLY: tuple[str, ...] = ()
    # Parts whose graded run trains the student's whole model: their entries handed in on their own.
    WHOLE: tuple[str, ...] = ()

    @classmethod
    def entries(cls) -> list[Entry]:
        """Every mistake, variant and blank part, in the order they are packed."""
        stubs = stubs_of(cls.ASSIGNMENT, cls.NOTEBOOK)
        found = [Entry(name, part, expected, edits) for name, (part, expected, edits) in cls.MISTAKES.items()]
        for name, edits in cls.VARIANTS.items():
            assert len(edits) == 1, f"variant {name} edits {sorted(edits)}: a variant rewrites one part"
            found.append(Entry(name, next(iter(edits)), None, edits))
        found += [Entry(blank_student(part), part, 0.0, replace={part: stubs[part]})
                  for part in parts_of(cls.ASSIGNMENT, cls.NOTEBOOK)]
        return found

    @classmethod
    def first_part(cls) -> str:
        return next(iter(parts_of(cls.ASSIGNMENT, cls.NOTEBOOK)))

    @classmethod
    def first_blank(cls) -> str:
        return blank_student(cls.first_part())

    @classmethod
    def variants_by_part(cls) -> dict[str, list[str]]:
        """Part -> the names of its correct variants, in the order VARIANTS gives them."""
        by_part: dict[str, list[str]] = {}
        for name, edits in cls.VARIANTS.items():
            by_part.setdefault(next(iter(edits)), []).append(name)
        return by_part

    @classmethod
    def alone(cls) -> tuple[str, ...]:
        return tuple(dict.fromkeys((cls.first_blank(), *cls.ALONE)))

    @classmethod
    def crash_witness(cls) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Where a crash at the top is shown to cost no training part a point, where no mistake of
        theirs could hide it: ``(lead, live)`` for :func:`class_hand_ins`.

        Where every costly part has a correct variant, the first part's blank is packed beside one
        variant of each (they lead the packing), and they must keep full marks there: the variants
        train anyway.  Otherwise the costly parts run beside the first blank handed in alone, a
        training run more."""
        variants = cls.variants_by_part()
        if cls.COSTLY and cls.first_part() not in cls.COSTLY and all(part in variants for part in cls.COSTLY):
            return (*(variants[part][0] for part in cls.COSTLY), cls.first_blank()), ()
        return (), (cls.first_blank(),)

    @pytest.fixture(scope="class")
    @classmethod
    def scores(cls, tmp_path_factory) -> ClassScores:
        lead, live = cls.crash_witness()
        scores = grade_class(cls.ASSIGNMENT, cls.NOTEBOOK, cls.entries(), cls.alone(),
                             tmp_path_factory.mktemp(cls.ASSIGNMENT), cls.COSTLY, cls.WHOLE, live=live, lead=lead)
        together = {scores.hand_in_of[name].student for name in lead}
        assert len(together) <= 1, f"the crash at the top and the costly parts' variants were packed apart: {together}"
        return scores

    def test_a_blank_part_costs_its_own_points_and_nothing_else(self, scores):
        # One crash in an earlier part must not cost a point of a later one (the notebook promises it).
        problems = []
        for part in parts_of(self.ASSIGNMENT, self.NOTEBOOK):
            try:
                check_hand_in(scores, scores.hand_in_of[blank_student(part)])
            except AssertionError as error:
                problems.append(str(error).splitlines()[0])
        assert not problems, "\n".join(problems)

    def test_correct_variants_keep_every_point(self, scores):
        for student in self.VARIANTS:
            check_hand_in(scores, scores.hand_in_of[student])

    def test_every_part_is_also_handed_in_written_another_correct_way(self):
        # A right solution in any reasonable style must get every point: each part's hidden tests
        # are shown to admit at least one other correct form than the instructor's.
        varied = self.variants_by_part()
        missing = [part for part in parts_of(self.ASSIGNMENT, self.NOTEBOOK) if part not in varied]
        assert not missing, f"parts with no correct variant in VARIANTS: {missing}"

    def test_an_entry_handed_in_alone_scores_as_it_does_packed(self, scores):
        # The packing's premise, checked: alone, each scores its own part as predicted and full marks
        # elsewhere, and exactly what it scored beside other parts' mistakes.
        for student, hand_in in scores.alone.items():
            check_hand_in(scores, hand_in)
            entry = hand_in.entries[0]
            packed = scores.hand_in_of[student].student
            assert scores[student][entry.part] == scores[packed][entry.part], (
                f"{student} scored {scores[student][entry.part]} alone and {scores[packed][entry.part]} in {packed}")

    def test_the_solution_gets_every_automatic_point(self, scores):
        assert sorted(scores["solution"]) == sorted(parts_of(self.ASSIGNMENT, self.NOTEBOOK))
        assert all(score == maximum for score, maximum in scores["solution"].values())
        assert sum(score for score, _ in scores["solution"].values()) == self.AUTO_POINTS

    def test_the_solution_runs_without_an_error_in_any_cell(self, scores):
        # What nbval checked when it ran the solution notebooks in every test run: graded as a
        # student, the solution raises in no cell, graded or not (an optional study, a plot), and
        # no cell was stopped or had its output cut (the grader keeps no error after a cut).
        # Its instructor checks are compared in the grader's reference run, which --strict makes
        # fail on any of them (grade_class).
        graded = autograded(scores.out, "solution", self.ASSIGNMENT, self.NOTEBOOK)
        notebook = nbformat.read(graded, as_version=4)
        problems = [f"the notebook was stopped: {notebook.metadata[STOP_KEY]}"] if STOP_KEY in notebook.metadata else []
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type != "code":
                continue
            for output in cell.get("outputs", []):
                if output.output_type == "error":
                    problems.append(f"cell {index}: {output.ename}: {output.evalue}")
                elif "[output truncated" in output.get("text", ""):
                    problems.append(f"cell {index}: its output was cut")
        assert not problems, "\n".join(problems)

    def test_the_untouched_exercise_scores_zero(self, scores):
        assert all(score == 0.0 for score, _ in scores["untouched"].values())

    def test_each_mistake_costs_its_own_part_and_nothing_else(self, scores, student):
        check_hand_in(scores, scores.hand_in_of[student])
