"""The Chinese edition's translations: one gettext catalogue per page, built from the English pages' Markdown.

Sphinx's own i18n translates headings, but in a translated notebook paragraph myst-nb's ``{glue:text}`` roles
come out empty (the notebook parser problem of Sphinx issue 11357). So the Chinese edition is written instead:
:mod:`vit_edu.book.zh_edition` copies every page with each Markdown block replaced by its translation from
``locale/zh_CN/LC_MESSAGES/<page>.po``, code cells and outputs untouched, and builds the copies as a second book.

A message is one Markdown block: a paragraph, a list, a heading, a table, a ``$$`` formula with its text, or an
admonition's title line; an admonition's body and a glossary's entries are split into their own blocks. Code
fences and bare ``$$`` formulas are not messages: they are the same in both languages. The words code shows a
reader (widget players, glued phrases, the Try-it page's labels) are messages too, with the gettext context
``output`` and numbers as slots (:mod:`vit_edu.book.output_text`).

    python -m vit_edu.book.i18n update            # catalogues follow the English: new messages, changed ones fuzzy
    python -m vit_edu.book.i18n update --page 05_qkv   # only that page's catalogue
    python -m vit_edu.book.i18n check             # untranslated, fuzzy and obsolete messages, page by page
    python -m vit_edu.book.i18n worksheet PAGE    # the messages of PAGE that need a translator, as a text file
    python -m vit_edu.book.i18n apply PAGE FILE   # a filled worksheet back into PAGE's catalogue
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import yaml
from babel.messages.catalog import Catalog
from babel.messages.pofile import denormalize, normalize, read_po, write_po

from vit_edu.book import output_text

ROOT = Path(__file__).resolve().parents[2]
LOCALE = ROOT / "locale/zh_CN/LC_MESSAGES"
HEADER = (
    "# Chinese translation of the page {name} of ViT, hands-on (one message per Markdown block of the English page).\n"
    "# Update with `python -m vit_edu.book.i18n update`; translate in any PO editor, or with the worksheet commands."
)
BOOK_CATALOGUE = "_book"  # the book's title, the table of contents' part captions, the players' notes
OUTPUT = output_text.CONTEXT
Key = tuple[str, "str | None"]  # (msgid, msgctxt): a Markdown block has no context, an output text ``output``
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,}|:{3,})(.*)$")
# Directives whose body is prose to split further; others (code, raw HTML, math) stay one piece.
PROSE_DIRECTIVES = re.compile(r"^\{(admonition|note|tip|warning|important|caution|hint|seealso|glossary)\}")


@dataclass(frozen=True)
class Piece:
    """A stretch of a Markdown source: a message to translate, or text kept as it is (blank lines, code)."""

    text: str
    message: bool


def _is_message(block: str) -> bool:
    """A block is translated unless it is a bare formula, a label line or a code fence."""
    lines = block.strip().splitlines()
    if lines[0].strip() == "$$" and lines[-1].strip() == "$$":
        return False
    if all(re.fullmatch(r"\(.+\)=", line.strip()) for line in lines):
        return False
    return bool(re.search(r"[A-Za-z\u3400-\u9fff]", block))


def _fence_end(lines: list[str], start: int, marker: str) -> int:
    """Index of the line closing the fence opened at ``start`` with ``marker`` (nested fences skipped)."""
    depth = [marker]
    for i in range(start + 1, len(lines)):
        m = FENCE.match(lines[i])
        if not m:
            continue
        mark, rest = m.group(2), m.group(3).strip()
        if not rest and mark[0] == depth[-1][0] and len(mark) >= len(depth[-1]):
            depth.pop()
            if not depth:
                return i
        elif rest:
            depth.append(mark)
    raise ValueError(f"unclosed fence {marker!r} opened on line {start + 1}: {lines[start]!r}")


def _pieces(text: str) -> list[Piece]:
    """The pieces of ``text``, one per block or kept stretch, which join back to ``text`` with newlines."""
    lines = text.split("\n")
    pieces: list[Piece] = []
    block: list[str] = []

    def flush() -> None:
        if block:
            joined = "\n".join(block)
            pieces.append(Piece(joined, _is_message(joined)))
            block.clear()

    def keep(chunk: str) -> None:
        pieces.append(Piece(chunk, False))

    i = 0
    while i < len(lines):
        line = lines[i]
        fence = FENCE.match(line)
        if not line.strip():
            flush()
            keep(line)
        elif fence and fence.group(3).strip() and not block:
            end = _fence_end(lines, i, fence.group(2))
            info = fence.group(3).strip()
            if PROSE_DIRECTIVES.match(info):
                title = re.sub(r"^\{\w+\}\s*", "", info)
                pieces.append(Piece(line, bool(title)))
                j = i + 1
                while j < end and re.match(r"^\s*:[\w-]+:", lines[j]):  # the directive's options
                    keep(lines[j])
                    j += 1
                body = "\n".join(lines[j:end])
                if body:
                    pieces.extend(_pieces(body))
                keep(lines[end])
            else:
                keep("\n".join(lines[i : end + 1]))
            i = end
        elif line.strip() == "$$" and not block:
            end = next((k for k in range(i + 1, len(lines)) if lines[k].strip() == "$$"), None)
            if end is None:
                raise ValueError(f"unclosed $$ on line {i + 1}")
            keep("\n".join(lines[i : end + 1]))
            i = end
        else:
            block.append(line)
        i += 1
    flush()
    return pieces


def segment(text: str) -> list[Piece]:
    """``text`` cut into pieces whose texts join back to ``text`` exactly."""
    pieces = _pieces(text)
    joined: list[Piece] = []
    for k, piece in enumerate(pieces):
        joined.append(piece)
        if k < len(pieces) - 1:
            joined.append(Piece("\n", False))
    assert "".join(p.text for p in joined) == text, "segmentation lost text"
    return joined


def messages(text: str) -> list[str]:
    """The messages of one Markdown source, in order."""
    return [p.text for p in segment(text) if p.message]


def translate(text: str, table: dict[str, str]) -> str:
    """``text`` with every message replaced by its translation; a message missing from ``table`` is an error."""
    pieces = segment(text)
    missing = [p.text for p in pieces if p.message and not table.get(p.text)]
    if missing:
        raise KeyError(f"{len(missing)} message(s) without a translation, the first: {missing[0][:200]!r}")
    return "".join(table[p.text] if p.message else p.text for p in pieces)


# ---------------------------------------------------------------------------------------------------------
# Pages and their sources


def toc_files() -> list[str]:
    """Every page of ``_toc.yml`` (``book/01_patches``), in reading order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [toc["root"]] + [ch["file"] for part in toc["parts"] for ch in part["chapters"]]


