"""A kernel factory: import PyTorch once, then fork one sandboxed kernel per notebook.

Starting a kernel the usual way costs a fresh Python, ipykernel's imports and
then the notebook's own ``import torch``: about 2 s of CPU per notebook before
any test runs, more than the tests themselves.  The zygote pays it once.  It
imports the heavy modules (:data:`PRELOAD`), computes nothing, and waits on a
Unix socket.  For each kernel, :func:`autograder.sandbox.main` (the kernel
command that nbclient starts) connects and asks for one; the zygote forks and
the child builds the sandbox exactly as a fresh process would:

``relay`` (the forked child)
    new namespaces (mount, network, process ids; a user namespace in mode
    ``userns``), then forks the namespace's first process and relays
    interrupts to it; when the launcher goes away, it kills the namespace;
``first`` (process id 1 in the namespace)
    mounts ``/proc``, builds the file system (:func:`sandbox.build_file_system`),
    forks the kernel and waits for it; when it exits, the operating system
    kills every process left in the namespace;
``kernel``
    limits, the unprivileged user, a clean environment and descriptors, then
    ipykernel, in the process that already holds the imported modules.

A forked kernel shares nothing with the next one: each has its own namespaces,
its own copy of memory, and the zygote itself never runs student code and
holds no secret (it starts with the kernel's environment, not the grader's).
"""
from __future__ import annotations

import importlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder import sandbox

# Imported once, before any fork; a module that is missing is skipped.
# What a notebook of the course imports, then what ipykernel imports as it starts (its debugger
# alone takes 0.1 s): a kernel that finds them loaded is ready in about 0.1 s.
# nlpbook loads its shared names when first used, so its modules are named one by one.
PRELOAD = ("numpy", "torch", "matplotlib", "matplotlib.pyplot",
           "nlpbook", "nlpbook.device", "nlpbook.seed", "nlpbook.profile", "nlpbook.claims", "nlpbook.timing",
           "nlpbook.notebook", "nlpbook.recipe", "nlpbook.training", "nlpbook.checks", "nlpbook.plot",
           "ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.zmqshell", "ipykernel.debugger",
           "ipykernel.eventloops", "ipykernel.comm", "ipykernel.iostream", "ipykernel.heartbeat",
           "ipykernel.parentpoller", "jupyter_client.session", "IPython.core.completer",
           "matplotlib_inline.backend_inline")
SOCKET_NAME = "zygote.sock"


class Zygote:
    """The grader's handle on one zygote process: :meth:`start` it early, :meth:`wait` for its socket."""

    def __init__(self, env: dict[str, str]):
        self.env = env
        self.folder: Path | None = None
        self.process: subprocess.Popen | None = None
        self.path = ""

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> "Zygote":
        """Start importing now; the caller may do other work meanwhile."""
        self.folder = Path(tempfile.mkdtemp(prefix="nlpbook-zygote-"))  # 0700: only the grader connects
        # Its own output (ipykernel's debugger notes as it imports, an import error) goes to a log in
        # its folder, not to the instructor's terminal; a zygote that fails to start quotes it.
        with open(self.folder / "zygote.log", "wb") as log:
            self.process = subprocess.Popen(
                sandbox.python_command("autograder.zygote", str(self.folder / SOCKET_NAME)), env=self.env,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, preexec_fn=sandbox.die_with_parent,
                cwd=self.folder,
            )
        return self

    def wait(self) -> str:
        """The socket's path, once the zygote accepts requests."""
        path = self.folder / SOCKET_NAME
        deadline = time.monotonic() + 120
        while not path.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                said = (self.folder / "zygote.log").read_text(encoding="utf-8", errors="replace").strip()
                raise RuntimeError(f"the kernel zygote did not start (exit status {self.process.poll()}); it said: "
                                   f"{said[-2000:] or '(nothing)'}")
            time.sleep(0.02)
        self.path = str(path)
        return self.path

    def __enter__(self) -> str:
        return self.start().wait()

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    close = __exit__


# ------------------------------------------------------------ the zygote process

def serve(path: str) -> None:
    """Import :data:`PRELOAD`, then fork a relay for every launcher that connects."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    # Nothing to clean up (the grader removes the socket's folder), and tearing down an
    # interpreter that holds PyTorch takes about a second the grader would wait for.
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".new")
    os.chmod(path + ".new", 0o600)
    listener.listen(64)
    os.rename(path + ".new", path)  # the socket appears only once it accepts
    parent = os.getppid()
    while os.getppid() == parent:
        if select.select([listener], [], [], 1.0)[0]:
            connection, _ = listener.accept()
            if os.fork() == 0:
                listener.close()
                _child(relay, connection)
            connection.close()
        _reap()


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def _child(function, *args) -> None:
    """Run ``function`` in a forked process that never returns into its parent's code."""
    code = 1
    try:
        function(*args)
        code = 0
    except BaseException as error:  # noqa: BLE001 - a forked child must end here, whatever happened
        try:
            os.write(2, f"sandbox: {type(error).__name__}: {error}\n".encode())
        except OSError:
            pass
    finally:
        os._exit(code)


# ------------------------------------------------------------ one kernel's processes

