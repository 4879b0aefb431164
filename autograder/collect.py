"""Unpacking a class's submissions from a zip file without trusting its member names.

``python -m autograder collect CLASS.zip --out submissions`` unpacks a zip laid
out as ``STUDENT_ID/ASSIGNMENT/FILE`` into a new folder.  The whole archive is
checked before anything is written: a member whose name is absolute or climbs
out with ``..``, a link, a device, too many members or too many bytes, and the
command stops with the zip's name, the member and the problem, leaving no
partial folder behind.

An LMS download is flat instead: Canvas names each file
``NAME_USERID_SUBMISSIONID_FILE.ipynb`` (``NAME_LATE_...`` when late, ``FILE-1.ipynb``
for a second attempt), where NAME is the student's name run together in lower case
(``lovelaceada``), which two students may share, and USERID Canvas's number for the
student, which is unique and is the ID column of Canvas's gradebook export: the
student id is the USERID.  With ``--assignment``, every member
name must match ``--pattern`` (:data:`CANVAS` by default; named groups
``student``, ``file`` and optionally ``ext``) and is unpacked as
``STUDENT/ASSIGNMENT/FILE``, in the layout ``grade`` expects.
"""
from __future__ import annotations

import logging
import re
import shutil
import stat
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from autograder.course import CourseError

log = logging.getLogger("autograder")
# nbgrader's record of when a hand-in was submitted, which grade's --duedate measures lateness from:
# nbgrader's exchange writes it, so a file of that name a student uploaded to an LMS is not unpacked.
TIMESTAMP = "timestamp.txt"
MAX_MEMBERS = 100_000
MAX_BYTES = 4 << 30  # 4 GiB unpacked: a zip bomb stops here
CANVAS = r"^(?P<name>[A-Za-z0-9]+)_(?:(?i:late)_)?(?P<student>\d+)_\d+_(?P<file>[^/]+?)(?:-\d+)?(?P<ext>\.[A-Za-z0-9]+)$"


def lms_targets(archive: zipfile.ZipFile, where: Path, pattern: str, assignment: str
                ) -> dict[str, PurePosixPath | None]:
    """Member name -> ``STUDENT/ASSIGNMENT/FILE`` for a flat LMS download, or ``None`` for a student's
    own ``timestamp.txt`` (left out, and logged); ``CourseError`` on any misfit."""
    try:
        regex = re.compile(pattern)
    except re.error as error:
        raise CourseError(f"--pattern {pattern}: not a regular expression ({error})") from None
    missing = {"student", "file"} - set(regex.groupindex)
    if missing:
        raise CourseError(f"--pattern {pattern}: no group named {' or '.join(sorted(missing))}; name the parts "
                          "of a member's name as (?P<student>...) and (?P<file>...), and optionally (?P<ext>...)")
    targets: dict[str, PurePosixPath | None] = {}
    seen: dict[PurePosixPath, str] = {}
    for member in archive.infolist():
        if member.is_dir():
            continue
        match = regex.match(member.filename)
        if match is None:
            raise CourseError(f"{where}: member {member.filename!r} does not match --pattern {pattern}; "
                              "nothing was unpacked")
        target = PurePosixPath(match["student"], assignment, match["file"] + (match.groupdict().get("ext") or ""))
        if target.name.lower() == TIMESTAMP:
            log.warning("%s: member %r left out: a student's upload cannot say when it was submitted (%s is "
                        "nbgrader's own record, which --duedate reads)", where, member.filename, TIMESTAMP)
            targets[member.filename] = None
            continue
        if target in seen:
            raise CourseError(f"{where}: members {seen[target]!r} and {member.filename!r} would both be {target}; "
                              "nothing was unpacked")
        seen[target] = targets[member.filename] = target
    return targets


def _member_path(member: zipfile.ZipInfo) -> PurePosixPath:
    """Where a member unpacks, relative to the folder: a Windows zip's backslashes read as slashes."""
    return PurePosixPath(member.filename.replace("\\", "/"))


def _problem(member: zipfile.ZipInfo) -> str | None:
    path = _member_path(member)
    if path.is_absolute() or (path.parts and path.parts[0].endswith(":")):
        return "an absolute path"
    if ".." in path.parts:
        return "a path that climbs out with '..'"
    if not path.parts or path.parts == (".",):
        return "a name with no file in it"
    if member.flag_bits & 0x1:
        return "encrypted"
    mode = member.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    # no file type at all (Python's ZipFile.writestr writes 0o600 alone) is an ordinary file
    if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "not a regular file"
    return None


def check_zip(archive: zipfile.ZipFile, where: Path) -> None:
    """Every member safe to unpack, or ``CourseError`` naming the first that is not."""
    members = archive.infolist()
    if len(members) > MAX_MEMBERS:
        raise CourseError(f"{where}: {len(members)} members, more than {MAX_MEMBERS}")
    if sum(m.file_size for m in members) > MAX_BYTES:
        raise CourseError(f"{where}: unpacks to more than {MAX_BYTES >> 30} GiB")
    files, folders = {}, set()
    for member in members:
        if problem := _problem(member):
            raise CourseError(f"{where}: member {member.filename!r} is {problem}; nothing was unpacked")
        path = _member_path(member)
        if member.is_dir():
            folders.add(path)
            continue
        if path in files:  # also "a/b" beside "a\\b"
            raise CourseError(f"{where}: members {files[path]!r} and {member.filename!r} would both be {path}; "
                              "nothing was unpacked")
        files[path] = member.filename
        folders.update(path.parents)
    if clash := next((path for path in files if path in folders), None):
        raise CourseError(f"{where}: member {files[clash]!r} is a file where other members need a folder; "
                          "nothing was unpacked")


def extract_zip(zip_path: Path, out: Path, assignment: str | None = None, pattern: str = CANVAS) -> list[Path]:
    """Unpack ``zip_path`` into the new folder ``out`` (an LMS download if ``assignment``); the files written."""
    if out.exists():
        raise CourseError(f"--out {out} already exists; collect into a new folder")
    try:
        archive = zipfile.ZipFile(zip_path)
    except (OSError, zipfile.BadZipFile) as error:
        raise CourseError(f"{zip_path}: not a readable zip file ({error})") from None
    with archive:
        check_zip(archive, zip_path)
        targets = lms_targets(archive, zip_path, pattern, assignment) if assignment else {}
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".collect-", dir=out.parent))
        written = []
        try:
            for member in archive.infolist():
                if targets and targets.get(member.filename) is None:  # a student's timestamp.txt
                    continue
                name = targets.get(member.filename, _member_path(member))
                target = staging.joinpath(*name.parts)
                if member.is_dir():
                    if targets:
                        continue
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as source, open(target, "xb") as sink:
                    shutil.copyfileobj(source, sink)
                written.append(out / target.relative_to(staging))
            staging.rename(out)
        except (OSError, zipfile.BadZipFile) as error:  # a damaged member (its CRC), a full disk
            shutil.rmtree(staging, ignore_errors=True)
            raise CourseError(f"{zip_path}: member {member.filename!r}: {error}; nothing was unpacked") from None
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return written
