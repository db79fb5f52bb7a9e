"""Small Sphinx fixes so every page loads with a clean browser console and shows no dead button.

Jupyter Book v1 registers some inline scripts twice (sphinx-thebe's ``const THEBE_JS_URL`` then throws
"already been declared"), and sphinx-book-theme leaves the colour mode empty on a first visit, which
pydata-sphinx-theme reports as an error. Both are upstream quirks; the fixes below are page-level.

The launch buttons (Binder, Colab) and the repository button follow ``repository.url`` in ``_config.yml``,
which ``BOOK_REPOSITORY_URL`` overrides (``make book REPOSITORY_URL=...``): with no repository there is nothing
for them to open, so they are left out.

Glossary links: on every page the first use of each glossary term links to its glossary entry.

Two editions: the English site and the Chinese one under ``zh/`` (``vit_edition: zh``, written by
``vit_edu.book.zh_edition``). Every page links to the same page in the other edition.

Search: the site indexes Chinese too (``html_search_language: zh``, words split by jieba); the glossary's Chinese
names go into jieba's dictionary so that each one, such as 位置编码, is found as one word.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config

from vit_edu.book.output_text import CJK

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
    if config.vit_edition == "zh":  # Jupyter Book sets this English text itself, so the theme's translation never shows
        options["search_bar_text"] = "搜索本书……"
    url = (os.environ.get("BOOK_REPOSITORY_URL") or options.get("repository_url") or "").rstrip("/")
    options["repository_url"] = url
    options["use_repository_button"] = bool(url)
    if not url:
        options["launch_buttons"] = {}
        options["use_issues_button"] = False
        options["use_edit_page_button"] = False


# An entry's term line, in either edition: "patch embedding (图像块嵌入)" or "图像块嵌入 (patch embedding)".
_ENTRY = re.compile(r"^(\S[^(]*?)\s*\((.*)\)\s*$")


def glossary_chinese_terms(glossary: Path) -> list[str]:
    """The Chinese names in the glossary's entries ("patch embedding (图像块嵌入)" -> "图像块嵌入")."""
    terms = []
    for line in glossary.read_text(encoding="utf-8").splitlines():
        m = _ENTRY.match(line)
        if m and not line.startswith(("#", "`", ":")):
            terms += [p.strip() for p in [m.group(1), *m.group(2).split(",")] if CJK.search(p)]
    return terms


EDITIONS = {  # edition -> (the other edition's root from this one's, its name, its language)
    "en": ("zh/", "中文", "zh-CN"),
    "zh": ("../", "English", "en"),
}


