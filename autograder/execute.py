"""Running a notebook in a sandboxed kernel, with nbgrader's ``Execute`` as the base.

:class:`SandboxSession` prepares one sandbox folder (sockets, a copy of the
student's files, the settings for :mod:`autograder.sandbox`) and gives the
configuration that points the kernel manager at it.
:class:`SandboxedExecute` is nbgrader's execution step with the limits that
must be enforced from the grader's side: a time limit for the whole notebook,
a cap on the output kept in memory, and a clean stop (scored cells kept, the
rest marked as not run) when the kernel dies or ignores an interrupt.
"""
from __future__ import annotations

import ast
import contextlib
import dataclasses
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from queue import Empty

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.v4 import nbbase, new_output
from nbgrader.preprocessors import Execute
from traitlets import Bool, DottedObjectName, Integer, Type, Unicode
from traitlets.config import Config

from autograder import sandbox
from autograder.course import REPO_ROOT
from autograder.verdicts import (INTERRUPTED_RESOURCE, KERNEL_STOPPED, NOT_RUN, STOP_RESOURCE, is_test_cell,
                                 overflow_record)
from nlpbook.checks import CHECK_MIME, GRADING_ENV

# The notebook metadata key where SandboxedExecute records why it stopped a notebook early (a
# :class:`Stop` as a dict). The grader writes it; a submission's own value is removed before it runs.
STOP_KEY = "autograder_stop"


@dataclass(frozen=True)
class Stop:
    """Why a notebook stopped before its last cell: ``kind`` is ``"died"`` (the kernel exited or was
    killed), ``"cell-timeout"`` (a cell ignored the interrupt at its limit) or ``"notebook-timeout"``;
    ``cell`` the index of the cell that was running (None when the notebook's limit fell between cells),
    ``reason`` in words."""

    kind: str
    cell: int | None
    reason: str

class QuickReadyClient(AsyncKernelClient):
    """jupyter_client's kernel client, minus a fixed wait when the kernel is ready.

    After the kernel's first reply, jupyter_client drains the IOPub channel until it has
    been quiet for 0.2 s, on every kernel start.  The messages it drains (the kernel's
    startup status) are already queued by then; nbclient ignores any that arrive later,
    since they answer no request of a cell.
    """

    async def _async_wait_for_ready(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout if timeout is not None else float("inf"))
        while True:
            self.kernel_info()
            try:
                reply = await self.shell_channel.get_msg(timeout=1)
            except Empty:
                reply = None
            if reply is not None and reply["msg_type"] == "kernel_info_reply":
                try:  # IOPub is connected once it has delivered a message
                    await self.iopub_channel.get_msg(timeout=0.2)
                except Empty:
                    pass
                else:
                    self._handle_kernel_info_reply(reply)
                    break
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout} seconds")
        while True:
            try:
                await self.iopub_channel.get_msg(timeout=0.01)
            except Empty:
                break

    wait_for_ready = _async_wait_for_ready


class SandboxKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel command is the sandbox launcher, whatever the notebook asks for."""

    client_class = DottedObjectName("autograder.execute.QuickReadyClient")
    client_factory = Type(klass="autograder.execute.QuickReadyClient")

    socket_root = Unicode("", help="The session's socket folder; each kernel gets a folder of its own in it.",
                          ).tag(config=True)
    socket_owner = Integer(-1, help="The user id that owns a kernel's socket folder until it is locked.",
                           ).tag(config=True)

    async def _async_pre_start_kernel(self, **kw):
        # The sandbox locks a kernel's socket folder once its sockets are bound; the next kernel
        # of the session (an assignment of several notebooks) needs a folder of its own.
        if self.socket_root:
            folder = Path(tempfile.mkdtemp(prefix="kernel-", dir=self.socket_root))
            if self.socket_owner >= 0:
                os.chown(folder, self.socket_owner, self.socket_owner)
            self.ip = str(folder / "kernel")
        return await super()._async_pre_start_kernel(**kw)

    @property
    def kernel_spec(self) -> KernelSpec:
        return KernelSpec(argv=sandbox.python_command("autograder.sandbox", "{connection_file}"),
                          display_name="Python 3 (sandboxed)", language="python")


def _cell_name(cell, index: int) -> str:
    """A cell as a reader finds it in the feedback: its nbgrader id where it has one (the index
    counts every cell, Markdown too, and the feedback numbers none of them)."""
    grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
    return f"cell {index} ({grade_id})" if grade_id else f"cell {index}"


def _error(ename: str, evalue: str):
    return new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


@contextlib.contextmanager
def _outputs_unvalidated():
    """Build each output without checking it against the notebook schema, for the time of a run.

    nbclient validates every output message as it arrives (nbformat's ``new_output``), a
    tenth of a second per notebook; nbconvert validates the whole notebook again after each
    preprocessor, so an output that breaks the schema still fails the run, one step later.
    """
    original = nbbase.validate
    nbbase.validate = lambda node, ref=None: None
    try:
        yield
    finally:
        nbbase.validate = original


class SandboxedExecute(Execute):
    """nbgrader's ``Execute`` in a sandboxed kernel, with whole-notebook limits."""

    notebook_timeout = Integer(600, help="Seconds the whole notebook may run.").tag(config=True)
    max_output_bytes = Integer(1_000_000, help="Output kept per notebook; the rest is dropped.").tag(config=True)
    max_record_bytes = Integer(
        64_000_000, help="Check records kept per notebook (a trained model's weights among them); past it "
                         "one overflow record stands for the rest, so the checks it replaces fail.").tag(config=True)

    # Widget state travels in comm messages, outside output() and its allowance, and would land in
    # the notebook's metadata, which the feedback page writes out: grading keeps none.
    store_widget_state = Bool(False, help="Keep ipywidgets' state in the notebook (never, when grading).").tag(
        config=True)

    hide_expected = Bool(False, help="Send test cells to the kernel with the expected value of every "
                                     "expect_close call replaced by None (a student's run: see "
                                     "without_expected_values).").tag(config=True)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("kernel_manager_class", SandboxKernelManager)
        super().__init__(*args, **kwargs)

    def preprocess(self, nb, resources=None, km=None):
        self._cell_timeout = self.timeout
        self._deadline = time.monotonic() + self.notebook_timeout
        self._stopped: Stop | None = None
        self._output_bytes = 0
        self._record_bytes = 0
        self._records_overflowed = False
        self._truncated = False
        nb.metadata.pop(STOP_KEY, None)
        resources = {} if resources is None else resources
        resources.pop(STOP_RESOURCE, None)
        resources[INTERRUPTED_RESOURCE] = {}
        with _outputs_unvalidated():
            nb, resources = super().preprocess(nb, resources, km)
        if self._stopped is not None:
            nb.metadata[STOP_KEY] = dataclasses.asdict(self._stopped)
            resources[STOP_RESOURCE] = self._stopped.reason
        return nb, resources

    async def _async_handle_timeout(self, timeout, cell=None):
        self._interrupted = True  # nbclient interrupts the kernel at a cell's limit
        return await super()._async_handle_timeout(timeout, cell)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code" or not cell.source.strip():
            return cell, resources
        if self._stopped is None and time.monotonic() >= self._deadline:
            self._stop(Stop("notebook-timeout", None,
                            f"the notebook ran past its time limit of {self.notebook_timeout} s"))
        if self._stopped is not None:
            cell.outputs = [_error(NOT_RUN, f"not run: {self._stopped.reason}")]
            return cell, resources
        self.timeout = max(1, min(self._cell_timeout, int(self._deadline - time.monotonic()) + 1))
        # A cell whose limit is the rest of the notebook's time was stopped by the notebook's limit,
        # even when the kernel is slow to answer the interrupt (a busy machine): say so.
        notebook_limit = self.timeout < self._cell_timeout
        # What the cell shows if it is interrupted at its limit and stops (nbgrader appends it as
        # an error): which limit it met, not nbgrader's "No reply from kernel before timeout".
        why = (f"the notebook reached its time limit of {self.notebook_timeout} s while this cell ran"
               if notebook_limit else f"this cell ran past its time limit of {self.timeout} s")
        self.error_on_timeout = {"ename": "CellTimeoutError", "evalue": f"interrupted: {why}",
                                 "traceback": [f"\x1b[0;31mCellTimeoutError\x1b[0m: interrupted: {why}"]}
        self._interrupted = False
        name = _cell_name(cell, index)
        source = cell.source
        if self.hide_expected and is_test_cell(cell):
            cell.source = without_expected_values(source)
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            self._stop(Stop("died", index, f"the kernel died while {name} ran ({self._exit_status()})"),
                       kill=False)
        except CellTimeoutError:
            if notebook_limit:
                self._stop(Stop("notebook-timeout", index,
                                f"the notebook ran past its time limit of {self.notebook_timeout} s in {name}"))
            else:
                self._stop(Stop("cell-timeout", index,
                                f"{name} ran past its time limit of {self.timeout} s and ignored the interrupt"))
        else:
            if self._interrupted:  # and it stopped: the notebook goes on (the verdict step says why it failed)
                resources[INTERRUPTED_RESOURCE][index] = f"interrupted: {why}"
            return cell, resources
        finally:
            cell.source = source  # the graded notebook and the feedback show the test as written
            # A display that a later cell updates (a handle kept, or a new display with its id) stays
            # as this cell left it: code run after a hidden test must not rewrite an earlier output.
            self.clear_display_id_mapping(index)
        cell.outputs.append(_error(KERNEL_STOPPED, self._stopped.reason))
        return cell, resources

    def _exit_status(self) -> str:
        process = getattr(getattr(self.km, "provisioner", None), "process", None)
        code = process.poll() if process is not None else None
        if code is None:
            return "no exit status"
        status = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        socket_root, ip = getattr(self.km, "socket_root", ""), getattr(self.km, "ip", "")
        memory = sandbox.memory_report(Path(socket_root).parent, sandbox.kernel_name(ip)) if (
            socket_root and code == -signal.SIGKILL) else {}
        if memory.get("oom_kills"):  # the operating system killed it for the group's memory, not a bug
            status += (f": the notebook's processes together reached the sandbox's memory limit of "
                       f"{memory['limit_mb']} MB")
        return status

    def _stop(self, stop: Stop, kill: bool = True) -> None:
        self._stopped = stop
        self.log.warning("Stopping the notebook: %s", stop.reason)
        if kill and self.km is not None:
            try:
                run_sync(self.km.shutdown_kernel)(now=True)
            except Exception as error:  # the kernel may be gone already
                self.log.debug("shutdown after stop: %s", error)

    def _update_display_id(self, display_id, msg):
        # nbclient applies an update_display_data here, without output(): the same allowance
        # holds, or `handle.update(huge)` in a loop would put any amount into the graded notebook.
        if msg["header"]["msg_type"] == "update_display_data":
            self._output_bytes += len(str(msg.get("content", "")))
            if self._output_bytes > self.max_output_bytes:
                return None
        return super()._update_display_id(display_id, msg)

    def output(self, outs, msg, display_id, cell_index):
        size = len(str(msg.get("content", "")))
        is_record = msg["msg_type"] == "display_data" and CHECK_MIME in msg["content"].get("data", {})
        if is_record:
            # Check records get their own allowance, so that a flood of printing cannot push a
            # test's results out; a record past it is replaced by one overflow record, never
            # dropped silently (a missing record would make a check look as if no test made it).
            self._record_bytes += size
            if self._record_bytes <= self.max_record_bytes:
                return super().output(outs, msg, display_id, cell_index)
            if not self._records_overflowed:
                self._records_overflowed = True
                outs.append(new_output("display_data", data={CHECK_MIME: overflow_record(self.max_record_bytes)}))
            return None
        self._output_bytes += size
        if self._output_bytes <= self.max_output_bytes:
            return super().output(outs, msg, display_id, cell_index)
        if not self._truncated:
            self._truncated = True
            note = new_output("stream", name="stdout",
                              text=f"\n[output truncated: more than {self.max_output_bytes} bytes]\n")
            outs.append(note)
        return None


def without_expected_values(source: str) -> str:
    """``source`` with the expected value of every ``expect_close`` call replaced by ``None``.

    A student's kernel runs the test cells, so the expected values they pass exist there, even
    lazy ones (``lambda: reference(x)``), which ``nlpbook.checks`` never calls in a student's run
    but a student's own ``expect_close``, defined over the course's, could call and send out as
    its "actual" value: every value check would then vouch for itself. The grader takes expected
    values from the reference run, so the kernel needs none. Only the argument's text changes,
    its lines kept, so tracebacks point at the lines the instructor wrote; a cell that does not
    parse is sent as it is.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "expect_close":
            expected = node.args[1] if len(node.args) > 1 else next(
                (keyword.value for keyword in node.keywords if keyword.arg == "expected"), None)
            if expected is not None:
                spans.append(expected)
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode()))
    data = source.encode()
    for node in sorted(spans, key=lambda n: (n.lineno, n.col_offset), reverse=True):
        start = offsets[node.lineno - 1] + node.col_offset  # ast's offsets count UTF-8 bytes
        end = offsets[node.end_lineno - 1] + node.end_col_offset
        data = data[:start] + b"None" + b"\n" * (node.end_lineno - node.lineno) + data[end:]
    return data.decode()


REPORT_WAIT = 5.0  # seconds: how long SandboxSession.memory waits for a relay's report


@dataclass
class SandboxSession:
    """One sandbox folder, for one notebook run: ``with SandboxSession(...) as config: ...``."""

    mode: str
    role: str  # "student" or "reference": how nlpbook.checks records
    hide: list[Path]
    # relative name -> the assignment's own file. Only these reach the kernel's folder: never a
    # notebook, which the kernel receives cell by cell over its sockets. The notebook nbgrader
    # grades holds the hidden tests once they are restored, and a file the kernel can read is
    # one its code can copy into its output.
    shipped: dict[Path, Path] = field(default_factory=dict)
    drop_user: bool = True
    limits: sandbox.Limits = field(default_factory=sandbox.Limits)
    uid: int = sandbox.SANDBOX_UID
    zygote: str = ""  # the socket of the zygote that forks the kernel (autograder.zygote)
    env: dict[str, str] = field(default_factory=dict)  # added to the kernel's environment
    root: Path | None = None
    memory_group: str = field(default="", init=False)  # where its kernels' groups go: "" for none

    def __enter__(self) -> Config:
        self.root = Path(tempfile.mkdtemp(prefix="nlpbook-sandbox-"))
        self.root.chmod(0o755)
        ipc, files = self.root / "ipc", self.root / "files"
        for folder in (ipc, files, self.root / "work"):
            folder.mkdir()
        for relative, path in self.shipped.items():
            (files / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, files / relative)
            (files / relative).chmod(0o444)
        files.chmod(0o700)  # the grader's staging copy; the kernel gets its own in work/
        ipc.chmod(0o711)  # kernels reach their own folder in it, and list nothing
        env = {**sandbox.kernel_environment(), **self.env, GRADING_ENV: self.role}
        self.memory_group = sandbox.memory_group_for(self.mode)
        sandbox.SandboxSpec(mode=self.mode, uid=self.uid, drop_user=self.drop_user,
                            hide=[str(p) for p in self.hide], expose=[str(p) for p in exposed_paths(self.hide)],
                            limits=self.limits, env=env, zygote=self.zygote,
                            memory_group=self.memory_group).write(self.root)
        config = Config()
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = str(ipc / "kernel")
        config.SandboxKernelManager.socket_root = str(ipc)
        config.SandboxKernelManager.socket_owner = self.uid if self.drop_user else -1
        config.SandboxedExecute.hide_expected = self.role == "student"
        return config

    def console(self, errors_only: bool = False) -> str:
        """What the kernel printed outside the notebook (its banner, then a crash), for error messages."""
        texts = [path.read_text(encoding="utf-8", errors="replace")
                 for path in (self.root / "kernel.out", self.root / "kernel.log")[errors_only:] if path.exists()]
        return "".join(texts) or "(nothing)"

    def memory(self, wait: float = REPORT_WAIT) -> dict:
        """What the memory groups of the kernels that ended here measured: the highest peak, the kills
        together (empty without a group).

        A kernel's relay writes its report once every process of the kernel has ended.  When the
        kernel did not answer its shutdown request, nbclient kills its launcher and goes on, and the
        relay writes a moment later (a fork bomb's 256 processes take a while to end): so the report
        of every kernel started here is waited for, ``wait`` seconds at most.
        """
        if self.memory_group:
            expected = [self.root / sandbox.MEMORY_FILE.format(kernel=folder.name)
                        for folder in (self.root / "ipc").glob("kernel-*")]
            deadline = time.monotonic() + wait
            while not all(path.exists() for path in expected) and time.monotonic() < deadline:
                time.sleep(0.05)
        return sandbox.memory_report(self.root)

    def __exit__(self, *exc) -> None:
        if self.drop_user and not sandbox.end_user_processes(self.uid):
            raise RuntimeError(f"processes of the sandbox user {self.uid} would not end")
        shutil.rmtree(self.root, ignore_errors=True)


def exposed_paths(hidden: list[Path] = ()) -> list[Path]:
    """What the kernel must read: the Python installation, the import path and the ``nlpbook`` package.

    Nothing else of the repository: a virtual environment inside it comes with the
    installation, the package by itself, and solutions, tests and every other file of the
    instructor's stay out of the kernel's file system (:func:`autograder.sandbox.build_file_system`).
    A folder on the import path inside a ``hidden`` one (a course graded where it lives, run
    from its own folder) is left out as well.
    """
    import importlib.util

    repo = REPO_ROOT  # the folder that holds the grader's packages
    hidden = [Path(p).resolve() for p in hidden]
    package = Path(next(iter(importlib.util.find_spec("nlpbook").submodule_search_locations))).resolve()
    prefixes = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    candidates = {*prefixes, package, Path(sys.executable).resolve().parent.parent}
    # The folder the grader was started from heads the path of `python -m autograder`; it is the
    # instructor's (a home folder, with its keys and the grader's cache), and no kernel imports from it.
    started_in = Path.cwd().resolve()
    for entry in sys.path:
        path = Path(entry).resolve() if entry and os.path.isdir(entry) else None
        # Folders of the repository on the path (tests/ under pytest) are the instructor's, not Python's.
        if path is not None and path != started_in and (
                repo not in path.parents or any(p in path.parents for p in prefixes)):
            candidates.add(path)
    # The repository itself, or a folder around it, would bring all of it; so would a hidden folder.
    candidates = sorted(p for p in candidates if p != repo and p not in repo.parents
                        and not any(p == h or h in p.parents or p in h.parents for h in hidden))
    return [p for p in candidates if not any(other in p.parents for other in candidates)]
