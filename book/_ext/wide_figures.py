"""Wide figures boxed so that a phone shows them legibly (:mod:`vit_edu.book.wide_figures`), and figures.js on the
pages that have one."""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx

from vit_edu.book.wide_figures import widen
from vit_edu.widgets.frames import png_size


def _box_wide_figures(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    sources = {dest: Path(app.srcdir, src) for src, dest in app.builder.images.items()}  # _images/ name -> source

    def size_of(name: str) -> tuple[int, int] | None:
        path = sources.get(name)
        return png_size(path.read_bytes()[:24]) if path is not None and path.is_file() else None

    body = context.get("body", "")
    boxed = widen(body, size_of)
    if boxed != body:
        context["body"] = boxed
        app.add_js_file("figures.js")  # this page only (called while the page is written)


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _box_wide_figures)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
