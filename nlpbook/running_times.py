"""How long the book's pages and exercises take to run, kept as data that the chapters' opening pages
and the preface turn into their tables and sentences.

A running time is a measurement like any other the book quotes, so it comes from a record, not from
a number typed into the text.  ``nlpbook/recorded_runs/running-times.json`` holds one entry per
measured run, appended by the scripts that measure them:

- ``benchmarks/page_times.py --profile standard --record PAGE...``: pages run alone (``kind`` "page",
  ``how`` :data:`ALONE`), what the opening pages' tables show;
- ``benchmarks/book_budget.py --record``: every page in one cold build of the book (``kind`` "page",
  ``how`` :data:`IN_A_BUILD`), what the preface's `quick` columns show, and one ``kind`` "build" entry
  for the build and the no-change rebuild that follows it;
- ``benchmarks/solution_suite.py --record``: the solution notebooks under nbval (``kind`` "exercise").

An entry keeps the run's seconds and its peak memory (either may be ``null``: some runs measured
only one), the day (or, for runs transcribed from a table that gave two days, the first and last as
an ISO 8601 interval ``2026-12-06/2026-12-07``), the machine, how the run was made and where the
entry came from.  A page that is measured again gets a new entry; the tables show the latest, and
the older ones stay as the record of how much one machine's speed varies::

    chapter_times("05-transformers", {"bpe": "byte-pair merges ...", ...})  # glues, then the table
    latest("page", "05-transformers/long-context", "standard").minutes

The book builds its pages from a cache keyed by their code, so the pages that read this record are
read again whenever it changes (``_ext/running_times.py``) and run each time they are read.
"""
from __future__ import annotations

import datetime
import functools
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Iterable

from nlpbook.claims import choose_words, counted, listed
from nlpbook.record_files import read_entries, write_entries
from nlpbook.results import Table
from nlpbook.toc import chapter_pages, chapters

RECORD = Path(__file__).parent / "recorded_runs" / "running-times.json"
KINDS = ("page", "exercise", "build")
ALONE = "alone"  # a page run by itself, as the opening pages' tables say
IN_A_BUILD = "in a cold build of the book"  # the quick columns' runs, one after another in one build
# Each `standard` page is sized for this many minutes on 2 cores (the course's budget).
PAGE_BUDGET_MINUTES = 10
# The memory of a laptop the book says is enough; checked against the largest page recorded.
LAPTOP_GIB = 8
BUILD_EXTRA = ("pages", "pages_seconds", "rebuild_seconds", "rebuild_pages")


class RunningTimeError(RuntimeError):
    """The record lacks a running time a page asks for, or is not in the form written."""


@dataclass(frozen=True)
class Timing:
    """One measured run: a page (``05-transformers/bpe``), a chapter's exercise (``05-transformers``) or
    the whole book's build (``book``, with the pages' share and the no-change rebuild in ``extra``)."""

    kind: str
    name: str
    profile: str
    seconds: float | None
    peak_mib: float | None
    date: str
    machine: str
    how: str
    source: str
    extra: dict | None = None

    @property
    def minutes(self) -> float:
        if self.seconds is None:
            raise RunningTimeError(f"the {self.profile} {self.kind} run of {self.name} on {self.date} has no time")
        return self.seconds / 60

    @property
    def days(self) -> tuple[str, ...]:
        """The day of the run, or its first and last possible day."""
        return tuple(self.date.split("/"))


def timings(kind: str | None = None, name: str | None = None, profile: str | None = None, how: str | None = None,
            path: Path = RECORD) -> list[Timing]:
    """Every recorded run that matches, oldest first: by last possible day, then first possible day (a run
    known to be on 12-07 is newer than one made on 12-06 or 12-07), then place in the record."""
    found = [timing for timing in _read(path) if (kind is None or timing.kind == kind)
             and (name is None or timing.name == name) and (profile is None or timing.profile == profile)
             and (how is None or timing.how == how)]
    return sorted(found, key=lambda timing: (timing.days[-1], timing.days[0]))


def latest(kind: str, name: str, profile: str, *, how: str | None = None, measure: str = "seconds",
           path: Path = RECORD) -> Timing:
    """The newest run of ``name`` made ``how`` (any way if None) that measured ``measure`` (``seconds`` or
    ``peak_mib``); none raises, naming the record and the command that measures it."""
    found = _measuring(measure, timings(kind, name, profile, how, path))
    if not found:
        raise RunningTimeError(f"{path}: no {profile} {kind} run of {name!r}{' made ' + how if how else ''} with "
                               f"its {measure}; measure it with `python {_command(kind, name, profile, how)}`")
    return found[-1]


