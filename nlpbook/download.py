"""Downloading public data sets once, checked, into a cache.

Nothing graded or tested depends on a download (the course's own data install
with its packages); this is for readers who want a real corpus when the network
is there.  A file is fetched to a temporary name, its SHA-256 compared with the
published one, and only then renamed into the cache, so an interrupted or
tampered download never leaves a file that a later run would trust.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

CACHE_VARIABLE = "NLPBOOK_CACHE"


class DownloadError(RuntimeError):
    """A download failed or did not match its checksum; the message names the URL."""


def cache_dir() -> Path:
    """``$NLPBOOK_CACHE``, else ``~/.cache/nlpbook``."""
    return Path(os.environ.get(CACHE_VARIABLE) or Path.home() / ".cache" / "nlpbook")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(url: str, sha256: str, *, name: str | None = None, cache: Path | None = None, timeout: float = 60) -> Path:
    """The path of ``url``'s content in the cache, downloaded first unless a file with the
    right checksum is already there.  ``name`` is the file name in the cache (the URL's last
    part by default)."""
    folder = Path(cache) if cache is not None else cache_dir()
    target = folder / (name or url.rstrip("/").rsplit("/", 1)[-1])
    if target.is_file():
        if sha256_of(target) == sha256:
            return target
        target.unlink()  # a stale or damaged copy: fetch it again
    folder.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as response:
            shutil.copyfileobj(response, out)
        found = sha256_of(Path(partial))
        if found != sha256:
            raise DownloadError(f"{url}: the download's SHA-256 is {found}, expected {sha256}; nothing was cached")
        os.replace(partial, target)
    except (urllib.error.URLError, OSError) as error:
        raise DownloadError(f"{url}: download failed ({error}); nothing was cached") from error
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return target
