"""Words that code shows a reader: widget players' controls and captions, glued phrases, the cells of the tables
code prints (Markdown outputs), the Try-it page's labels.

The Chinese edition translates them too, from the same catalogues as the prose (context ``output``). Their English
is written by code, with numbers that differ from frame to frame and from run to run, so a message is the text
with each number replaced by a numbered slot (``<b>{0}</b> of {1} keys hold 90% of the weight``): one translation
serves every frame, and a sentence changed in code comes back as an untranslated message, as a paragraph does.
The numbers themselves are never translated: they are put back into the Chinese text as the English has them.
"""

from __future__ import annotations

import ast
import functools
import html
import json
import re
from collections.abc import Callable, Iterator
from html.parser import HTMLParser

import nbformat

from vit_edu.book.lab_edition import SITE_PHRASES
from vit_edu.widgets import LIVE_FALLBACK_TEXT, RESTART_TEXT, frames

CONTEXT = "output"  # the gettext context of these messages, so "head" the control and "head" a paragraph differ
# A number as code prints it: a sign, thousands commas, decimals; not a digit inside a word (ch9, 1e-4, P4). ASCII
# classes, since Python's \w takes ² for a letter: 197² is a number and a square.
NUMBER = re.compile(r"(?<![A-Za-z0-9_.])[-−+]?\d+(?:,\d{3})*(?:\.\d+)?(?![A-Za-z0-9_])")
SLOT = re.compile(r"(?<!\{)\{(\d+)\}")
NAMED = re.compile(r"\{\{\w+\}\}")  # a script's own placeholder ({name} in tryit.js), doubled in a template
TAG = re.compile(r"</?([a-z][a-z0-9]*)\b")
WORDS = re.compile(r"[A-Za-z]{2,}")
CJK = re.compile(r"[\u3400-\u9fff]")  # a Chinese character (CJK unified ideographs and extension A)
GLUE_TEXT = "application/papermill.record/text/plain"
PLAYER_DATA = re.compile(r'(<script type="application/json" class="vit-frames-data">)(.*?)(</script>)', re.S)
PLAYER_ALT = re.compile(r'(<img class="vit-frames-image" alt=")([^"]*)(")')  # the player's picture description
# The Try-it page keeps its interface strings in a JSON block of its raw HTML; tryit.js reads them from there.
PAGE_TEXT = re.compile(r'(<script type="application/json" id="tryit-text">)(.*?)(</script>)', re.S)
RAW_HTML = re.compile(r"^```\{raw\} html\n(.*?)^```$", re.M | re.S)
ATTRIBUTES = ("aria-label", "alt", "title")  # attributes a reader (or a screen reader) meets


def template(text: str) -> tuple[str, list[str]]:
    """``text`` with its numbers as numbered slots (literal braces doubled), and the numbers in order."""
    numbers: list[str] = []

    def slot(m: re.Match) -> str:
        numbers.append(m.group(0))
        return f"{{{len(numbers) - 1}}}"

    return NUMBER.sub(slot, text.replace("{", "{{").replace("}", "}}")), numbers


def fill(translation: str, numbers: list[str]) -> str:
    """A translated template with the English numbers put back."""
    return translation.format(*numbers)


def wants_translation(text: str) -> bool:
    """Text with words in it; a number, a bare symbol or an empty string is the same in both languages."""
    return bool(WORDS.search(text))


def translate(text: str, table: dict[str, str]) -> str:
    """``text`` in Chinese: its template's translation with its own numbers; a missing translation is an error."""
    if not wants_translation(text):
        return text
    key, numbers = template(text)
    if key not in table:
        raise KeyError(f"an output text without a translation: {key[:200]!r}")
    return fill(table[key], numbers)


def problems(english: str, chinese: str) -> list[str]:
    """What is wrong with the translation of a template: other slots, other HTML tags, no Chinese."""
    found = []
    if sorted(SLOT.findall(english)) != sorted(SLOT.findall(chinese)):
        found.append(f"slots {sorted(set(SLOT.findall(english)))} must each appear once, as in the English")
    if sorted(NAMED.findall(english)) != sorted(NAMED.findall(chinese)):
        found.append(f"placeholders {sorted(set(NAMED.findall(english)))} must be kept as they are")
    if sorted(TAG.findall(english)) != sorted(TAG.findall(chinese)):
        found.append(f"HTML tags {sorted(TAG.findall(english))} must be kept")
    try:
        fill(chinese, ["0"] * len(SLOT.findall(english)))
    except (IndexError, KeyError, ValueError) as err:
        found.append(f"not a template ({err}); write a literal brace as {{{{ or }}}}")
    if len(WORDS.findall(re.sub(r"<[^>]*>", " ", english))) >= 3 and not CJK.search(chinese):
        found.append("no Chinese in the translation")
    return found


