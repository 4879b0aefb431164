"""How long the book's pages and exercises take to run, kept as data that the chapters' opening pages
and the preface turn into their tables and sentences.

A running time is a measurement like any other the book quotes, so it comes from a record, not from
a number typed into the text.  ``nlpbook/recorded_runs/running-times.json`` holds one entry per
measured run, appended by the scripts that measure them:

- ``benchmarks/page_times.py --profile standard --record PAGE...``: pages run alone (``kind`` "page");
- ``benchmarks/book_budget.py --record``: every page in one cold build of the book (``kind`` "page",
  and one ``kind`` "build" entry for the build and the rebuild that follows it);
- ``benchmarks/solution_suite.py --record``: the solution notebooks under nbval (``kind`` "exercise").

An entry keeps the run's seconds and the peak memory of the kernel that ran it (either may be
``null``: some runs measured only one), the day (or, for runs transcribed from a table that gave
two days, the first and last as an ISO 8601 interval ``2026-12-06/2026-12-07``), the machine, how
the run was made and where the entry came from.  A page that is measured again gets a new entry;
the tables show the latest, and the older ones stay as the record of how much one machine's speed
varies::

    chapter_table("05-transformers", {"bpe": "byte-pair merges ...", ...})  # page | what it runs | minutes
    latest("page", "05-transformers/long-context", "standard").minutes     # 11.8
"""
from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Iterable

from nlpbook.results import Table

RECORD = Path(__file__).parent / "recorded_runs" / "running-times.json"
REPO = Path(__file__).resolve().parent.parent
KINDS = ("page", "exercise", "build")
# The command that measures each kind, for the error that finds none.
MEASURED_BY = {"page": "benchmarks/page_times.py --record --profile {profile} {name}",
               "exercise": "benchmarks/solution_suite.py --record --profile {profile} --only {name}",
               "build": "benchmarks/book_budget.py --record --profile {profile}"}


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


def timings(kind: str | None = None, name: str | None = None, profile: str | None = None,
            path: Path = RECORD) -> list[Timing]:
    """Every recorded run that matches, oldest first (by last possible day, then by place in the record)."""
    found = [timing for timing in _read(path) if (kind is None or timing.kind == kind)
             and (name is None or timing.name == name) and (profile is None or timing.profile == profile)]
    return sorted(found, key=lambda timing: timing.days[-1])


def latest(kind: str, name: str, profile: str, *, measure: str = "seconds", path: Path = RECORD) -> Timing:
    """The newest run of ``name`` that measured ``measure`` (``seconds`` or ``peak_mib``); none raises,
    naming the record and the command that measures it."""
    found = [timing for timing in timings(kind, name, profile, path) if getattr(timing, measure) is not None]
    if not found:
        command = MEASURED_BY[kind].format(profile=profile, name=name)
        raise RunningTimeError(f"{path}: no {profile} {kind} run of {name!r} with its {measure}; measure it with "
                               f"`python {command}`")
    return found[-1]


def days_text(runs: Iterable[Timing]) -> str:
    """The days some runs were made on, for a sentence: "on 2026-12-07", "on 2026-12-06 or 2026-12-07",
    "between 2026-11-24 and 2026-12-07"."""
    days = sorted({day for run in runs for day in run.days})
    if not days:
        raise RunningTimeError("no runs, so no days")
    if len(days) == 1:
        return f"on {days[0]}"
    return f"on {days[0]} or {days[1]}" if len(days) == 2 else f"between {days[0]} and {days[-1]}"


def machines(runs: Iterable[Timing]) -> list[str]:
    """The machines some runs were made on, each once, in the order first met."""
    return list(dict.fromkeys(run.machine for run in runs))


def where_text(runs: Iterable[Timing]) -> str:
    """When and on what some runs were made, for a sentence: "on 2026-12-07 on one machine (AMD EPYC, 2
    cores, ...)"."""
    runs = list(runs)
    names = machines(runs)
    count = "one machine" if len(names) == 1 else f"{len(names)} machines"
    return f"{days_text(runs)} on {count} ({'; '.join(names)})"


def chapter_pages(chapter: str, toc: Path = REPO / "_toc.yml") -> list[str]:
    """The pages of a chapter that run code and teach (``05-transformers/bpe``, ...), in the order of the
    table of contents: not its opening page and not its exercise page."""
    import yaml

    pages = []
    for part in yaml.safe_load(toc.read_text())["parts"]:
        for entry in part["chapters"]:
            if entry["file"] == f"book/{chapter}/index":
                pages = [section["file"].removeprefix("book/") for section in entry.get("sections", [])]
    pages = [page for page in pages if not page.endswith("/exercises")]
    if not pages:
        raise RunningTimeError(f"{toc}: no chapter book/{chapter}/index with pages")
    return pages


