"""The glossary's promise: each chapter gives a key term's Chinese name beside it the first time it uses it.

Walks every page (``_toc.yml``), prose only (no code, maths, inline code or glue roles; bold and italic text
count), and finds each glossary term's first use in running prose: a sentence or a list item, headings left
out, once in a chapter's opening cell (its preview) and once in the rest of the chapter. That sentence or list item must also hold the term's Chinese name; the Chinese name
elsewhere in a long paragraph does not count.
"""

import json
import re
from pathlib import Path

import pytest
import yaml

from vit_edu.book.output_text import CJK

ROOT = Path(__file__).resolve().parents[1]
# Words that are also plain English: their first *technical* use is the one that must carry the Chinese name.
TECHNICAL = {
    "key": r"\bkeys?\b(?= \(|,? (?:and|or) values?|\s+vectors?|\s*\$K\$|\s+K\b)",
    "value": r"\bvalues?\b(?= \(|\s+vectors?|\s*\$V\$|\s+V\b)",
    "query": r"\bquer(?:y|ies)\b(?= \(|,? keys?|\s+vectors?|\s*\$Q\$|\s+Q\b)",
    "token": r"\btokens?\b",
    "baseline": r"\bbaselines?\b",
    "saturation": r"\bsaturat(?:ion|es?|ed)\b",
    "interpolation": r"\binterpolat(?:ion|es?|ed)\b",
    "checkpoint": r"\bcheckpoints?\b",
    "channel": r"\bchannels?\b",
    # The noun (a tie, ties, tied values), not the verb ("it ties a token's output to", "the two rates tie").
    "tie": r"\b(?:a|the|no|any) tie\b|\b(?:ties|tied)\b(?! (?:a|an|the|its|it|them|with)\b)",
    "entropy": r"\bentropy\b",
}


def glossary_terms() -> list[tuple[str, list[str], str]]:
    """(term, English spellings, Chinese name) for every entry of book/glossary.md."""
    terms = []
    for line in (ROOT / "book/glossary.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Za-z][^(]*?)\s*\((.*)\)\s*$", line)
        if not m:
            continue
        name, inside = m.group(1).strip(), m.group(2)
        parts = [p.strip() for p in re.split(r",\s*(?![^（]*）)", inside)]
        chinese = [p for p in parts if CJK.search(p)]
        assert chinese, f"glossary entry {name!r} has no Chinese name"
        spellings = [name] + [p for p in parts if not CJK.search(p)]
        terms.append((name, spellings, chinese[-1]))
    return terms


def pages() -> list[Path]:
    """The book's pages in reading order, homework and reference pages left out."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [ch["file"] for part in toc["parts"] for ch in part["chapters"]]
    files = [f for f in files if "homework" not in f and f not in ("book/glossary", "book/references")]
    found = []
    for f in files:
        for ext in (".ipynb", ".md"):
            if (ROOT / (f + ext)).exists():
                found.append(ROOT / (f + ext))
    return found


def prose(text: str) -> str:
    """Markdown with code, maths, roles and links' targets blanked (one-word code spans kept as words)."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))  # noqa: E731
    # A lone word in backticks (`reshape`, the `meta` device) is the term itself, written as code: keep it.
    text = re.sub(r"(?<![`}])`([A-Za-z][\w-]*)`", r" \1 ", text)
    for pattern in (r"```.*?```", r"\$\$.*?\$\$", r"\$[^$\n]+\$", r"\{[a-z:]+\}`[^`]*`", r"`[^`]*`",
                    r"\]\([^)]*\)", r"<[^>]+>", r"^:[a-z-]+:.*$"):
        text = re.sub(pattern, blank, text, flags=re.S | re.M)
    return text


def cells(page: Path) -> list[str]:
    """The page's Markdown, one string per Markdown cell."""
    if page.suffix == ".ipynb":
        cells = json.loads(page.read_text(encoding="utf-8"))["cells"]
        return ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    return [page.read_text(encoding="utf-8")]


