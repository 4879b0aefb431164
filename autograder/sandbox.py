"""A sandbox for one student kernel: ``python -m autograder.sandbox CONNECTION_FILE [KERNEL_ARGS]``.

The grader starts every kernel through this module (see
:class:`autograder.execute.SandboxKernelManager`).  :func:`main` asks a
zygote (:mod:`autograder.zygote`) for a kernel and stands in for it; the
zygote's forked processes read the sandbox settings that the grader wrote
next to the kernel's sockets and build, with the functions here:

- new Linux namespaces (``unshare(2)``): no network (the kernel talks to the
  grader over Unix sockets, not TCP), its own ``/proc`` and process tree,
  its own mounts;
- a root file system of its own (:func:`build_file_system`): the operating
  system, the Python installation and the ``nlpbook`` package, read-only, and
  nothing else of the machine (not the rest of the repository, not the
  gradebook, not any submission, not home folders); private ``/tmp``,
  ``/var/tmp`` and ``/dev/shm``; the only writable place is a size-limited
  scratch folder holding the files shipped with the assignment (never a
  notebook: the kernel receives its cells over its sockets);
- an unprivileged user id (when the grader runs as root), no capabilities
  and ``no_new_privs``, and resource limits: memory, processes, open files,
  file size, CPU time;
- in mode ``root``, where the machine lets the grader make one, a memory
  control group (:class:`MemoryGroup`) that holds every process of the kernel,
  so that they cannot together take more than one kernel's memory (each
  process's own limit alone would let 256 processes take 256 times that).

When the kernel exits, the namespace's first process exits with it and the
kernel of the operating system kills every process left in the namespace.

Three modes, chosen by :func:`probe`: ``root`` (namespaces and an
unprivileged user id), ``userns`` (namespaces inside a user namespace, for
graders who are not root; the kernel keeps the grader's own user id) and
``none`` (no namespaces: only the limits and, as root, the user id).  What a
mode cannot protect is listed by :func:`missing_protections` and logged.

This module imports only the standard library: its :func:`main` runs for every kernel.
"""
from __future__ import annotations

import ctypes
import functools
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

SPEC_FILE = "sandbox.json"
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
SANDBOX_UID = 61000  # no account has it: every process with this id belongs to a sandbox
SANDBOX_UIDS = range(SANDBOX_UID, SANDBOX_UID + 256)  # the ids claim_uid hands out, one per running kernel

# The environment a kernel gets; nothing else of the grader's (tokens, database URLs) leaks in.
PASSED_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "NLPBOOK_PROFILE", "NLPBOOK_DEVICE", "NLPBOOK_PROGRESS",
              "OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES")


