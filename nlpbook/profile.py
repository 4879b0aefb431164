"""The run profile: how big the models and data of a notebook are.

``NLPBOOK_PROFILE`` selects one of three profiles:

``quick``
    CI's smoke run on a 2-core CPU: under 2 minutes a page, numbers not meaningful.
``standard`` (the default)
    a student's laptop CPU: under 10 minutes a page on 2 cores, results meaningful.
``full``
    one GPU: bigger models and more data, under 10 minutes a page; what the GPU CI workflow runs.
"""
from __future__ import annotations

import os
from typing import TypeVar

PROFILE_VARIABLE = "NLPBOOK_PROFILE"
PROFILES = ("quick", "standard", "full")
DEFAULT_PROFILE = "standard"

T = TypeVar("T")


def current_profile() -> str:
    """The active profile name, read from ``$NLPBOOK_PROFILE`` (default ``standard``)."""
    value = os.environ.get(PROFILE_VARIABLE, "").strip().lower() or DEFAULT_PROFILE
    if value not in PROFILES:
        raise ValueError(
            f"${PROFILE_VARIABLE} is {os.environ[PROFILE_VARIABLE]!r}; "
            f"expected one of {', '.join(PROFILES)}"
        )
    return value


def choose(*, quick: T, standard: T, full: T | None = None) -> T:
    """Pick the value for the active profile.

    ``full`` falls back to ``standard`` when not given, so a notebook only
    names what the GPU profile changes::

        steps = nlpbook.choose(quick=50, standard=2_000, full=20_000)
    """
    _check_same_settings(quick=quick, standard=standard, full=full)
    profile = current_profile()
    if profile == "quick":
        return quick
    if profile == "full" and full is not None:
        return full
    return standard


def _check_same_settings(**values) -> None:
    """Settings given as dicts must name the same keys in every profile.

    Only the active profile's dict is ever read, so a key added to ``quick`` and ``standard``
    but not to ``full`` would otherwise surface only on a GPU, the scarcest run there is;
    checking here turns it into an error in CI's quick run of the page.
    """
    dicts = {name: value for name, value in values.items() if isinstance(value, dict)}
    if len(dicts) < 2:
        return
    every_key = set().union(*dicts.values())
    said = "; ".join(f"{name} lacks {', '.join(map(repr, sorted(every_key - value.keys(), key=str)))}"
                     for name, value in dicts.items() if every_key - value.keys())
    if said:
        raise ValueError(f"nlpbook.choose: the profiles' settings differ in their keys ({said})")
