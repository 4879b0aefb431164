"""nlpbook.recorded: the full-profile runs the book shows, and the errors a damaged record gives."""
from __future__ import annotations

import json
import re

import pytest

from conftest import MYST_HEADER, REPO
from nlpbook import recorded
from nlpbook.results import Runs, Table, to_record


def test_every_recorded_run_is_a_full_run_on_a_gpu_of_a_page_in_the_table_of_contents():
    runs = recorded.full_profile_runs()
    toc = (REPO / "_toc.yml").read_text()
    assert runs, "the book shows full-profile runs, so the record must hold some"
    for run in runs:
        assert (REPO / "book" / f"{run.page}.md").is_file() and f"book/{run.page}" in toc, run.page
        assert run.profile == "full" and run.gpu and run.seconds > 0, run.page
        assert run.where.startswith("one NVIDIA") and run.where.endswith(run.date)


def test_every_page_that_reads_a_record_finds_its_run():
    """A page that shows a full-profile run names one that is recorded (a build would fail later)."""
    recorded_pages = {run.page for run in recorded.full_profile_runs()}
    for page in sorted((REPO / "book").glob("*/*.md")):
        for name in re.findall(r'full_profile_run\(\s*"([^"]+)"', page.read_text()):
            assert name in recorded_pages, f"{page.relative_to(REPO)} reads the run of {name}, which is not recorded"


def write(tmp_path, entries, name="record.json"):
    path = tmp_path / name  # a new name for new contents: the record is read once per process
    path.write_text(json.dumps(entries))
    return path


ENTRY = dict(page="05-a/x", profile="full", environment={"gpu": "NVIDIA H200"}, started="2026-11-27 15:00:00 UTC",
             seconds=12.5, cells=[], glued={"ppl": 2.75}, displays=["| a |"], claims=[])


def test_a_run_gives_its_glued_values_and_says_where_it_ran(tmp_path):
    run = recorded.full_profile_run("05-a/x", write(tmp_path, [ENTRY]))
    assert run.value("ppl") == 2.75 and run.displays == ["| a |"] and run.seconds == 12.5
    assert run.where == "one NVIDIA H200, on 2026-11-27" and run.printed == ""  # a run kept without its log
    assert recorded.full_profile_run("05-a/x", write(tmp_path, [ENTRY | {"printed": "sample"}], "kept.json")).printed == "sample"


def test_a_value_the_run_did_not_glue_names_the_record_the_page_and_what_it_glued(tmp_path):
    run = recorded.full_profile_run("05-a/x", write(tmp_path, [ENTRY]))
    with pytest.raises(recorded.RecordError, match=r"record\.json: the full run of 05-a/x glued no 'loss'; it glued ppl"):
        run.value("loss")


def test_a_page_not_run_and_a_missing_record_give_nothing(tmp_path):
    assert recorded.full_profile_run("06-b/y", write(tmp_path, [ENTRY])) is None
    assert recorded.full_profile_runs(tmp_path / "absent.json") == []


def test_a_damaged_record_names_the_file_and_what_is_wrong(tmp_path):
    broken = {key: value for key, value in ENTRY.items() if key != "glued"}
    with pytest.raises(recorded.RecordError, match=r"record\.json: run 1 lacks glued"):
        recorded.full_profile_runs(write(tmp_path, [broken]))
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(recorded.RecordError, match=r"bad\.json: not JSON"):
        recorded.full_profile_runs(tmp_path / "bad.json")
    (tmp_path / "object.json").write_text(json.dumps(ENTRY))  # one run, not a list of them
    with pytest.raises(recorded.RecordError, match=r"object\.json: a list of runs expected, found dict"):
        recorded.full_profile_runs(tmp_path / "object.json")


def test_mean_reads_a_result_or_a_number_and_refuses_text(tmp_path):
    entry = ENTRY | {"glued": {"ppl": to_record(Runs([2.7, 2.8])), "n": 30, "verdict": "the LSTM ends best",
                               "old": "2.746 ± 0.002"}}
    run = recorded.full_profile_run("05-a/x", write(tmp_path, [entry], "results.json"))
    assert (run.mean("ppl"), run.mean("n")) == (pytest.approx(2.75), 30.0)
    with pytest.raises(recorded.RecordError, match=r"05-a/x's 'verdict' is 'the LSTM ends best', not a result"):
        run.mean("verdict")
    # a result written as text is not read back as a number: the record must keep it as Runs
    with pytest.raises(recorded.RecordError, match=r"'old' is '2.746 ± 0.002', not a result"):
        run.mean("old")


