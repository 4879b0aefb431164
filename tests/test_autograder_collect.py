"""Unpacking a class zip: hostile member names stop the whole unpacking, with nothing written."""
from __future__ import annotations

import re
import stat
import zipfile

import pytest

from autograder import collect
from autograder.collect import extract_zip
from autograder.course import CourseError
from conftest import run_autograder


def _zip(path, members):
    with zipfile.ZipFile(path, "w") as archive:
        for name, data, mode in members:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            archive.writestr(info, data)
    return path


REGULAR = stat.S_IFREG | 0o644


def test_a_well_formed_zip_is_unpacked_in_place(tmp_path):
    archive = _zip(tmp_path / "class.zip", [("ada/04-attention/attention.ipynb", "{}", REGULAR),
                                            ("bob/04-attention/attention.ipynb", "{}", REGULAR)])
    files = extract_zip(archive, tmp_path / "submissions")
    assert [f.relative_to(tmp_path).as_posix() for f in files] == [
        "submissions/ada/04-attention/attention.ipynb", "submissions/bob/04-attention/attention.ipynb"]


@pytest.mark.parametrize("name, mode, problem", [
    ("../evil/04-attention/attention.ipynb", REGULAR, "climbs out"),
    ("ada/../../evil.ipynb", REGULAR, "climbs out"),
    ("/etc/cron.d/evil", REGULAR, "an absolute path"),
    ("C:/evil.ipynb", REGULAR, "an absolute path"),
    ("ada/04-attention/attention.ipynb", stat.S_IFLNK | 0o777, "a symbolic link"),
    ("ada/04-attention/fifo", stat.S_IFIFO | 0o644, "not a regular file"),
])
def test_a_hostile_member_stops_everything_and_names_itself(tmp_path, name, mode, problem):
    archive = _zip(tmp_path / "class.zip", [("ok/04-attention/attention.ipynb", "{}", REGULAR), (name, "x", mode)])
    with pytest.raises(CourseError, match=problem):
        extract_zip(archive, tmp_path / "out" / "submissions")
    assert not (tmp_path / "out").exists() and not (tmp_path / "evil").exists()


@pytest.mark.parametrize("members, problem", [
    ([("ada/a.ipynb", "1", REGULAR), ("ada/a.ipynb", "2", REGULAR)], "would both be ada/a.ipynb"),
    ([("ada/a.ipynb", "1", REGULAR), ("ada\\a.ipynb", "2", REGULAR)], "would both be ada/a.ipynb"),
    ([("ada/04", "1", REGULAR), ("ada/04/a.ipynb", "2", REGULAR)], "'ada/04' is a file where other members need"),
    ([(".", "1", REGULAR)], "a name with no file in it"),
])
@pytest.mark.filterwarnings("ignore:Duplicate name")  # zipfile warns as the test writes the archive
def test_members_that_cannot_all_be_written_stop_it_before_anything_is(tmp_path, members, problem):
    # These unpacked until the second member, then raised FileExistsError naming a temporary folder.
    archive = _zip(tmp_path / "class.zip", members)
    with pytest.raises(CourseError, match=problem):
        extract_zip(archive, tmp_path / "out" / "submissions")
    assert not (tmp_path / "out").exists()


def test_a_member_with_no_file_type_is_an_ordinary_file_and_a_damaged_one_is_named(tmp_path):
    plain = tmp_path / "plain.zip"
    with zipfile.ZipFile(plain, "w") as archive:
        archive.writestr("ada/04-attention/attention.ipynb", "{}")  # mode 0o600, no file type
    assert len(extract_zip(plain, tmp_path / "plain")) == 1
    damaged = tmp_path / "damaged.zip"
    data = plain.read_bytes()
    damaged.write_bytes(data.replace(b"{}", b"{!", 1))  # the stored bytes no longer match their CRC
    with pytest.raises(CourseError, match=r"damaged.zip: member 'ada/04-attention/attention.ipynb': Bad CRC-32"):
        extract_zip(damaged, tmp_path / "damaged")
    assert not (tmp_path / "damaged").exists() and not list(tmp_path.glob(".collect-*"))


def test_the_command_reports_a_bad_zip_and_exits_2(tmp_path):
    archive = _zip(tmp_path / "class.zip", [("../x", "x", REGULAR)])
    result = run_autograder("collect", str(archive), "--out", str(tmp_path / "submissions"))
    assert result.returncode == 2 and "climbs out" in result.stderr
    (tmp_path / "junk.zip").write_bytes(b"not a zip")
    result = run_autograder("collect", str(tmp_path / "junk.zip"), "--out", str(tmp_path / "submissions"))
    assert result.returncode == 2 and "not a readable zip file" in result.stderr


def test_a_canvas_download_is_filed_under_student_and_assignment(tmp_path):
    archive = _zip(tmp_path / "canvas.zip", [
        ("lovelaceada_1201_98001_attention.ipynb", "{}", REGULAR),
        ("bytebob_LATE_1202_98002_attention-1.ipynb", "{}", REGULAR),  # late, second attempt
        ("bytebob_1203_98003_attention.ipynb", "{}", REGULAR),  # another Bob Byte: the user id tells them apart
    ])
    files = extract_zip(archive, tmp_path / "submissions", "04-attention")
    assert sorted(f.relative_to(tmp_path).as_posix() for f in files) == [
        "submissions/1201/04-attention/attention.ipynb", "submissions/1202/04-attention/attention.ipynb",
        "submissions/1203/04-attention/attention.ipynb"]


