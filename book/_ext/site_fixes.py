"""Small Sphinx fixes so every page loads with a clean browser console and shows no dead button.

Jupyter Book v1 registers some inline scripts twice (sphinx-thebe's ``const THEBE_JS_URL`` then throws
"already been declared"), and sphinx-book-theme leaves the colour mode empty on a first visit, which
pydata-sphinx-theme reports as an error. Both are upstream quirks; the fixes below are page-level.

The launch buttons (Binder, Colab) and the repository button follow ``repository.url`` in ``_config.yml``,
which ``BOOK_REPOSITORY_URL`` overrides (``make book REPOSITORY_URL=...``): with no repository there is nothing
for them to open, so they are left out.

Glossary links: on every page the first use of each glossary term links to its glossary entry; in the Chinese
edition, the first use the page glosses (位置编码（position embedding）), as a whole word.

Two editions: the English site and the Chinese one under ``zh/`` (``vit_edition: zh``, written by
``vit_edu.book.zh_edition``). Every page links to the same page in the other edition.

Weight: a page loads what it uses. MathJax only where the page has a formula, sphinx-design's files only where a page
uses a component, FontAwesome's fonts cut to the icons the site shows (its 1.5 MB script is dropped by
book/_templates/layout.html, with the search index on pages other than search).

Search: the site indexes Chinese too (``html_search_language: zh``, words split by jieba); the glossary's Chinese
names go into jieba's dictionary so that each one, such as 位置编码, is found as one word.
"""

from __future__ import annotations

import functools
import os
import posixpath
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