def test_the_code_hash_follows_the_code_cells_and_their_boundaries():
    cells = ["import torch", "x = 1\ny = 2"]
    assert recorded.code_sha256(cells) == recorded.code_sha256(list(cells))
    assert recorded.code_sha256(cells) != recorded.code_sha256(["import torch", "x = 1\ny = 3"])
    # the same lines cut into cells differently are different code
    assert recorded.code_sha256(["a\nb", "c"]) != recorded.code_sha256(["a", "b\nc"])


def test_stale_runs_are_those_whose_page_changed_or_that_carry_no_hash(tmp_path):
    page = "05-transformers/language-model"
    today = recorded.page_code_sha256(page)
    entries = [ENTRY | dict(page=page, code_sha256=today, commit="abc"),
               ENTRY | dict(page="06-bert/masked-lm", code_sha256="0" * 64),
               ENTRY | dict(page="05-transformers/copying")]  # recorded before the hash was kept
    path = write(tmp_path, entries, "stale.json")
    current = recorded.full_profile_run(page, path)
    assert current.is_current() and current.commit == "abc"
    assert [run.page for run in recorded.stale_runs(path)] == ["05-transformers/copying", "06-bert/masked-lm"]



def test_tables_come_back_as_the_tables_recorded_and_text_displays_have_none(tmp_path):
    first = Table(["model", "weights", "share", "ppl"], {"weights": ",", "share": ".0%"})
    first.add("LSTM", 3216395, 0.94, Runs([2.77, 2.85]))
    second = Table(["", "x"]).add("T = 32", 0.62)
    entry = ENTRY | {"displays": ["After 30 s on the cuda:", to_record(first), "| not | a table |",
                                  to_record(second)],
                     "glued": {"loss": to_record(Runs([2.0, 2.5]))}}
    run = recorded.full_profile_run("05-a/x", write(tmp_path, [entry]))
    assert run.table(0) == first and run.table(-1) == second and run.table(1) == second
    assert run.table(0).row("LSTM")["ppl"].values == (2.77, 2.85)
    assert run.table(0)._repr_markdown_().splitlines()[2] == "| LSTM | 3,216,395 | 94% | 2.810 ± 0.057 |"
    assert run.value("loss").values == (2.0, 2.5) and run.mean("loss") == 2.25
    with pytest.raises(recorded.RecordError, match="displayed 2 table"):
        run.table(2)


def test_the_stored_record_keeps_tables_and_results_as_data_not_text():
    """No display of the record holds a Markdown table as text and no glued value is a result written
    as text ("2.746 ± 0.002"), so no page or helper has to parse one back."""
    for run in recorded.full_profile_runs():
        for display in run.displays:
            assert isinstance(display, dict) or not re.search(r"^\|.*\|$", display, re.M), (run.page, display)
        for name, value in run.glued.items():
            assert not (isinstance(value, str) and re.match(r"-?\d+\.\d+ ± \d", value)), (run.page, name, value)


def test_the_code_hash_tells_where_one_cell_ends_and_the_next_starts():
    assert recorded.code_sha256(["ab", "c"]) != recorded.code_sha256(["a", "bc"])
    assert recorded.code_sha256(["ab", "c"]) == recorded.code_sha256(["ab", "c"])


def test_a_page_whose_prose_changes_keeps_its_code_hash(tmp_path):
    # A record is tied to the code that ran: mending a sentence must not make it stale.
    page = tmp_path / "chapter" / "page.md"
    page.parent.mkdir()
    page.write_text(MYST_HEADER + "# A page\n\nOne sentence.\n\n```{code-cell} ipython3\nx = 1\n```\n")
    before = recorded.page_code_sha256("chapter/page", book=tmp_path)
    assert before == recorded.code_sha256(["x = 1"])
    page.write_text(MYST_HEADER + "# A page\n\nAnother sentence.\n\n```{code-cell} ipython3\nx = 1\n```\n")
    assert recorded.page_code_sha256("chapter/page", book=tmp_path) == before
    page.write_text(MYST_HEADER + "# A page\n\nAnother sentence.\n\n```{code-cell} ipython3\nx = 2\n```\n")
    assert recorded.page_code_sha256("chapter/page", book=tmp_path) != before
