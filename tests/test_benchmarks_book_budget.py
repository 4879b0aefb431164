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


def _grandchild(code):
    """A parent that runs ``code`` in a child, as a build starts a page's kernel."""
    return subprocess.Popen([sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, '-c', {code!r}])"])


def test_kernel_memory_credits_a_child_to_the_page_running_when_it_started():
    # A child holding 300 MiB.
    parent = _grandchild("b = b'x' * (300 * 2**20); import time; time.sleep(1.5)")
    with book_budget.KernelMemory(psutil.Process(parent.pid), every=0.05) as memory:
        memory.page = "book/xx/big"
        parent.wait()
        time.sleep(0.1)
    assert 300 <= memory.peak_mib["book/xx/big"] < 600
    assert set(memory.peak_mib) == {"book/xx/big"}


def test_kernel_memory_keeps_the_largest_sample_not_the_last():
    parent = _grandchild("import time; b = b'x' * (300 * 2**20); time.sleep(1.0); del b; time.sleep(1.5)")
    with book_budget.KernelMemory(psutil.Process(parent.pid), every=0.05) as memory:
        memory.page = "book/xx/big"
        parent.wait()
    assert memory.peak_mib["book/xx/big"] >= 300


def test_a_kernel_started_for_one_page_is_not_credited_to_the_next():
    parent = _grandchild("import time; time.sleep(1.0); b = b'x' * (200 * 2**20); time.sleep(1.5)")
    with book_budget.KernelMemory(psutil.Process(parent.pid), every=0.05) as memory:
        memory.page = "book/xx/first"
        deadline = time.monotonic() + 20
        while not psutil.Process(parent.pid).children() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)  # sampled while the first page executes
        memory.page = "book/xx/second"
        parent.wait()
    assert memory.peak_mib["book/xx/first"] >= 200
    assert memory.peak_mib.get("book/xx/second", 0) == 0


def test_the_budget_tables_give_minutes_and_the_largest_kernel_and_judge_both_targets(monkeypatch, capsys):
    builds = iter([
        (0, 660.0, {"book/05-t/a": 120.0, "book/05-t/b": 60.0, "book/06-b/c": 30.0},
         {"book/05-t/a": 900.0, "book/05-t/b": 1500.0, "book/06-b/c": 700.0}, ""),
        (0, 5.0, {"book/05-t/a": 2.0}, {}, ""),   # fast, but it ran a page again
    ])
    monkeypatch.setattr(book_budget, "build", lambda out, env: next(builds))
    assert book_budget.main(["--profile", "quick"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith(("05-t ", "06-b "))}
    assert rows == {"05-t": ["2", "3.0", "1500"], "06-b": ["1", "0.5", "700"]}
    assert "cold build:          660.0 s (11.0 min; 3 pages executed, 210.0 s of it in the pages)" in out
    assert "target < 10 min: MISSED" in out
    assert "no-change rebuild:     5.0 s (1 pages executed)" in out and out.rstrip().endswith("MISSED")


def test_record_appends_each_teaching_page_and_the_build_to_the_record_of_running_times(monkeypatch, tmp_path):
    from nlpbook import running_times

    seconds = {"book/05-transformers/bpe": 120.0, "book/06-bert/wordpiece": 30.0, "book/06-bert/index": 3.0,
               "book/preface": 2.0}
    builds = iter([(0, 300.0, seconds, {"book/05-transformers/bpe": 900.0, "book/06-bert/wordpiece": 700.0}, ""),
                   (0, 4.0, {}, {}, "")])
    monkeypatch.setattr(book_budget, "build", lambda out, env: next(builds))
    monkeypatch.setattr(running_times, "RECORD", tmp_path / "times.json")
    assert book_budget.main(["--profile", "quick", "--record"]) == 0
    runs = running_times.timings(path=tmp_path / "times.json")
    # the opening page and the preface ran in the build but are not timed pages
    assert [(run.kind, run.name, run.seconds, run.peak_mib) for run in runs] == [
        ("page", "05-transformers/bpe", 120.0, 900), ("page", "06-bert/wordpiece", 30.0, 700),
        ("build", "book", 300.0, 900)]
    assert runs[-1].extra == {"pages": 4, "pages_seconds": 155.0, "rebuild_seconds": 4.0, "rebuild_pages": 0}
    assert all(run.profile == "quick" for run in runs) and runs[0].how == running_times.IN_A_BUILD
