"""The Chinese edition's pages: the English notebooks with only their Markdown translated."""

import ast
import json
import re

import nbformat
import pytest

from vit_edu.book import i18n, output_text, zh_edition

CHAPTERS = [f for f in i18n.toc_files() if re.match(r"book/\d\d_", f)]


def _numbers(text: str) -> list[str]:
    return sorted(output_text.NUMBER.findall(text))


def _same_output_but_words(en: dict, zh: dict) -> None:
    """A translated output: a player with the same pictures and numbers, a glued phrase with the same numbers, or a
    printed table with the same rows, columns and numbers and Chinese words."""
    if "text/markdown" in en.get("data", {}):
        english, chinese = ("".join(o["data"]["text/markdown"]).strip().splitlines() for o in (en, zh))
        assert [line.count("|") for line in chinese] == [line.count("|") for line in english]
        assert _numbers(" ".join(chinese)) == _numbers(" ".join(english))
        assert i18n.CJK.search(" ".join(chinese)), f"an English table: {chinese[:3]}"
        return
    if en.get("metadata", {}).get("scrapbook"):
        assert zh["metadata"] == en["metadata"]
        english, chinese = (ast.literal_eval(o["data"][output_text.GLUE_TEXT]) for o in (en, zh))
        assert _numbers(chinese) == _numbers(english) and i18n.CJK.search(chinese), (english, chinese)
        return
    players = [[json.loads(m.group(2)) for m in output_text.PLAYER_DATA.finditer(o["data"]["text/html"])]
               for o in (en, zh)]
    assert len(players[0]) == len(players[1]) == 1
    english, chinese = (p[0] for p in players)
    assert [png for png, _ in chinese["frames"]] == [png for png, _ in english["frames"]]
    assert {k: v for k, v in chinese.items() if k not in ("titles", "labels", "frames")} == {
        k: v for k, v in english.items() if k not in ("titles", "labels", "frames")}
    for (_, a), (_, b) in zip(english["frames"], chinese["frames"]):
        assert _numbers(re.sub(r"<[^>]*>", " ", b)) == _numbers(re.sub(r"<[^>]*>", " ", a)), (a, b)
    assert all(i18n.CJK.search(t) for t in chinese["titles"] if output_text.wants_translation(t) and len(t) > 3)
    assert i18n.CJK.search(zh["data"]["text/html"].split('<div class="vit-frames-caption">')[1].split("</div>")[0])


@pytest.mark.parametrize("file", CHAPTERS)
def test_code_cells_and_outputs_are_the_english_ones(file):
    """Code and outputs are shared; only the words code shows a reader (players, glued phrases) are translated,
    and they keep every number and picture."""
    english = nbformat.read(zh_edition.english_file(file), as_version=4)
    chinese = nbformat.reads(zh_edition.translated_page(file, zh_edition.english_file(file)), as_version=4)
    assert [c.cell_type for c in chinese.cells] == [c.cell_type for c in english.cells]
    for en, zh in zip(english.cells, chinese.cells):
        if en.cell_type == "code":
            assert zh.source == en.source and len(zh.outputs) == len(en.outputs)
            for a, b in zip(en.outputs, zh.outputs):
                if json.dumps(a) != json.dumps(b):
                    _same_output_but_words(a, b)
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


LONG = ("A long paragraph about patches, with more than seventy-six characters on its first line, so that a\n"
        "writer that wraps comments would cut it inside the quotes.")


def test_update_marks_a_changed_message_fuzzy_and_keeps_the_old_text(tmp_path, monkeypatch):
    english = ["# Title", "A paragraph about patches.", LONG]
    monkeypatch.setattr(i18n, "page_messages", lambda name: list(english))
    monkeypatch.setattr(i18n, "output_messages", lambda name: [])
    i18n.apply("05_qkv", {"# Title": "# 标题", "A paragraph about patches.": "关于图像块的一段话。", LONG: "很长的一段话。"},
               tmp_path)
    assert i18n.status("05_qkv", tmp_path).ok
    english[1], english[2] = "A paragraph about the patches.", LONG.replace("long", "longer")
    i18n.update("05_qkv", tmp_path)
    i18n.update("05_qkv", tmp_path)  # a second round trip through the file keeps the old English intact
    s = i18n.status("05_qkv", tmp_path)
    assert s.fuzzy == [("A paragraph about the patches.", None), (english[2], None)] and not s.untranslated
    sheet = i18n.worksheet("05_qkv", tmp_path)
    assert "关于图像块的一段话。" in sheet and "很长的一段话。" in sheet  # the old translations, for the translator
    assert f"<<<<< 1 previous en >>>>>\n{LONG}\n" in sheet  # and the old English, line for line
    assert not any(m.user_comments for m in i18n.load("05_qkv", tmp_path))


def test_apply_refuses_a_translation_that_drops_a_glued_number(tmp_path, monkeypatch):
    monkeypatch.setattr(i18n, "page_messages", lambda name: ["It gets {glue:text}`acc`% right."])
    with pytest.raises(ValueError, match="missing or changed"):
        i18n.apply("05_qkv", {"It gets {glue:text}`acc`% right.": "它答对了大部分。"}, tmp_path)


def test_try_it_interface_is_chinese_with_the_same_controls():
    source = zh_edition.english_file("book/try_it")
    english, chinese = source.read_text(encoding="utf-8"), zh_edition.translated_page("book/try_it", source)
    assert re.findall(r'id="([^"]+)"', chinese) == re.findall(r'id="([^"]+)"', english)
    texts = [json.loads(m.group(2)) for m in (output_text.PAGE_TEXT.search(t) for t in (english, chinese))]
    assert texts[1].keys() == texts[0].keys() and texts[1]["classes"].keys() == texts[0]["classes"].keys()
    for key, value in texts[1].items():  # the script's placeholders survive translation
        if isinstance(value, str):
            assert re.findall(r"\{\w+\}", value) and sorted(re.findall(r"\{\w+\}", value)) == sorted(
                re.findall(r"\{\w+\}", texts[0][key])) or not re.findall(r"\{\w+\}", texts[0][key]), key
            assert i18n.CJK.search(value), (key, value)
    raw = output_text.RAW_HTML.search(chinese).group(1)
    assert all(i18n.CJK.search(t) for t in output_text._html_strings(raw) if output_text.wants_translation(t))
