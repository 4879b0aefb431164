"""The records' files (``nlpbook.record_files``): read with named errors, written whole or not at all."""
import json
import os

import pytest

from nlpbook.record_files import read_entries, write_entries


class TinyError(RuntimeError):
    pass


def test_a_record_written_is_read_back_as_it_was(tmp_path):
    entries = [{"page": "05-a/x", "seconds": 1.5, "note": "τ = 1"}, {"page": "05-a/y", "seconds": 2}]
    path = tmp_path / "runs" / "record.json"  # its folder is made
    write_entries(path, entries)
    assert read_entries(path, ["page"], ["page", "seconds", "note"]) == entries
    assert "τ" in path.read_text(encoding="utf-8") and path.read_text().endswith("]\n")


@pytest.mark.parametrize("text, message", [
    ("[{", r"record\.json: not JSON"),
    ('{"page": 1}', r"record\.json: a list of runs expected, found dict"),
    ('[{"page": 1}, 3]', r"record\.json: run 2 is not an object but int"),
    ('[{"page": 1}, {"seconds": 2}]', r"record\.json: run 2 lacks page"),
    ('[{"page": 1, "minutes": 2}]', r"record\.json: run 1 has fields no run has: minutes"),
])
def test_a_damaged_record_raises_the_callers_error_naming_the_file_and_the_run(tmp_path, text, message):
    path = tmp_path / "record.json"
    path.write_text(text)
    with pytest.raises(TinyError, match=message):
        read_entries(path, ["page"], ["page", "seconds"], TinyError)


def test_unknown_fields_are_allowed_when_no_fields_are_listed_as_known(tmp_path):
    path = tmp_path / "record.json"
    path.write_text('[{"page": 1, "minutes": 2}]')
    assert read_entries(path, ["page"]) == [{"page": 1, "minutes": 2}]


def test_a_failed_write_leaves_the_old_record_whole_and_no_stray_file(tmp_path, monkeypatch):
    path = tmp_path / "record.json"
    write_entries(path, [{"page": "old"}])
    before = path.read_text()
    with pytest.raises(TypeError):
        write_entries(path, [{"page": object()}])  # not JSON: fails before any file is touched

    def full_disk(source, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_entries(path, [{"page": "new"}])
    assert path.read_text() == before and json.loads(before) == [{"page": "old"}]
    assert [file.name for file in tmp_path.iterdir()] == ["record.json"]
