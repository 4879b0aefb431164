"""Citations as the book writes them: "(Vaswani et al., 2017)" and "Vaswani et al. (2017)".

sphinxcontrib-bibtex's author-year style puts square brackets around both; this registers the
same style with round ones as ``author_year_round`` (loaded by _config.yml's local_extensions,
selected by ``bibtex_reference_style``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import sphinxcontrib.bibtex.plugin
from sphinxcontrib.bibtex.style.referencing import BracketStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle


def _round() -> BracketStyle:
    return BracketStyle(left="(", right=")")


@dataclass
class RoundAuthorYearReferenceStyle(AuthorYearReferenceStyle):
    bracket_parenthetical: BracketStyle = field(default_factory=_round)
    bracket_textual: BracketStyle = field(default_factory=_round)
    bracket_author: BracketStyle = field(default_factory=_round)
    bracket_label: BracketStyle = field(default_factory=_round)
    bracket_year: BracketStyle = field(default_factory=_round)


def setup(app):
    sphinxcontrib.bibtex.plugin.register_plugin(
        "sphinxcontrib.bibtex.style.referencing", "author_year_round", RoundAuthorYearReferenceStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
