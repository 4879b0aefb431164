"""Real servers on loopback for the tests: a PostgreSQL cluster and a Dask cluster with two workers.

Each starts in a temporary folder, listens on 127.0.0.1 only, and is stopped
when its ``with`` block ends.  ``.ci/run`` installs PostgreSQL (Debian's
``postgresql`` package); Dask comes from requirements.txt.
"""
from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with status {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {seconds} s")


def postgres_binaries() -> Path | None:
    """The folder with ``initdb`` and ``pg_ctl`` (Debian keeps them out of PATH)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@contextlib.contextmanager
def postgres_server():
    """A throwaway PostgreSQL cluster; yields a URL for a fresh database ``course`` (user ``grader``)."""
    binaries = postgres_binaries()
    if binaries is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql; .ci/run does)")
    # Not under pytest's folders: they are closed to the `postgres` account.
    folder = Path(tempfile.mkdtemp(prefix="nlpbook-postgres-"))
    data = folder / "pgdata"
    data.mkdir()
    as_user: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root: use the account its package creates
        account = pwd.getpwnam("postgres")
        for path in (folder, data):
            os.chown(path, account.pw_uid, account.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    subprocess.run([*as_user, str(binaries / "initdb"), "-D", str(data), "-U", "grader", "-A", "trust",
                    "--no-sync"], check=True, capture_output=True, cwd="/")
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {data} -c fsync=off"
    subprocess.run([*as_user, str(binaries / "pg_ctl"), "-D", str(data), "-o", options, "-l",
                    str(data / "server.log"), "-w", "start"], check=True, capture_output=True, cwd="/")
    try:
        subprocess.run([*as_user, str(binaries / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "grader",
                        "course"], check=True, capture_output=True, cwd="/")
        yield f"postgresql://grader@127.0.0.1:{port}/course"
    finally:
        subprocess.run([*as_user, str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True, cwd="/")
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def dask_cluster(folder: Path, workers: int = 2):
    """A Dask scheduler and ``workers`` single-threaded workers on loopback; yields the scheduler's address."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    bin_dir = Path(sys.executable).parent
    processes = [subprocess.Popen([str(bin_dir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                   "--no-dashboard"], cwd=folder, stdout=subprocess.DEVNULL,
                                  stderr=open(folder / "scheduler.log", "wb"))]
    try:
        _wait_for_port(port, processes[0], "the Dask scheduler")
        for index in range(workers):
            processes.append(subprocess.Popen(
                [str(bin_dir / "dask"), "worker", address, "--nthreads", "1", "--nworkers", "1", "--no-dashboard",
                 "--host", "127.0.0.1", "--name", f"worker-{index}"],
                cwd=folder, stdout=subprocess.DEVNULL, stderr=open(folder / f"worker-{index}.log", "wb")))
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)
        yield address
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()


@contextlib.contextmanager
def file_server(folder: Path):
    """An HTTP server on loopback serving ``folder``; yields (base URL, list of requested paths)."""
    import functools
    import http.server
    import threading

    requests: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):
            requests.append(self.path)
            super().do_GET()

        def log_message(self, *args):  # keep the test output clean
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", requests
    finally:
        server.shutdown()
        server.server_close()
