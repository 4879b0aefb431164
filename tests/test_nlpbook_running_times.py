"""nlpbook.running_times: the record the opening pages and the preface make their running-time tables
from, the latest run of each page, and the errors a missing run or a damaged record gives."""
from __future__ import annotations

import json

import jupytext
import pytest

from conftest import REPO
from nlpbook import running_times
from nlpbook.running_times import RunningTimeError, Timing

XEON = "Intel Xeon, 2 cores"


def timing(name="05-a/x", seconds=60.0, date="2026-12-07", *, kind="page", profile="standard", peak=None,
           machine=XEON):
    return Timing(kind, name, profile, seconds, peak, date, machine, "alone", "a test")


def write(tmp_path, runs, name="times.json"):
    path = tmp_path / name
    path.write_text(json.dumps([running_times._as_json(run) for run in runs]))
    return path


# The book's own record: every page and exercise the tables show has its run.

def test_every_page_has_a_standard_and_a_quick_time_and_every_exercise_a_standard_one():
    missing = []
    for chapter in running_times.chapters():
        for page in running_times.chapter_pages(chapter):
            for profile in ("standard", "quick"):
                try:
                    running_times.latest("page", page, profile)
                except RunningTimeError as error:
                    missing.append(str(error).split(": ", 1)[1])
        try:
            running_times.latest("exercise", chapter, "standard", measure="peak_mib")
        except RunningTimeError as error:
            missing.append(str(error).split(": ", 1)[1])
    assert not missing, "\n".join(missing)


def test_each_opening_page_describes_exactly_its_chapters_pages_and_shows_their_latest_times():
    for chapter in running_times.chapters():
        notebook = jupytext.read(REPO / "book" / chapter / "index.md")
        cells = [cell.source for cell in notebook.cells if "chapter_table" in cell.source]
        assert len(cells) == 1, f"book/{chapter}/index.md: one cell must make its running-time table"
        scope = {}
        exec(cells[0].replace("glue(name, text, display=False)", "pass"), scope)  # noqa: S102
        assert scope["CHAPTER"] == chapter, f"book/{chapter}/index.md shows {scope['CHAPTER']}'s times"
        stems = [page.split("/")[1] for page in running_times.chapter_pages(chapter)]
        minutes = running_times.chapter_table(chapter, dict.fromkeys(stems, "")).column("minutes")
        assert sum(minutes) == pytest.approx(running_times.chapter_minutes(chapter, "standard"))


def test_the_preface_shows_the_table_and_the_sentences_of_the_same_runs():
    text = (REPO / "book" / "preface.md").read_text()
    assert "running_times.preface_table()" in text and "running_times.preface_summary()" in text
    table = running_times.preface_table()
    assert [row[0] for row in table.rows] == [f"{{doc}}`{chapter}/index`" for chapter in running_times.chapters()]
    summary = running_times.preface_summary()
    total = sum(float(cell.split()[0]) for cell in table.column("pages, `standard`"))
    assert summary["standard_total"] == pytest.approx(total, abs=0.05 * len(table.rows))
    for name in summary:
        assert f"`{name}" in text, f"the preface glues {name!r} but never shows it"


# The reader's side, on small records.

def test_the_latest_run_is_the_newest_that_measured_what_is_asked(tmp_path):
    path = write(tmp_path, [timing(seconds=100, date="2026-12-07"), timing(seconds=50, date="2026-12-01", peak=900),
                            timing(seconds=70, date="2026-12-06/2026-12-08")])
    assert running_times.latest("page", "05-a/x", "standard", path=path).seconds == 70  # its last possible day
    assert running_times.latest("page", "05-a/x", "standard", measure="peak_mib", path=path).peak_mib == 900
    assert [run.seconds for run in running_times.timings("page", path=path)] == [50, 100, 70]


def test_a_missing_run_names_the_record_and_the_command_that_measures_it(tmp_path):
    path = write(tmp_path, [timing()])
    with pytest.raises(RunningTimeError, match=r"times\.json: no quick page run of '05-a/x'.*"
                                               r"page_times\.py --record --profile quick 05-a/x"):
        running_times.latest("page", "05-a/x", "quick", path=path)
    with pytest.raises(RunningTimeError, match=r"solution_suite\.py --record --profile standard --only 05-a"):
        running_times.latest("exercise", "05-a", "standard", path=path)