def page_name(file: str) -> str:
    """A page's catalogue name: its path under book/ (the homework's student pages under homework/)."""
    return file.removeprefix("book/").replace("homework/student/", "homework/")


def page_file(stem: Path) -> Path | None:
    """The notebook or Markdown file ``stem`` names (``book/05_qkv`` -> ``book/05_qkv.ipynb``), if there is one."""
    return next((path for ext in (".ipynb", ".md") if (path := stem.with_name(stem.name + ext)).exists()), None)


def page_source(name: str) -> Path:
    """The English file a page's messages come from (a homework page: its master, which holds the prose)."""
    path = page_file(ROOT / "book" / name)
    if path is None:
        raise FileNotFoundError(f"no page book/{name}.ipynb or .md")
    return path


def markdown_sources(path: Path) -> list[str]:
    """The Markdown of a page: a notebook's Markdown cells, or a Markdown file."""
    if path.suffix == ".ipynb":
        return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]
    return [path.read_text(encoding="utf-8")]


def homework_extras() -> list[str]:
    """The Markdown otter-assign adds to every student notebook (its check-all instructions), read from otter."""
    from otter.assign.cell_factory import CellFactory

    return [cell.source for cell in CellFactory.create_check_all_cells(None) if cell.cell_type == "markdown"]


