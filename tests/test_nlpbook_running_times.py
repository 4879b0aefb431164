"""nlpbook.running_times: the record the opening pages and the preface make their running-time tables
from, the latest run of each page, and the errors a missing run or a damaged record gives."""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import jupytext
import pytest

from conftest import REPO, page_code
from nlpbook import running_times, toc
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

def test_every_page_has_a_standard_time_alone_and_a_quick_one_in_a_build_and_every_exercise_a_standard_one():
    missing = []
    for chapter in toc.chapters():
        for page in toc.chapter_pages(chapter):
            for profile, how in (("standard", running_times.ALONE), ("quick", running_times.IN_A_BUILD)):
                try:
                    running_times.latest("page", page, profile, how=how)
                except RunningTimeError as error:
                    missing.append(str(error).split(": ", 1)[1])
        try:
            running_times.latest("exercise", chapter, "standard")
        except RunningTimeError as error:
            missing.append(str(error).split(": ", 1)[1])
    assert not missing, "\n".join(missing)


def _chapter_times_call(chapter: str) -> ast.Call:
    """The opening page's call running_times.chapter_times(CHAPTER, {...})."""
    notebook = jupytext.read(REPO / "book" / chapter / "index.md")
    calls = [node for cell in notebook.cells if cell.cell_type == "code"
             for node in ast.walk(ast.parse(cell.source))
             if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "chapter_times"]
    assert len(calls) == 1, f"book/{chapter}/index.md: one call of running_times.chapter_times must make its table"
    return calls[0]


def test_each_opening_page_shows_its_own_chapter_and_describes_each_of_its_pages_once():
    for chapter in toc.chapters():
        call = _chapter_times_call(chapter)
        assert ast.literal_eval(call.args[0]) == chapter, f"book/{chapter}/index.md shows another chapter's times"
        described = [ast.literal_eval(key) for key in call.args[1].keys]
        stems = [page.split("/")[1] for page in toc.chapter_pages(chapter)]
        assert described == stems, f"book/{chapter}/index.md describes {described}; its pages are {stems}"


def test_the_preface_glues_every_figure_of_its_summary_and_shows_its_table():
    text = (REPO / "book" / "preface.md").read_text()
    assert "running_times.preface_table()" in text and "running_times.preface_summary()" in text
    shown = set(re.findall(r"\{glue:text\}`([\w]+)(?::[^`]*)?`", text))
    assert set(running_times.preface_summary()) == shown, "glued but not shown, or shown but not glued"
    table = running_times.preface_table()
    assert [row[0] for row in table.rows] == [f"{{doc}}`{chapter}/index`" for chapter in toc.chapters()]


def _real_record(tmp_path, change=None, extra=()) -> Path:
    """A copy of the book's record, with a change made to its entries and runs added: the preface's
    figures from a record that differs in one way from the book's."""
    entries = json.loads(running_times.RECORD.read_text())
    if change:
        change(entries)
    entries += [running_times._as_json(run) for run in extra]
    path = tmp_path / "copy.json"
    path.write_text(json.dumps(entries))
    return path


def test_the_preface_counts_the_pages_a_rebuild_ran_and_takes_each_figure_from_the_runs_that_measured_it(tmp_path):
    def one_page_rebuilt(entries):
        [build] = [entry for entry in entries if entry["kind"] == "build"][-1:]
        build["extra"]["rebuild_pages"] = 1

    newer = timing("07-adam", 100.0, "2099-01-01", kind="exercise", peak=None)  # a newer run without memory
    path = _real_record(tmp_path, one_page_rebuilt, [newer])
    summary = running_times.preface_summary(path)
    assert summary["rebuild_pages"] == "running 1 page again"
    row = running_times.preface_table(path).row("{doc}`07-adam/index`")
    older = running_times.latest("exercise", "07-adam", "standard", measure="peak_mib", path=path)
    assert row["exercise, `standard`"] == "100 s" and row["memory, exercise"] == f"{older.peak_mib:,.0f} MiB"


def test_a_page_over_its_budget_is_named_and_the_laptop_sentence_follows_the_largest_page(tmp_path):
    slow = timing("05-transformers/bpe", 60.0 * (running_times.PAGE_BUDGET_MINUTES + 2), "2099-01-01")
    huge = timing("06-bert/wordpiece", 30.0, "2099-01-01", peak=6 * 1024.0)
    summary = running_times.preface_summary(_real_record(tmp_path, extra=[slow, huge]))
    assert "chapter 5's bpe page (12.0 minutes)" in summary["over_budget"]
    assert summary["laptop"] == f"so a laptop needs more than {running_times.LAPTOP_GIB} GiB"
    assert summary["standard_memory"].startswith("are chapter 6's wordpiece page (6.0 GiB, 2099-01-01)")


