"""The book's records of measured runs (``nlpbook/recorded_runs/*.json``) as files: a JSON list of
objects, read with errors that name the file and the entry, written so that a failure leaves the old
file whole.

Each record gives its entries their meaning (``nlpbook.recorded``: pages run in `full` on a GPU;
``nlpbook.running_times``: how long pages and exercises take); this module only keeps the file sound.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Iterable


def read_entries(path: Path, required: Iterable[str], known: Iterable[str] | None = None,
                 error: type[Exception] = ValueError) -> list[dict]:
    """The entries of the record at ``path``, each an object with every ``required`` field and, when
    ``known`` is given, no field outside it; anything else raises ``error`` naming the file and the entry
    (numbered from 1)."""
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as problem:
        raise error(f"{path}: not JSON ({problem})") from None
    if not isinstance(entries, list):
        raise error(f"{path}: a list of runs expected, found {type(entries).__name__}")
    required, known = list(required), None if known is None else set(known)
    for number, entry in enumerate(entries, 1):
        if not isinstance(entry, dict):
            raise error(f"{path}: run {number} is not an object but {type(entry).__name__}")
        missing = [name for name in required if name not in entry]
        if missing:
            raise error(f"{path}: run {number} lacks {', '.join(missing)}")
        unknown = sorted(set(entry) - known) if known is not None else []
        if unknown:
            raise error(f"{path}: run {number} has fields no run has: {', '.join(unknown)}")
    return entries


def write_entries(path: Path, entries: list[dict]) -> None:
    """Write a record: to a temporary file beside it, then moved over it, so that a failure (a value
    JSON cannot hold, a full disk) leaves the old record whole."""
    text = json.dumps(entries, indent=1, ensure_ascii=False) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.",
                                         delete=False)
    try:
        with handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(handle.name, path)
    finally:
        Path(handle.name).unlink(missing_ok=True)
