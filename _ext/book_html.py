"""Fixes to the book's HTML that the browser test asks for; loaded by _config.yml (sphinx.local_extensions)."""
from __future__ import annotations


def drop_repeated_scripts(app, pagename, templatename, context, doctree) -> None:
    """Keep the first of each identical <script>.

    Jupyter Book 1 on Sphinx 7 puts some inline scripts on every page twice (sphinx-thebe's
    ``const THEBE_JS_URL = ...``, sphinx-togglebutton's selector). A second ``const``
    declaration is a SyntaxError that the browser reports on every page.
    """
    seen, unique = set(), []
    for script in context.get("script_files", []):
        # An inline script's filename is None or "" depending on who added it.
        filename = getattr(script, "filename", script) or ""
        key = (str(filename), tuple(sorted(getattr(script, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app):
    # After the theme and the other extensions have added theirs.
    app.connect("html-page-context", drop_repeated_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