# The reader's side, on small records.

def test_the_latest_run_is_the_newest_that_measured_what_is_asked(tmp_path):
    path = write(tmp_path, [timing(seconds=100, date="2026-12-07"), timing(seconds=50, date="2026-12-01", peak=900),
                            timing(seconds=70, date="2026-12-06/2026-12-08")])
    assert running_times.latest("page", "05-a/x", "standard", path=path).seconds == 70  # its last possible day
    assert running_times.latest("page", "05-a/x", "standard", measure="peak_mib", path=path).peak_mib == 900
    assert [run.seconds for run in running_times.timings("page", path=path)] == [50, 100, 70]


def test_a_run_known_to_be_on_a_day_is_newer_than_one_that_may_have_been_the_day_before(tmp_path):
    for order in ([timing(seconds=100, date="2026-12-07"), timing(seconds=70, date="2026-12-06/2026-12-07")],
                  [timing(seconds=70, date="2026-12-06/2026-12-07"), timing(seconds=100, date="2026-12-07")]):
        path = write(tmp_path, order, f"times{order[0].seconds:.0f}.json")
        assert running_times.latest("page", "05-a/x", "standard", path=path).seconds == 100


def test_the_latest_run_can_be_asked_for_by_how_it_was_made(tmp_path):
    in_a_build = Timing("page", "05-a/x", "quick", 9.0, 400.0, "2026-12-08", XEON, running_times.IN_A_BUILD, "a test")
    path = write(tmp_path, [timing(profile="quick", seconds=5.0), in_a_build])
    assert running_times.latest("page", "05-a/x", "quick", how=running_times.ALONE, path=path).seconds == 5.0
    assert running_times.latest("page", "05-a/x", "quick", how=running_times.IN_A_BUILD, path=path).seconds == 9.0


def test_a_missing_run_names_the_record_and_the_command_that_measures_it(tmp_path):
    path = write(tmp_path, [timing()])
    with pytest.raises(RunningTimeError, match=r"times\.json: no quick page run of '05-a/x' made alone.*"
                                               r"page_times\.py --record --profile quick 05-a/x"):
        running_times.latest("page", "05-a/x", "quick", how=running_times.ALONE, path=path)
    with pytest.raises(RunningTimeError, match=r"solution_suite\.py --record --profile standard --only 05-a"):
        running_times.latest("exercise", "05-a", "standard", path=path)
    # a page's quick time comes from a build of the book, its standard time from a run alone
    with pytest.raises(RunningTimeError, match=r"made in a cold build of the book.*book_budget\.py --record"):
        running_times.latest("page", "05-a/x", "quick", how=running_times.IN_A_BUILD, path=path)
    with pytest.raises(RunningTimeError, match=r"with its peak_mib.*page_times\.py --record --profile standard"):
        running_times.latest("page", "05-a/x", "standard", how=running_times.ALONE, measure="peak_mib", path=path)