def test_a_timestamp_a_student_uploaded_is_left_out(tmp_path, caplog):
    # grade measures lateness from timestamp.txt, nbgrader's own record: a student's copy would back-date a hand-in.
    archive = _zip(tmp_path / "canvas.zip", [
        ("lovelaceada_1201_98001_attention.ipynb", "{}", REGULAR),
        ("lovelaceada_1201_98001_timestamp.txt", "2000-01-01 00:00:00 UTC", REGULAR),
    ])
    files = extract_zip(archive, tmp_path / "submissions", "04-attention")
    assert [f.relative_to(tmp_path).as_posix() for f in files] == ["submissions/1201/04-attention/attention.ipynb"]
    assert not (tmp_path / "submissions" / "1201" / "04-attention" / "timestamp.txt").exists()
    assert "lovelaceada_1201_98001_timestamp.txt' left out" in caplog.text


@pytest.mark.parametrize("members, problem", [
    ([("adalovelace_1201_98001_attention.ipynb", "{}", REGULAR), ("notes.txt", "x", REGULAR)], "does not match"),
    ([("ada_1_2_attention.ipynb", "{}", REGULAR), ("ada_1_3_attention-1.ipynb", "{}", REGULAR)], "would both be"),
    ([("ada_1_2_attention.ipynb", "{}", REGULAR), ("../ada_1_2_x.ipynb", "{}", REGULAR)], "climbs out"),
    ([("ada_1_2_attention.ipynb", "{}", stat.S_IFLNK | 0o777)], "a symbolic link"),
])
def test_a_canvas_download_that_does_not_fit_writes_nothing(tmp_path, members, problem):
    archive = _zip(tmp_path / "canvas.zip", members)
    result = run_autograder("collect", str(archive), "--out", str(tmp_path / "submissions"),
                            "--assignment", "04-attention")
    assert result.returncode == 2 and problem in result.stderr
    assert not (tmp_path / "submissions").exists()


@pytest.mark.parametrize("pattern, problem", [
    (r"^(?P<student>\d+_(?P<file>.+)$", "not a regular expression (missing ), unterminated subpattern"),
    (r"^(?P<student>\d+)_(.+)$", "no group named file"),
    (r"^(\d+)_(.+)$", "no group named file or student"),
])
def test_a_pattern_that_cannot_name_the_student_and_the_file_is_refused_by_name(tmp_path, pattern, problem):
    archive = _zip(tmp_path / "canvas.zip", [("1201_attention.ipynb", "{}", REGULAR)])
    with pytest.raises(CourseError, match=f"--pattern .*: {re.escape(problem)}"):
        extract_zip(archive, tmp_path / "submissions", "04-attention", pattern)
    assert not (tmp_path / "submissions").exists()
    assert extract_zip(archive, tmp_path / "submissions", "04-attention", r"^(?P<student>\d+)_(?P<file>.+)$")


def test_a_zip_bomb_or_a_flood_of_members_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    # kills C2 (the size check skipped) and C3 (the member count skipped)
    monkeypatch.setattr(collect, "MAX_BYTES", 10)
    big = _zip(tmp_path / "big.zip", [("ada/04-attention/attention.ipynb", "x" * 11, REGULAR)])
    with pytest.raises(CourseError, match="unpacks to more than"):
        collect.extract_zip(big, tmp_path / "out" / "big")
    monkeypatch.setattr(collect, "MAX_MEMBERS", 1)
    many = _zip(tmp_path / "many.zip", [("ada/a.ipynb", "{}", REGULAR), ("bob/a.ipynb", "{}", REGULAR)])
    with pytest.raises(CourseError, match="2 members, more than 1"):
        collect.extract_zip(many, tmp_path / "out" / "many")
    assert not (tmp_path / "out").exists()


def test_an_encrypted_member_is_named_not_a_traceback(tmp_path):
    # kills C4: without the check, ZipFile.open raises RuntimeError("... is encrypted, password required")
    plain = _zip(tmp_path / "plain.zip", [("ada/04-attention/attention.ipynb", "{}", REGULAR)])
    data = bytearray(plain.read_bytes())
    for signature, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # local header and central directory flags
        where = data.index(signature) + at
        data[where] |= 0x1
    locked = tmp_path / "locked.zip"
    locked.write_bytes(bytes(data))
    assert zipfile.ZipFile(locked).infolist()[0].flag_bits & 0x1
    with pytest.raises(CourseError, match="is encrypted; nothing was unpacked"):
        collect.extract_zip(locked, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_collect_refuses_an_existing_out_folder_and_leaves_it_as_it_was(tmp_path):
    # kills C1: an empty --out was silently replaced, a full one failed with an OSError's wording
    archive = _zip(tmp_path / "class.zip", [("ada/04-attention/attention.ipynb", "{}", REGULAR)])
    for contents in ([], ["notes.txt"]):
        out = tmp_path / f"out{len(contents)}"
        out.mkdir()
        for name in contents:
            (out / name).write_text("mine")
        with pytest.raises(CourseError, match="already exists; collect into a new folder"):
            collect.extract_zip(archive, out)
        assert sorted(p.name for p in out.iterdir()) == contents
