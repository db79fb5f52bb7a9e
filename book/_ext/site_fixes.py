"""Small Sphinx fixes so every page loads with a clean browser console.

Jupyter Book v1 registers some inline scripts twice (sphinx-thebe's ``const THEBE_JS_URL`` then throws
"already been declared"), and sphinx-book-theme leaves the colour mode empty on a first visit, which
pydata-sphinx-theme reports as an error. Both are upstream quirks; the fixes below are page-level.
"""

from __future__ import annotations

from sphinx.application import Sphinx

# Runs in <head> before the theme's deferred script reads the mode.
_MODE_FIX = 'if (!document.documentElement.dataset.mode) { document.documentElement.dataset.mode = "auto"; }'


def _dedupe_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    seen: set[tuple] = set()
    unique = []
    for script in context.get("script_files", []):
        # The twins differ only in filename None vs "" (both mean "inline"), so compare on content.
        filename = getattr(script, "filename", script) or ""
        key = (str(filename), tuple(sorted((k, str(v)) for k, v in getattr(script, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app: Sphinx) -> dict:
    app.add_js_file(None, body=_MODE_FIX, priority=100)
    app.connect("html-page-context", _dedupe_scripts, priority=999)  # after the themes add theirs
    return {"parallel_read_safe": True, "parallel_write_safe": True}