@pytest.mark.parametrize("damage, message", [
    (lambda entries: entries[1].pop("machine"), "run 2 lacks machine"),
    (lambda entries: entries[0].update(minutes=3), "run 1 has fields no run has: minutes"),
    (lambda entries: entries[0].update(date="7 Dec 2026"), "the date must be YYYY-MM-DD"),
    (lambda entries: entries[0].update(date="2026-12-08/2026-12-06"), "the date must be YYYY-MM-DD"),
    (lambda entries: entries[0].update(seconds=0), "must be positive"),
    (lambda entries: entries[0].update(seconds=None), "measured neither seconds nor memory"),
    (lambda entries: entries[0].update(kind="chapter"), "kind must be one of"),
])
def test_a_damaged_record_says_which_run_and_what(tmp_path, damage, message):
    entries = [running_times._as_json(timing()), running_times._as_json(timing(seconds=5))]
    damage(entries)
    path = tmp_path / "times.json"
    path.write_text(json.dumps(entries))
    with pytest.raises(RunningTimeError, match=message) as raised:
        running_times.timings(path=path)
    assert str(path) in str(raised.value)


def test_a_record_that_is_not_a_list_of_runs_is_named(tmp_path):
    path = tmp_path / "times.json"
    path.write_text("{")
    with pytest.raises(RunningTimeError, match="not JSON"):
        running_times.timings(path=path)
    path.write_text("{}")
    with pytest.raises(RunningTimeError, match="a list of runs expected"):
        running_times.timings(path=path)


def test_recording_appends_and_a_bad_run_leaves_the_record_as_it_was(tmp_path):
    path = write(tmp_path, [timing(seconds=100)])
    running_times.timings(path=path)  # cached: a run recorded later must still be read
    running_times.record([timing(seconds=80, date="2026-12-08")], path)
    assert running_times.latest("page", "05-a/x", "standard", path=path).seconds == 80
    before = path.read_text()
    with pytest.raises(RunningTimeError, match="must be positive"):
        running_times.record([timing(seconds=90, date="2026-12-09"), timing(seconds=-1)], path)
    assert path.read_text() == before and not list(tmp_path.glob("*.partial"))


def test_words_for_days_machines_and_the_slowest_page():
    assert running_times.days_text([timing(date="2026-12-07")]) == "on 2026-12-07"
    assert running_times.days_text([timing(date="2026-12-06/2026-12-07")]) == "on 2026-12-06 or 2026-12-07"
    assert running_times.days_text([timing(date="2026-11-24"), timing(date="2026-12-06/2026-12-07")]) \
        == "between 2026-11-24 and 2026-12-07"
    assert running_times.where_text([timing(), timing(machine="AMD EPYC")]) \
        == f"on 2026-12-07 on 2 machines ({XEON}; AMD EPYC)"
    assert running_times.where_text([timing()]) == f"on 2026-12-07 on one machine ({XEON})"
    assert [running_times.longest_words(s) for s in (59, 75, 76, 130)] \
        == ["in under a minute", "in about a minute", "in under 2 minutes", "in under 3 minutes"]


def test_the_widest_spread_is_of_one_page_on_one_machine(tmp_path):
    path = write(tmp_path, [timing("05-a/x", 100), timing("05-a/x", 300), timing("05-a/y", 10),
                            timing("05-a/y", 100, machine="another"), timing("05-a/z", 60), timing("05-a/z", 90)])
    fast, slow = running_times.slowest_spread(path=path)
    assert (fast.name, fast.seconds, slow.seconds) == ("05-a/x", 100, 300)
    with pytest.raises(RunningTimeError, match="no page was timed twice"):
        running_times.slowest_spread(path=write(tmp_path, [timing()], "one.json"))


def test_the_chapter_table_wants_every_page_described_once():
    with pytest.raises(RunningTimeError, match=r"book/07-adam/index\.md describes \['adam'\], but the chapter's "
                                               r"pages are \['momentum-rmsprop', 'adam', 'warmup'"):
        running_times.chapter_table("07-adam", {"adam": "Adam"})
    assert running_times.chapter_pages("07-adam")[0] == "07-adam/momentum-rmsprop"
    with pytest.raises(RunningTimeError, match="no chapter book/99-none/index"):
        running_times.chapter_pages("99-none")