HEADING = re.compile(r"^\s*#+ .*$|^[=-]{3,}\s*$", re.M)
ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s", re.M)
# A sentence ends at . ! ? ; or : before a capital, a bracket or emphasis ("Fig. 7" and "e.g. the" do not end one).
SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+(?=[A-Z*_(\[])")


def spans(text: str) -> list[tuple[int, int]]:
    """Where the running prose of one cell lies, in order: its sentences and list items (headings left out)."""
    plain = HEADING.sub(lambda m: " " * len(m.group(0)), prose(text))  # same length as text
    found = []
    for para in re.finditer(r"(?:(?!\n\s*\n).)+", plain, flags=re.S):
        a0 = para.start()
        starts = [a0 + m.start() for m in ITEM.finditer(para.group(0))]
        for a, b in zip([a0] + starts, starts + [para.end()]):
            cuts = [a] + [m.end() for m in SENTENCE_END.finditer(plain, a, b)] + [b]
            found += [(x, y) for x, y in zip(cuts, cuts[1:]) if plain[x:y].strip()]
    return found


def units(text: str) -> list[str]:
    """The sentences and list items of one cell's running prose, code and maths blanked."""
    plain = prose(text)
    return [plain[a:b] for a, b in spans(text)]


def pattern(term: str, spellings: list[str]) -> re.Pattern:
    if term in TECHNICAL:
        return re.compile(TECHNICAL[term], re.I)
    alts = []
    for s in spellings:
        body = r"[\s-]+".join(re.escape(w) for w in s.split())
        acronym = s.isupper() or any(ch.isupper() for ch in s[1:])
        # An acronym keeps its case ("GAP" is global average pooling, "gap" a plain word).
        alts.append(rf"(?<![\w-]){body}(?:s|es)?(?![\w-])" if not acronym else rf"(?-i:(?<![\w-]){body}s?(?![\w-]))")
    acronyms = [s for s in spellings if s.isupper() or any(ch.isupper() for ch in s[1:])]
    flags = 0 if acronyms and len(acronyms) == len(spellings) else re.I
    return re.compile("|".join(alts), flags)


def sections(page: Path) -> list[list[str]]:
    """A chapter's opening cell (its question and what you will be able to do), then its body; a page: one part."""
    texts = cells(page)
    parts = [texts[:1], texts[1:]] if page.suffix == ".ipynb" else [texts]
    return [[u for text in part for u in units(text)] for part in parts]


def first_uses() -> list[tuple[str, str, str, str]]:
    """(term, Chinese, page, sentence) of each term's first use in each chapter's opening and in its body.

    The opening previews the chapter; the body teaches it. A reader who skips the preview still meets the
    Chinese name where the term is first used in the text that teaches it.
    """
    parts = [(page, part) for page in pages() for part in sections(page)]
    uses = []
    for term, spellings, chinese in glossary_terms():
        pat = pattern(term, spellings)
        for page, found in parts:
            first = next((u for u in found if pat.search(u)), None)
            if first is not None:
                uses.append((term, chinese, page.name, first))
    return uses


def test_the_glossary_has_terms_and_the_book_uses_them():
    terms = glossary_terms()
    assert len(terms) > 80
    used = {t for t, *_ in first_uses()}
    unused = [t for t, *_ in terms if t not in used]
    assert not unused, f"glossary terms the chapters never use: {unused}"


def test_every_term_carries_its_chinese_name_at_first_use():
    missing = [
        f"{page}: {term!r} ({chinese}) first used without its Chinese name: …{' '.join(p.split())[:160]}…"
        for term, chinese, page, p in first_uses()
        if chinese not in p
    ]
    assert not missing, f"{len(missing)} first uses:\n" + "\n".join(missing)


@pytest.mark.parametrize(
    ("text", "flagged"),
    [
        # A list item is its own unit: the Chinese name in the next item does not count.
        ("- compute the mean attention distance of every head;\n- plot it (平均注意力距离).", True),
        # Bold text is prose; the Chinese name in a later sentence of the same paragraph does not count.
        ("- **window** and **shifted window**: defined below. Later: shifted windows (移位窗口).", True),
        # A heading is not running prose: the first use is the sentence after it.
        ("## Multiply-adds\nA multiply-add (乘加运算) counts as two FLOPs.", False),
        ("Each multiply-add counts as two FLOPs (Fig. 7, e.g. a sum; 乘加运算).", False),
    ],
)
def test_first_use_is_a_sentence_or_list_item(text, flagged):
    term = re.compile(r"mean attention distance|shifted window|multiply-add", re.I)
    first = next(u for u in units(text) if term.search(u))
    assert bool(CJK.search(first)) is not flagged, units(text)


@pytest.mark.parametrize("entry", ["layer normalisation (LayerNorm, 层归一化)", "bag of patches (图像块集合（无序）)"])
def test_glossary_parsing(entry):
    # The parser reads aliases and a Chinese name that itself holds full-width brackets.
    m = re.match(r"^([A-Za-z][^(]*?)\s*\((.*)\)\s*$", entry)
    parts = [p.strip() for p in re.split(r",\s*(?![^（]*）)", m.group(2))]
    assert CJK.search(parts[-1]) and not any(CJK.search(p) for p in parts[:-1])


@pytest.mark.parametrize(
    ("term", "text", "seen"),
    [
        ("baseline", "below the baseline's on every seed", True),
        ("baseline", "Baselines differ by task.", True),
        ("tie", "The ties mattered.", True),
        ("tie", "gives tied values the average rank", True),
        ("tie", "It also ties a token's output to the batch.", False),
        ("tie", "The two learning rates tie: their means differ by less than a point.", False),
        ("tie", "We count a tie at the edge of the top k.", True),
    ],
)
def test_plain_english_terms_are_seen_in_every_technical_use(term, text, seen):
    assert bool(re.search(TECHNICAL[term], prose(text), re.I)) is seen
