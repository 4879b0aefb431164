"""Measured results as data: a measurement over seeds, the one rule for comparing two, and tables of them.

A page that trains models ends with numbers a sentence quotes and a table shows.  Kept as
objects, not as the strings a page prints, the same figures can be glued into the text,
rendered as a table, compared by one rule, stored as JSON by a run on another machine and read
back as numbers::

    lstm, transformer = Runs([2.633, 2.641, 2.630]), Runs([2.746, 2.744, 2.749])
    str(lstm)                                  # '2.635 ± 0.006'
    lstm.versus(transformer)                   # Verdict('ahead', ...): lower is better by default
    Table(["model", "loss (nats)"]).add("LSTM", lstm).add("Transformer", transformer)

**The rule.**  ``a.versus(b)`` says ``ahead`` when every run of ``a`` is better than every run of
``b``, ``behind`` when every run is worse, and ``level`` otherwise: the two ranges overlap.  It
assumes nothing about how runs spread, and how often it is wrong is known: when the two models
are equally good (their runs drawn from one distribution), the chance that it still names one
ahead is ``2 / C(n + m, n)`` for ``n`` and ``m`` seeds (:func:`false_positive_rate`), exactly for
a measure that never ties (a loss) and at most that for one that can (an accuracy on a few
hundred examples: a tie is level):

========  ==========  =============================================
seeds     called      so an ordering on this many seeds is
========  ==========  =============================================
1 and 1   always      one run: say so, never a verdict
2 and 2   1 in 3      not evidence
3 and 3   1 in 10     the least the book rests an ordering on
5 and 5   1 in 126    what the book uses where a run is short
========  ==========  =============================================

Against a single number (a counted n-gram, a published figure) the rule asks that all ``n`` runs
fall on one side of it; if the number were the median of the runs' distribution, that happens
by chance with probability ``2 / 2**n`` (1 in 4 for 3 seeds, 1 in 16 for 5).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np


def false_positive_rate(n: int, m: int | None = None) -> float:
    """The chance that :meth:`Runs.versus` calls one of two equally good models ahead: ``2 / C(n + m, n)``
    for ``n`` and ``m`` runs, or ``2 / 2**n`` for ``n`` runs against a single number (``m`` None)."""
    if n < 1 or (m is not None and m < 1):
        raise ValueError(f"a comparison needs at least one run a side, got {n} and {m}")
    if m is None:
        return min(1.0, 2 / 2**n)
    return min(1.0, 2 / math.comb(n + m, n))


def chance_words(rate: float) -> str:
    """A false-positive rate as the pages write it: 0.1 -> "one time in 10"."""
    if not 0 < rate <= 1:
        raise ValueError(f"a false-positive rate is in (0, 1], got {rate}")
    return f"one time in {round(1 / rate)}"


@dataclass(frozen=True)
class Verdict:
    """``word`` ("ahead", "level" or "behind") of the first result against the second, and the chance
    that two equally good models get a verdict other than level with these seed counts."""

    word: str
    false_positive_rate: float

    def __str__(self) -> str:
        return self.word


@dataclass(frozen=True, init=False)
class Runs:
    """One measurement repeated over seeds: a model's validation loss after each of its runs, say.

    ``str(runs)`` is the mean and the sample standard deviation ("2.635 ± 0.006", the value alone
    for one run), with ``digits`` decimals; :meth:`range_text` and :meth:`seeds_text` are the other
    two ways the book writes a result.  ``float(runs)`` is the mean."""

    values: tuple[float, ...]
    digits: int

    def __init__(self, values: Iterable[float], digits: int = 3):
        values = tuple(float(value) for value in np.asarray(list(values), dtype=float).ravel())
        if not values:
            raise ValueError("no runs to summarize: the list of values is empty")
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "digits", int(digits))

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values))

    @property
    def std(self) -> float:
        """The sample standard deviation (divided by n - 1, as ``torch.std``); 0 for one run."""
        return float(np.std(self.values, ddof=1)) if self.n > 1 else 0.0

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    def __float__(self) -> float:
        return self.mean

    def __str__(self) -> str:
        text = f"{self.mean:.{self.digits}f}"
        return text + f" ± {self.std:.{self.digits}f}" if self.n > 1 else text

    def _repr_pretty_(self, printer, cycle) -> None:  # what IPython shows and myst-nb's glue writes
        printer.text(str(self))

    def range_text(self, extra: int = 0) -> str:
        """"9.6 (9.0 to 10.1)": the mean, then the lowest and the highest run, the ends with
        ``extra`` more digits than the mean.  Runs that differ but print alike get more digits
        ("11.7 (11.71 to 11.74)"), so that a range never reads as "11.7 to 11.7" unless the runs
        agree."""
        text = f"{self.mean:.{self.digits}f}"
        if self.n == 1:
            return text
        low, high, shown = self.low, self.high, self.digits + extra
        while f"{low:.{shown}f}" == f"{high:.{shown}f}" and low != high and shown < self.digits + 3:
            shown += 1
        return text + f" ({low:.{shown}f} to {high:.{shown}f})"

    def seeds_text(self) -> str:
        """"4.63 ± 0.02 over 3 seeds", or "4.61 with 1 seed": the result and how many runs it rests on."""
        if self.n == 1:
            return f"{self.values[0]:.{self.digits}f} with 1 seed"
        return f"{self} over {self.n} seeds"

    def versus(self, other: "Runs | float", *, better: str = "lower") -> Verdict:
        """This result against ``other`` (runs, or one number) by the book's one rule (the module's
        docstring): ahead when every run is better than every run of ``other``, behind when every
        run is worse, level when they overlap.  ``better`` is "lower" (a loss) or "higher" (an accuracy)."""
        if better not in ("lower", "higher"):
            raise ValueError(f"better must be 'lower' or 'higher', got {better!r}")
        sign = 1.0 if better == "lower" else -1.0
        if isinstance(other, Runs):
            theirs, rate = other.values, false_positive_rate(self.n, other.n)
        else:
            theirs, rate = (float(other),), false_positive_rate(self.n)
        ours = [sign * value for value in self.values]
        theirs = [sign * value for value in theirs]
        if any(math.isnan(value) for value in (*ours, *theirs)):
            raise ValueError(f"a run is NaN: {self.values} against {other}; a diverged run has no place in an ordering")
        if max(ours) < min(theirs):
            return Verdict("ahead", rate)
        if min(ours) > max(theirs):
            return Verdict("behind", rate)
        return Verdict("level", rate)

    def to_json(self) -> dict[str, Any]:
        return {"runs": list(self.values), "digits": self.digits}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Runs":
        return cls(data["runs"], data.get("digits", 3))


SPEED_TOLERANCE = 1.2  # timings on a shared machine move by up to a fifth from run to run


def speed_verdict(times_faster: float) -> str:
    """The word for a speed-up: ``times_faster`` is how many times faster one way of doing the same
    work is than another (the other's time over its own, or its speed over the other's).
    "faster" above 1.2, "slower" below 1 / 1.2, "level" within a fifth either way
    (:data:`SPEED_TOLERANCE`).  Every page words a speed-up by this rule, with its own sentence for
    each of the three words."""
    if not times_faster > 0 or math.isinf(times_faster):
        raise ValueError(f"a speed-up is a positive, finite ratio, got {times_faster}")
    if times_faster > SPEED_TOLERANCE:
        return "faster"
    if times_faster < 1 / SPEED_TOLERANCE:
        return "slower"
    return "level"


RUNS_FORMATS = {"range": Runs.range_text, "seeds": Runs.seeds_text}  # besides the default, mean ± std


def _range_extra_digits(cells: Sequence[Any]) -> int:
    """The digits a column of ranges adds to its ends so that rows whose runs do not overlap do
    not print as if they touched: "6.98 (6.64 to 7.19)" above "7.84 (7.19 to 8.76)" hides that
    every seed of the first is below every seed of the second (7.188 and 7.193).  The fewest
    digits, up to 3, that print each such pair of ends as different numbers; 0 where none
    prints alike, or where 3 would not tell them apart."""
    runs = [cell for cell in cells if isinstance(cell, Runs) and cell.n > 1]
    # one row's highest run below another row's lowest: the rows are apart
    apart = [(a.high, a.digits, b.low, b.digits) for a in runs for b in runs
             if math.isfinite(a.high) and math.isfinite(b.low) and a.high < b.low]

    def alike(extra: int) -> bool:  # compared as numbers: 7.19 and 7.190 read alike
        return any(round(high, a + extra) == round(low, b + extra) for high, a, low, b in apart)

    return next((extra for extra in range(4) if not alike(extra)), 0)


def _cell_text(value: Any, spec: str | None, extra: int = 0) -> str:
    if isinstance(value, Runs):
        text = (value.range_text(extra) if spec == "range" else
                RUNS_FORMATS[spec](value) if spec in RUNS_FORMATS else str(value))
    elif isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        if spec in RUNS_FORMATS:
            raise ValueError(f"the format {spec!r} is for a column of Runs, not for the number {value!r}: "
                             "give that cell as text, written as the column's other numbers are")
        # whole numbers in full ("g" would write 4826372 as 4.82637e+06)
        integral = isinstance(value, (int, np.integer))
        text = format(value, spec) if spec else format(value, "d" if integral else "g")
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")


class Table:
    """Rows of results under named columns, shown as a table in the built page (a Markdown pipe table,
    which the book renders with its own parser, so ``$...$`` maths in a cell is typeset) and kept as
    JSON by a run on another machine.

    A cell is a :class:`Runs`, a number or text; ``formats`` gives a column's number format
    (``{"weights": ","}``), or for a column of runs ``"range"`` (:meth:`Runs.range_text`) or
    ``"seeds"`` (:meth:`Runs.seeds_text`) instead of the mean ± std.  ``table.column("loss")`` and ``table.row("LSTM")`` give the objects back."""

    def __init__(self, columns: Sequence[str], formats: dict[str, str] | None = None):
        if len(set(columns)) != len(columns) or not columns:
            raise ValueError(f"a table needs distinct column names, got {list(columns)}")
        self.columns = list(columns)
        self.formats = dict(formats or {})
        unknown = sorted(set(self.formats) - set(self.columns))
        if unknown:
            raise ValueError(f"formats for columns the table does not have: {unknown}")
        self.rows: list[list[Any]] = []

    def add(self, *cells: Any) -> "Table":
        """Append a row, one cell per column; returns the table, so that rows chain."""
        if len(cells) != len(self.columns):
            raise ValueError(f"a row of {len(cells)} cells for {len(self.columns)} columns {self.columns}")
        self.rows.append(list(cells))
        return self

    def column(self, name: str) -> list[Any]:
        index = self._index(name)
        return [row[index] for row in self.rows]

    def row(self, first: Any) -> dict[str, Any]:
        """The row whose first cell is ``first``, as column -> cell."""
        for row in self.rows:
            if row[0] == first:
                return dict(zip(self.columns, row))
        raise KeyError(f"no row starts with {first!r}; rows: {[row[0] for row in self.rows]}")

    def _index(self, name: str) -> int:
        if name not in self.columns:
            raise KeyError(f"no column {name!r}; columns: {self.columns}")
        return self.columns.index(name)

    def _repr_markdown_(self) -> str:
        header = "| " + " | ".join(_cell_text(name, None) for name in self.columns) + " |"
        rule = "|" + "|".join("---" for _ in self.columns) + "|"
        extra = {column: _range_extra_digits(self.column(column))
                 for column, spec in self.formats.items() if spec == "range"}
        body = ["| " + " | ".join(_cell_text(cell, self.formats.get(column), extra.get(column, 0))
                                  for column, cell in zip(self.columns, row)) + " |" for row in self.rows]
        return "\n".join([header, rule, *body])

    def __repr__(self) -> str:
        return self._repr_markdown_()

    def to_json(self) -> dict[str, Any]:
        return {"columns": self.columns, "formats": self.formats,
                "rows": [[cell.to_json() if isinstance(cell, Runs) else _plain(cell) for cell in row]
                         for row in self.rows]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Table":
        table = cls(data["columns"], data.get("formats"))
        for row in data["rows"]:
            table.add(*(Runs.from_json(cell) if isinstance(cell, dict) and "runs" in cell else cell for cell in row))
        return table

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Table) and json.dumps(self.to_json()) == json.dumps(other.to_json())


NO_VERDICT = "no verdict"  # a cell of verdict_table where the rule cannot tell
# The most often verdict_table lets the rule name an order that chance alone would give: 3 runs
# against a single number (1 in 4), 3 against 3 (1 in 10); 2 against 2 (1 in 3) is not evidence.
MOST_FALSE_POSITIVES = 0.25


def verdict_table(results: dict[str, Runs], *, against: dict[str, float] | None = None,
                  better: str = "lower", first_column: str = "model") -> Table:
    """Each result against each other, and against single numbers (a counted baseline, say), by the
    book's one rule: the cell in row ``a`` and column ``b`` is ``a.versus(b).word`` ("ahead",
    "level", "behind"), empty on the diagonal.  Where too few runs stand behind a cell for its word
    to be evidence (equal models would get a word more often than :data:`MOST_FALSE_POSITIVES`: one
    or two runs a side, one run against fewer than seven, one or two against a number), the cell says
    :data:`NO_VERDICT`; 2 runs against 3 (1 in 5) get a word."""
    against = dict(against or {})
    table = Table([first_column, *results, *against])
    for name, ours in results.items():
        cells = []
        for other, theirs in [*results.items(), *against.items()]:
            if other == name:
                cells.append("")
                continue
            verdict = ours.versus(theirs, better=better)
            cells.append(verdict.word if verdict.false_positive_rate <= MOST_FALSE_POSITIVES else NO_VERDICT)
        table.add(name, *cells)
    return table


RECORD_TYPES = {"Runs": Runs, "Table": Table}


def to_record(value: Any) -> Any:
    """``value`` as a run's record keeps it (JSON): a :class:`Runs` or :class:`Table` as its JSON with
    its type named, lists and dicts item by item, anything else as it is."""
    for name, kind in RECORD_TYPES.items():
        if isinstance(value, kind):
            return {"type": name, **value.to_json()}
    if isinstance(value, (list, tuple)):
        return [to_record(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_record(item) for key, item in value.items()}
    return value


def from_record(data: Any) -> Any:
    """What :func:`to_record` kept, as the objects it was: ``Runs`` and ``Table`` back."""
    if isinstance(data, dict) and data.get("type") in RECORD_TYPES:
        return RECORD_TYPES[data["type"]].from_json({key: item for key, item in data.items() if key != "type"})
    if isinstance(data, list):
        return [from_record(item) for item in data]
    if isinstance(data, dict):
        return {key: from_record(item) for key, item in data.items()}
    return data


def _plain(cell: Any) -> Any:
    """A cell as JSON holds it: numpy numbers become Python numbers."""
    if isinstance(cell, np.generic):
        return cell.item()
    if isinstance(cell, (str, int, float)) or cell is None:
        return cell
    raise TypeError(f"a table cell must be Runs, a number or text, not {type(cell).__name__}: {cell!r}")