# ---------------------------------------------------------------------------------------------------------
# Where the texts are


# A table code prints (``IPython.display.Markdown``): rows of cells between pipes, and a |---| rule under the header.
TABLE_ROW = re.compile(r"^\s*\|(.*)\|\s*$")
TABLE_RULE = re.compile(r"^\s*\|[\s:|-]+\|\s*$")
CELL_SPLIT = re.compile(r"(?<!\\)\|")  # a pipe that is not written \|


def _table_markdown(output: dict) -> str | None:
    """The Markdown of an output that is a table, or None (a figure, or code shown as Markdown, is not)."""
    markdown = "".join(output.get("data", {}).get("text/markdown", ""))
    lines = markdown.strip().splitlines()
    return markdown if lines and all(TABLE_ROW.match(line) for line in lines) else None


def _table(markdown: str, tr: Callable[[str], str]) -> str:
    """A printed table with each cell in Chinese (the rule and the numbers as they are)."""
    def row(line: str) -> str:
        if TABLE_RULE.match(line):
            return line
        cells = CELL_SPLIT.split(TABLE_ROW.match(line).group(1))
        return "| " + " | ".join(tr(cell.strip()) for cell in cells) + " |"

    return "\n".join(row(line) for line in markdown.strip().splitlines())


def _player_texts(data: dict) -> Iterator[str]:
    yield from data["titles"]
    for labels, kind in zip(data["labels"], data["kinds"]):
        if kind != "range":  # a slider's labels are its numbers
            yield from labels
    for _, caption in data["frames"]:
        yield caption


def _glued(output: dict) -> str | None:
    """The string a glue output holds (its text/plain is the Python repr), or None for numbers and figures."""
    if "scrapbook" not in output.get("metadata", {}) or GLUE_TEXT not in output.get("data", {}):
        return None
    try:
        value = ast.literal_eval("".join(output["data"][GLUE_TEXT]))
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None


class _Strings(HTMLParser):
    """Text and reader-facing attributes of an HTML fragment, outside scripts and styles."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.skip += tag in ("script", "style")
        self.found += [value for name, value in attrs if name in ATTRIBUTES and value]

    def handle_endtag(self, tag: str) -> None:
        self.skip -= tag in ("script", "style")

    def handle_data(self, data: str) -> None:
        if not self.skip and data.strip():
            self.found.append(" ".join(data.split()))


def _json_strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _json_strings(item)


def _html_strings(raw: str) -> list[str]:
    parser = _Strings()
    parser.feed(raw)
    return parser.found


def raw_html_texts(markdown: str) -> list[str]:
    """The reader-facing strings of a page's raw HTML blocks: text, labels, and the values of its interface JSON."""
    found = []
    for block in RAW_HTML.finditer(markdown):
        found += _html_strings(block.group(1))
    for m in PAGE_TEXT.finditer(markdown):
        found += list(_json_strings(json.loads(m.group(2))))
    return found


def figure_alt(cell: dict) -> str | None:
    """The text a screen reader gives for a code cell's figure (myst-nb's cell option ``mystnb.image.alt``)."""
    return cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt")


def notebook_texts(nb: nbformat.NotebookNode) -> list[str]:
    """The output texts of a notebook: its players' controls and captions, its glued strings, its tables' cells and
    its figures' descriptions."""
    found: list[str] = []
    for cell in nb.cells:
        if figure_alt(cell):
            found.append(figure_alt(cell))
        for output in cell.get("outputs", []):
            glued = _glued(output)
            if glued is not None:
                found.append(glued)
            table = _table_markdown(output)
            if table is not None:
                _table(table, lambda cell: found.append(cell) or cell)  # the cells, as _table reads them
            page = "".join(output.get("data", {}).get("text/html", ""))
            for m in PLAYER_DATA.finditer(page):
                found += list(_player_texts(json.loads(m.group(2))))
            found += [html.unescape(m.group(2)) for m in PLAYER_ALT.finditer(page)]
    return found


def messages(texts: list[str]) -> list[str]:
    """The templates of ``texts`` that need a translator, without repeats, in order."""
    return list(dict.fromkeys(template(t)[0] for t in texts if wants_translation(t)))


# Words every page may carry, translated once in the book's own catalogue: the players' notes (frames.py), the
# Lab edition's name for a page only the website has (lab_edition.py) and the live widget's notes (widgets).
PLAYER_NOTES = (frames.NOTE_STATIC, frames.NOTE_LIVE)
FIXED = (*PLAYER_NOTES, *SITE_PHRASES, RESTART_TEXT, LIVE_FALLBACK_TEXT)