def _measuring(measure: str, runs: Iterable[Timing]) -> list[Timing]:
    return [run for run in runs if getattr(run, measure) is not None]


def _command(kind: str, name: str, profile: str, how: str | None) -> str:
    if kind == "page" and how != ALONE:
        return f"benchmarks/book_budget.py --record --profile {profile}"
    return {"page": f"benchmarks/page_times.py --record --profile {profile} {name}",
            "exercise": f"benchmarks/solution_suite.py --record --profile {profile} --only {name}",
            "build": f"benchmarks/book_budget.py --record --profile {profile}"}[kind]


def days_text(runs: Iterable[Timing]) -> str:
    """The days some runs were made on, for a sentence: "on 2026-12-07", "on 2026-12-06 or 2026-12-07"
    (runs transcribed with two possible days), "between 2026-11-24 and 2026-12-07"."""
    runs = list(runs)
    if not runs:
        raise RunningTimeError("no runs, so no days")
    dates = {run.date for run in runs}
    if len(dates) == 1:
        return "on " + " or ".join(runs[0].days)
    days = sorted({day for run in runs for day in run.days})
    return f"between {days[0]} and {days[-1]}"


def where_text(runs: Iterable[Timing]) -> str:
    """When and on what some runs were made, for a sentence: "on 2026-12-07 on one machine (AMD EPYC, 2
    cores, ...)"."""
    runs = list(runs)
    names = list(dict.fromkeys(run.machine for run in runs))
    count = "one machine" if len(names) == 1 else f"{len(names)} machines"
    return f"{days_text(runs)} on {count} ({'; '.join(names)})"


def chapter_runs(chapter: str, profile: str, how: str, *, measure: str = "seconds",
                 path: Path = RECORD) -> list[Timing]:
    """The latest run of each of the chapter's pages in ``profile``, made ``how``, that measured ``measure``."""
    return [latest("page", page, profile, how=how, measure=measure, path=path) for page in chapter_pages(chapter)]


def book_runs(profile: str, how: str, *, measure: str = "seconds", path: Path = RECORD) -> list[Timing]:
    """:func:`chapter_runs` of every chapter, in the book's order."""
    return [run for chapter in chapters() for run in chapter_runs(chapter, profile, how, measure=measure, path=path)]


def chapter_table(chapter: str, descriptions: dict[str, str], path: Path = RECORD) -> Table:
    """The opening page's table: each page of the chapter, what it runs (``descriptions``, by the page's
    stem) and its minutes in `standard`, from its latest run alone.  ``descriptions`` must describe
    exactly the chapter's pages."""
    runs = chapter_runs(chapter, "standard", ALONE, path=path)
    stems = [run.name.split("/")[1] for run in runs]
    if set(descriptions) != set(stems):
        raise RunningTimeError(f"book/{chapter}/index.md describes {sorted(descriptions)}, but the chapter's pages "
                               f"are {stems}: describe each page once")
    table = Table(["page", "what it runs", "minutes"], {"minutes": ".1f"})
    for run, stem in zip(runs, stems):
        table.add(f"{{doc}}`{stem}`", descriptions[stem], run.minutes)
    return table


def chapter_summary(chapter: str, path: Path = RECORD) -> dict[str, str]:
    """What the opening page's sentence on running times glues: when and where its pages' `standard`
    times were measured (``standard_when``) and how long its slowest page takes in `quick` (``quick_words``)."""
    quick = chapter_runs(chapter, "quick", IN_A_BUILD, path=path)
    return {"standard_when": where_text(chapter_runs(chapter, "standard", ALONE, path=path)),
            "quick_words": longest_words(max(run.seconds for run in quick))}


def chapter_times(chapter: str, descriptions: dict[str, str], path: Path = RECORD) -> Table:
    """An opening page's running times: glue :func:`chapter_summary` for its sentence, return its table."""
    from myst_nb import glue

    for name, text in chapter_summary(chapter, path).items():
        glue(name, text, display=False)
    return chapter_table(chapter, descriptions, path)