def relay(connection: socket.socket) -> None:
    """Outside the namespace: create it, start its first process, relay signals, report how it ended."""
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL)
    os.setsid()  # the grader's terminal signals stay with the grader
    buffer = bytearray()
    request = sandbox.read_message(connection, buffer)
    if request is None:
        return
    info = json.loads(Path(request["connection_file"]).read_text(encoding="utf-8"))
    root = sandbox.staging_folder(info)
    spec = sandbox.SandboxSpec.read(root)
    group = None
    if spec.memory_group:  # made by the relay, as root: the kernel's user can neither leave it nor raise its limit
        try:
            group = sandbox.MemoryGroup.make(spec.memory_group, f"{spec.uid}-{os.getpid()}-{os.urandom(4).hex()}",
                                             spec.limits.group_mb)
        except OSError as error:
            sandbox.send_message(connection, {"error": f"sandbox: no memory group for the kernel in "
                                                       f"{spec.memory_group}: {error}"})
            return
    try:
        sandbox.enter_namespaces(spec.mode)
        status_read, status_write = os.pipe()
        first = os.fork()
        if first == 0:
            os.close(status_read)
            connection.close()
            _child(first_process, spec, root, info, request["args"], status_write, group)
        os.close(status_write)
        reported = ended = None
        while ended is None:
            readable = select.select([connection, status_read], [], [], 0.5)[0]
            if connection in readable:
                message = sandbox.read_message(connection, buffer)
                if message is None:  # the launcher is gone: so is the namespace
                    os.kill(first, signal.SIGKILL)
                elif "signal" in message:
                    os.kill(first, int(message["signal"]))
            if status_read in readable:
                reported = os.read(status_read, 64) or reported
            pid, wait_status = os.waitpid(first, os.WNOHANG)
            if pid:
                ended = wait_status
        reported = reported or os.read(status_read, 64)
        if group is not None:  # written before the launcher ends, so the grader finds it with the exit status
            sandbox.write_memory_report(root, info["ip"], group.usage())
        try:
            sandbox.send_message(connection, {"status": int(reported) if reported else ended})
        except OSError:
            pass
    finally:
        if group is not None:
            group.remove()


def first_process(spec: sandbox.SandboxSpec, root: Path, info: dict, kernel_args: list[str],
                  status_write: int, group: sandbox.MemoryGroup | None = None) -> None:
    """Process 1 of the namespace: the file system, then the kernel; it reports the kernel's wait status."""
    sandbox.die_with_parent()  # if the relay is killed, the namespace ends
    if group is not None:
        group.join()  # before anything of the kernel's starts: every process it makes is in the group
    kernel = None
    status = None

    def forward(number, _frame):
        if kernel is not None:
            os.kill(kernel, number)

    for number in sandbox.RELAYED_SIGNALS:
        signal.signal(number, forward)
    if spec.mode != "none":
        sandbox.mount_proc()
    # The kernel's own console (its banner, crashes, C-level prints) goes to a file, not the grader's;
    # opened in the staging folder, where the grader reads it, before the kernel's root is changed.
    # Its standard output (ipykernel's banner) and its standard error (crashes, last words) go to
    # separate files, so that the cause of a death is not buried under a banner written late.
    console = (os.open(root / "kernel.out", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600),
               os.open(root / "kernel.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600))
    work, connection, env = sandbox.prepare(spec, root, info)
    kernel = os.fork()
    if kernel == 0:
        os.close(status_write)
        _child(start_kernel, spec, work, connection, env, kernel_args, console)
    for descriptor in console:
        os.close(descriptor)

    def alive() -> bool:
        nonlocal status
        pid, wait_status = os.waitpid(kernel, os.WNOHANG)
        if pid:
            status = wait_status
        return not pid

    sandbox.lock_socket_folder(Path(info["ip"]).parent, alive, spec.drop_user)
    if status is None:
        status = os.waitpid(kernel, 0)[1]
    # Processes the kernel left (mode none has no namespace to end them) are ended by user id
    # when the grader's SandboxSession closes: autograder.sandbox.end_user_processes.
    os.write(status_write, str(status).encode())


def start_kernel(spec: sandbox.SandboxSpec, work: Path, connection: Path, env: dict[str, str],
                 kernel_args: list[str], console: tuple[int, int]) -> None:
    """The kernel: clean descriptors, limits and user, a clean environment, then ipykernel."""
    first = os.getppid()
    for number in (*sandbox.RELAYED_SIGNALS, signal.SIGCHLD, signal.SIGPIPE):
        signal.signal(number, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(console[0], 1)
    os.dup2(console[1], 2)
    os.closerange(3, 65536)  # the zygote's socket, the relay's pipe: nothing of the grader's stays open
    sandbox.limit_and_drop(spec)
    # The kernel ends with the first process. A namespace would end it anyway, but mode none
    # has none, and without a user of its own nothing else would find it. Set after the user
    # change, which clears it; a first process that is already gone leaves nothing to wait for.
    sandbox.die_with_parent()
    if os.getppid() != first:
        os._exit(1)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(work)
    # As `python -m ipykernel_launcher` would: the working folder first on the import path.
    sys.path.insert(0, str(work))
    # Without fd capture, what the kernel writes to its descriptors 1 and 2 goes straight to
    # kernel.out and kernel.log. With it, a thread copies it there later, and a kernel that
    # dies at once (os._exit, a segmentation fault) takes its last words with it.
    # No history file: IPython would write every cell it runs, the restored hidden tests among
    # them, to an SQLite file in the kernel's own folder, where a later cell could read it.
    sys.argv = ["ipykernel_launcher", "-f", str(connection), "--IPKernelApp.capture_fd_output=False",
                "--HistoryManager.enabled=False", *kernel_args]
    sys.dont_write_bytecode = True
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()


if __name__ == "__main__":
    serve(sys.argv[1])
