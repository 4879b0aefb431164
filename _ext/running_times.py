"""Pages that show running times are read again when the record of running times changes; loaded by
_config.yml (sphinx.local_extensions).

The build keeps a page's outputs until its code changes, but the opening pages and the preface make
their tables from ``nlpbook/recorded_runs/running-times.json``, which is not their code.  Noted as a
dependency of each page whose code reads it, the record makes Sphinx read those pages again when it
changes, and their ``execution_mode: force`` runs them whenever they are read; a build with nothing
changed still runs no page.
"""
from __future__ import annotations

from pathlib import Path

RECORD = Path("nlpbook") / "recorded_runs" / "running-times.json"


def note_the_record(app, docname, source) -> None:
    if "running_times." in source[0]:
        app.env.note_dependency(str(Path(app.srcdir) / RECORD))


def setup(app):
    app.connect("source-read", note_the_record)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