def book_strings() -> list[str]:
    """The book's title and author, and the part captions of the table of contents."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [config["title"], config["author"]] + [part["caption"] for part in toc["parts"]]


def page_messages(name: str) -> list[str]:
    """Every Markdown message of a page (or of ``_book``), without repeats, in order."""
    if name == BOOK_CATALOGUE:
        found = book_strings()
    else:
        sources = markdown_sources(page_source(name))
        if name.startswith("homework/hw"):
            sources += homework_extras()
        found = [m for source in sources for m in messages(source)]
    return list(dict.fromkeys(found))


def output_messages(name: str) -> list[str]:
    """The output texts of a page as templates: a chapter's players and glued phrases, a page's raw HTML; the
    players' fixed notes for ``_book``. The homework's student notebooks carry no outputs."""
    if name == BOOK_CATALOGUE:
        texts = list(output_text.FIXED)
    elif name.startswith("homework/"):
        texts = []
    else:
        source = page_source(name)
        texts = (output_text.notebook_texts(nbformat.read(source, as_version=4)) if source.suffix == ".ipynb"
                 else output_text.raw_html_texts(source.read_text(encoding="utf-8")))
    return output_text.messages(texts)


def page_keys(name: str) -> list[Key]:
    """Every message of a page with its context."""
    return [(m, None) for m in page_messages(name)] + [(m, OUTPUT) for m in output_messages(name)]


def catalogue_names() -> list[str]:
    return [BOOK_CATALOGUE] + [page_name(f) for f in toc_files()]


# ---------------------------------------------------------------------------------------------------------
# Catalogues


def catalogue_path(name: str, locale_dir: Path = LOCALE) -> Path:
    return locale_dir / f"{name}.po"


def load(name: str, locale_dir: Path = LOCALE) -> Catalog:
    path = catalogue_path(name, locale_dir)
    if not path.exists():
        return Catalog(locale="zh_CN", domain=name, fuzzy=False, header_comment=HEADER.format(name=name))
    with path.open("rb") as f:
        catalog = read_po(f, locale="zh_CN", domain=name)
    for m in catalog:  # Babel reads "#|" lines as comments: turn them back into the previous English
        if m.user_comments and all(c.startswith("|") for c in m.user_comments):
            quoted = "\n".join(c[1:].strip() for c in m.user_comments).removeprefix("msgid ")
            m.previous_id, m.user_comments = (denormalize(quoted),), []
    return catalog


def save(catalog: Catalog, name: str, locale_dir: Path = LOCALE) -> None:
    path = catalogue_path(name, locale_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    # width=0: one line per message line, so a diff shows the paragraph that changed; no dates, so an update that
    # changes nothing changes no file.
    catalog.revision_date = catalog.creation_date = None
    write_po(buffer, catalog, width=0, include_previous=False, sort_output=False, omit_header=False)
    text = re.sub(r'"(POT-Creation-Date|PO-Revision-Date): [^"]*\\n"\n', "", buffer.getvalue().decode("utf-8"))
    data = _with_previous(text, catalog).encode("utf-8")
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)


def _with_previous(text: str, catalog: Catalog) -> str:
    """PO text with each fuzzy message's previous English as ``#|`` lines, one per line of the English as msgmerge
    writes them (Babel's writer wraps them at 76 columns inside the quotes, and its reader skips them: :func:`load`
    reads them)."""
    previous = {}
    for m in catalog:
        if m.id and m.previous_id:
            context = f"msgctxt {normalize(m.context, width=0)}\n" if m.context else ""
            old = f"msgid {normalize(m.previous_id[0], width=0)}"
            previous[f"{context}msgid {normalize(m.id, width=0)}"] = "".join(f"#| {line}\n" for line in old.split("\n"))
    blocks = text.split("\n\n")
    for i, block in enumerate(blocks):
        start = re.search(r"^(msgctxt|msgid) ", block, re.M)
        if start is None:
            continue
        head = block[start.start():].split("\nmsgstr ")[0]
        if head in previous:
            blocks[i] = block[:start.start()] + previous[head] + block[start.start():]
    return "\n\n".join(blocks)


def update(name: str, locale_dir: Path = LOCALE, prune: bool = False) -> Catalog:
    """The catalogue of ``name`` brought in line with the English: new messages added untranslated, changed ones
    marked fuzzy (with their previous English and translation kept for the translator), removed ones obsolete
    (kept at the end of the file for reuse, or dropped with ``prune``)."""
    template = Catalog(locale="zh_CN", domain=name, project="ViT, hands-on", charset="utf-8")
    for message, context in page_keys(name):
        template.add(message, context=context)
    catalog = load(name, locale_dir)
    catalog.project, catalog.fuzzy, catalog.header_comment = template.project, False, HEADER.format(name=name)
    catalog.version, catalog.msgid_bugs_address = "1", "the book's issue tracker"
    catalog.last_translator, catalog.language_team = "ViT, hands-on translators", "Chinese (Simplified)"
    before = {(str(m.id), m.context): m.previous_id for m in catalog if m.id}
    strings = {(str(m.id), m.context): (m.string, m.fuzzy) for m in catalog if m.id and m.string}
    catalog.update(template, no_fuzzy_matching=False, update_header_comment=False)
    for entry in catalog:
        key = (str(entry.id), entry.context)
        if key in strings:  # an unchanged message keeps its state (Babel may lend it to a new look-alike, and drop it)
            entry.string, fuzzy = strings[key]
            entry.flags.discard("fuzzy")
            if fuzzy:
                entry.flags.add("fuzzy")
            entry.previous_id = before[key] if fuzzy else ()
            continue
        if not entry.fuzzy:
            continue
        if entry.previous_id and (entry.previous_id[0], entry.context) not in before:
            # Babel's guesses ignore contexts: a caption's guess from a paragraph is no help
            entry.string, entry.previous_id = "", ()
            entry.flags.discard("fuzzy")
        elif not entry.previous_id:  # still fuzzy from an earlier update: Babel drops the English it came from
            entry.previous_id = before.get((str(entry.id), entry.context)) or ()
    if prune:
        catalog.obsolete.clear()
    save(catalog, name, locale_dir)
    return catalog


@dataclass
class Status:
    """What a page's catalogue lacks against the current English."""

    untranslated: list[Key]
    fuzzy: list[Key]
    obsolete: list[Key]

    @property
    def ok(self) -> bool:
        return not (self.untranslated or self.fuzzy or self.obsolete)


