"""The Chinese edition's pages: the English notebooks with only their Markdown translated."""

import json
import re

import nbformat
import pytest

from vit_edu.book import i18n, zh_edition

CHAPTERS = [f for f in i18n.toc_files() if re.match(r"book/\d\d_", f)]


@pytest.mark.parametrize("file", CHAPTERS)
def test_code_cells_and_outputs_are_the_english_ones(file):
    english = nbformat.read(zh_edition.english_file(file), as_version=4)
    chinese = nbformat.reads(zh_edition.translated_page(file, zh_edition.english_file(file)), as_version=4)
    assert [c.cell_type for c in chinese.cells] == [c.cell_type for c in english.cells]
    for en, zh in zip(english.cells, chinese.cells):
        if en.cell_type == "code":
            assert zh.source == en.source and json.dumps(zh.outputs) == json.dumps(en.outputs)
        elif en.cell_type == "markdown" and i18n.messages(en.source):
            assert zh.source != en.source and i18n.CJK.search(zh.source)
            # Every glue role of the English is in the translation, so the same numbers appear.
            assert sorted(re.findall(r"\{glue:text\}`[^`]+`", zh.source)) == sorted(
                re.findall(r"\{glue:text\}`[^`]+`", en.source))


def test_config_and_toc_are_chinese():
    strings = i18n.table(i18n.BOOK_CATALOGUE)
    config = zh_edition.config(strings)
    assert config["sphinx"]["config"]["language"] == "zh_CN" and config["sphinx"]["config"]["vit_edition"] == "zh"
    assert i18n.CJK.search(config["title"])
    toc = zh_edition.toc(strings)
    assert all(i18n.CJK.search(part["caption"]) for part in toc["parts"])


def test_a_missing_translation_stops_the_build_naming_it(tmp_path):
    (tmp_path / "05_qkv.po").write_text("", encoding="utf-8")  # an empty catalogue
    with pytest.raises(SystemExit, match=r"book/05_qkv: \d+ message\(s\) without a translation"):
        zh_edition.translated_page("book/05_qkv", zh_edition.english_file("book/05_qkv"), tmp_path)


def test_update_marks_a_changed_message_fuzzy_and_keeps_the_old_text(tmp_path, monkeypatch):
    english = ["# Title", "A paragraph about patches."]
    monkeypatch.setattr(i18n, "page_messages", lambda name: list(english))
    i18n.apply("05_qkv", {"# Title": "# 标题", "A paragraph about patches.": "关于图像块的一段话。"}, tmp_path)
    assert i18n.status("05_qkv", tmp_path).ok
    english[1] = "A paragraph about the patches."
    i18n.update("05_qkv", tmp_path)
    s = i18n.status("05_qkv", tmp_path)
    assert s.fuzzy == ["A paragraph about the patches."] and not s.untranslated
    assert "关于图像块的一段话。" in i18n.worksheet("05_qkv", tmp_path)  # the old translation, for the translator


def test_apply_refuses_a_translation_that_drops_a_glued_number(tmp_path, monkeypatch):
    monkeypatch.setattr(i18n, "page_messages", lambda name: ["It gets {glue:text}`acc`% right."])
    with pytest.raises(ValueError, match="missing or changed"):
        i18n.apply("05_qkv", {"It gets {glue:text}`acc`% right.": "它答对了大部分。"}, tmp_path)