def kernel_environment() -> dict[str, str]:
    """The environment every kernel starts from: a few of the grader's settings, nothing secret."""
    env = {name: os.environ[name] for name in PASSED_ENV if name in os.environ}
    env.update(PATH=f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", NLPBOOK_PROGRESS="0",
               PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg")
    return env


MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 28, 47, 4
# SECBIT_NOROOT, SECBIT_NO_SETUID_FIXUP and SECBIT_KEEP_CAPS, each with its lock bit.
SECBIT_NOROOT_ALL_LOCKED = 0b111111
CAPABILITY_VERSION_3 = 0x20080522


@dataclass
class Limits:
    """What one kernel may use.  ``cpu_seconds`` bounds the whole notebook's CPU time."""

    memory_mb: int = 4096
    processes: int = 256  # threads count too: PyTorch and the kernel start a few dozen
    open_files: int = 1024
    file_size_mb: int = 64
    disk_mb: int = 512
    cpu_seconds: int = 1800

    @property
    def group_mb(self) -> int:
        """What all of a kernel's processes may hold together (:class:`MemoryGroup`): its memory, and
        its scratch folder, whose files live in memory."""
        return self.memory_mb + self.disk_mb


@dataclass
class SandboxSpec:
    """Everything the launcher needs, written by the grader as ``ROOT/sandbox.json``."""

    mode: str
    uid: int = SANDBOX_UID
    drop_user: bool = True
    hide: list[str] = field(default_factory=list)
    expose: list[str] = field(default_factory=list)
    limits: Limits = field(default_factory=Limits)
    env: dict[str, str] = field(default_factory=dict)
    zygote: str = ""  # the socket of the process that forks kernels (autograder.zygote)
    memory_group: str = ""  # where the kernel's memory control group is made (memory_group_for), or none

    def write(self, root: Path) -> None:
        path = root / SPEC_FILE
        path.write_text(json.dumps(asdict(self), indent=1), encoding="utf-8")
        path.chmod(0o600)

    @classmethod
    def read(cls, root: Path) -> "SandboxSpec":
        data = json.loads((root / SPEC_FILE).read_text(encoding="utf-8"))
        data["limits"] = Limits(**data["limits"])
        return cls(**data)


# ------------------------------------------------------------ grader side

def python_command(module: str, *args: str) -> list[str]:
    """``python -I -m MODULE ARGS`` that imports this grader's own packages, whatever the environment installs.

    Isolated mode (``-I``) keeps the grader's environment variables and working folder out;
    the folder holding ``autograder`` goes first on the import path instead, so the zygote,
    the launcher and the kernels run the same code as the grader, even from a second clone
    of the course that shares an environment with the first.
    """
    packages = str(Path(__file__).resolve().parent.parent)
    boot = (f"import runpy, sys; sys.path.insert(0, {packages!r}); "
            f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)")
    return [sys.executable, "-I", "-c", boot, *args]


def _works(command: list[str], **kwargs) -> bool:
    try:
        return subprocess.run(command, capture_output=True, timeout=60, **kwargs).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def can_enter_namespaces(mode: str) -> bool:
    """Whether a child process can create ``mode``'s namespaces and mount in them."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            enter_namespaces(mode)
            os._exit(0)
        except BaseException:  # noqa: BLE001 - any failure means no
            os._exit(1)
    return os.waitpid(pid, 0)[1] == 0


def probe(requested: str = "auto") -> str:
    """The strongest mode this machine allows, or ``requested`` if it works (``ValueError`` if not).

    ``auto`` never settles for ``none``: without namespaces a student's code could read the
    solutions, so grading that way must be asked for by name.
    """
    candidates = ("root", "userns") if requested == "auto" else (requested,)
    for mode in candidates:
        if mode == "root" and os.geteuid() != 0:
            continue
        if mode == "none" or can_enter_namespaces(mode):
            return mode
    if requested == "auto":
        raise ValueError("this machine cannot create the Linux namespaces the sandbox needs (unshare failed), so "
                         "a student's code could read the solutions, the gradebook and other submissions. Grade "
                         "as root or where user namespaces are allowed; pass --sandbox none only if every "
                         "submission is trusted (the log then lists what is not protected)")
    raise ValueError(f"--sandbox {requested}: this machine cannot create the namespaces it needs "
                     f"(unshare failed); use --sandbox auto, or none if every submission is trusted")


def can_drop_user(uid: int, python: str = sys.executable) -> bool:
    """Whether Python still starts as ``uid`` outside any namespace (for mode ``none``)."""
    if os.geteuid() != 0:
        return False
    return _works([python, "-I", "-c", "pass"], preexec_fn=lambda: (os.setgid(uid), os.setuid(uid)))


def claim_uid(first: int = SANDBOX_UIDS.start, count: int = len(SANDBOX_UIDS)) -> int:
    """A sandbox user id that no other grading process on this machine holds, kept until this one ends.

    Kernels running side by side get different ids, so one kernel's process
    limit (a fork bomb) or leftover processes never touch another's.
    """
    import fcntl
    import tempfile

    folder = Path(tempfile.gettempdir()) / "nlpbook-sandbox-ids"
    folder.mkdir(mode=0o755, exist_ok=True)
    for uid in range(first, first + count):
        handle = open(folder / f"{uid}.lock", "a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        _held_ids.append(handle)  # the lock lasts as long as the open file
        return uid
    raise RuntimeError(f"all {count} sandbox user ids from {first} are in use")


_held_ids: list = []


def missing_protections(mode: str, drop_user: bool) -> list[str]:
    """Plain words for every protection that ``mode`` does not give."""
    missing = []
    if mode == "userns":
        missing.append("unprivileged user: the kernel runs with your own user id inside a user namespace, "
                       "so what it can see (the operating system and the Python installation) it reads with your "
                       "permissions (read-only)")
        missing.append("process count limit: RLIMIT_NPROC would count all your processes, so it is not set; "
                       "the process namespace still ends every process when the notebook ends")
    missing += memory_group_missing(mode)
    if mode == "none":
        missing.append("network isolation: the kernel can open network connections")
        missing.append("hidden folders: solutions/, the gradebook and other submissions are protected "
                       "by file permissions only")
        missing.append("private /tmp and /proc: the kernel sees other processes and shared temporary files")
        missing.append("process cleanup by namespace: leftover processes are killed by user id"
                       if drop_user else "process cleanup: processes the kernel starts can outlive it (the kernel "
                       "itself ends with the run)")
        missing.append("disk quota: the scratch folder is on the grader's disk (file size is still limited)")
        if not drop_user:
            missing.append("unprivileged user: the kernel runs with the grader's user id")
            missing.append("process count limit: RLIMIT_NPROC would count all the grader's processes, so it "
                           "is not set")
    return missing


def memory_group_missing(mode: str) -> list[str]:
    """The words for a missing memory control group: outside mode ``root``, and in it where the machine
    lets the grader make none."""
    if mode == "root" and memory_group_for(mode):
        return []
    why = ("only mode root makes memory control groups (a kernel of another mode could leave its group)"
           if mode != "root" else "this machine lets the grader make no memory control group (cgroup v1's "
           "memory controller, or under cgroup v2 a group of the grader's own that has the memory "
           "controller and no other process: run the grader with `systemd-run --scope -p Delegate=yes`)")
    return [f"memory limit for the whole sandbox: {why}, so each of a kernel's processes is limited to "
            "--memory-mb but together they are not"]


def kill_user_processes(uid: int) -> None:
    """Kill every process of ``uid`` (the grader must be root): ``kill(-1)`` sent as that user."""
    if os.geteuid() != 0:
        return
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.setgid(uid)
            os.setuid(uid)
            for _ in range(3):
                os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        os._exit(0)
    os.waitpid(pid, 0)


def end_user_processes(uid: int, seconds: float = 30) -> bool:
    """Kill every process of ``uid`` and wait until the last one is gone (reaped, not a zombie).

    The next kernel with this user id then starts with its whole process limit: a fork
    bomb's children that were still dying would otherwise count against it.  False if
    some remain after ``seconds``.
    """
    if os.geteuid() != 0:
        return True
    deadline = time.monotonic() + seconds
    while True:
        kill_user_processes(uid)
        if not _processes_of(uid):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)


def _processes_of(uid: int) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                found.append(int(entry.name))
        except OSError:  # it ended while we looked
            continue
    return found


# ------------------------------------------------------------ kernel side

_libc = ctypes.CDLL(None, use_errno=True)


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    encode = lambda text: text.encode() if text is not None else None  # noqa: E731
    if _libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"sandbox: mount {source} on {target}: {os.strerror(error)}")


def _locked_flags(path: str) -> int:
    """Mount flags that a bind remount must keep (a user namespace may not drop them)."""
    flags = os.statvfs(path).f_flag
    return sum(ms for st, ms in ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV),
                                 (os.ST_NOEXEC, MS_NOEXEC)) if flags & st)


def _bind_read_only(source: str, target: str) -> None:
    _mount(source, target, None, MS_BIND | MS_REC)
    _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | _locked_flags(target))


# The operating system a Python process needs, bound read-only into the kernel's root; symbolic
# links among them (/bin -> usr/bin on a merged /usr) are copied as links.
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
# Modes whose kernels see only DEVICES: no GPU, so they run on the CPU (grade.check_device).
GPU_BLIND_MODES = ("root", "userns")


def build_file_system(spec: SandboxSpec, root: Path) -> None:
    """Inside the new mount namespace: a root file system of the kernel's own (the cwd is the staging folder).

    Nothing of the machine is visible unless it is listed: the operating system
    (:data:`SYSTEM_PATHS`), the exposed paths (the Python installation, the import path,
    the ``nlpbook`` package), a few devices, a fresh ``/proc``, private ``/tmp``,
    ``/var/tmp`` and ``/dev/shm``, and in the staging folder's place only the kernel's
    socket folder and its scratch folder, with a copy of the staged files.  Every other
    folder (the rest of the repository, home folders, a second clone of the course, other
    kernels' staging folders) does not exist there, whatever its permissions.  Hidden
    paths that lie inside what is bound are covered as well.  The process then changes
    its root to it; the kernel, which has no capabilities, cannot leave it.
    """
    import tempfile

    # A folder of its own: the next notebook of the session builds its root beside this one.
    new = tempfile.mkdtemp(prefix="root-", dir=os.getcwd())
    _mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    for system in SYSTEM_PATHS:
        if os.path.islink(system):
            os.symlink(os.readlink(system), new + system)
        elif os.path.isdir(system):
            os.makedirs(new + system)
            _bind_read_only(system, new + system)
    # The private folders come before the exposed paths: a repository under /tmp must stay visible.
    for private in PRIVATE_DIRS:
        os.makedirs(new + private, exist_ok=True)
        _mount("tmpfs", new + private, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={spec.limits.disk_mb}m")
    for path in sorted(spec.expose, key=lambda p: len(Path(p).parts)):
        os.makedirs(new + path, exist_ok=True)
        _bind_read_only(path, new + path)
    for hidden in spec.hide:
        if os.path.isdir(new + hidden):
            _mount("tmpfs", new + hidden, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "mode=0000,size=4k")
        elif os.path.exists(new + hidden):
            _mount("/dev/null", new + hidden, None, MS_BIND)
    for device in DEVICES:
        if os.path.exists(f"/dev/{device}"):
            Path(new, "dev", device).touch()
            _mount(f"/dev/{device}", f"{new}/dev/{device}", None, MS_BIND)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{new}/dev/{name}")
    os.makedirs(new + "/proc")
    _mount("proc", new + "/proc", "proc", MS_NOSUID | MS_NOEXEC | MS_NODEV)
    staging = new + str(root)
    os.makedirs(staging + "/ipc")
    _mount("ipc", staging + "/ipc", None, MS_BIND)
    os.makedirs(staging + "/work")
    owner = f",uid={spec.uid},gid={spec.uid}" if spec.drop_user else ""
    _mount("tmpfs", staging + "/work", "tmpfs", MS_NOSUID | MS_NODEV,
           f"mode=0700,size={spec.limits.disk_mb}m{owner}")
    shutil.copytree("files", staging + "/work", dirs_exist_ok=True)
    os.chroot(new)
    os.chdir(root)


def limit_and_drop(spec: SandboxSpec) -> None:
    """In the kernel's process: limits, then the unprivileged user; nothing can raise them again."""
    limits = spec.limits
    mib = 1 << 20
    settings = [(resource.RLIMIT_AS, limits.memory_mb * mib), (resource.RLIMIT_NOFILE, limits.open_files),
                (resource.RLIMIT_FSIZE, limits.file_size_mb * mib), (resource.RLIMIT_CPU, limits.cpu_seconds),
                (resource.RLIMIT_CORE, 0)]
    if spec.drop_user:
        settings.append((resource.RLIMIT_NPROC, limits.processes))
    for which, value in settings:
        resource.setrlimit(which, (value, value))
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    root = os.geteuid() == 0  # root of the machine, or of the kernel's user namespace
    if root:
        forbid_new_capabilities()
    if spec.drop_user:
        os.setgroups([])
        os.setgid(spec.uid)
        os.setuid(spec.uid)
    if root:
        clear_capabilities()


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def forbid_new_capabilities() -> None:
    """Make sure no program this process starts gets a capability, even as root.

    In mode ``userns`` the kernel is root inside its user namespace and would keep the
    right to unmount the covers over the hidden folders and to change its root back.
    An empty bounding set and the locked "no root" bits mean that nothing started later
    regains a capability; :func:`clear_capabilities` then gives up the ones held now.
    """
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text()) if os.path.exists(
        "/proc/sys/kernel/cap_last_cap") else 63
    for capability in range(last + 1):
        _libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    if _libc.prctl(PR_SET_SECUREBITS, SECBIT_NOROOT_ALL_LOCKED, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"sandbox: prctl(PR_SET_SECUREBITS): {os.strerror(error)}")


def clear_capabilities() -> None:
    """Give up every capability this process holds (allowed without any)."""
    header, data = _CapHeader(CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if _libc.capset(ctypes.byref(header), data) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"sandbox: capset: {os.strerror(error)}")


def enter_namespaces(mode: str) -> None:
    """Move this (single-threaded) process into new namespaces for ``mode``; its next child is process 1."""
    if mode == "none":
        return
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | (CLONE_NEWUSER if mode == "userns" else 0)
    uid, gid = os.getuid(), os.getgid()
    if _libc.unshare(flags) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"sandbox: unshare ({mode}): {os.strerror(error)}")
    if mode == "userns":
        # Root inside the namespace is the grader outside it: what `unshare --map-root-user` writes.
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"0 {uid} 1")
        Path("/proc/self/gid_map").write_text(f"0 {gid} 1")
    _mount("none", "/", None, MS_REC | MS_PRIVATE)  # nothing mounted here reaches the grader