@functools.cache
def chinese_outputs() -> dict[str, str]:
    """Every catalogue's output texts, template -> Chinese: for the Chinese Lab's live widgets, which do not know
    their chapter (read once per kernel)."""
    from vit_edu.book import i18n  # i18n imports this module

    table: dict[str, str] = {}
    for name in i18n.catalogue_names():
        table.update(i18n.table(name, context=CONTEXT))
    return table


def translate_or_keep(text: str, table: dict[str, str]) -> str:
    """:func:`translate`, or ``text`` as it is where no catalogue has it: a live widget offers control values, and
    so captions, that the website's player (whose texts the catalogues hold) does not."""
    try:
        return translate(text, table)
    except KeyError:
        return text


# ---------------------------------------------------------------------------------------------------------
# Writing the Chinese


def _player(page: str, tr: Callable[[str], str]) -> str:
    """A player's HTML with its controls, captions, picture description and notes in Chinese."""
    shown: list[tuple[str, str]] = []  # the caption in the player's static HTML, in English and in Chinese

    def one(m: re.Match) -> str:
        data = json.loads(m.group(2))  # its "<\/" is JSON's escape of "</"
        first = frames.frame_index(data["sizes"], data["start"])
        english = data["frames"][first][1]
        data["titles"] = [tr(t) for t in data["titles"]]
        data["labels"] = [labels if kind == "range" else [tr(v) for v in labels]
                          for labels, kind in zip(data["labels"], data["kinds"])]
        data["frames"] = [[png, tr(caption)] for png, caption in data["frames"]]
        shown.append((english, data["frames"][first][1]))
        payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False).replace("</", "<\\/")
        return m.group(1) + payload + m.group(3)

    page = PLAYER_DATA.sub(one, page)
    for english, chinese in shown:
        page = page.replace(f'<div class="vit-frames-caption">{english}</div>',
                            f'<div class="vit-frames-caption">{chinese}</div>', 1)
    page = PLAYER_ALT.sub(lambda m: m.group(1) + html.escape(tr(html.unescape(m.group(2)))) + m.group(3), page)
    for text in PLAYER_NOTES:
        page = page.replace(text, tr(text))
    return page


def translate_notebook(nb: nbformat.NotebookNode, table: dict[str, str]) -> None:
    """Every player, glued string, printed table and figure description of ``nb`` in Chinese, in place; code,
    numbers and pictures untouched."""
    tr = lambda text: translate(text, table)  # noqa: E731
    for cell in nb.cells:
        if figure_alt(cell):
            cell.metadata["mystnb"]["image"]["alt"] = tr(figure_alt(cell))
        for output in cell.get("outputs", []):
            glued = _glued(output)
            if glued is not None and wants_translation(glued):
                output["data"][GLUE_TEXT] = repr(tr(glued))
            markdown = _table_markdown(output)
            if markdown is not None:
                output["data"]["text/markdown"] = _table(markdown, tr)
            page = "".join(output.get("data", {}).get("text/html", ""))
            if PLAYER_DATA.search(page):
                output["data"]["text/html"] = _player(page, tr)


def translate_raw_html(markdown: str, table: dict[str, str]) -> str:
    """The raw HTML blocks of a Markdown page with their text, labels and interface JSON in Chinese."""
    def markup(part: str) -> str:  # HTML outside scripts: its texts and labels
        for text in sorted(set(_html_strings(part)), key=len, reverse=True):  # longer first: no part of a longer text
            words = r"\s+".join(re.escape(html.escape(w, quote=False)) for w in text.split())
            part = re.sub(rf"(?<=[>\"])(\s*){words}(\s*)(?=[<\"])",
                          lambda k: k.group(1) + html.escape(translate(text, table), quote=False) + k.group(2), part)
        return part

    def block(m: re.Match) -> str:
        parts = re.split(r"(<script\b.*?</script>)", m.group(1), flags=re.S)  # odd indices: the scripts
        raw = "".join(markup(part) if k % 2 == 0 else PAGE_TEXT.sub(
            lambda j: j.group(1) + json.dumps(_json_map(json.loads(j.group(2)), table), ensure_ascii=False, indent=1)
            + j.group(3), part) for k, part in enumerate(parts))
        return m.group(0).replace(m.group(1), raw)

    return RAW_HTML.sub(block, markdown)


def _json_map(value: object, table: dict[str, str]) -> object:
    if isinstance(value, str):
        return translate(value, table)
    if isinstance(value, dict):
        return {k: _json_map(v, table) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_map(v, table) for v in value]
    return value
