"""The Chinese edition's catalogues: complete, current, faithful to the English's code, maths and terms.

Each page's messages are its Markdown blocks (``vit_edu.book.i18n``). When an English paragraph changes, its
message is new to the catalogue, so these tests fail, naming the page and the paragraph, until it is translated
again (``python -m vit_edu.book.i18n update``, then translate; the README says how).
"""

import re

import pytest
from test_bilingual import CJK, glossary_terms, pattern, prose

from vit_edu.book import i18n

PAGES = i18n.catalogue_names()


def _show(messages: list[i18n.Key]) -> str:
    return "\n".join(f"  - {'[output] ' if context else ''}{' '.join(m.split())[:150]}" for m, context in messages)


@pytest.mark.parametrize("name", PAGES)
def test_every_message_is_translated_and_current(name):
    s = i18n.status(name)
    assert s.ok, (
        f"{i18n.catalogue_path(name).relative_to(i18n.ROOT)}: run `python -m vit_edu.book.i18n update`, then translate\n"
        f"{len(s.untranslated)} untranslated:\n{_show(s.untranslated)}\n{len(s.fuzzy)} fuzzy (the English changed):\n"
        f"{_show(s.fuzzy)}\n{len(s.obsolete)} obsolete:\n{_show(s.obsolete)}"
    )


@pytest.mark.parametrize("name", PAGES)
def test_translations_keep_code_maths_roles_and_shape(name):
    bad = [f"{' '.join(e.split())[:100]!r}: {'; '.join(p)}" for context in (None, i18n.OUTPUT)
           for e, c in i18n.table(name, context=context).items() if (p := i18n.problems(e, c, context))]
    assert not bad, f"{len(bad)} message(s):\n" + "\n".join(bad)


# The homework calls its easy exercises "warm-ups" (热身题): only the learning-rate warm-up is the glossary's term.
PATTERNS = {"warm-up": re.compile(r"(?<!\()\bwarm-up\b(?!s|\))", re.I)}
# Words Chinese technical writing keeps in English (as seed 000 does); a translation may keep them too.
KEPT_IN_ENGLISH = {"softmax", "logit"}


def _accepted(term: str, spellings: list[str], chinese: str) -> list[str]:
    """What a translation may write for a term: its Chinese name, or an acronym the English has (ViT, CLS, MLP)."""
    names = [re.sub(r"（[^）]*）$", "", chinese)]  # "图像块集合（无序）" is written 图像块集合 in running text
    for s in spellings:
        names += [w for w in s.split() if sum(ch.isupper() for ch in w) >= 2 or w in KEPT_IN_ENGLISH]
    return names


@pytest.mark.parametrize("name", PAGES)
def test_terms_use_the_glossarys_chinese_names(name):
    terms = [(t, PATTERNS.get(t) or pattern(t, spellings), _accepted(t, spellings, zh))
             for t, spellings, zh in glossary_terms()]
    bad = []
    for english, chinese in i18n.table(name).items():
        text = prose(english)
        for term, pat, names in terms:
            if pat.search(text) and not any(n in chinese for n in names):
                bad.append(f"{term!r} -> {' or '.join(names)}: {' '.join(chinese.split())[:120]}")
    assert not bad, f"{len(bad)} message(s) without the glossary's Chinese name:\n" + "\n".join(bad)


@pytest.mark.parametrize("name", [n for n in PAGES if n != "references"])
def test_pages_are_mostly_chinese(name):
    text = " ".join(prose(c) for c in i18n.table(name).values())
    han = len(CJK.findall(text))
    latin = len(re.findall(r"[A-Za-z]", text))
    assert han > latin, f"{name}: {han} Chinese characters against {latin} Latin letters in the translated prose"


@pytest.mark.parametrize("name", [n for n in PAGES if n != i18n.BOOK_CATALOGUE])
def test_pages_cut_into_blocks_and_back(name):
    for source in i18n.markdown_sources(i18n.page_source(name)):
        pieces = i18n.segment(source)
        assert "".join(p.text for p in pieces) == source
        for p in pieces:
            if p.message:
                assert not p.text.startswith("\n") and p.text.strip(), repr(p.text)
