"""What gradings into different ``--out`` folders share: the registered assignment and the solution's
reference run, keyed by the course, the grading code and the kernel's environment (autograder.grade)."""
from __future__ import annotations

import logging

from autograder import grade
from autograder.grade import GradingRun


def _run(tmp_path, out: str, key: str = "key") -> GradingRun:
    return GradingRun(assignment="04-attention", submissions_dir=tmp_path / "submissions", out=tmp_path / out,
                      course_key=key)


def test_the_key_changes_with_the_profile_and_the_device(monkeypatch):
    # A class graded in quick and then in standard must not be compared with the quick solution's records.
    monkeypatch.setenv("NLPBOOK_PROFILE", "quick")
    quick = grade._kernel_environment({})
    monkeypatch.setenv("NLPBOOK_PROFILE", "standard")
    standard = grade._kernel_environment({})
    monkeypatch.setenv("NLPBOOK_DEVICE", "cuda")
    on_gpu = grade._kernel_environment({})
    # what the kernels are given wins over this process's environment: a sandbox's say the CPU
    sandboxed = grade._kernel_environment({"NLPBOOK_DEVICE": "cpu", "CUDA_VISIBLE_DEVICES": ""})
    assert len({tuple(quick), tuple(standard), tuple(on_gpu), tuple(sandboxed)}) == 4
    assert "NLPBOOK_DEVICE=cpu" in sandboxed and "NLPBOOK_DEVICE=cuda" in on_gpu
    assert any(term.startswith("torch ") for term in quick)


def test_the_shared_cache_is_the_named_folder_the_user_cache_or_off(monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOGRADER_CACHE", str(tmp_path / "cache"))
    assert grade.shared_cache() == tmp_path / "cache"
    monkeypatch.setenv("AUTOGRADER_CACHE", "off")
    assert grade.shared_cache() is None
    monkeypatch.delenv("AUTOGRADER_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert grade.shared_cache() == tmp_path / "xdg" / "nlpbook-autograder"


def test_a_run_into_another_folder_reuses_what_a_run_kept_under_the_same_key(monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOGRADER_CACHE", str(tmp_path / "cache"))
    first = _run(tmp_path, "out1")
    assert grade._reuse(first, "reference") is None
    kept = grade._keep(first, "reference", {"attention.json": b'{"cell": []}', "more/deep.json": b"[]"})
    assert kept == first.work / "courses" / "key" / "reference"
    second = _run(tmp_path, "out2")
    reused = grade._reuse(second, "reference")
    assert reused == second.work / "courses" / "key" / "reference"
    assert grade._files(reused) == grade._files(kept) == {"attention.json": b'{"cell": []}', "more/deep.json": b"[]"}
    assert grade._reuse(_run(tmp_path, "out3", key="another"), "reference") is None
    assert grade._reuse(second, "registration") is None


def test_with_the_cache_off_a_run_keeps_its_own_copy_only(monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOGRADER_CACHE", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    first = _run(tmp_path, "out1")
    grade._keep(first, "reference", {"attention.json": b"{}"})
    assert grade._reuse(first, "reference") is not None  # its own .work still serves a later run into it
    assert grade._reuse(_run(tmp_path, "out2"), "reference") is None
    assert not (tmp_path / "xdg").exists()


def test_a_cache_that_cannot_be_written_is_named_in_a_warning_and_grading_goes_on(monkeypatch, tmp_path, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("AUTOGRADER_CACHE", str(blocker))
    run = _run(tmp_path, "out1")
    with caplog.at_level(logging.WARNING, logger="autograder"):
        kept = grade._keep(run, "reference", {"attention.json": b"{}"})
    assert (kept / "attention.json").read_bytes() == b"{}"
    assert f"could not write the shared cache {blocker}" in caplog.text


def test_two_runs_saving_the_same_folder_keep_one_complete_copy(tmp_path):
    folder = tmp_path / "courses" / "key" / "reference"
    grade._save_atomically(folder, {"a.json": b"first"})
    grade._save_atomically(folder, {"a.json": b"second", "b.json": b"x"})  # same key: the first stays whole
    assert grade._files(folder) == {"a.json": b"first"}
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]
