"""Text corpora that install with the course's packages, so nothing downloads.

The gensim wheel ships its test data: a 60,000-word sample of Australian news
(the Lee corpus), a shortened dump of 106 English Wikipedia articles, and the
200 movie-review sentences labelled positive or negative (Pang and Lee's
polarity data), and the word-similarity and analogy benchmarks that ``nlpbook.similarity`` reads.  The
files are found through the installed package; gensim itself is imported only
to strip Wikipedia's markup.
"""
from __future__ import annotations

import bz2
import functools
import importlib.util
import re
from pathlib import Path

LEE = "lee_background.cor"
POLARITY = "pang_lee_polarity.cor"
WIKI = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def gensim_test_data(name: str) -> Path:
    """The path of one of the files gensim installs under ``gensim/test/test_data``."""
    spec = importlib.util.find_spec("gensim")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("gensim is not installed: run `pip install -r requirements.txt`")
    path = Path(next(iter(spec.submodule_search_locations))) / "test" / "test_data" / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: this gensim installation does not ship its test data")
    return path


def tokenize(text: str) -> list[str]:
    """Lower-case words (letters, with an inner apostrophe: "don't"); numbers and punctuation go."""
    return _WORD.findall(text.lower())


@functools.lru_cache(maxsize=None)
def _lee_stories() -> tuple[str, ...]:
    lines = gensim_test_data(LEE).read_text(encoding="utf-8").splitlines()
    return tuple(line.strip() for line in lines if line.strip())


@functools.lru_cache(maxsize=None)
def _wiki(min_tokens: int) -> tuple[tuple[str, ...], ...]:
    from gensim.corpora.wikicorpus import extract_pages, filter_wiki

    articles = []
    with bz2.open(gensim_test_data(WIKI)) as handle:
        for _title, text, _page_id in extract_pages(handle):
            tokens = tokenize(filter_wiki(text))
            if len(tokens) >= min_tokens:  # redirects and stubs say nothing about words
                articles.append(tuple(tokens))
    return tuple(articles)


def lee_stories() -> list[str]:
    """The 300 Lee news stories as raw text, one string per story (for character-level models)."""
    return list(_lee_stories())


def lee_corpus() -> list[list[str]]:
    """The Lee background corpus: 300 news stories, about 60,000 words, one token list per story."""
    return [tokenize(story) for story in _lee_stories()]


def wiki_corpus(min_tokens: int = 50) -> list[list[str]]:
    """106 English Wikipedia articles (about 450,000 words), markup removed, one token list per
    article; pages shorter than ``min_tokens`` words (redirects, stubs) are left out.  Parsing takes
    a few seconds the first time in a process."""
    return [list(document) for document in _wiki(min_tokens)]


def polarity_sentences() -> tuple[list[str], list[int]]:
    """Pang and Lee's 200 review sentences (lower-cased, tokens separated by spaces) and their
    labels, 1 for positive and 0 for negative, in the file's order (the first 100 negative).
    The file is in Windows-1252 (its dashes and accented letters are not UTF-8)."""
    texts, labels = [], []
    path = gensim_test_data(POLARITY)
    for number, line in enumerate(path.read_text(encoding="cp1252").splitlines(), 1):  # Windows-1252: "\x97" is a dash
        label, _, text = line.partition(" ")
        if label not in ("__label__pos", "__label__neg") or not text.strip():
            raise ValueError(f"{path}:{number}: expected '__label__pos TEXT' or '__label__neg TEXT'")
        texts.append(text.strip())
        labels.append(int(label == "__label__pos"))
    return texts, labels