def longest_words(seconds: float) -> str:
    """How long the slowest of some pages took, for "the `quick` profile runs every page ...": "in under a
    minute", "in about a minute" (up to 75 s), then "in under N minutes"."""
    if seconds < 60:
        return "in under a minute"
    if seconds <= 75:
        return "in about a minute"
    return f"in under {int(seconds // 60) + 1} minutes"


def slowest_spread(path: Path = RECORD) -> tuple[Timing, Timing]:
    """The page whose `standard` runs alone on one machine differ the most: its fastest and its slowest."""
    groups: dict[tuple[str, str], list[Timing]] = {}
    for run in _measuring("seconds", timings("page", profile="standard", how=ALONE, path=path)):
        groups.setdefault((run.name, run.machine), []).append(run)
    pairs = [(min(runs, key=lambda run: run.seconds), max(runs, key=lambda run: run.seconds))
             for runs in groups.values() if len(runs) > 1]
    if not pairs:
        raise RunningTimeError(f"{path}: no page was timed alone twice on one machine in standard")
    return max(pairs, key=lambda pair: pair[1].seconds / pair[0].seconds)


def preface_table(path: Path = RECORD) -> Table:
    """The preface's table: per chapter, its pages in `quick` (minutes and the largest memory, from their
    latest cold build), in `standard` (the sum of the opening page's table), its solution notebook in
    `standard` (seconds and memory) and the pages recorded in `full` on a GPU (``nlpbook.recorded``)."""
    from nlpbook.recorded import full_profile_runs

    gpu_runs = full_profile_runs()
    table = Table(["chapter", "pages, `quick`", "memory, `quick`", "pages, `standard`", "exercise, `standard`",
                   "memory, exercise", "pages run in `full`, one GPU"])
    for chapter in chapters():
        quick = sum(run.minutes for run in chapter_runs(chapter, "quick", IN_A_BUILD, path=path))
        quick_mib = max(run.peak_mib for run in chapter_runs(chapter, "quick", IN_A_BUILD, measure="peak_mib",
                                                             path=path))
        standard = sum(run.minutes for run in chapter_runs(chapter, "standard", ALONE, path=path))
        exercise = latest("exercise", chapter, "standard", path=path)
        exercise_mib = latest("exercise", chapter, "standard", measure="peak_mib", path=path)
        mine = [run for run in gpu_runs if run.page.startswith(chapter + "/")]
        gpu = (f"{counted(len(mine), 'page')}, {sum(run.seconds for run in mine) / 60:.1f} min" if mine
               else "not run")
        table.add(f"{{doc}}`{chapter}/index`", f"{quick:.1f} min", f"{quick_mib:,.0f} MiB", f"{standard:.1f} min",
                  f"{exercise.seconds:.0f} s", f"{exercise_mib.peak_mib:,.0f} MiB", gpu)
    return table


def preface_summary(path: Path = RECORD) -> dict[str, object]:
    """What the preface's sentences around its table glue, from the same runs as :func:`preface_table`."""
    standard = book_runs("standard", ALONE, path=path)
    quick = book_runs("quick", IN_A_BUILD, path=path)
    quick_mib = book_runs("quick", IN_A_BUILD, measure="peak_mib", path=path)
    exercises = [latest("exercise", chapter, "standard", path=path) for chapter in chapters()]
    build = latest("build", "book", "quick", path=path)
    over = [run for run in standard if run.minutes > PAGE_BUDGET_MINUTES]
    fast, slow = slowest_spread(path)
    # The largest needs: each page's latest standard run that measured memory, however it ran (not every
    # page has one).
    measured = [_measuring("peak_mib", timings("page", run.name, "standard", path=path)) for run in standard]
    standard_mib = sorted((runs[-1] for runs in measured if runs), key=lambda run: -run.peak_mib)
    if not standard_mib:
        raise RunningTimeError(f"{path}: no standard run of any page measured its memory")
    largest_quick = max(quick_mib, key=lambda run: run.peak_mib)
    largest_gib = max(run.peak_mib for run in standard_mib + quick_mib) / 1024
    rebuilt = build.extra["rebuild_pages"]
    return {
        "quick_where": where_text(quick + [build]),
        "exercise_where": where_text(exercises),
        "standard_where": where_text(standard),
        "standard_total": sum(run.minutes for run in standard),
        "page_budget": PAGE_BUDGET_MINUTES,
        "over_budget": (f"In those runs {_count_words(len(over))} took longer: "
                        + listed(f"{_page_words(run.name)} ({run.minutes:.1f} minutes)" for run in over)
                        if over else "In those runs every page took less"),
        "spread": (f"{_page_words(fast.name)} took {fast.minutes:.1f} minutes in one run and {slow.minutes:.1f} in "
                   f"another, {days_text([fast, slow])}"),
        "standard_memory": (choose_words(len(standard_mib) > 1, "are ", "is ")
                            + listed(f"{_page_words(run.name)} ({run.peak_mib / 1024:.1f} GiB, {run.date})"
                                     for run in standard_mib[:4])),
        "largest_quick": f"{_page_words(largest_quick.name)} ({largest_quick.peak_mib / 1024:.1f} GiB)",
        "laptop": choose_words(largest_gib < LAPTOP_GIB / 2, f"so a laptop with {LAPTOP_GIB} GiB is enough",
                               f"so a laptop needs more than {LAPTOP_GIB} GiB"),
        "exercise_seconds": sum(run.seconds for run in exercises),
        "build_seconds": build.seconds,
        "build_pages": build.extra["pages"],
        "build_pages_seconds": build.extra["pages_seconds"],
        "rebuild_seconds": build.extra["rebuild_seconds"],
        "rebuild_pages": "running no page" if not rebuilt else f"running {counted(rebuilt, 'page')} again",
    }


