"""The chapters for Jupyter Lab, with the prose's glued numbers and citations written in.

On the website myst-nb pastes each ``{glue:text}`name``` from the notebook's committed outputs and turns
``{cite:p}`key``` into "(Author, year)". Jupyter Lab knows neither role, so a learner would read placeholders.
``python -m vit_edu.book.lab_edition OUT`` (run by ``make lab``) copies the notebooks to ``OUT`` with both written
into the Markdown cells; the code cells are unchanged, so running a copy recomputes everything. The numbers in
the prose are those of the committed run (the cells that glue them print the fresh values). Cells tagged
``site-only`` (about the website's player) are left out, and ``{doc}`` links name the website's pages that the
Lab folder lacks.

A widget cell's output is the live widget with the precomputed player as its HTML fallback. Saved without its
widget state, which lives only in the kernel, the widget would reopen as "Error displaying widget: model not
found"; so the copies, and every save in ``--start``'s Jupyter Lab (:func:`pre_save_hook`), keep only the fallback.
``--start``'s kernels skip the player (:data:`vit_edu.widgets.LAB_KERNEL`, set to the book's language, which also
makes a Chinese book's widgets speak Chinese); the save hook puts the chapter's own player, from the file being
saved over, back into each widget cell whose source is unchanged. The glossary is written as plain Markdown.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

import nbformat
import yaml

from vit_edu.book import lab_server
from vit_edu.book.lab_copies import Update, update_copies
from vit_edu.book.lab_server import SAVE_HOOK, lab_command  # noqa: F401 (SAVE_HOOK names pre_save_hook below)
from vit_edu.widgets import LIVE_FALLBACK_CLASS

GLUE = re.compile(r"\{glue:text\}`([^`:]+)(?::([^`]*))?`")
CITE = re.compile(r"\{cite:([pt])\}`([^`]+)`")
# {doc}`target` or {doc}`text <target>`, and a following " page" or "页面" (kept apart to read well for an absent
# page).
DOC = re.compile(r"\{doc\}`(?:([^`<]*?)\s*<([^`>]+)>|([^`]+))`( page\b| ?页面)?")
SITE_ONLY = "site-only"  # tag of a Markdown cell about the website only
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
EXTRAS = ("glossary.md", "references.bib")  # beside the chapters: the bibliography as it is, the glossary plain
# How a chapter names a page the Lab folder lacks: "see the {doc}`x` page", "see {doc}`x`". The Chinese edition's
# come from the book's catalogue (context ``output``), as the players' notes do.
SITE_PHRASES = ("“{text}” page on the book's website", "“{text}” (on the book's website)")
PLAYER_CLASS = 'class="vit-frames"'  # how a widget cell's precomputed player starts (frames.frame_player)
GLOSSARY = re.compile(r"^```\{glossary\}\n(?P<sorted>:sorted:\n)?\n*(?P<entries>.*?)\n```$", re.S | re.M)


def glued_values(nb: nbformat.NotebookNode) -> dict[str, str]:
    """name -> the text/plain value each ``glue(name, ...)`` call recorded in the notebook's outputs."""
    values = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            record = out.get("metadata", {}).get("scrapbook")
            if record:
                text = out["data"].get(record["mime_prefix"] + "text/plain")
                if text is not None:
                    values[record["name"]] = text
    return values


def _paste(text: str, spec: str | None) -> str:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    return format(value, spec) if spec else str(value)


def bib_labels(bib: Path) -> dict[str, tuple[str, str]]:
    """key -> (authors as cited, year) for each entry of a BibTeX file."""
    labels = {}
    for entry in re.split(r"\n(?=@)", bib.read_text(encoding="utf-8")):
        key = re.match(r"@\w+\{([^,]+),", entry.strip())
        if not key:
            continue
        author = re.search(r"author\s*=\s*\{(.*?)\},?\s*\n", entry, re.S)
        year = re.search(r"year\s*=\s*\{?(\d{4})", entry)
        names = [a.split(",")[0].strip(" {}") for a in author.group(1).split(" and ")] if author else ["?"]
        cited = names[0] if len(names) == 1 else f"{names[0]} and {names[1]}" if len(names) == 2 else f"{names[0]} et al."
        labels[key.group(1).strip()] = (cited, year.group(1) if year else "n.d.")
    return labels


def _title(path: Path) -> str:
    """A page's title: its first level-1 heading (a notebook's, in its Markdown cells)."""
    if path.suffix == ".ipynb":
        text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    else:
        text = path.read_text(encoding="utf-8")
    heading = re.search(r"^# (.+)$", text, re.M)
    return heading.group(1).strip() if heading else path.stem