def _mathjax_only_with_math(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    """MathJax only on a page with a formula of its own. Sphinx also counts the formulas of every page a toctree
    includes (for singlehtml), so the root page, whose toctree is the whole book, loaded MathJax for none."""
    if doctree is not None and any(doctree.findall(lambda n: isinstance(n, (nodes.math, nodes.math_block)))):
        return
    path = app.config.mathjax_path
    mathjax = path if "://" in path else posixpath.join("_static", path)
    context["script_files"] = [s for s in context.get("script_files", [])
                               if getattr(s, "filename", s) != mathjax
                               and not str(getattr(s, "attributes", {}).get("body", "")).startswith("window.MathJax")]


# Assets an extension adds to every page, needed only where the page uses the extension: sphinx-design's stylesheet
# and tab script (62 KB) where the page has one of its components (class "sd-..."), which no page of the book does.
_PAGE_ASSETS = {"_static/sphinx-design.min.css": r'class="(?:[^"]*\s)?sd-', "_static/design-tabs.js": r"\bsd-tab-set\b"}


def _assets_only_where_used(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    """Each of _PAGE_ASSETS left out of a page whose body does not use it."""
    body = context.get("body", "")
    unused = {name for name, used in _PAGE_ASSETS.items() if not re.search(used, body)}
    for key in ("css_files", "script_files"):
        context[key] = [a for a in context.get(key, []) if str(getattr(a, "filename", a)) not in unused]


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


# An entry's term line: "patch embedding (图像块嵌入)" in the English glossary, "图像块嵌入（patch embedding）" in the
# Chinese one (a name may hold brackets of its own: "图像块集合（无序）（bag of patches）").
_ENTRY = re.compile(r"^(?P<name>\S.*?)\s*(?:\((?P<en>.*)\)|（(?P<zh>[^（）]*)）)\s*$")


def split_term(line: str) -> list[str]:
    """A glossary term line's names, its own first: "层归一化（layer normalisation, LayerNorm）" ->
    ["层归一化", "layer normalisation", "LayerNorm"]; a line without brackets is one name."""
    m = _ENTRY.match(line.strip())
    if not m:
        return [line.strip()]
    return [m["name"]] + [p.strip() for p in (m["en"] or m["zh"]).split(",") if p.strip()]


def glossary_chinese_terms(glossary: Path) -> list[str]:
    """The Chinese names in the glossary's entries ("patch embedding (图像块嵌入)" -> "图像块嵌入")."""
    return [name for line in glossary.read_text(encoding="utf-8").splitlines()
            if _ENTRY.match(line) and not line.startswith(("#", "`", ":", " "))
            for name in split_term(line) if CJK.search(name)]


EDITIONS = {  # edition -> (the other edition's root from this one's, its name, its language)
    "en": ("zh/", "中文", "zh-CN"),
    "zh": ("../", "English", "en"),
}


# The Chinese edition's page frame: our translations of the themes' strings (``locale/zh_CN/theme``) take precedence
# over their own zh_CN catalogues, which leave some English ("Link to this heading") or read as Traditional usage.
THEME_TRANSLATIONS = Path(__file__).resolve().parents[2] / "locale" / "zh_CN" / "theme"


def _theme_translations_first(app: Sphinx) -> None:
    if app.config.vit_edition != "zh":
        return
    from babel.messages.pofile import read_po
    from sphinx import locale

    for po in sorted(THEME_TRANSLATIONS.glob("*.po")):
        with po.open("rb") as f:
            ours = {m.id: m.string for m in read_po(f) if m.id and m.string}
        # The translator objects are shared with the templates, set up before this event: update them in place.
        catalogue = getattr(locale.get_translator(po.stem), "_catalog", None)
        if catalogue is None:
            raise RuntimeError(f"{po}: Sphinx has no {app.config.language} catalogue {po.stem!r} to add these to")
        catalogue.update(ours)


# Markup of the page body that axe-core reports and the book can mend (its rule in brackets): myst-nb names its
# collapsed cells' toggles "Toggle hidden content" while they show "Show code cell source" (label-content-name-
# mismatch): their visible text names them instead; a printed table's empty corner is a header with no text
# (empty-table-header): it becomes a plain cell; docutils marks the bibliography with roles ARIA deprecates or
# disallows on those elements (aria-deprecated-role, aria-allowed-role, aria-required-children): they go.
_BODY_FIXES = (
    (re.compile(r'(<summary) aria-label="Toggle hidden content"'), r"\1"),
    (re.compile(r'<th class="head">(?:<p></p>)?</th>'), '<td class="head"></td>'),
    (re.compile(r'(<div class="citation" id="[^"]*") role="doc-biblioentry"'), r"\1"),
    (re.compile(r'<div role="list" class="citation-list">'), '<div class="citation-list">'),
)


# Words in the other language carry its lang, so a screen reader reads 位置编码 in Chinese on an English page and
# "position embedding" in English on a Chinese one (WCAG 3.1.2): runs of Chinese on English pages, the English of a
# （gloss） on Chinese pages. Text in code, scripts and form options is left as it is.
_MARKUP = re.compile(r"(<!--.*?-->|<[^>]+>)", re.S)
_UNTOUCHED = ("script", "style", "textarea", "title", "option", "pre", "code", "kbd", "samp")
_RAW_TEXT = ("script", "style", "textarea", "title")  # elements whose content is text, never tags
_CHINESE_RUN = re.compile(r"[\u3400-\u9fff\u3000-\u303f\uff00-\uffef“”]+(?:\s+[\u3400-\u9fff\u3000-\u303f\uff00-\uffef]+)*")
_ENGLISH_GLOSS = re.compile(r"（([A-Za-z][^（）\u3000-\u303f\u3400-\u9fff\uff00-\uffef]*)）")


def mark_languages(html: str, edition: str) -> str:
    """``html`` with the other language's words in ``<span lang>``: Chinese runs on an English page, the English of
    a gloss on a Chinese page."""
    if edition == "zh":
        wrap = lambda text: _ENGLISH_GLOSS.sub(r'（<span lang="en">\1</span>）', text)  # noqa: E731
    else:
        wrap = lambda text: _CHINESE_RUN.sub(lambda m: f'<span lang="zh-CN">{m.group(0)}</span>', text)  # noqa: E731
    out, inside = [], []
    for piece in _MARKUP.split(html):
        marked = out and out[-1].startswith("<") and ' lang="' in out[-1] and not out[-1].startswith("<html")
        if marked:  # text in an element with its own lang: the language link, or a page marked before
            out.append(piece)
            continue
        if inside and inside[-1] in _RAW_TEXT:  # a script's text may hold "<code>": only its own end tag counts
            if piece.lower().startswith(f"</{inside[-1]}"):
                inside.pop()
            out.append(piece)
            continue
        if piece.startswith("<"):
            name = re.match(r"</?([a-zA-Z0-9]+)", piece)
            if name and name.group(1).lower() in _UNTOUCHED and not piece.endswith("/>"):
                if piece.startswith("</"):
                    inside.pop() if inside and inside[-1] == name.group(1).lower() else None
                else:
                    inside.append(name.group(1).lower())
            out.append(piece)
        else:
            out.append(piece if inside else wrap(piece))
    return "".join(out)


def own_pages(outdir: Path) -> list[Path]:
    """The pages this build wrote: every .html under ``outdir`` except _static and another edition's folder (zh/)."""
    others = {d.name for d in outdir.iterdir() if d.is_dir() and (d / "_static").is_dir()}
    return [p for p in outdir.rglob("*.html")
            if "_static" not in p.relative_to(outdir).parts and p.relative_to(outdir).parts[0] not in others]


def _mark_languages_everywhere(app: Sphinx, exception: Exception | None) -> None:
    """Every page as written, so the sidebars and the in-page contents (written by the theme) are marked too; the
    theme's icons hidden from screen readers."""
    if exception is None and app.builder.format == "html":
        for page in own_pages(Path(app.outdir)):
            text = page.read_text(encoding="utf-8")
            marked = hide_icons(mark_languages(text, app.config.vit_edition))
            if marked != text:
                page.write_text(marked, encoding="utf-8")


# FontAwesome: pydata-sphinx-theme loads its 1.5 MB script (every icon as SVG) and its fonts (150 KB of solid icons,
# 120 KB of brands for one GitHub logo) for a dozen icons. book/_templates/layout.html drops the script; the icons
# come from the fonts, cut here to the glyphs the site shows, and the stylesheet's table of icon classes is cut to the
# classes the pages and the theme use.
_ICON_FONTS = ("vendor/fontawesome/webfonts/fa-solid-900.woff2", "vendor/fontawesome/webfonts/fa-regular-400.woff2",
               "vendor/fontawesome/webfonts/fa-brands-400.woff2")  # the brands' for links to GitHub (a.github)
_THEME_CSS = "styles/pydata-sphinx-theme.css"
_ICON_RULE = re.compile(r'((?:\.fa-[a-z0-9-]+:before,?)+)\{content:"[^"]*"\}')  # .fa-bars:before{content:"\f0c9"}
_ICON_CLASS = re.compile(r"\bfa-[a-z0-9-]+")
_PRIVATE_USE = re.compile(r"\\([ef][0-9a-f]{3})(?![0-9a-f])|([\ue000-\uf8ff])")  # "\f0c9" or the character itself
_ICON = re.compile(r'<(?:i|span)\s[^>]*\bclass="[^"]*\bfa-[a-z0-9-]+[^"]*"[^>]*>')  # <i class="fa-solid fa-bars">


def icon_stylesheet(css: str, used: set[str]) -> str:
    """The theme's stylesheet with only the icon rules (``.fa-NAME:before{content:...}``) of the ``used`` classes."""
    return _ICON_RULE.sub(lambda m: m.group(0) if set(_ICON_CLASS.findall(m.group(1))) & used else "", css)


def icon_codepoints(*stylesheets: str) -> set[int]:
    """The private-use code points (FontAwesome's glyphs) the stylesheets show, written escaped or as characters."""
    return {int(m[0], 16) if m[0] else ord(m[1]) for css in stylesheets for m in _PRIVATE_USE.findall(css)}


def hide_icons(html: str) -> str:
    """Icon-font glyphs hidden from screen readers (``aria-hidden``), as FontAwesome's script did for its SVGs: each
    icon's control is named by its label or text, and a private-use character read aloud means nothing."""
    return _ICON.sub(lambda m: m.group(0) if "aria-hidden" in m.group(0) else m.group(0)[:-1] + ' aria-hidden="true">',
                     html)


def icon_classes(text: str) -> set[str]:
    """The ``fa-NAME`` classes in a page's class attributes (or a script's ``classList="..."``)."""
    return {c for attr in re.findall(r'class(?:List)?="([^"]*)"', text) for c in _ICON_CLASS.findall(attr)}


def _cut_icon_font(app: Sphinx, exception: Exception | None) -> None:
    """The theme's stylesheet and icon font, from the installed theme each time, cut to the icons this build shows."""
    if exception is not None or app.builder.format != "html":
        return
    import pydata_sphinx_theme
    from fontTools import subset
    from fontTools.ttLib import TTFont

    theme = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static"
    static = Path(app.outdir) / "_static"
    sources = own_pages(Path(app.outdir)) + sorted((theme / "scripts").glob("*.js"))
    used = set().union(*(icon_classes(p.read_text(encoding="utf-8")) for p in sources))
    css = icon_stylesheet((theme / _THEME_CSS).read_text(encoding="utf-8"), used)
    (static / _THEME_CSS).write_text(css, encoding="utf-8")
    others = [p.read_text(encoding="utf-8") for p in (static / "styles").glob("*.css") if p != static / _THEME_CSS]
    options = subset.Options()
    options.flavor, options.name_IDs, options.layout_features = "woff2", ["*"], []
    for name in _ICON_FONTS:
        font = TTFont(theme / name)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=sorted(icon_codepoints(css, *others)))
        subsetter.subset(font)
        font.flavor = "woff2"
        font.save(static / name)


def _mend_body(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    body = context.get("body", "")
    for pattern, replacement in _BODY_FIXES:
        body = pattern.sub(replacement, body)
    if 'class="vit-frames"' in body:  # a page with players announces their changes (book/_static/players.js)
        body += f'<script src="{context["pathto"]("_static/players.js", 1)}" defer></script>'
    context["body"] = body


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
    in the Chinese edition, whose entries read '层归一化（layer normalisation, LayerNorm）', the Chinese name too."""
    return [p for p in split_term(term) if edition == "zh" or not CJK.search(p)]


def _in_output(node: nodes.Node) -> bool:
    while node is not None:
        if isinstance(node, _NO_LINK) or "cell_output" in (getattr(node, "get", lambda *_: [])("classes", []) or []):
            return True
        node = node.parent
    return False


# A Chinese name is linked where the page glosses it, as each chapter does at a term's first use: 位置编码（position
# embedding）. Elsewhere a name is often an ordinary word (读出 "read out", 连续, 重建) or part of one (关键's 键).
_GLOSS = re.compile(r"\s*（[^（）]*[A-Za-z][^（）]*）")


def glossary_matches(text: str, spellings: list[str], words: list[str]) -> list[re.Match]:
    """Where in ``text`` a glossary spelling may be linked, longest spelling first: an English one as a whole word
    ("patch", not "dispatch"; plurals too), a Chinese one as whole words of ``words`` (the text cut into words by
    jieba, so 关键 holds no 键 and 来自注意力 no 自注意力) and followed by its gloss, whose English is not linked again."""
    if not spellings:
        return []
    ends, pos = {0}, 0
    for w in words:
        pos += len(w)
        ends.add(pos)
    inside_gloss = lambda m: text.rfind("（", 0, m.start()) > text.rfind("）", 0, m.start())  # noqa: E731
    return [m for m in _pattern(tuple(spellings)).finditer(text)
            if ((m.start() in ends and m.end() in ends and bool(_GLOSS.match(text, m.end()))) if CJK.search(m.group(0))
                else not inside_gloss(m))]


@functools.cache
def _pattern(spellings: tuple[str, ...]) -> re.Pattern:
    return re.compile("|".join(re.escape(w) if CJK.search(w) else r"(?<![\w-])" + re.escape(w) + r"(?:s|es)?(?![\w-])"
                               for w in sorted(spellings, key=len, reverse=True)), re.I)


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
    chinese = tuple(sorted(t[2] for t in targets.values() if CJK.search(t[2])))
    cut = _tokenizer(chinese).cut if chinese else (lambda text, HMM: [text])
    linked: set[str] = set()
    for text in list(doctree.findall(nodes.Text)):
        if text.parent is None or _in_output(text.parent):
            continue
        value, pieces, pos = str(text), [], 0
        for m in glossary_matches(value, [t[2] for t in targets.values()], list(cut(value, HMM=False))):
            word = m.group(0)
            doc, labelid, spelling = next(targets[w] for w in (word.lower(), word.lower()[:-1], word.lower()[:-2])
                                          if w in targets)  # "patches" is "patch"
            if labelid in linked or (spelling.isupper() and not word.startswith(spelling)):
                continue
            linked.add(labelid)
            uri = app.builder.get_relative_uri(docname, doc) + "#" + labelid
            pieces += [nodes.Text(value[pos:m.start()]),
                       nodes.reference("", word, internal=True, refuri=uri, classes=["glossary-link"],
                                       reftitle="术语表" if app.config.vit_edition == "zh" else "glossary")]
            pos = m.end()
        if pieces:
            pieces.append(nodes.Text(value[pos:]))
            text.parent.replace(text, pieces)


@functools.cache
def _tokenizer(words: tuple[str, ...]):  # noqa: ANN202 (a jieba.Tokenizer)
    """jieba, knowing the glossary's Chinese names as words (位置编码 one word; 关键 still one word too)."""
    import jieba

    tokenizer = jieba.Tokenizer()
    for word in words:
        tokenizer.add_word(word)
    return tokenizer


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
    app.connect("html-page-context", _mend_body)
    app.connect("builder-inited", _theme_translations_first)
    app.connect("build-finished", _mark_languages_everywhere)
    app.connect("build-finished", _cut_icon_font)
    app.add_js_file(None, body=_MODE_FIX, priority=100)
    app.connect("html-page-context", _dedupe_scripts, priority=999)  # after the themes add theirs
    app.connect("html-page-context", _mathjax_only_with_math, priority=999)  # after sphinx.ext.mathjax adds it
    app.connect("html-page-context", _assets_only_where_used, priority=999)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
