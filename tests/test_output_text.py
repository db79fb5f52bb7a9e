"""Words that code shows a reader, translated as templates: numbers kept, slots and tags checked."""

import json
import re

import nbformat
import pytest
from matplotlib.figure import Figure

from vit_edu.book import output_text
from vit_edu.widgets.frames import NOTE_STATIC, frame_player


def test_a_template_has_slots_for_numbers_and_fills_back():
    text = "<b>0.37</b> of 1,024 keys, −2.5 points (95% CI +1 to 3), in {braces}; ch9 and 1e-4 stay"
    key, numbers = output_text.template(text)
    assert key == "<b>{0}</b> of {1} keys, {2} points ({3}% CI {4} to {5}), in {{braces}}; ch9 and 1e-{6} stay"
    assert numbers == ["0.37", "1,024", "−2.5", "95", "+1", "3", "4"]
    assert output_text.fill(key, numbers) == text
    # Two frames that differ only in their numbers are one message.
    assert output_text.messages(["row 1, column 2", "row 3, column 4", "42"]) == ["row {0}, column {1}"]


@pytest.mark.parametrize("chinese, problem", [
    ("第 {0} 行", "slots"),                      # {1} lost
    ("第 {0} 行，第 {1} 列 {2}", "slots"),        # a slot the English lacks
    ("<b>第 {0} 行</b>，第 {1} 列 {", "not a template"),
])
def test_problems_name_what_a_translation_lost(chinese, problem):
    found = output_text.problems("<b>row {0}</b>, column {1}", chinese)
    assert any(problem in p for p in found), found


def test_problems_accept_reordered_slots_and_kept_tags():
    assert output_text.problems("<b>{0}</b> of {1} keys", "{1} 个键中的 <b>{0}</b> 个") == []
    assert "must be kept" in output_text.problems("<b>{0}</b> of {1} keys", "{1} 个键中的 {0} 个")[0]
    assert "placeholders" in output_text.problems("Prediction: {{name}}.", "预测：{{名字}}。")[0]


def _view(head: int) -> tuple[Figure, str]:
    k = head
    fig = Figure(figsize=(1, 1))
    fig.add_subplot().plot([0, k])
    return fig, f"Head {k}: <b>{k / 4:.2f}</b> of the weight"


ZH = {"head": "头", "Head {0}: <b>{1}</b> of the weight": "头 {0}：<b>{1}</b> 的权重",
      "A plot": "一幅图", NOTE_STATIC: "预先算好的图。", output_text.frames.NOTE_LIVE: "运行单元格。",
      "{0} points ({1}% CI {2} to {3}, {4} seeds)": "{0} 个百分点（{1}% 置信区间 {2} 至 {3}，{4} 个随机种子）"}


def _notebook() -> nbformat.NotebookNode:
    player = frame_player(_view, {"head": [0, 1, 2]}, start={"head": 1}, alt="A plot")
    glued = nbformat.v4.new_output("display_data", data={output_text.GLUE_TEXT: "'+4.1 points (95% CI +3.2 to +4.9, 3 seeds)'"},
                                   metadata={"scrapbook": {"name": "gap", "mime_prefix": "application/papermill.record/"}})
    number = nbformat.v4.new_output("display_data", data={output_text.GLUE_TEXT: "0.25"},
                                    metadata={"scrapbook": {"name": "acc", "mime_prefix": "application/papermill.record/"}})
    shown = nbformat.v4.new_output("display_data", data={"text/html": player.data})
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=[shown, glued, number])])


def test_a_notebook_lists_its_templates_once():
    found = output_text.messages(output_text.notebook_texts(_notebook()))
    assert found == ["head", "Head {0}: <b>{1}</b> of the weight", "A plot", "{0} points ({1}% CI {2} to {3}, {4} seeds)"]


def test_translating_a_notebook_keeps_pictures_and_numbers():
    nb = _notebook()
    english = json.loads(json.dumps(nb))
    output_text.translate_notebook(nb, ZH)
    shown, glued, number = nb.cells[0].outputs
    assert glued["data"][output_text.GLUE_TEXT] == "'+4.1 个百分点（95% 置信区间 +3.2 至 +4.9，3 个随机种子）'"
    assert number == english["cells"][0]["outputs"][2]  # a number is not a text
    page = shown["data"]["text/html"]
    data = json.loads(output_text.PLAYER_DATA.search(page).group(2))
    before = json.loads(output_text.PLAYER_DATA.search(english["cells"][0]["outputs"][0]["data"]["text/html"]).group(2))
    assert data["titles"] == ["头"] and data["labels"] == before["labels"]
    assert [c for _, c in data["frames"]] == ["头 0：<b>0.00</b> 的权重", "头 1：<b>0.25</b> 的权重", "头 2：<b>0.50</b> 的权重"]
    assert [p for p, _ in data["frames"]] == [p for p, _ in before["frames"]]
    # What shows before the script runs: the start frame's caption, the picture's description, the notes.
    assert '<div class="vit-frames-caption">头 1：<b>0.25</b> 的权重</div>' in page
    assert 'alt="一幅图"' in page and "预先算好的图。" in page and "运行单元格。" in page and "Head" not in page


def test_a_text_without_a_translation_stops_naming_its_template():
    with pytest.raises(KeyError, match=re.escape("Head {0}: <b>{1}</b> of the weight")):
        output_text.translate_notebook(_notebook(), {k: v for k, v in ZH.items() if not k.startswith("Head")})


def test_raw_html_text_labels_and_interface_json_are_translated():
    page = ('# Title\n\n```{raw} html\n<div id="x"><p aria-label="A 32 by 32 image">Loading\n  the model</p>'
            '<script type="application/json" id="tryit-text">{"go": "Go {n} times", "classes": {"circle": "circle"}}'
            "</script>\n<script>var a = 'not text';</script>\n</div>\n```\n\nAfter.\n")
    assert output_text.raw_html_texts(page) == ["A 32 by 32 image", "Loading the model", "Go {n} times", "circle"]
    table = {"A {0} by {1} image": "{0}×{1} 的图像", "Loading the model": "正在加载模型", "Go {{n}} times": "运行 {{n}} 次",
             "circle": "圆形"}
    out = output_text.translate_raw_html(page, table)
    assert 'aria-label="32×32 的图像">正在加载模型</p>' in out and "var a = 'not text'" in out
    assert json.loads(output_text.PAGE_TEXT.search(out).group(2)) == {"go": "运行 {n} 次", "classes": {"circle": "圆形"}}
    assert out.startswith("# Title\n\n```{raw} html\n") and out.endswith("```\n\nAfter.\n")