def book_pages(book: Path) -> dict[str, tuple[str, str | None]]:
    """page name -> (title, its file in the Lab folder, or None for a page only the website has)."""
    pages = {}
    for path in sorted([*book.glob("*.md"), *book.glob("*.ipynb")]):
        in_lab = path.name in EXTRAS or re.match(r"\d\d_.*\.ipynb$", path.name)
        pages[path.stem] = (_title(path), path.name if in_lab else None)
    return pages


def lab_markdown(
    source: str,
    values: dict[str, str],
    labels: dict[str, tuple[str, str]],
    pages: dict[str, tuple[str, str | None]] | None = None,
    phrases: tuple[str, str] = SITE_PHRASES,
) -> str:
    """``source`` with glue roles replaced by their values, citations by "(Author, year)" and ``{doc}`` roles by a
    link to the page in the Lab folder, or by its title and "on the book's website" where the folder lacks it."""
    pages = pages or {}

    def glue(m: re.Match) -> str:
        name, spec = m.group(1), m.group(2)
        if name not in values:
            raise ValueError(f"{{glue:text}}`{name}` has no glued value in the notebook's outputs")
        return _paste(values[name], spec)

    def cite(m: re.Match) -> str:
        keys = [k.strip() for k in m.group(2).split(",")]
        unknown = [k for k in keys if k not in labels]
        if unknown:
            raise ValueError(f"citation keys {unknown} are not in the bibliography")
        if m.group(1) == "t":
            return "; ".join(f"{labels[k][0]} ({labels[k][1]})" for k in keys)
        return "(" + "; ".join(f"{labels[k][0]}, {labels[k][1]}" for k in keys) + ")"

    def doc(m: re.Match) -> str:
        text, target, page_word = m.group(1), (m.group(2) or m.group(3)).strip(), m.group(4) or ""
        name = Path(target).stem
        if name not in pages:
            raise ValueError(f"{{doc}}`{target}` names no page of the book; pages are {sorted(pages)}")
        title, lab_file = pages[name]
        text = text or title
        if lab_file:
            return f"[{text}]({lab_file}){page_word}"
        return (phrases[0] if page_word else phrases[1]).format(text=text)

    return DOC.sub(doc, CITE.sub(cite, GLUE.sub(glue, source)))


def drop_widget_views(nb: dict) -> int:
    """Remove the widget view from every output that also has an HTML fallback; return how many were removed.

    Without the kernel's widget state a saved widget view cannot be drawn, while the fallback (the precomputed
    player) can. Works on a notebook as read by nbformat or as JSON (a save's content).
    """
    removed = 0
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET_VIEW in data and "text/html" in data:
                del data[WIDGET_VIEW]
                removed += 1
    return removed


def _text(value: str | list[str]) -> str:
    return "".join(value) if isinstance(value, list) else value


def players(nb: dict) -> dict[str, str]:
    """source -> the precomputed player each widget cell of a notebook (nbformat's or JSON) shows."""
    found = {}
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            page = _text(out.get("data", {}).get("text/html", ""))
            if page.startswith(f"<div {PLAYER_CLASS}"):
                found[_text(cell["source"])] = page
    return found


def restore_players(nb: dict, kept: dict[str, str]) -> int:
    """Put back, from ``kept`` (:func:`players`), the player of every widget cell whose output is a Lab kernel's
    fallback (the live widget's first picture) and whose source is unchanged; return how many were put back."""
    restored = 0
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if LIVE_FALLBACK_CLASS in _text(data.get("text/html", "")) and _text(cell["source"]) in kept:
                data["text/html"] = kept[_text(cell["source"])]
                restored += 1
    return restored


