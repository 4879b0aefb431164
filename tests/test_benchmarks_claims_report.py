"""benchmarks/claims_report.py's summary, on a log written by nlpbook.claim itself."""
from __future__ import annotations

import sys

import pytest

from conftest import REPO
from nlpbook import claims

sys.path.insert(0, str(REPO / "benchmarks"))
import claims_report  # noqa: E402


def test_the_report_lists_every_claim_of_the_log_and_counts_them(monkeypatch, tmp_path, capsys):
    log = tmp_path / "claims.jsonl"
    monkeypatch.setenv(claims.LOG_VARIABLE, str(log))
    monkeypatch.setenv("NLPBOOK_PROFILE", "standard")
    claims.claim(True, "attention helps", gap=2.5)
    with pytest.raises(claims.ClaimError):
        claims.claim(False, "the Transformer wins", transformer=6.21, lstm=4.63)
    monkeypatch.setenv("NLPBOOK_PROFILE", "quick")
    claims.claim(False, "three end level")
    assert claims_report.main(["--log", str(log)]) == 1          # a claim failed
    out = capsys.readouterr().out
    assert "| held |" in out and "| attention helps | gap = 2.5 |" in out
    assert "| FAILED |" in out and "transformer = 6.21, lstm = 4.63" in out
    assert "3 claims: 1 held, 1 FAILED, 1 unchecked" in out


def test_a_log_of_held_and_unchecked_claims_passes(monkeypatch, tmp_path, capsys):
    log = tmp_path / "claims.jsonl"
    monkeypatch.setenv(claims.LOG_VARIABLE, str(log))
    monkeypatch.setenv("NLPBOOK_PROFILE", "standard")
    claims.claim(True, "fine")
    assert claims_report.main(["--log", str(log)]) == 0


def test_a_damaged_log_names_the_file_and_line(tmp_path):
    log = tmp_path / "claims.jsonl"
    log.write_text('{"statement": "x", "status": "held"}\nnot json\n')
    with pytest.raises(SystemExit, match=r"claims\.jsonl:2: not a JSON claim record"):
        claims_report.main(["--log", str(log)])


def test_the_count_is_of_claims_not_of_statuses(tmp_path, capsys):
    log = tmp_path / "claims.jsonl"
    log.write_text('{"statement": "a", "status": "held"}\n{"statement": "b", "status": "held"}\n')
    assert claims_report.main(["--log", str(log)]) == 0
    assert "2 claims: 2 held, 0 FAILED, 0 unchecked" in capsys.readouterr().out


def test_a_failed_build_fails_the_report_and_an_old_log_is_not_read_again(monkeypatch, tmp_path, capsys):
    out = tmp_path / "build"
    out.mkdir()
    (out / "claims.jsonl").write_text('{"statement": "from last week", "status": "FAILED"}\n')
    monkeypatch.setattr(claims_report, "build", lambda out, env: (0, 60.0, {}, {}, ""))
    assert claims_report.main(["--profile", "quick", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "0 claims" in text and "from last week" not in text
    monkeypatch.setattr(claims_report, "build", lambda out, env: (2, 60.0, {}, {}, "the build's tail"))
    assert claims_report.main(["--profile", "quick", "--out", str(out)]) == 1