def mount_proc() -> None:
    """In the namespace's first process: a ``/proc`` that shows only the namespace's processes."""
    _mount("none", "/proc", None, MS_REC | MS_PRIVATE)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NOEXEC | MS_NODEV)


def die_with_parent() -> None:
    """Ask the operating system to kill this process when the process that started it ends."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def prepare(spec: SandboxSpec, root: Path, info: dict) -> tuple[Path, Path, dict[str, str]]:
    """Inside the namespaces: the file system, the kernel's folder and its environment."""
    os.chdir(root)
    work = root / "work"
    if spec.mode != "none":
        build_file_system(spec, root)
    else:
        shutil.copytree(root / "files", work, dirs_exist_ok=True)
        work.chmod(0o700)  # other kernels run as other users: none may read this student's files
    connection = work / ".connection.json"
    connection.write_text(json.dumps(info), encoding="utf-8")
    home = {"HOME": str(work), "USER": "student", "LOGNAME": "student", "IPYTHONDIR": str(work / ".ipython"),
            "MPLCONFIGDIR": str(work / ".matplotlib"), "JUPYTER_RUNTIME_DIR": str(work / ".runtime"),
            "TMPDIR": "/tmp" if spec.mode != "none" else str(work)}
    if spec.drop_user:
        for dirpath, dirnames, filenames in os.walk(work):
            for name in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
                os.lchown(name, spec.uid, spec.uid)
    return work, connection, {**spec.env, **home}


