"""The two editions' words: glossary links on whole words where the page glosses them, the glossary in pinyin
order, and the other language's words marked with their lang."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from vit_edu.book import zh_edition

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))
import site_fixes  # noqa: E402

SPELLINGS = ["键", "key", "值", "value", "自注意力", "self-attention", "读出", "readout", "连续", "logit", "logit 透镜",
             "logit lens", "patch", "位置编码", "position embedding"]


def _linked(text: str) -> list[str]:
    words = list(site_fixes._tokenizer(tuple(s for s in SPELLINGS if site_fixes.CJK.search(s))).cut(text, HMM=False))
    return [m.group(0) for m in site_fixes.glossary_matches(text, SPELLINGS, words)]


@pytest.mark.parametrize("text", ["关键在于转置", "转置很关键（key point）", "像素值先被中心化", "值得一看",
                                  "每个词元一半来自注意力（attention），一半来自残差", "只读出分类词元", "数值在连续 14 个图像块内"])
def test_a_chinese_name_inside_another_word_or_without_its_gloss_is_not_linked(text):
    assert _linked(text) == []


@pytest.mark.parametrize("text, linked", [
    ("键（key）与查询相乘", ["键"]),
    ("查询、键和值（value）", ["值"]),
    ("这就是 logit 透镜（logit lens），最早用于 GPT-2", ["logit 透镜"]),
    ("加上位置编码（position embedding）之后", ["位置编码"]),
    ("16 × 16 patches, not a dispatch", ["patches"]),
    ("the logit lens (logit 透镜)", ["logit lens"]),
])
def test_a_glossed_whole_word_and_an_english_whole_word_are_linked_longest_first(text, linked):
    assert _linked(text) == linked


@pytest.mark.parametrize("line, names", [
    ("patch embedding (图像块嵌入)", ["patch embedding", "图像块嵌入"]),
    ("层归一化（layer normalisation, LayerNorm）", ["层归一化", "layer normalisation", "LayerNorm"]),
    ("图像块集合（无序）（bag of patches）", ["图像块集合（无序）", "bag of patches"]),
    ("bag of patches (图像块集合（无序）)", ["bag of patches", "图像块集合（无序）"]),
])
def test_term_lines_of_both_editions_split_into_their_names(line, names):
    assert site_fixes.split_term(line) == names


def test_the_chinese_glossary_is_in_pinyin_order_under_letter_headings():
    page = zh_edition.translated_page("book/glossary", zh_edition.ROOT / "book" / "glossary.md")
    letters = [line[3:] for line in page.splitlines() if line.startswith("## ")]
    assert letters == sorted(letters) and set(letters) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZ") and len(letters) > 15
    terms = [line for line in page.splitlines() if line and not line.startswith((" ", "#", "`", ":")) and "（" in line]
    keys = [zh_edition.pinyin_key(t) for t in terms if site_fixes.CJK.search(t)]
    assert keys == sorted(keys)
    order = [t.split("（")[0] for t in terms]
    # 长 in 长度 reads cháng; 重 in 重建 chóng: the dictionary's readings, not the first one
    assert order.index("编码器块") < order.index("词元") < order.index("多头注意力") < order.index("注意力头")
    assert page.count("```{glossary}") == len(letters) and ":sorted:" not in page


@pytest.mark.parametrize("edition, html, marked", [
    ("en", '<p>patch embedding (图像块嵌入), <a href="g">位置编码</a></p>',
     '<p>patch embedding (<span lang="zh-CN">图像块嵌入</span>), <a href="g"><span lang="zh-CN">位置编码</span></a></p>'),
    ("en", "<pre>词元</pre><script>s = '<code>词元'</script><code>词元</code><p>词元</p>",
     '<pre>词元</pre><script>s = \'<code>词元\'</script><code>词元</code><p><span lang="zh-CN">词元</span></p>'),
    ("zh", "<p>位置编码（position embedding）与 ViT，<code>f（x）</code></p>",
     '<p>位置编码（<span lang="en">position embedding</span>）与 ViT，<code>f（x）</code></p>'),
])
def test_the_other_languages_words_carry_their_lang(edition, html, marked):
    assert site_fixes.mark_languages(html, edition) == marked
    assert site_fixes.mark_languages(marked, edition) == marked  # a page marked before is left as it is
