"""Sentences about measured results, checked where the page states them.

A page that writes "GloVe trained on 6 billion tokens beats every model of our corpus" must
not go on saying it after a change of seed, version or size has made it false.  Such a
sentence goes through ``claim``::

    claim(glove_6b_wordsim > best_small, "the pretrained vectors beat every model trained here",
          pretrained=glove_6b_wordsim, best_small=best_small)

In the ``standard`` and ``full`` profiles, which the text is written for, a claim that does not
hold stops the page with the sentence and the figures.  In ``quick`` the models are too small
for the sentence to mean anything, so the claim is recorded as unchecked and the page goes on.

A page makes its claims in a collapsed cell that a reader can open (tagged ``hide-input``, titled
"Check this section's text against this run"), never in a cell that is never shown: the check is
the evidence for the sentence (``tests/test_book.py`` holds the pages to this).

Every claim is also appended, as one JSON line, to the file named by ``$NLPBOOK_CLAIMS_LOG``
when it is set, so that a build of the whole book can be summed up afterwards
(``benchmarks/claims_report.py``).
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from nlpbook.profile import current_profile

LOG_VARIABLE = "NLPBOOK_CLAIMS_LOG"


class ClaimError(AssertionError):
    """A sentence of the text does not hold for the figures of this run."""


@dataclass
class Claim:
    statement: str
    held: bool
    checked: bool    # False in the quick profile: the figures are too small to mean anything
    profile: str
    figures: dict[str, float] = field(default_factory=dict)
    where: str = ""  # the folder the page ran in: its chapter, in a book build

    @property
    def status(self) -> str:
        if not self.checked:
            return "unchecked"
        return "held" if self.held else "FAILED"


CLAIMS: list[Claim] = []  # every claim made in this process, in order


def claim(condition: bool, statement: str, **figures: float) -> None:
    """Check ``statement``, a sentence about this run's results, against ``condition``.
    ``figures`` are the numbers it rests on, shown when it fails and written to the log.  It
    returns nothing, so that a cell ending with a claim prints nothing under it."""
    profile = current_profile()
    record = Claim(statement, bool(condition), profile != "quick", profile,
                   {name: float(value) for name, value in figures.items()}, Path.cwd().name)
    CLAIMS.append(record)
    log = os.environ.get(LOG_VARIABLE)
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({**asdict(record), "status": record.status}) + "\n")
    if record.checked and not record.held:
        shown = ", ".join(f"{name} = {value:.4g}" for name, value in record.figures.items())
        raise ClaimError(f"the text says \"{statement}\", which does not hold in the {profile} profile"
                         + (f" ({shown})" if shown else ""))


def choose_words(condition: bool, if_true: str, if_false: str) -> str:
    """The wording that matches the result, for sentences whose direction depends on the run."""
    return if_true if condition else if_false


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """``number`` and its noun in the right number: "1 seed", "3 seeds" (never "1 seed(s)")."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def listed(items) -> str:
    """Items in a sentence: "a", "a and b", "a, b and c"."""
    items = list(items)
    if not items:
        raise ValueError("listed() needs at least one item")
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def agreement(difference: float) -> str:
    """How two computations agree, for a sentence: "exactly" or "to within 3e-07".

    The bound is rounded up, so that it is one: 2.4e-07 is "to within 3e-07", not 2e-07."""
    if difference < 0:
        raise ValueError(f"a difference is a size, not {difference}")
    if difference == 0:
        return "exactly"
    exponent = math.floor(math.log10(difference))
    digit = math.ceil(round(difference / 10.0 ** exponent, 9))
    if digit == 10:
        digit, exponent = 1, exponent + 1
    return f"to within {digit}e{exponent:+03d}"