def chapter_table(chapter: str, runs: dict[str, str], profile: str = "standard", path: Path = RECORD) -> Table:
    """The opening page's table: each page of the chapter, what it runs (``runs``, by the page's stem)
    and its minutes in ``profile``, from its latest run.  ``runs`` must describe exactly the chapter's pages."""
    pages = chapter_pages(chapter)
    stems = [page.split("/")[1] for page in pages]
    if set(runs) != set(stems):
        raise RunningTimeError(f"book/{chapter}/index.md describes {sorted(runs)}, but the chapter's pages are "
                               f"{stems}: describe each page once")
    table = Table(["page", "what it runs", "minutes"], {"minutes": ".1f"})
    for page, stem in zip(pages, stems):
        table.add(f"{{doc}}`{stem}`", runs[stem], latest("page", page, profile, path=path).minutes)
    return table


def chapter_minutes(chapter: str, profile: str, path: Path = RECORD) -> float:
    """The minutes of the chapter's pages in ``profile`` run one after another: the sum of their latest runs."""
    return sum(latest("page", page, profile, path=path).minutes for page in chapter_pages(chapter))


def chapter_peak_mib(chapter: str, profile: str, path: Path = RECORD) -> float:
    """The largest memory any page of the chapter needed in its latest run in ``profile`` that measured it."""
    return max(latest("page", page, profile, measure="peak_mib", path=path).peak_mib
               for page in chapter_pages(chapter))


def chapter_runs(chapter: str, profile: str, path: Path = RECORD) -> list[Timing]:
    """The latest timed run of each of the chapter's pages in ``profile``."""
    return [latest("page", page, profile, path=path) for page in chapter_pages(chapter)]


def chapter_summary(chapter: str, path: Path = RECORD) -> dict[str, str]:
    """What the opening page's sentence on running times glues: when and where its pages' `standard`
    times were measured (``standard_when``) and how long its slowest page takes in `quick` (``quick_words``)."""
    quick = chapter_runs(chapter, "quick", path)
    return {"standard_when": where_text(chapter_runs(chapter, "standard", path)),
            "quick_words": longest_words(max(run.seconds for run in quick))}


def longest_words(seconds: float) -> str:
    """How long the slowest of some pages took, for "the `quick` profile runs every page ...": "in under a
    minute", "in about a minute" (up to 75 s), then "in under N minutes"."""
    if seconds < 60:
        return "in under a minute"
    if seconds <= 75:
        return "in about a minute"
    return f"in under {int(seconds // 60) + 1} minutes"


def slowest_spread(profile: str = "standard", path: Path = RECORD) -> tuple[Timing, Timing]:
    """The page whose timed runs on one machine differ the most: its fastest and its slowest run.  The
    same code run twice, so the ratio is the machine's variation, not the page's."""
    groups: dict[tuple[str, str], list[Timing]] = {}
    for run in timings("page", profile=profile, path=path):
        if run.seconds is not None:
            groups.setdefault((run.name, run.machine), []).append(run)
    pairs = [(min(runs, key=lambda run: run.seconds), max(runs, key=lambda run: run.seconds))
             for runs in groups.values() if len(runs) > 1]
    if not pairs:
        raise RunningTimeError(f"{path}: no page was timed twice on one machine in {profile}")
    return max(pairs, key=lambda pair: pair[1].seconds / pair[0].seconds)


def chapters(book: Path = REPO / "book") -> list[str]:
    """The book's chapter folders, in order (``01-word-vectors``, ...)."""
    return sorted(folder.name for folder in book.glob("0*-*") if folder.is_dir())


def preface_table(path: Path = RECORD) -> Table:
    """The preface's table: per chapter, its pages in `quick` (minutes and the largest memory, from the
    latest cold build), in `standard` (the sum of the opening page's table), its solution notebook in
    `standard` (seconds and memory) and the pages recorded in `full` on a GPU (``nlpbook.recorded``)."""
    from nlpbook.recorded import full_profile_runs

    gpu_runs = full_profile_runs()
    table = Table(["chapter", "pages, `quick`", "memory, `quick`", "pages, `standard`", "exercise, `standard`",
                   "memory, exercise", "pages run in `full`, one GPU"])
    for chapter in chapters():
        exercise = latest("exercise", chapter, "standard", path=path)
        mine = [run for run in gpu_runs if run.page.startswith(chapter + "/")]
        gpu = (f"{len(mine)} page{'s' if len(mine) > 1 else ''}, {sum(run.seconds for run in mine) / 60:.1f} min"
               if mine else "not run")
        table.add(f"{{doc}}`{chapter}/index`", f"{chapter_minutes(chapter, 'quick', path):.1f} min",
                  f"{chapter_peak_mib(chapter, 'quick', path):,.0f} MiB",
                  f"{chapter_minutes(chapter, 'standard', path):.1f} min", f"{exercise.seconds:.0f} s",
                  f"{exercise.peak_mib:,.0f} MiB", gpu)
    return table