def _language_switch(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    """A link to the same page in the other edition, first in the article, and the alternate link in <head>."""
    root, name, lang = EDITIONS[app.config.vit_edition]
    href = context["pathto"](root + pagename + ".html", 1)
    context["body"] = (f'<nav class="vit-lang-switch" aria-label="{"语言" if lang == "en" else "Language"}">'
                       f'<a href="{href}" hreflang="{lang}" lang="{lang}">{name}</a></nav>' + context.get("body", ""))
    context["metatags"] = context.get("metatags", "") + f'\n<link rel="alternate" hreflang="{lang}" href="{href}" />'



def _chinese_search_dictionary(app: Sphinx, config: Config) -> None:
    if config.html_search_language != "zh":
        return
    terms = glossary_chinese_terms(Path(app.srcdir) / "book" / "glossary.md")
    # jieba's user dictionary: one word per line, with a frequency high enough to keep it whole.
    path = Path(tempfile.gettempdir()) / "vit_edu_search_terms.txt"
    path.write_text("".join(f"{t.replace(' ', '')} 100000\n" for t in terms), encoding="utf-8")
    config.html_search_options = {**(config.html_search_options or {}), "dict": str(path)}


_NO_LINK = (nodes.literal, nodes.literal_block, nodes.math, nodes.math_block, nodes.reference, nodes.title,
            nodes.raw, nodes.term, nodes.caption, nodes.rubric, nodes.citation, nodes.citation_reference)


def _spellings(term: str, edition: str) -> list[str]:
    """How pages write a term: 'layer normalisation (LayerNorm, 层归一化)' -> ['layer normalisation', 'LayerNorm'];
    in the Chinese edition, whose entries read '层归一化 (layer normalisation, LayerNorm)', the Chinese name too."""
    m = re.match(r"^([^(]+?)\s*(?:\((.*)\))?$", term)
    parts = [m.group(1).strip()] + [p.strip() for p in (m.group(2) or "").split(",") if p.strip()]
    return [p for p in parts if edition == "zh" or not CJK.search(p)]


def _in_output(node: nodes.Node) -> bool:
    while node is not None:
        if isinstance(node, _NO_LINK) or "cell_output" in (getattr(node, "get", lambda *_: [])("classes", []) or []):
            return True
        node = node.parent
    return False


def _link_glossary_terms(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    if app.builder.format != "html":
        return
    std = app.env.get_domain("std")
    targets = {}
    for (kind, term), (glossary_doc, labelid) in std.objects.items():
        if kind != "term" or glossary_doc == docname:
            continue
        for spelling in _spellings(term, app.config.vit_edition):
            targets.setdefault(spelling.lower(), (glossary_doc, labelid, spelling))
    if not targets:
        return
    # An English word stands alone ("patch", not "dispatch"); a Chinese name sits between other characters.
    latin = sorted((w for w in targets if not CJK.search(w)), key=len, reverse=True)
    cjk = sorted((w for w in targets if CJK.search(w)), key=len, reverse=True)
    alternatives = [r"(?<![\w-])(?P<latin>" + "|".join(map(re.escape, latin)) + r")(?:s|es)?(?![\w-])"] if latin else []
    alternatives += ["(?P<cjk>" + "|".join(map(re.escape, cjk)) + ")"] if cjk else []
    pattern = re.compile("|".join(alternatives), re.I)
    linked: set[str] = set()
    for text in list(doctree.findall(nodes.Text)):
        if text.parent is None or _in_output(text.parent):
            continue
        value, pieces, pos = str(text), [], 0
        for m in pattern.finditer(value):
            word = m.groupdict().get("latin") or m.groupdict().get("cjk")
            doc, labelid, spelling = targets[word.lower()]
            if labelid in linked or (spelling.isupper() and word != spelling):
                continue
            linked.add(labelid)
            uri = app.builder.get_relative_uri(docname, doc) + "#" + labelid
            pieces += [nodes.Text(value[pos:m.start()]),
                       nodes.reference("", m.group(0), internal=True, refuri=uri, classes=["glossary-link"],
                                       reftitle="术语表" if app.config.vit_edition == "zh" else "glossary")]
            pos = m.end()
        if pieces:
            pieces.append(nodes.Text(value[pos:]))
            text.parent.replace(text, pieces)


def _author_year_labels():  # noqa: ANN202
    from pybtex.style.labels import BaseLabelStyle

    class AuthorYearLabels(BaseLabelStyle):
        """pybtex labels 'Dosovitskiy et al., 2021', so the list reads like the in-text citations (not '[DBK+21]')."""

        def format_labels(self, sorted_entries):  # noqa: ANN001, ANN201 (pybtex's plugin protocol)
            for entry in sorted_entries:
                people = entry.persons.get("author") or entry.persons.get("editor") or []
                last = [" ".join(p.last_names).replace("{", "").replace("}", "") for p in people] or ["Anon."]
                who = last[0] if len(last) == 1 else f"{last[0]} and {last[1]}" if len(last) == 2 else f"{last[0]} et al."
                yield f"{who}, {entry.fields.get('year', 'n.d.')}"

    return AuthorYearLabels


def _register_bibliography_style() -> None:
    from pybtex.plugin import register_plugin
    from pybtex.style.formatting.unsrt import Style

    class AuthorYear(Style):
        default_label_style = _author_year_labels()
        default_sorting_style = "author_year_title"

    register_plugin("pybtex.style.formatting", "vit_author_year", AuthorYear)


def setup(app: Sphinx) -> dict:
    _register_bibliography_style()
    app.connect("doctree-resolved", _link_glossary_terms)
    app.connect("config-inited", _buttons_follow_repository)
    app.connect("config-inited", _chinese_search_dictionary)
    app.add_config_value("vit_edition", "en", "html")
    app.connect("html-page-context", _language_switch)
    app.add_js_file(None, body=_MODE_FIX, priority=100)
    app.connect("html-page-context", _dedupe_scripts, priority=999)  # after the themes add theirs
    return {"parallel_read_safe": True, "parallel_write_safe": True}
