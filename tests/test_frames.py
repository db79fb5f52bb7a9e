import json
import re

import matplotlib.pyplot as plt
import pytest

from vit_edu.widgets.frames import frame_player


def _view(size, mode):
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.set_title(f"{size}-{mode}")
    return fig, f"<b>{size}</b> {mode}"


def _data(html):
    return json.loads(re.search(r'class="vit-frames-data">(.*?)</script>', html).group(1).replace("<\\/", "</"))


def test_one_frame_per_combination_in_mixed_radix_order():
    html = frame_player(_view, {"size": [8, 16, 32], "mode": ["a", "b"]}).data
    data = _data(html)
    assert data["sizes"] == [3, 2]
    assert [caption for _, caption in data["frames"]] == [
        f"<b>{s}</b> {m}" for s in (8, 16, 32) for m in ("a", "b")
    ]
    assert len({png for png, _ in data["frames"]}) == 6  # every picture differs
    assert data["kinds"] == ["range", "select"]  # numbers get a slider, words a menu
    assert data["titles"] == ["size", "mode"]
    assert "http" not in html  # self-contained: nothing to fetch


def test_start_picks_the_first_frame_and_output_is_deterministic():
    controls = {"size": [8, 16], "mode": ["a", "b"]}
    a = frame_player(_view, controls, start={"size": 16, "mode": "b"}).data
    assert a == frame_player(_view, controls, start={"size": 16, "mode": "b"}).data
    assert '<div class="vit-frames-caption"><b>16</b> b</div>' in a
    assert _data(a)["start"] == [1, 1]
    assert "data-control" not in a.split("<script")[0]  # controls come from the script: none dead without it
    assert "vit-frames-note" in a


def test_titles_are_words_and_unknown_start_values_raise():
    data = _data(frame_player(lambda patch_size: _view(patch_size, "a"), {"patch_size": [8, 16]}).data)
    assert data["titles"] == ["patch size"]
    with pytest.raises(ValueError, match="not among"):
        frame_player(_view, {"size": [8], "mode": ["a"]}, start={"size": 9})


def test_bad_controls_raise():
    with pytest.raises(ValueError, match="at least one value"):
        frame_player(_view, {"size": [], "mode": ["a"]})
    with pytest.raises(ValueError, match="unknown controls"):
        frame_player(_view, {"size": [8], "mode": ["a"]}, start={"colour": 1})


def test_a_control_with_one_value_is_a_fixed_fact_not_a_control():
    data = _data(frame_player(_view, {"size": [8, 16], "mode": ["a"]}).data)
    assert data["kinds"] == ["range", "fixed"] and data["sizes"] == [2, 1]
    assert [caption for _, caption in data["frames"]] == ["<b>8</b> a", "<b>16</b> a"]


CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def chromium():
    import os

    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"], headless=True)
        yield browser
        browser.close()


def _page(chromium, body: str):
    page = chromium.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    # What reaches the page: a notebook's shortcuts listen here (JupyterLab: keydown on the document, bubbling).
    page.set_content("<script>window.pageKeys = []; document.addEventListener('keydown', "
                     "e => window.pageKeys.push(e.key));</script>" + body)
    return page, errors


def test_in_a_browser_a_fixed_value_is_labelled_text_and_the_other_controls_pick_the_right_frames(chromium):
    def view(size, mode, shade):
        return _view(size, mode + shade)

    html = frame_player(view, {"size": [8, 16, 32], "mode": ["a"], "shade": ["x", "y"]}).data
    page, errors = _page(chromium, html)
    labels = page.locator(".vit-frames-controls label").all_inner_texts()
    assert [t.split()[0] for t in labels] == ["size", "mode", "shade"]
    assert page.locator(".vit-frames-fixed").inner_text() == "a" and "mode" in labels[1]
    assert page.locator("[data-control]").count() == 2  # a slider and a menu; nothing for the fixed value
    page.locator("input[type=range]").fill("2")
    page.locator("select").select_option("1")
    assert page.locator(".vit-frames-caption").inner_html() == "<b>32</b> ay"
    assert page.locator(".vit-frames").get_attribute("data-frame") == "5"  # (size 2, mode 0, shade 1) of 3·1·2
    assert page.locator(".vit-frames-note").count() == 0 and not errors  # the website: no no-script note


def test_in_a_browser_keys_on_a_control_stay_with_it_and_jupyter_keeps_a_run_this_cell_note(chromium):
    html = frame_player(_view, {"size": [8, 16], "mode": ["a", "b"]}).data
    page, errors = _page(chromium, f'<div class="jp-OutputArea">{html}</div>')
    page.locator("select").focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("r")
    page.keyboard.press("Control+s")
    assert page.locator("select").input_value() == "1"  # the menu took the arrow
    assert page.evaluate("window.pageKeys") == ["Control", "s"]  # plain keys stayed; Ctrl+S still reaches the page
    assert "Run this cell" in page.locator(".vit-frames-note").inner_text() and not errors
