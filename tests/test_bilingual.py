"""The glossary's promise: each key term carries its Chinese name the first time the book uses it.

Walks the pages in reading order (``_toc.yml``), prose only (no code, maths, inline code or glue roles), and
finds each glossary term's first use; the paragraph holding it (a heading counts with the paragraph after it)
must also hold the term's Chinese name.
"""

import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CJK = re.compile(r"[\u3400-\u9fff]")
# Words that are also plain English: their first *technical* use is the one that must carry the Chinese name.
TECHNICAL = {
    "key": r"\bkeys?\b(?= \(|,? (?:and|or) values?|\s+vectors?|\s*\$K\$|\s+K\b)",
    "value": r"\bvalues?\b(?= \(|\s+vectors?|\s*\$V\$|\s+V\b)",
    "query": r"\bquer(?:y|ies)\b(?= \(|,? keys?|\s+vectors?|\s*\$Q\$|\s+Q\b)",
    "token": r"\btokens?\b",
    "baseline": r"\bbaseline\b(?= \(| of )",
    "saturation": r"\bsaturat(?:ion|es?|ed)\b",
    "interpolation": r"\binterpolat(?:ion|es?|ed)\b",
    "checkpoint": r"\bcheckpoints?\b",
    "channel": r"\bchannels?\b",
    "tie": r"\bties\b(?= \(|,| in| between| at)|\btied values\b",
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


def paragraphs(page: Path) -> list[str]:
    if page.suffix == ".ipynb":
        cells = json.loads(page.read_text(encoding="utf-8"))["cells"]
        texts = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    else:
        texts = [page.read_text(encoding="utf-8")]
    paras = []
    for text in texts:
        paras += [p for p in re.split(r"\n\s*\n", prose(text)) if p.strip()]
    # A heading belongs with the paragraph after it.
    merged = []
    for p in paras:
        if merged and merged[-1].lstrip().startswith("#") and "\n" not in merged[-1].strip():
            merged[-1] += "\n" + p
        else:
            merged.append(p)
    return merged


def pattern(term: str, spellings: list[str]) -> re.Pattern:
    if term in TECHNICAL:
        return re.compile(TECHNICAL[term], re.I)
    alts = []
    for s in spellings:
        body = r"[\s-]+".join(re.escape(w) for w in s.split())
        acronym = s.isupper() or any(ch.isupper() for ch in s[1:])
        alts.append(rf"(?<![\w-]){body}(?:s|es)?(?![\w-])" if not acronym else rf"(?<![\w-]){body}s?(?![\w-])")
    acronyms = [s for s in spellings if s.isupper() or any(ch.isupper() for ch in s[1:])]
    flags = 0 if acronyms and len(acronyms) == len(spellings) else re.I
    return re.compile("|".join(alts), flags)


def first_uses() -> list[tuple[str, str, str, str]]:
    """(term, Chinese, page, paragraph) of each term's first use in reading order."""
    paras = [(page, p) for page in pages() for p in paragraphs(page)]
    uses = []
    for term, spellings, chinese in glossary_terms():
        pat = pattern(term, spellings)
        for page, p in paras:
            if pat.search(p):
                uses.append((term, chinese, page.name, p))
                break
    return uses


def test_the_glossary_has_terms_and_the_book_uses_them():
    terms = glossary_terms()
    assert len(terms) > 80
    used = {t for t, *_ in first_uses()}
    unused = [t for t, *_ in terms if t not in used]
    assert not unused, f"glossary terms the chapters never use: {unused}"


def test_every_term_carries_its_chinese_name_at_first_use():
    missing = [
        f"{term!r} ({chinese}) first used in {page} without its Chinese name: …{p.strip()[:160]}…"
        for term, chinese, page, p in first_uses()
        if chinese not in p
    ]
    assert not missing, f"{len(missing)} terms:\n" + "\n".join(missing)


@pytest.mark.parametrize("entry", ["layer normalisation (LayerNorm, 层归一化)", "bag of patches (图像块集合（无序）)"])
def test_glossary_parsing(entry):
    # The parser reads aliases and a Chinese name that itself holds full-width brackets.
    m = re.match(r"^([A-Za-z][^(]*?)\s*\((.*)\)\s*$", entry)
    parts = [p.strip() for p in re.split(r",\s*(?![^（]*）)", m.group(2))]
    assert CJK.search(parts[-1]) and not any(CJK.search(p) for p in parts[:-1])
