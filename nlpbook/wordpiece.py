"""BERT's tokenizer: basic splitting, then WordPiece's greedy longest-match-first pieces.

Chapter 6 reads it; the exercise asks for :func:`wordpiece` itself.  It follows the
uncased BERT tokenizer (``transformers``' ``BertTokenizerFast`` in Rust and
``BertTokenizerLegacy`` in Python, with ``do_lower_case=True``) and is tested against
both on whole corpora.  Where the two differ it is the Python one's twin: Python's ``str.lower``
writes a word-final Greek sigma as ς, which the Rust tokenizer writes σ.

0. keep the special tokens written in the text (``[MASK]``, ``[SEP]``, ...) whole, wherever they stand;
1. clean: drop control characters and U+FFFD, map every whitespace to a space;
2. split CJK ideographs into words of their own;
3. split on whitespace; lower-case each word and strip its accents (NFD, then drop
   combining marks); split off every punctuation character as a word of its own;
4. cut each word into the longest vocabulary pieces from the left, continuation pieces
   marked ``##``; a word with no cut at all becomes ``[UNK]`` as a whole.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_SPECIAL = re.compile("(" + "|".join(re.escape(token) for token in SPECIAL_TOKENS) + ")")
MAX_WORD_CHARS = 100  # longer "words" (URLs, base64) are [UNK] rather than a costly search


def read_vocab(path: str | Path) -> dict[str, int]:
    """A ``vocab.txt`` (one piece per line, the line number its id) as a piece -> id dictionary."""
    pieces = Path(path).read_text(encoding="utf-8").split("\n")
    if pieces and pieces[-1] == "":
        pieces.pop()
    vocab = {piece: index for index, piece in enumerate(pieces)}
    missing = [token for token in SPECIAL_TOKENS if token not in vocab]
    if missing:
        raise ValueError(f"{path}: not a BERT vocabulary, it lacks {', '.join(missing)}")
    return vocab


def _is_punctuation(char: str) -> bool:
    # BERT counts every ASCII symbol as punctuation ("$", "^", "`"), not only Unicode's P* classes.
    code = ord(char)
    return 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126 \
        or unicodedata.category(char).startswith("P")


def _is_cjk(code: int) -> bool:
    return (0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0x20000 <= code <= 0x2A6DF
            or 0x2A700 <= code <= 0x2B73F or 0x2B740 <= code <= 0x2B81F or 0x2B820 <= code <= 0x2CEAF
            or 0xF900 <= code <= 0xFAFF or 0x2F800 <= code <= 0x2FA1F)


def _cleaned(char: str) -> str:
    """What step 1 (and 2) make of one character: itself, a space, nothing, or a word of its own."""
    code = ord(char)
    if code == 0 or code == 0xFFFD:
        return ""
    if char in " \t\n\r" or unicodedata.category(char) == "Zs":
        return " "
    if unicodedata.category(char).startswith("C"):
        return ""  # control and format characters carry no text
    if _is_cjk(code):
        return f" {char} "
    return char


def _clean(text: str) -> str:
    # One decision per distinct character, applied by str.translate: a whole Bible (3.4M characters,
    # about 80 distinct ones) in milliseconds, where a Python loop over its characters took seconds.
    return text.translate({ord(char): _cleaned(char) for char in set(text)})


def _split_word(word: str) -> list[str]:
    """Step 3 for one whitespace-separated word: lower-cased, accents stripped, punctuation split off."""
    word = "".join(c for c in unicodedata.normalize("NFD", word.lower()) if unicodedata.category(c) != "Mn")
    words, current = [], ""
    for char in word:
        if _is_punctuation(char):
            if current:
                words.append(current)
            words.append(char)
            current = ""
        else:
            current += char
    if current:
        words.append(current)
    return words


def basic_tokenize(text: str) -> list[str]:
    """Steps 0-3: the special tokens as written, and lower-cased, accent-free words with every
    punctuation character on its own ("the [MASK] sat." -> the, [MASK], sat, .)."""
    words: list[str] = []
    done: dict[str, list[str]] = {}  # a text repeats its words: each distinct one is split once
    for part in _SPECIAL.split(text):  # the special tokens at the odd places
        if part in SPECIAL_TOKENS:
            words.append(part)
            continue
        for word in _clean(part).split():
            split = done.get(word)
            if split is None:
                split = done[word] = _split_word(word)
            words += split
    return words


def wordpiece(word: str, vocab: dict[str, int], unk: str = "[UNK]") -> list[str]:
    """Step 4 for one word: the longest vocabulary prefix, then the longest ``##`` piece of the
    rest, and so on; ``[unk]`` alone when some position has no piece at all."""
    if len(word) > MAX_WORD_CHARS:
        return [unk]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
            end -= 1
        if end == start:  # nothing matches here: the whole word is unknown, not just this part
            return [unk]
        pieces.append(piece)
        start = end
    return pieces


@dataclass
class WordPieceTokenizer:
    """Text to BERT inputs with a given vocabulary (uncased)."""

    vocab: dict[str, int]
    inverse: list[str] = field(init=False, repr=False)
    _cuts: dict[str, list[str]] = field(init=False, repr=False, compare=False, default_factory=dict)  # word -> pieces

    def __post_init__(self):
        self.inverse = [""] * len(self.vocab)
        for piece, index in self.vocab.items():
            self.inverse[index] = piece

    @classmethod
    def from_file(cls, path: str | Path) -> "WordPieceTokenizer":
        return cls(read_vocab(path))

    def __len__(self) -> int:
        return len(self.vocab)

    def token_id(self, token: str) -> int:
        return self.vocab[token]

    def tokenize(self, text: str) -> list[str]:
        pieces: list[str] = []
        for word in basic_tokenize(text):
            cut = self._cuts.get(word)
            if cut is None:  # each distinct word is cut once per tokenizer (its vocabulary never changes)
                cut = self._cuts[word] = wordpiece(word, self.vocab)
            pieces += cut
        return pieces

    def ids(self, text: str) -> list[int]:
        """The ids of ``text``'s pieces, without ``[CLS]`` and ``[SEP]``."""
        return [self.vocab[p] for p in self.tokenize(text)]

    def encode(self, text: str, pair: str | None = None, max_length: int = 512) -> tuple[list[int], list[int]]:
        """``[CLS] text [SEP]`` (and ``pair [SEP]``) as ids, with the segment (token type) of each:
        0 for the first sentence, 1 for the second.  Longer inputs are cut to ``max_length``,
        taking pieces from the longer sentence first, as BERT's tokenizer does."""
        first = self.ids(text)
        second = self.ids(pair) if pair is not None else []
        budget = max_length - (3 if pair is not None else 2)
        while len(first) + len(second) > budget:
            (first if len(first) >= len(second) else second).pop()
        cls, sep = self.vocab["[CLS]"], self.vocab["[SEP]"]
        ids = [cls, *first, sep] + ([*second, sep] if pair is not None else [])
        segments = [0] * (len(first) + 2) + [1] * (len(ids) - len(first) - 2)
        return ids, segments

    def batch(self, texts: list[str], pairs: list[str] | None = None, max_length: int = 128):
        """Padded tensors for a list of sentences (or of sentence pairs, ``texts[i]`` with
        ``pairs[i]``): ``input_ids``, ``token_type_ids`` and ``attention_mask`` (1 for a real
        token, 0 for padding), each (B, T)."""
        import torch

        if pairs is not None and len(pairs) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(pairs)} pairs")
        seconds = pairs if pairs is not None else [None] * len(texts)
        encoded = [self.encode(text, pair, max_length=max_length) for text, pair in zip(texts, seconds)]
        width = max(len(ids) for ids, _ in encoded)
        pad = self.vocab["[PAD]"]
        input_ids = torch.full((len(texts), width), pad, dtype=torch.long)
        token_type_ids = torch.zeros((len(texts), width), dtype=torch.long)
        attention_mask = torch.zeros((len(texts), width), dtype=torch.long)
        for row, (ids, segments) in enumerate(encoded):
            input_ids[row, :len(ids)] = torch.tensor(ids)
            token_type_ids[row, :len(ids)] = torch.tensor(segments)
            attention_mask[row, :len(ids)] = 1
        return {"input_ids": input_ids, "token_type_ids": token_type_ids, "attention_mask": attention_mask}

    def decode(self, ids) -> str:
        """Pieces joined back into words (``##`` pieces glued to the one before)."""
        text = " ".join(self.inverse[int(i)] for i in ids)
        return text.replace(" ##", "")
