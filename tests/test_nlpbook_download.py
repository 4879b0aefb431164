"""Downloads against a real HTTP server on loopback: checksums, the cache, and failures."""
import hashlib

import pytest

from nlpbook.download import DownloadError, cache_dir, fetch
from servers import file_server


@pytest.fixture
def served(tmp_path):
    folder = tmp_path / "www"
    folder.mkdir()
    (folder / "data.txt").write_bytes(b"hello corpus\n")
    with file_server(folder) as (url, requests):
        yield url, requests, hashlib.sha256(b"hello corpus\n").hexdigest()


def test_a_file_is_downloaded_once_then_read_from_the_cache(served, tmp_path):
    url, requests, sha = served
    path = fetch(url + "data.txt", sha, cache=tmp_path / "cache")
    assert path.read_bytes() == b"hello corpus\n" and path.parent == tmp_path / "cache"
    assert fetch(url + "data.txt", sha, cache=tmp_path / "cache") == path
    assert requests == ["/data.txt"]


def test_a_wrong_checksum_names_both_hashes_and_caches_nothing(served, tmp_path):
    url, _, sha = served
    with pytest.raises(DownloadError, match=f"data.txt: the download's SHA-256 is {sha}, expected 0+;"):
        fetch(url + "data.txt", "0" * 64, cache=tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_damaged_cached_copy_is_fetched_again(served, tmp_path):
    url, requests, sha = served
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "data.txt").write_bytes(b"truncated")
    assert fetch(url + "data.txt", sha, cache=tmp_path / "cache").read_bytes() == b"hello corpus\n"
    assert requests == ["/data.txt"]


def test_a_missing_file_and_an_unreachable_server_are_clear_errors(served, tmp_path):
    url, _, sha = served
    with pytest.raises(DownloadError, match="missing.txt: download failed .*404"):
        fetch(url + "missing.txt", sha, cache=tmp_path / "cache")
    with pytest.raises(DownloadError, match="download failed"):
        fetch("http://127.0.0.1:9/data.txt", sha, cache=tmp_path / "cache", timeout=5)
    assert list((tmp_path / "cache").iterdir()) == []


def test_the_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("NLPBOOK_CACHE", str(tmp_path / "elsewhere"))
    assert cache_dir() == tmp_path / "elsewhere"
