"""The machine's processes as tests see them: to find what a grading run left behind.

Two test workers run side by side, so a kernel seen on the machine may belong to
the other worker's grading, still running. What a finished or killed grader left
behind is told apart by its ancestry: its parent has gone, so it no longer
descends from this test session's main process.
"""

from __future__ import annotations

import os
from pathlib import Path

from autograder import sandbox


def _parent(pid: int) -> int:
    """The parent of ``pid`` (0 once it has gone)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _session() -> int:
    """The test session's main process: the xdist controller, or this process when run serially."""
    return os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid()


def processes() -> list[dict]:
    """Every process on the machine: id, user id, command line, working folder, and whether it is orphaned."""
    session = _session()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            uid = entry.stat().st_uid
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            cwd = ""
        pid = int(entry.name)
        while pid > 1 and pid != session:
            pid = _parent(pid)
        found.append({"pid": int(entry.name), "uid": uid, "cmdline": cmdline, "cwd": cwd,
                      "orphaned": pid != session})
    return found


def sandboxed(process: dict) -> bool:
    """Whether the process runs under one of the sandbox's user ids."""
    return process["uid"] in sandbox.SANDBOX_UIDS


def left_behind() -> list[dict]:
    """Sandbox processes that nothing in this test session runs any more."""
    return [p for p in processes() if p["orphaned"] and sandboxed(p)]