def lock_socket_folder(ipc: Path, alive: Callable[[], bool], uid_dropped: bool) -> None:
    """Once the kernel has bound its five sockets, it may create nothing more in the shared folder."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and alive():
        if sum(1 for entry in ipc.iterdir() if entry.is_socket()) >= 5:
            break
        time.sleep(0.01)
    if uid_dropped:
        os.chown(ipc, 0, 0)
    ipc.chmod(0o555)


# ------------------------------------------------------------ one memory limit for all of a kernel's processes

MEMORY_GROUP_PREFIX = "nlpbook-sandbox-"
MEMORY_FILE = "memory-{kernel}.json"  # what a kernel's processes used, written by its relay when they end


def _own_groups() -> dict[str, str]:
    """Controller -> this process's control group (``""`` for cgroup v2's single hierarchy)."""
    groups = {}
    for line in Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            groups[name] = path
    return groups


@functools.lru_cache(maxsize=None)
def memory_group_parent() -> str:
    """The folder in which the grader (root) can make a memory control group for each kernel, or ``""``.

    It is the folder of the grader's own group, so that every limit above the grader
    (a container's) still holds for its kernels.  With cgroup v1 any such folder of the
    memory controller will do; with v2 the grader's group must give its children the memory
    controller (:func:`memory_for_children`).
    """
    if os.geteuid() != 0:
        return ""
    try:
        own = _own_groups()
        for line in Path("/proc/self/mountinfo").read_text(encoding="utf-8").splitlines():
            fields = line.split()
            after = fields[fields.index("-") + 1:]  # file system type, source, options
            version = {"cgroup": 1, "cgroup2": 2}.get(after[0])
            if version == 1 and "memory" not in after[2].split(",") or version is None:
                continue
            path = own.get("memory" if version == 1 else "")
            if path is None or not (path + "/").startswith(fields[3].rstrip("/") + "/"):
                continue  # this process's group is not inside what the mount shows
            folder = Path(fields[4], os.path.relpath(path, fields[3]))
            if not (folder.is_dir() and os.access(folder, os.W_OK)):
                continue
            if version == 2 and not memory_for_children(folder, os.getpid()):
                continue
            return str(folder.resolve())
    except (OSError, ValueError, IndexError):
        pass
    return ""


GRADER_GROUP = "nlpbook-grader"  # the leaf the grader moves into under cgroup v2


def memory_for_children(folder: Path, pid: int) -> bool:
    """Whether the cgroup v2 group ``folder``, the grader's own, gives its children the memory
    controller, switching it on where cgroup v2 allows.

    v2 lets a group hand a controller to its children only if the group has it itself (its
    parent delegates it: a systemd unit with ``Delegate=yes``, or the root group) and holds no
    process: a group with children under a controller may not hold processes of its own. So
    where the grader (``pid``) is the group's only process, it moves into a leaf group of its
    own, ``nlpbook-grader``, and then switches the controller on, as systemd asks of a service it
    delegates a group to.  A group shared with other processes (a login shell's) is left as it is.
    """
    if "memory" in (folder / "cgroup.subtree_control").read_text().split():
        return True
    if "memory" not in (folder / "cgroup.controllers").read_text().split():
        return False
    if (folder / "cgroup.procs").read_text().split() != [str(pid)]:
        return False
    leaf = folder / GRADER_GROUP
    leaf.mkdir(exist_ok=True)
    (leaf / "cgroup.procs").write_text(str(pid))
    (folder / "cgroup.subtree_control").write_text("+memory")
    return True


def memory_group_for(mode: str) -> str:
    """Where kernels of ``mode`` get their memory groups: :func:`memory_group_parent` in mode ``root``
    (the other modes have no unprivileged user who could not leave a group), else ``""``."""
    return memory_group_parent() if mode == "root" else ""


class MemoryGroup:
    """A memory control group holding one kernel's processes: together they use at most ``limit_mb``.

    Past the limit the operating system first reclaims the group's file cache, then kills
    the group's largest process, and nothing outside the group.  The limit counts the
    scratch folder's files too (they live in memory), so it is the kernel's memory plus its disk.
    """

    def __init__(self, folder: Path):
        self.folder = folder

    @classmethod
    def make(cls, parent: str, name: str, limit_mb: int) -> "MemoryGroup":
        folder = Path(parent, MEMORY_GROUP_PREFIX + name)
        folder.mkdir()
        limit = str(limit_mb << 20)
        version_2 = (folder / "memory.max").exists()
        # Swap counts too where the machine has it: a limit on memory alone would let the group swap.
        settings = ([("memory.max", limit), ("memory.swap.max", "0")] if version_2 else
                    [("memory.limit_in_bytes", limit), ("memory.memsw.limit_in_bytes", limit)])
        for setting, value in settings:
            if (folder / setting).exists():
                (folder / setting).write_text(value)
        return cls(folder)

    def join(self) -> None:
        """Move this process into the group; what it starts from now on is in it too."""
        (self.folder / "cgroup.procs").write_text("0")

    def usage(self) -> dict:
        """The group's peak memory (MB, where the machine records it) and how many of its processes were killed."""
        def read(name: str) -> str:
            path = self.folder / name
            return path.read_text() if path.exists() else ""

        events = read("memory.events") or read("memory.oom_control")  # v2, v1: both have "oom_kill N"
        kills = next((int(line.split()[1]) for line in events.splitlines() if line.startswith("oom_kill ")), 0)
        peak = read("memory.peak") or read("memory.max_usage_in_bytes")
        limit = read("memory.max") or read("memory.limit_in_bytes")
        return {"peak_mb": int(peak) >> 20 if peak.strip().isdigit() else None,
                "limit_mb": int(limit) >> 20 if limit.strip().isdigit() else None, "oom_kills": kills}

    def remove(self, seconds: float = 5) -> bool:
        """Remove the group once its last process is gone (processes of an ended namespace take a moment)."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                self.folder.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.05)


def kernel_name(ip: str) -> str:
    """A kernel's own name in its sandbox folder, from the ``ip`` of its connection (a socket path
    ``ROOT/ipc/kernel-XXXX/kernel``): ``kernel-XXXX``."""
    return Path(ip).parent.name


def write_memory_report(root: Path, ip: str, usage: dict) -> None:
    """Record what the memory group of the kernel at ``ip`` saw, for :func:`memory_report`."""
    path = root / MEMORY_FILE.format(kernel=kernel_name(ip))
    partial = path.with_suffix(".partial")  # renamed whole: a grader waiting for the report never reads half
    partial.write_text(json.dumps(usage), encoding="utf-8")
    partial.replace(path)


def memory_report(root: Path, kernel: str = "*") -> dict:
    """What the relays wrote about the memory of ``kernel`` (by default, of every kernel that ended in
    the sandbox folder ``root``): the highest peak and the kills together; empty without a group."""
    reports = []
    for path in sorted(root.glob(MEMORY_FILE.format(kernel=kernel))):
        try:
            reports.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    if not reports:
        return {}
    peaks = [report["peak_mb"] for report in reports if report.get("peak_mb") is not None]
    return {"peak_mb": max(peaks) if peaks else None, "limit_mb": reports[-1].get("limit_mb"),
            "oom_kills": sum(report.get("oom_kills", 0) for report in reports)}


# ------------------------------------------------------------ the kernel command

RELAYED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def read_message(connection: socket.socket, buffer: bytearray) -> dict | None:
    """One newline-terminated JSON message from ``connection``, or ``None`` at its end."""
    while b"\n" not in buffer:
        chunk = connection.recv(65536)
        if not chunk:
            return None
        buffer.extend(chunk)
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return json.loads(line)


def staging_folder(info: dict) -> Path:
    """The sandbox folder of a kernel, from its connection info: ``ROOT/ipc/kernel-XXXX/kernel``."""
    return Path(info["ip"]).parents[2]


def send_message(connection: socket.socket, message: dict) -> None:
    connection.sendall(json.dumps(message).encode() + b"\n")


def main(argv: list[str]) -> int:
    """The kernel command nbclient starts: ask the zygote for a sandboxed kernel and stand in for it.

    This process is what the kernel manager sees: it forwards interrupts and
    terminations to the kernel, and ends the way the kernel ended.  If it is
    killed, the zygote's relay sees the socket close and kills the namespace.
    """
    die_with_parent()
    connection_file = argv[0]
    info = json.loads(Path(connection_file).read_text(encoding="utf-8"))
    spec = SandboxSpec.read(staging_folder(info))
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(spec.zygote)
    send_message(connection, {"connection_file": connection_file, "args": argv[1:]})
    for number in RELAYED_SIGNALS:
        signal.signal(number, lambda number, _frame: send_message(connection, {"signal": number}))
    reply = read_message(connection, bytearray())
    if reply is None or "error" in reply:
        print(reply["error"] if reply else "sandbox: the kernel zygote closed the connection", file=sys.stderr)
        return 1
    code = os.waitstatus_to_exitcode(reply["status"])
    if code < 0:  # end as the kernel ended: killed by the same signal
        if -code not in (signal.SIGKILL, signal.SIGSTOP):  # those two have no handler to reset
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