def preface_summary(path: Path = RECORD) -> dict[str, object]:
    """What the preface's sentences around its table glue, from the same runs as :func:`preface_table`."""
    from nlpbook.claims import listed

    pages = [page for chapter in chapters() for page in chapter_pages(chapter)]
    standard = [latest("page", page, "standard", path=path) for page in pages]
    quick = [latest("page", page, "quick", path=path) for page in pages]
    exercises = [latest("exercise", chapter, "standard", path=path) for chapter in chapters()]
    build = latest("build", "book", "quick", path=path)
    over = [run for run in standard if run.minutes > 10]
    fast, slow = slowest_spread("standard", path)
    memory = sorted((latest("page", page, "standard", measure="peak_mib", path=path) for page in pages
                     if any(run.peak_mib for run in timings("page", page, "standard", path))),
                    key=lambda run: -run.peak_mib)
    largest_quick = max(quick, key=lambda run: run.peak_mib or 0)
    return {
        "quick_where": where_text(quick + [build]),
        "exercise_where": where_text(exercises),
        "standard_where": where_text(standard),
        "standard_total": sum(run.minutes for run in standard),
        "over_ten": (f"In those runs {_count_words(len(over))} took longer: "
                     + listed(f"{_page_words(run.name)} ({run.minutes:.1f} minutes)" for run in over)
                     if over else "In those runs every page took less"),
        "spread": (f"{_page_words(fast.name)} took {fast.minutes:.1f} minutes in one run and {slow.minutes:.1f} in "
                   f"another, {days_text([fast, slow])}"),
        "standard_memory": listed(f"{_page_words(run.name)} ({run.peak_mib / 1024:.1f} GiB, {run.date})"
                                  for run in memory[:4]),
        "largest_quick": f"{_page_words(largest_quick.name)} ({largest_quick.peak_mib / 1024:.1f} GiB)",
        "exercise_seconds": sum(run.seconds for run in exercises),
        "build_seconds": build.seconds,
        "build_pages": build.extra["pages"],
        "build_pages_seconds": build.extra["pages_seconds"],
        "rebuild_seconds": build.extra["rebuild_seconds"],
        "rebuild_pages": ("running no page" if not build.extra["rebuild_pages"]
                          else f"running {build.extra['rebuild_pages']} pages again"),
    }


def _count_words(count: int) -> str:
    return ["none", "one", "two", "three", "four", "five"][count] if count <= 5 else str(count)


def _page_words(page: str) -> str:
    """A page named in a sentence: "chapter 5's long-context"."""
    chapter, stem = page.split("/")
    return f"chapter {int(chapter[:2])}'s {stem}"


def record(entries: Iterable[Timing], path: Path = RECORD) -> None:
    """Append runs to the record, checked first; the file is replaced whole, so a failure leaves it as it was."""
    existing = _read(path) if path.is_file() else []
    new = list(entries)
    for entry in new:
        _check(entry, path)
    text = json.dumps([_as_json(entry) for entry in existing + new], indent=1, ensure_ascii=False) + "\n"
    partial = path.with_suffix(".json.partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


def _as_json(timing: Timing) -> dict:
    entry = asdict(timing)
    if entry["extra"] is None:
        del entry["extra"]
    return entry


def _check(timing: Timing, path: Path) -> None:
    where = f"{path}: the {timing.kind} run of {timing.name!r} on {timing.date!r}"
    if timing.kind not in KINDS:
        raise RunningTimeError(f"{where}: kind must be one of {KINDS}")
    if timing.seconds is None and timing.peak_mib is None:
        raise RunningTimeError(f"{where}: measured neither seconds nor memory")
    if any(value is not None and not value > 0 for value in (timing.seconds, timing.peak_mib)):
        raise RunningTimeError(f"{where}: seconds and memory must be positive, got {timing.seconds}, "
                               f"{timing.peak_mib}")
    days = timing.days
    well_formed = all(len(day) == 10 and day[4] == day[7] == "-" for day in days)
    if len(days) > 2 or not well_formed or days != tuple(sorted(days)):
        raise RunningTimeError(f"{where}: the date must be YYYY-MM-DD or a first/last day YYYY-MM-DD/YYYY-MM-DD")


_NAMES = [field.name for field in fields(Timing)]
_REQUIRED = [name for name in _NAMES if name != "extra"]


def _read(path: Path) -> list[Timing]:
    # Cached by the file's modification time, so that a run recorded since is read again.
    return list(_cached(path, path.stat().st_mtime_ns if path.is_file() else 0))


def _load(path: Path) -> tuple[Timing, ...]:
    if not path.is_file():
        raise RunningTimeError(f"{path}: no record of running times (measure with the scripts in benchmarks/)")
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise RunningTimeError(f"{path}: not JSON ({error})") from None
    if not isinstance(entries, list):
        raise RunningTimeError(f"{path}: a list of runs expected, found {type(entries).__name__}")
    runs = []
    for number, entry in enumerate(entries, 1):
        missing = [name for name in _REQUIRED if not isinstance(entry, dict) or name not in entry]
        if missing:
            raise RunningTimeError(f"{path}: run {number} lacks {', '.join(missing)}")
        unknown = sorted(set(entry) - set(_NAMES))
        if unknown:
            raise RunningTimeError(f"{path}: run {number} has fields no run has: {', '.join(unknown)}")
        timing = Timing(**entry)
        _check(timing, path)
        runs.append(timing)
    return tuple(runs)


@functools.lru_cache(maxsize=None)
def _cached(path: Path, stamp: int) -> tuple[Timing, ...]:
    return _load(path)