def status(name: str, locale_dir: Path = LOCALE) -> Status:
    """Compares the catalogue with the page's current messages (no update needed first)."""
    catalog = load(name, locale_dir)
    current = page_keys(name)
    untranslated, fuzzy = [], []
    for key in current:
        entry = catalog.get(*key)
        if entry is None or not entry.string:
            untranslated.append(key)
        elif entry.fuzzy:
            fuzzy.append(key)
    wanted = set(current)
    obsolete = [(str(m.id), m.context) for m in catalog if m.id and (m.id, m.context) not in wanted]
    obsolete += [(str(m.id), m.context) for m in catalog.obsolete.values()]
    return Status(untranslated, fuzzy, obsolete)


def table(name: str, locale_dir: Path = LOCALE, context: str | None = None) -> dict[str, str]:
    """msgid -> translation for the translated, non-fuzzy messages of a catalogue in one context (Markdown's, by
    default; ``OUTPUT`` for the output texts)."""
    return {str(m.id): str(m.string) for m in load(name, locale_dir)
            if m.id and m.string and not m.fuzzy and m.context == context}


# ---------------------------------------------------------------------------------------------------------
# What a translation must keep

CJK = output_text.CJK
# Kept character for character: roles ({glue:text}, {cite:p}, {doc}, ...), inline code, maths, link targets,
# labels and HTML tags' names.
KEPT = re.compile(r"\{[a-z:-]+\}`[^`]*`|``[^`]+``|`[^`]+`|\$\$.*?\$\$|\$[^$]+\$|\]\([^)]*\)|^\(.+\)=$|</?[a-z]+\b", re.M | re.S)
HEADING = re.compile(r"^(#+) ")
ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s", re.M)
TABLE_ROW = re.compile(r"^\|.*\|\s*$", re.M)


def kept(text: str) -> list[str]:
    """The stretches of ``text`` a translation keeps unchanged, sorted (a role's own link text may change)."""
    titled = re.compile(r"^(\{[a-z:-]+\}`)[^`<]*<([^>`]+)>`$")
    return sorted(titled.sub(r"\1<\2>`", m.group(0)) for m in KEPT.finditer(text))


def problems(english: str, chinese: str, context: str | None = None) -> list[str]:
    """What is wrong with a translation of one message: lost or changed code, maths, roles and links; another
    heading level, list or table shape, or fence; no Chinese where the English has prose. An output text: other
    slots or HTML tags (:func:`vit_edu.book.output_text.problems`)."""
    if context == OUTPUT:
        return output_text.problems(english, chinese)
    found = []
    lost = sorted(set(kept(english)) - set(kept(chinese)))
    added = sorted(set(kept(chinese)) - set(kept(english)))
    if lost:
        found.append(f"missing or changed: {lost}")
    if added:
        found.append(f"not in the English: {added}")
    level = lambda t: (HEADING.match(t) or re.match("", "")).group(0)  # noqa: E731
    if level(english) != level(chinese):
        found.append(f"heading {level(english)!r} became {level(chinese)!r}")
    for name, pattern in (("list items", ITEM), ("table rows", TABLE_ROW)):
        a, b = len(pattern.findall(english)), len(pattern.findall(chinese))
        if a != b:
            found.append(f"{name}: {a} in the English, {b} in the translation")
    fence = FENCE.match(english)
    if fence and not chinese.startswith(english.split("}")[0] + "}"):
        found.append(f"the directive line must start {english.split('}')[0] + '}'!r}")
    prose = KEPT.sub(" ", english)
    if re.search(r"[A-Za-z]{3,}(?:\s+[A-Za-z]{2,}){2}", prose) and not CJK.search(KEPT.sub(" ", chinese)):
        found.append("no Chinese in the translation")
    return found


# ---------------------------------------------------------------------------------------------------------
# Worksheets: the messages that need a translator, as plain text an editor handles well

