"""Runs of the book's pages made on another machine, kept as data so that a build without it can show them.

The ``full`` profile is sized for one GPU, and neither the course's CI nor most readers have one.
When a GPU was lent, ``benchmarks/full_profile.py`` ran pages in ``full`` there and recorded, for
each page, every value it glued into its text, every table it displayed, every claim with whether
it held, its cells' seconds and the machine, in ``nlpbook/recorded_runs/full-profile.json``.  A page
built on a CPU reads its record here and shows what the full profile measured, saying where and
when::

    run = nlpbook.recorded.full_profile_run("05-transformers/language-model")
    run.value("Transformer_ppl"), run.where      # Runs([2.95, 2.97]), 'one NVIDIA H200, on 2026-11-27'
    run.table(0).row("LSTM")["validation perplexity"]   # a table the page displayed, as a Table

Results over seeds and tables are recorded as data (:func:`nlpbook.results.to_record`) and come back
as ``Runs`` and ``Table``, so that no page parses a record.  (The runs of 2026-11-27 kept them as
Markdown text; on 2026-12-02 they were rewritten as typed records that print as the text did, and
each says so in its ``typed`` field.)

The record is a measurement, not a cache: it changes only when the pages run again on a GPU.
"""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nlpbook.record_files import read_entries

RECORD = Path(__file__).parent / "recorded_runs" / "full-profile.json"
FIELDS = ("page", "profile", "environment", "started", "seconds", "cells", "glued", "displays", "claims")
# Kept since the records were tied to the code that ran; older records lack them and count as stale.
CODE_FIELDS = ("code_sha256", "commit")


def code_sha256(cells: list[str]) -> str:
    """The SHA-256 of a page's code cells, in order: what a record is tied to.  Changing any code
    cell changes it; changing the page's prose does not."""
    digest = hashlib.sha256()
    for source in cells:
        digest.update(source.encode("utf-8"))
        digest.update(b"\0")  # so that moving a line from one cell to the next changes it too
    return digest.hexdigest()


def page_code_sha256(page: str, book: Path = Path(__file__).resolve().parent.parent / "book") -> str:
    """:func:`code_sha256` of a page's MyST source today (``CHAPTER/STEM``)."""
    import jupytext

    notebook = jupytext.read(book / f"{page}.md")
    return code_sha256([cell.source for cell in notebook.cells if cell.cell_type == "code"])


class RecordError(RuntimeError):
    """The record of runs is missing something a page asks for, or is not in the form written."""


@dataclass(frozen=True)
class RecordedRun:
    """One page's run: ``glued`` (name -> value), ``displays`` (the tables and values it showed, in
    order), ``claims`` (statement, held, figures), ``seconds`` for the whole page, the machine, and
    ``printed``, what its cells printed."""

    page: str
    profile: str
    gpu: str | None
    date: str
    seconds: float
    glued: dict[str, Any]
    displays: list[str]
    claims: list[dict[str, Any]]
    path: Path
    printed: str = ""  # what the page printed, when the run's log was kept
    code_sha256: str | None = None  # of the code cells that ran (None in records older than the field)
    commit: str | None = None       # the repository's commit when the page was prepared

    def matches(self, cells: list[str]) -> bool:
        """Whether this run ran these code cells (a record without a hash matches nothing)."""
        return self.code_sha256 is not None and self.code_sha256 == code_sha256(cells)

    def is_current(self) -> bool:
        """Whether the page's code today is the code this run ran."""
        return self.code_sha256 is not None and self.code_sha256 == page_code_sha256(self.page)

    def value(self, name: str) -> Any:
        """A value the page glued in that run (``Runs`` and ``Table`` as the objects they were); a
        name it did not glue raises with the names it did."""
        from nlpbook.results import from_record

        if name not in self.glued:
            raise RecordError(f"{self.path}: the {self.profile} run of {self.page} glued no {name!r}; "
                              f"it glued {', '.join(sorted(self.glued))}")
        return from_record(self.glued[name])

    def mean(self, name: str) -> float:
        """The mean of a glued result: of a ``Runs``, or a number glued as one."""
        from nlpbook.results import Runs

        value = self.value(name)
        if isinstance(value, Runs):
            return value.mean
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise RecordError(f"{self.path}: {self.page}'s {name!r} is {value!r}, not a result")

    def table(self, index: int):
        """The ``index``-th table the page displayed in that run (negative counts from the end), as a
        :class:`nlpbook.results.Table`."""
        tables = [table for display in self.displays for table in _tables(display)]
        try:
            return tables[index]
        except IndexError:
            raise RecordError(f"{self.path}: the {self.profile} run of {self.page} displayed {len(tables)} "
                              f"table(s); there is no table {index}") from None

    @property
    def where(self) -> str:
        """The machine and the day, for a sentence: "one NVIDIA H200, on 2026-11-27"."""
        return f"{'one ' + self.gpu if self.gpu else 'a CPU'}, on {self.date}"


def _tables(display: Any) -> list:
    """The tables of one display (a display that is text has none)."""
    from nlpbook.results import from_record

    return [from_record(display)] if isinstance(display, dict) and display.get("type") == "Table" else []


def full_profile_run(page: str, path: Path = RECORD) -> RecordedRun | None:
    """The recorded ``full`` run of ``page`` (``CHAPTER/STEM``, e.g. ``06-bert/masked-lm``), or
    ``None`` when it has not been run on a GPU."""
    return _runs(path).get(page)


def stale_runs(path: Path = RECORD) -> list[RecordedRun]:
    """The recorded runs whose page's code has changed since (or that predate code hashes)."""
    return [run for run in full_profile_runs(path) if not run.is_current()]


def full_profile_runs(path: Path = RECORD) -> list[RecordedRun]:
    """Every recorded ``full`` run, in the order of their pages' names."""
    return [run for _, run in sorted(_runs(path).items())]


@functools.lru_cache(maxsize=None)
def _runs(path: Path) -> dict[str, RecordedRun]:
    if not path.is_file():
        return {}
    runs = {}
    for entry in read_entries(path, FIELDS, error=RecordError):
        runs[entry["page"]] = RecordedRun(
            page=entry["page"], profile=entry["profile"], gpu=entry["environment"].get("gpu"),
            date=entry["started"][:10], seconds=float(entry["seconds"]), glued=entry["glued"],
            displays=entry["displays"], claims=entry["claims"], path=path, printed=entry.get("printed", ""),
            code_sha256=entry.get("code_sha256"), commit=entry.get("commit"))
    return runs