def pre_save_hook(model: dict, path: str = "", contents_manager: object = None, **_: object) -> None:
    """Jupyter server's pre-save hook: a saved chapter keeps its widget cells' fallback, not their widget view, and
    that fallback is the chapter's own player (the file being saved over holds it) where the cell is unchanged."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    saved_over = Path(getattr(contents_manager, "root_dir", "") or ".", path) if path else None
    if saved_over and saved_over.is_file():
        restore_players(model["content"], players(nbformat.read(saved_over, as_version=4)))
    drop_widget_views(model["content"])


def plain_glossary(text: str) -> str:
    """A MyST glossary page as plain Markdown, which Jupyter Lab renders: each term in bold, its definition on the
    next line, entries apart (sorted where the glossary asks for it)."""
    def block(m: re.Match) -> str:
        entries = []
        for entry in re.split(r"\n\s*\n", m.group("entries").strip()):
            term, *definition = entry.splitlines()
            entries.append((term.strip(), " ".join(line.strip() for line in definition)))
        if m.group("sorted"):
            entries.sort(key=lambda e: e[0].lower())
        return "\n\n".join(f"**{term}**\\\n{definition}" for term, definition in entries)

    return GLOSSARY.sub(block, text)


def book_language(book: Path) -> str:
    """"en" or "zh": the language of the book in ``book`` (from its ``_config.yml``, one folder up)."""
    config = book.parent / "_config.yml"
    settings = yaml.safe_load(config.read_text(encoding="utf-8")) if config.exists() else {}
    return "en" if (settings.get("sphinx") or {}).get("config", {}).get("language", "en") == "en" else "zh"


def site_phrases(book: Path) -> tuple[str, str]:
    """:data:`SITE_PHRASES` in the language of the book in ``book``."""
    if book_language(book) == "en":
        return SITE_PHRASES
    from vit_edu.book import i18n, output_text

    table = i18n.table(i18n.BOOK_CATALOGUE, context=i18n.OUTPUT)
    return tuple(output_text.translate(p, table) for p in SITE_PHRASES)  # type: ignore[return-value]


def lab_notebook(path: Path, labels: dict[str, tuple[str, str]], pages: dict[str, tuple[str, str | None]],
                 phrases: tuple[str, str] = SITE_PHRASES) -> nbformat.NotebookNode:
    """A chapter's Lab edition: no site-only cells, Markdown with its roles written in, widget cells' fallbacks."""
    nb = nbformat.read(path, as_version=4)
    values = glued_values(nb)
    nb.cells = [c for c in nb.cells if not (c.cell_type == "markdown" and SITE_ONLY in c.metadata.get("tags", []))]
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = lab_markdown(cell.source, values, labels, pages, phrases)
    drop_widget_views(nb)
    return nb


def write_lab_edition(book: Path, out: Path, fresh: list[str] | None = None) -> list[Update]:
    """Bring ``out`` up to date with the Lab edition of every chapter of ``book``; what happened to each file.

    A copy the learner has edited is never overwritten: it is kept, unless its name is in ``fresh`` (or
    ``fresh`` holds "all"); then it is moved aside with a timestamp and a fresh copy takes its place.
    """
    labels, pages, phrases = bib_labels(book / "references.bib"), book_pages(book), site_phrases(book)
    editions: dict[str, str] = {}
    for path in sorted(book.glob("[0-9][0-9]_*.ipynb")):
        editions[path.name] = nbformat.writes(lab_notebook(path, labels, pages, phrases))
    for extra in EXTRAS:
        editions[extra] = (book / extra).read_text(encoding="utf-8")
    editions["glossary.md"] = plain_glossary(editions["glossary.md"])
    return update_copies(editions, out, fresh or [])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for the Lab edition (for example _build/lab)")
    parser.add_argument("--book", type=Path, default=Path("book"))
    parser.add_argument("--fresh", nargs="+", default=[], metavar="NAME",
                        help="chapters (05_qkv, or all) to replace by a fresh copy; your copy is kept beside it")
    parser.add_argument("--start", action="store_true", help="then start Jupyter Lab on the folder")
    parser.add_argument("--cjk-font", type=Path, help="a font with Chinese (.otf/.ttc), for a Chinese book's Lab")
    args = parser.parse_args(argv)
    try:
        updates = write_lab_edition(args.book, args.out, args.fresh)
    except ValueError as err:  # a wrong --fresh name: the learner needs the line, not the traceback
        sys.exit(f"lab_edition: {err}")
    lab_server.trust([u.path for u in updates if u.path.suffix == ".ipynb" and u.status not in ("yours", "kept")])
    for update in updates:
        if update.message:
            print(update.message)
    yours = [u.path.stem for u in updates if u.status == "yours"]
    if yours:
        print(f"Your edited copies, kept: {', '.join(yours)}. For the book's version of one, with yours kept beside "
              f"it: make lab FRESH=NAME (or python -m vit_edu.book.lab_edition {args.out} --fresh NAME).")
    print(f"The Lab edition is in {args.out}: numbers and citations written in.")
    language, style = book_language(args.book), None
    if language == "zh":
        style = _font_style(args.out, args.cjk_font)
    if args.start:
        import subprocess

        sys.exit(subprocess.call(lab_command(args.out, style), env=lab_server.lab_environment(language)))


def _font_style(out: Path, font: Path | None) -> Path | None:
    """The Chinese Lab's custom CSS folder, with the CJK font cut from ``font``; None (and a line why) without one."""
    if font is None or not font.is_file():
        print("No CJK font given: Chinese shows only where your system has a font for it. Give one with "
              "CJK_FONT=path/to/NotoSansSC-Regular.otf (or, on Debian/Ubuntu: apt-get install fonts-noto-cjk).")
        return None
    from vit_edu.book import i18n

    style = out.with_name(out.name + "-style")
    if lab_server.write_font_style(font, lab_server.lab_characters(out, i18n.LOCALE), style):
        print(f"The Chinese font for Jupyter Lab, cut from {font}, is in {style}.")
    return style


if __name__ == "__main__":
    main()