@pytest.mark.parametrize("damage, message", [
    (lambda entries: entries[1].pop("machine"), "run 2 lacks machine"),
    (lambda entries: entries[0].update(minutes=3), "run 1 has fields no run has: minutes"),
    (lambda entries: entries[0].update(date="7 Dec 2026"), "the date must be YYYY-MM-DD"),
    (lambda entries: entries[0].update(date="2026-12-08/2026-12-06"), "the date must be YYYY-MM-DD"),
    (lambda entries: entries[0].update(seconds=0), "must be positive"),
    (lambda entries: entries[0].update(seconds="12"), "must be positive numbers, got '12'"),
    (lambda entries: entries[0].update(date="2026-02-30"), "the date must be YYYY-MM-DD"),
    (lambda entries: entries[0].update(kind="build"), "a build's extra must give pages, pages_seconds"),
    (lambda entries: entries.__setitem__(1, ["page"]), "run 2 is not an object but list"),
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
    running_times.record([timing(seconds=81, date="2026-12-09")], path)  # twice within one clock tick
    assert running_times.latest("page", "05-a/x", "standard", path=path).seconds == 81
    before = path.read_text()
    with pytest.raises(RunningTimeError, match="must be positive"):
        running_times.record([timing(seconds=90, date="2026-12-09"), timing(seconds=-1)], path)
    assert path.read_text() == before and [file.name for file in tmp_path.iterdir()] == ["times.json"]


def test_words_for_days_machines_and_the_slowest_page():
    assert running_times.days_text([timing(date="2026-12-07")]) == "on 2026-12-07"
    assert running_times.days_text([timing(date="2026-12-06/2026-12-07")]) == "on 2026-12-06 or 2026-12-07"
    assert running_times.days_text([timing(date="2026-11-24"), timing(date="2026-12-06/2026-12-07")]) \
        == "between 2026-11-24 and 2026-12-07"
    # two runs, each on a known day: not "on one or the other"
    assert running_times.days_text([timing(date="2026-12-06"), timing(date="2026-12-07")]) \
        == "between 2026-12-06 and 2026-12-07"
    with pytest.raises(RunningTimeError, match="no runs"):
        running_times.days_text([])
    assert running_times.where_text([timing(), timing(machine="AMD EPYC")]) \
        == f"on 2026-12-07 on 2 machines ({XEON}; AMD EPYC)"
    assert running_times.where_text([timing()]) == f"on 2026-12-07 on one machine ({XEON})"
    assert running_times.where_text([timing(date="2026-12-06/2026-12-07")]) \
        == f"on 2026-12-06 or 2026-12-07 on one machine ({XEON})"
    assert [running_times.longest_words(s) for s in (59, 75, 76, 130)] \
        == ["in under a minute", "in about a minute", "in under 2 minutes", "in under 3 minutes"]


def test_the_widest_spread_is_of_one_page_on_one_machine(tmp_path):
    in_a_build = Timing("page", "05-a/w", "standard", 900.0, None, "2026-12-07", XEON, running_times.IN_A_BUILD, "")
    path = write(tmp_path, [timing("05-a/x", 100), timing("05-a/x", 300), timing("05-a/y", 10),
                            timing("05-a/y", 100, machine="another"), timing("05-a/z", 60), timing("05-a/z", 90),
                            timing("05-a/w", 10), in_a_build])  # a run in a build is not the machine's variation
    fast, slow = running_times.slowest_spread(path=path)
    assert (fast.name, fast.seconds, slow.seconds) == ("05-a/x", 100, 300)
    with pytest.raises(RunningTimeError, match="no page was timed alone twice"):
        running_times.slowest_spread(path=write(tmp_path, [timing()], "one.json"))


def test_the_chapter_table_wants_every_page_described_once():
    with pytest.raises(RunningTimeError, match=r"book/07-adam/index\.md describes \['adam'\], but the chapter's "
                                               r"pages are \['momentum-rmsprop', 'adam', 'warmup'"):
        running_times.chapter_table("07-adam", {"adam": "Adam"})


def test_every_page_that_reads_the_record_is_read_again_and_run_when_the_record_changes():
    """The build's cache knows a page by its code: a page showing the record must depend on it and run when read."""
    import importlib.util
    from types import SimpleNamespace

    spec = importlib.util.spec_from_file_location("running_times_ext", REPO / "_ext" / "running_times.py")
    extension = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(extension)
    readers = [page for page in sorted((REPO / "book").rglob("*.md")) if "running_times." in page.read_text()]
    assert len(readers) == 1 + len(toc.chapters()), readers  # the preface and each opening page
    for page in readers:
        noted = []
        app = SimpleNamespace(srcdir=str(REPO), env=SimpleNamespace(note_dependency=noted.append))
        extension.note_the_record(app, str(page.relative_to(REPO).with_suffix("")), [page.read_text()])
        assert noted == [str(running_times.RECORD)], page
        assert jupytext.read(page).metadata.get("mystnb", {}).get("execution_mode") == "force", page
    noted = []
    extension.note_the_record(SimpleNamespace(srcdir=str(REPO), env=SimpleNamespace(note_dependency=noted.append)),
                              "book/05-transformers/bpe", [(REPO / "book/05-transformers/bpe.md").read_text()])
    assert noted == []


# A number of training steps written in digits, as the opening pages' descriptions write them:
# "400 steps", "three seeds of 1,100 Transformer steps".
STEPS = re.compile(r"\b(\d{1,3}(?:,\d{3})*) (?:[A-Z]\w* )?steps\b")


def test_the_steps_an_opening_page_names_are_in_the_page_it_describes():
    """The opening pages type each page's workload; when a page's budget changes (2,000 steps became
    1,100 on 2026-12-08), the number of steps the description gives must change with it."""
    stale, named = [], 0
    for chapter in toc.chapters():
        call = _chapter_times_call(chapter)
        for key, value in zip(call.args[1].keys, call.args[1].values):
            page, description = f"{chapter}/{ast.literal_eval(key)}", ast.literal_eval(value)
            lines = [line for line in page_code(REPO / "book" / f"{page}.md").splitlines() if "steps" in line]
            for steps in STEPS.findall(description):
                named += 1
                # A line of the page's code that sets steps writes 1,100 as 1100 or 1_100.
                digits = rf"(?<![\d_.]){steps.replace(',', '_?')}(?![\d_.])"
                if not any(re.search(digits, line) for line in lines):
                    stale.append(f"book/{chapter}/index.md describes {page} with {steps} steps")
    assert named >= 10, named  # the pattern still finds the descriptions' steps
    assert not stale, "steps the page's code never sets:\n" + "\n".join(stale)
