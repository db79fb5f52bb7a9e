"""Small Sphinx fixes so every page loads with a clean browser console and shows no dead button.

Jupyter Book v1 registers some inline scripts twice (sphinx-thebe's ``const THEBE_JS_URL`` then throws
"already been declared"), and sphinx-book-theme leaves the colour mode empty on a first visit, which
pydata-sphinx-theme reports as an error. Both are upstream quirks; the fixes below are page-level.

The launch buttons (Binder, Colab) and the repository button follow ``repository.url`` in ``_config.yml``,
which ``BOOK_REPOSITORY_URL`` overrides (``make book REPOSITORY_URL=...``): with no repository there is nothing
for them to open, so they are left out.
"""

from __future__ import annotations

import os

from sphinx.application import Sphinx
from sphinx.config import Config

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


def _buttons_follow_repository(app: Sphinx, config: Config) -> None:
    options = config.html_theme_options
    url = (os.environ.get("BOOK_REPOSITORY_URL") or options.get("repository_url") or "").rstrip("/")
    options["repository_url"] = url
    options["use_repository_button"] = bool(url)
    if not url:
        options["launch_buttons"] = {}
        options["use_issues_button"] = False
        options["use_edit_page_button"] = False


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _buttons_follow_repository)
    app.add_js_file(None, body=_MODE_FIX, priority=100)
    app.connect("html-page-context", _dedupe_scripts, priority=999)  # after the themes add theirs
    return {"parallel_read_safe": True, "parallel_write_safe": True}
