"""benchmarks/page_times.py: pages run alone, timed, and recorded only when they ran."""
from __future__ import annotations

import re
import sys

import nbformat
import pytest

from conftest import REPO
from nlpbook import running_times

sys.path.insert(0, str(REPO / "benchmarks"))
import page_times  # noqa: E402


def test_a_page_runs_alone_in_its_folder_and_is_recorded(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(running_times, "RECORD", tmp_path / "times.json")
    assert page_times.main(["--profile", "quick", "--record", "04-attention/from-windows-to-attention"]) == 0
    [run] = running_times.timings(path=tmp_path / "times.json")
    assert (run.kind, run.name, run.profile, run.how) == ("page", "04-attention/from-windows-to-attention", "quick",
                                                          "alone")
    # The kernel imports torch, so the peak is the kernel's, not the script's alone.
    assert run.seconds > 0 and run.peak_mib > 150
    assert re.search(r"^04-attention/from-windows-to-attention +ran ", capsys.readouterr().out, re.M)


def test_a_page_that_fails_is_shown_and_not_recorded(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(running_times, "RECORD", tmp_path / "times.json")
    outcomes = {"07-adam/adam": (1, 3.0, 300.0, "NameError: oops"), "07-adam/warmup": (0, 30.0, 500.0, "")}
    monkeypatch.setattr(page_times, "run_measured", lambda command, env: outcomes[
        command[3].removeprefix(str(REPO / "book") + "/").removesuffix(".md")])
    assert page_times.main(["--record", "07-adam/adam", "07-adam/warmup"]) == 1
    assert [run.name for run in running_times.timings(path=tmp_path / "times.json")] == ["07-adam/warmup"]
    out = capsys.readouterr().out
    assert "FAILED" in out and "---- 07-adam/adam ----\nNameError: oops" in out


def test_a_chapter_names_its_pages_and_an_unknown_page_is_refused(monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(page_times, "run_measured", lambda command, env: ran.append(command[3]) or (0, 1.0, 1.0, ""))
    assert page_times.main(["--chapter", "07-adam"]) == 0
    assert [path.rsplit("/", 1)[1] for path in ran] == ["momentum-rmsprop.md", "adam.md", "warmup.md",
                                                       "optimizers-compared.md"]
    with pytest.raises(SystemExit):
        page_times.main(["07-adam/nothing"])
    assert "no page book/07-adam/nothing.md" in capsys.readouterr().err


def test_keep_writes_the_executed_notebook_with_its_outputs(tmp_path):
    assert page_times.main(["--profile", "quick", "--keep", str(tmp_path), "04-attention/from-windows-to-attention"]) == 0
    notebook = nbformat.read(tmp_path / "04-attention" / "from-windows-to-attention.ipynb", as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert any(cell.outputs for cell in code)
    assert all("shell.execute_reply" in cell.metadata["execution"] for cell in code)