# A block's mark: its number, "o" before it for an output text (context ``output``), and what the block is.
MARK = re.compile(r"^<<<<< (o?\d+) (en|zh|previous en|previous zh) >>>>>$", re.M)


def worksheet(name: str, locale_dir: Path = LOCALE) -> str:
    """The untranslated and fuzzy messages of a page; write each translation under its ``zh`` mark."""
    catalog = load(name, locale_dir)
    todo = status(name, locale_dir)
    out = [f"# Worksheet for {name}: translate each block under its zh mark; leave the en blocks as they are.\n"
           "# Blocks numbered o1, o2, ... are texts that code shows (controls, captions, glued phrases): keep their\n"
           "# numbered slots {0}, {1}, their {{name}} placeholders and their HTML tags.\n"]
    for n, (message, context) in enumerate(todo.untranslated + todo.fuzzy):
        entry = catalog.get(message, context)
        k = f"o{n}" if context == OUTPUT else str(n)
        out.append(f"<<<<< {k} en >>>>>\n{message}\n")
        if entry is not None and entry.fuzzy and entry.string:
            if entry.previous_id:
                out.append(f"<<<<< {k} previous en >>>>>\n{entry.previous_id[0]}\n")
            out.append(f"<<<<< {k} previous zh >>>>>\n{entry.string}\n")
        out.append(f"<<<<< {k} zh >>>>>\n\n")
    return "\n".join(out)


def read_worksheet(text: str) -> dict[Key, str]:
    """(English, context) -> Chinese from a filled worksheet (blocks left empty are skipped)."""
    parts = MARK.split(text)
    blocks: dict[tuple[str, str], str] = {}
    for k in range(1, len(parts) - 2, 3):
        blocks[(parts[k], parts[k + 1])] = parts[k + 2].strip("\n")
    pairs = {}
    for (k, kind), english in blocks.items():
        if kind == "en":
            chinese = blocks.get((k, "zh"), "")
            if chinese.strip():
                pairs[(english, OUTPUT if k.startswith("o") else None)] = chinese
    return pairs


def apply(name: str, pairs: dict[Key, str] | dict[str, str], locale_dir: Path = LOCALE) -> int:
    """Writes translations into a page's catalogue (clearing their fuzzy flag); returns how many. A key is a
    message's (English, context), or its English alone for a Markdown block."""
    keyed = {(key if isinstance(key, tuple) else (key, None)): chinese for key, chinese in pairs.items()}
    catalog = update(name, locale_dir)
    unknown = [e for e, c in keyed if catalog.get(e, c) is None]
    if unknown:
        raise KeyError(f"{len(unknown)} English block(s) are not messages of {name}, the first: {unknown[0][:200]!r}")
    bad = [f"{english[:120]!r}: {'; '.join(found)}" for (english, context), chinese in keyed.items()
           if (found := problems(english, chinese, context))]
    if bad:
        raise ValueError(f"{len(bad)} translation(s) refused, nothing written:\n" + "\n".join(bad))
    for (english, context), chinese in keyed.items():
        entry = catalog.get(english, context)
        entry.string = chinese
        entry.flags.discard("fuzzy")
        entry.previous_id = ()
    save(catalog, name, locale_dir)
    return len(pairs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("update", help="bring every catalogue in line with the English pages")
    up.add_argument("--prune", action="store_true", help="drop obsolete messages (once nothing needs them)")
    up.add_argument("--page", action="append", choices=catalogue_names(), help="only this page's catalogue (repeatable)")
    sub.add_parser("check", help="list untranslated, fuzzy and obsolete messages; exit 1 if any")
    ws = sub.add_parser("worksheet", help="the messages of one page that need a translator")
    ws.add_argument("page", choices=catalogue_names())
    ap = sub.add_parser("apply", help="a filled worksheet into its page's catalogue")
    ap.add_argument("page", choices=catalogue_names())
    ap.add_argument("file", type=Path)
    args = parser.parse_args(argv)
    if args.command == "update":
        for name in args.page or catalogue_names():
            update(name, prune=args.prune)
        args.command = "check"
    if args.command == "check":
        bad = 0
        for name in catalogue_names():
            s = status(name)
            counts = f"{len(s.untranslated)} untranslated, {len(s.fuzzy)} fuzzy, {len(s.obsolete)} obsolete"
            print(f"{name}: {'ok' if s.ok else counts}")
            bad += not s.ok
        return 1 if bad else 0
    if args.command == "worksheet":
        sys.stdout.write(worksheet(args.page))
        return 0
    n = apply(args.page, read_worksheet(args.file.read_text(encoding="utf-8")))
    print(f"{n} translation(s) written to {catalogue_path(args.page).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
