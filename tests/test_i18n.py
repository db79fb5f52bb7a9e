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


# One name per concept: (what a translation writes, what it must not write). Compounds the English also shortens
# keep "CLS" (CLS 行, CLS 头, CLS 注意力, CLS 查询); code (`shapes-vit`) is not prose, and words in “quotes” are someone
# else's (a seed's sentence, a prompt), so neither is checked.
VARIANTS = [
    ("分类词元", re.compile(r"CLS\s*词元")),
    ("形状任务 / 形状模型 / 形状数据集", re.compile(r"shapes\s*(?:分类)?(?:任务|模型|数据集)|形状分类任务(?!（shapes task）)")),
    ("训练配方", re.compile(r"训练方案")),
    ("本包 / 随包提供", re.compile(r"程序包|随软件包")),
    ("试验台", re.compile(r"测试台")),
    ("softmax（归一化指数函数）, then softmax", re.compile(r"归一化指数函数（softmax）")),
    ("logit（no plural; 未归一化的类别分数 as its gloss）", re.compile(r"\blogits\b|类别分数（logit）")),
    ("平均融合", re.compile(r"均值融合")),
    ("初识 ViT", re.compile(r"初探")),
    ("**本章的问题：**", re.compile(r"\*\*问题。\*\*")),
    ("学完本章，你将能够：", re.compile(r"学完本章，你能够|学完本章，你将能够(?!：)")),
    ("万 / 亿, or the exact count (not 百万 / 千 after a number)", re.compile(r"(?<![\u3400-\u9fff])(?:百万|千)(?!万)")),
    ("交互控件", re.compile(r"探索器")),
    ("图注", re.compile(r"说明文字")),
    ("“…” (Chinese quotes)", re.compile(r"[\u3400-\u9fff，。]\s*[\"']|[\"']\s*[\u3400-\u9fff，。]")),
    ("a space between Chinese and a Latin word", re.compile(r"[\u3400-\u9fff][A-Za-z]|[A-Za-z][\u3400-\u9fff]")),
]


@pytest.mark.parametrize("name", PAGES)
def test_one_chinese_name_per_concept(name):
    bad = []
    for context in (None, i18n.OUTPUT):
        for chinese in i18n.table(name, context=context).values():
            text = " ".join(re.sub(r"“[^”]*”", "“”", prose(re.sub(r"`[^`\n]*`", " ", chinese))).split())
            bad += [f"{wanted}: …{text[max(m.start() - 30, 0):m.end() + 30]}…"
                    for wanted, variant in VARIANTS for m in variant.finditer(text)]
    assert not bad, f"{len(bad)} place(s) with another name for a concept:\n" + "\n".join(bad)
