"""benchmarks/full_profile.py: a page run where the course's environment is missing, and its record."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import full_profile  # noqa: E402

# A page as prepare writes it: its code cells, in order.  It uses what the stand-ins replace
# (glue, Markdown, display, plt.show, a claim, the Bible loader) and ends with an error in its last cell.
CELLS = [
    "import matplotlib.pyplot as plt\nfrom IPython.display import Markdown\nfrom myst_nb import glue\n"
    "import nlpbook\nfrom nlpbook import corpora\nfrom nlpbook.results import Runs, Table",
    "verses = corpora.bible_verses('web')\nglue('first', verses[0].text, display=False)\n"
    "glue('curve', {'x': [1, 2], 'y': (0.5, 0.25)}, display=False)\n"
    "glue('loss', Runs([2.0, 2.5]), display=False)",
    "nlpbook.claim(1 > 2, 'one is more than two', one=1, two=2)",
    "plt.plot([1, 2], [3, 4])\nplt.show()",
    "Markdown('| a | b |\\n|---|---|\\n| 1 | 2 |')",
    "Table(['model', 'loss'], formats={'loss': 'range'}).add('LSTM', Runs([2.0, 2.5]))",
    "display(Markdown('shown by display(), which a kernel gives without an import'))",
    "1 / 0",
]


def make_bundle(folder):
    (folder / "pages").mkdir(parents=True)
    (folder / "pages" / "00-test__page.json").write_text(json.dumps(CELLS))
    with gzip.open(folder / "bible.json.gz", "wt", encoding="utf-8") as handle:
        json.dump({"web": [[1, 1, 1, "In the beginning."], [1, 1, 2, "The earth was empty."]]}, handle)
    (folder / "minilm").mkdir()
    return folder


def test_a_page_runs_cell_by_cell_and_its_record_keeps_what_it_glued_showed_and_claimed(tmp_path):
    bundle, out = make_bundle(tmp_path / "bundle"), tmp_path / "out"
    result = subprocess.run([sys.executable, str(REPO / "benchmarks" / "full_profile.py"), "run", "00-test/page",
                             "--bundle", str(bundle), "--out", str(out), "--profile", "quick", "--deadline", "120"],
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    [run] = json.loads((out / "summary.json").read_text())
    assert run["page"] == "00-test/page" and run["profile"] == "quick"
    assert run["glued"] == {"first": "In the beginning.", "curve": {"x": [1, 2], "y": [0.5, 0.25]},
                            "loss": {"type": "Runs", "runs": [2.0, 2.5], "digits": 3}}
    # a false claim is recorded, and the page goes on to the cells after it
    assert run["claims"] == [{"statement": "one is more than two", "held": False, "figures": {"one": 1.0, "two": 2.0}}]
    # a Table is kept as data, a Markdown display as its text
    assert run["displays"] == ["| a | b |\n|---|---|\n| 1 | 2 |",
                               {"type": "Table", "columns": ["model", "loss"], "formats": {"loss": "range"},
                                "rows": [["LSTM", {"runs": [2.0, 2.5], "digits": 3}]]},
                               "shown by display(), which a kernel gives without an import"]
    assert run["figures"] == ["00-test__page-1.png"] and (out / "figures.tar.gz").is_file()
    # the error stops the page and names its cell; every cell before it is timed
    assert run["status"] == "error" and run["error"].startswith("cell 8:") and "ZeroDivisionError" in run["error"]
    assert [cell["cell"] for cell in run["cells"]] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert run["environment"]["torch"] and run["environment"]["cpus"] >= 1


def test_a_page_that_cannot_finish_before_the_deadline_is_not_started(tmp_path):
    bundle, out = make_bundle(tmp_path / "bundle"), tmp_path / "out"
    assert full_profile.run(bundle, out, ["00-test/page"], deadline=5, profile="quick", least=60) == 0
    [run] = json.loads((out / "summary.json").read_text())
    assert run["status"] == "skipped" and "under 60" in run["error"]


def test_record_keeps_finished_pages_replaces_older_runs_and_skips_the_rest(tmp_path, capsys):
    def page_run(page, status, seconds):
        return dict(page=page, profile="full", status=status, environment={"gpu": "NVIDIA H200"},
                    started="2026-11-27 15:00:00 UTC", seconds=seconds, cells=[], glued={"x": seconds},
                    displays=[], claims=[], figures=[], error=None)

    into = tmp_path / "record.json"
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(json.dumps([page_run("05-a/x", "ok", 1.0), page_run("06-b/y", "ok", 2.0)]))
    second.write_text(json.dumps([page_run("05-a/x", "ok", 3.0), page_run("06-b/y", "cut off", 4.0)]))
    log = tmp_path / "log.txt"
    log.write_text("\n===== 05-a/x (530 s left)\n--- a sample\nand he said\n\n===== 06-b/y (300 s left)\nmore\n")
    full_profile.record(first, into)
    full_profile.record(second, into, log)
    kept = {run["page"]: run for run in json.loads(into.read_text())}
    assert kept["05-a/x"]["seconds"] == 3.0 and kept["06-b/y"]["seconds"] == 2.0
    assert kept["05-a/x"]["printed"] == "--- a sample\nand he said" and kept["06-b/y"]["printed"] == ""
    assert "status" not in kept["05-a/x"] and "figures" not in kept["05-a/x"]
    assert "06-b/y: cut off, not recorded" in capsys.readouterr().out


def test_pages_start_longest_first_or_in_the_order_given():
    pages = ["a/wanted", "b/short", "c/long", "d/never-run"]
    known = {"b/short": 30.0, "c/long": 200.0}
    # Side by side, longest first packs the lanes; a page never recorded counts as `unknown`.
    assert full_profile.start_order(pages, 2, False, known) == ["c/long", "b/short", "a/wanted", "d/never-run"]
    assert full_profile.start_order(pages, 2, False, known, unknown=120) == [
        "c/long", "a/wanted", "d/never-run", "b/short"]
    # In order (a lease too short for every page), or one at a time: as given.
    assert full_profile.start_order(pages, 2, True, known) == pages
    assert full_profile.start_order(pages, 1, False, known) == pages


def test_a_run_and_its_record_keep_the_code_that_ran(tmp_path):
    from nlpbook.recorded import code_sha256, full_profile_run

    cells = ["from myst_nb import glue\nglue('x', 2)"]
    bundle, out, into = tmp_path / "bundle", tmp_path / "out", tmp_path / "record.json"
    (bundle / "pages").mkdir(parents=True)
    (bundle / "pages" / "00-test__page.json").write_text(
        json.dumps(dict(cells=cells, code_sha256=code_sha256(cells), commit="abc123")))
    with gzip.open(bundle / "bible.json.gz", "wt", encoding="utf-8") as handle:
        json.dump({}, handle)
    (bundle / "minilm").mkdir()
    assert full_profile.run(bundle, out, ["00-test/page"], deadline=120, profile="quick", least=1) == 0
    [run] = json.loads((out / "summary.json").read_text())
    assert run["status"] == "ok" and run["code_sha256"] == code_sha256(cells) and run["commit"] == "abc123"
    full_profile.record(out / "summary.json", into)
    [kept] = json.loads(into.read_text())
    assert kept["code_sha256"] == code_sha256(cells) and kept["commit"] == "abc123"
    assert full_profile_run("00-test/page", into).matches(cells)


def test_plan_packs_pages_into_lanes_and_gives_the_longest_lane(monkeypatch, capsys):
    monkeypatch.setattr(full_profile, "recorded_seconds", lambda: {"a/x": 300.0, "b/y": 200.0, "c/z": 100.0})
    # longest first: a -> lane 1 (300), b -> lane 2 (200), d (unknown, 120) -> lane 2 (320), c -> lane 1 (400)
    assert full_profile.plan(["a/x", "b/y", "c/z", "d/new"], jobs=2, unknown=120) == 400
    assert "4 pages, 2 at a time: about 400 s" in capsys.readouterr().out