def _count_words(count: int) -> str:
    return ["none", "one", "two", "three", "four", "five"][count] if count <= 5 else str(count)


def _page_words(page: str) -> str:
    """A page named in a sentence by its file's name: "chapter 5's long-context page" (not "long context": the
    name of chapter 2's n-grams page would not survive)."""
    chapter, stem = page.split("/")
    return f"chapter {int(chapter[:2])}'s {stem} page"


def record(entries: Iterable[Timing], path: Path = RECORD) -> None:
    """Append runs to the record, checked first; a failure leaves the old record whole."""
    existing = _read(path) if path.is_file() else []
    new = list(entries)
    for entry in new:
        _check(entry, path)
    write_entries(path, [_as_json(entry) for entry in existing + new])
    _cached.cache_clear()


def _as_json(timing: Timing) -> dict:
    entry = asdict(timing)
    if entry["extra"] is None:
        del entry["extra"]
    return entry


def _check(timing: Timing, path: Path) -> None:
    where = f"{path}: the {timing.kind} run of {timing.name!r} on {timing.date!r}"
    if timing.kind not in KINDS:
        raise RunningTimeError(f"{where}: kind must be one of {KINDS}")
    measured = [value for value in (timing.seconds, timing.peak_mib) if value is not None]
    if not measured:
        raise RunningTimeError(f"{where}: measured neither seconds nor memory")
    if any(isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 for value in measured):
        raise RunningTimeError(f"{where}: seconds and memory must be positive numbers, got {timing.seconds!r}, "
                               f"{timing.peak_mib!r}")
    try:
        days = [datetime.date.fromisoformat(day) for day in timing.days]
    except ValueError:
        days = []
    if not 1 <= len(days) <= 2 or days != sorted(days) or len(timing.date) not in (10, 21):
        raise RunningTimeError(f"{where}: the date must be YYYY-MM-DD or a first/last day YYYY-MM-DD/YYYY-MM-DD")
    if timing.kind == "build" and not (isinstance(timing.extra, dict) and set(BUILD_EXTRA) <= set(timing.extra)):
        raise RunningTimeError(f"{where}: a build's extra must give {', '.join(BUILD_EXTRA)}")


_NAMES = [field.name for field in fields(Timing)]
_REQUIRED = [name for name in _NAMES if name != "extra"]


def _read(path: Path) -> list[Timing]:
    # Cached by the file's modification time and size, so that a run recorded since is read again.
    stat = path.stat() if path.is_file() else None
    return list(_cached(path, (stat.st_mtime_ns, stat.st_size, stat.st_ino) if stat else None))


def _load(path: Path) -> tuple[Timing, ...]:
    if not path.is_file():
        raise RunningTimeError(f"{path}: no record of running times (measure with the scripts in benchmarks/)")
    runs = tuple(Timing(**entry) for entry in read_entries(path, _REQUIRED, _NAMES, RunningTimeError))
    for timing in runs:
        _check(timing, path)
    return runs


@functools.lru_cache(maxsize=None)
def _cached(path: Path, stamp: tuple | None) -> tuple[Timing, ...]:
    return _load(path)
