"""The pieces of benchmarks/book_budget.py that a full build would take minutes to exercise."""
from __future__ import annotations

import subprocess
import sys
import time

import psutil

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import book_budget  # noqa: E402


def test_the_log_lines_of_myst_nb_give_the_page_and_its_seconds():
    line = f"{REPO}/book/05-transformers/bpe.md: Executed notebook in 13.52 seconds [mystnb]"
    match = book_budget.EXECUTED.match(line)
    assert match and match["path"] == f"{REPO}/book/05-transformers/bpe" and float(match["seconds"]) == 13.52
    assert book_budget.EXECUTING.match(f"{REPO}/book/05-transformers/bpe.md: Executing notebook using local CWD [mystnb]")
    assert not book_budget.EXECUTING.match(line)


def test_pages_are_grouped_by_chapter_folder():
    assert book_budget.chapter_of("book/05-transformers/bpe") == "05-transformers"
    assert book_budget.chapter_of("book/instructors/grading-safely") == "instructors"


def test_kernel_memory_credits_a_child_to_the_page_running_when_it_started():
    # A parent that starts a child holding 300 MiB, as a build starts a page's kernel.
    grow = "b = b'x' * (300 * 2**20); import time; time.sleep(1.5)"
    parent = subprocess.Popen([sys.executable, "-c",
                               f"import subprocess, sys; subprocess.run([sys.executable, '-c', {grow!r}])"])
    with book_budget.KernelMemory(psutil.Process(parent.pid), every=0.05) as memory:
        memory.page = "book/xx/big"
        parent.wait()
        time.sleep(0.1)
    assert 300 <= memory.peak_mib["book/xx/big"] < 600
    assert set(memory.peak_mib) == {"book/xx/big"}
