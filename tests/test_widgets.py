import matplotlib.pyplot as plt

from vit_edu.widgets import live

calls = []


def _view(size, mode):
    calls.append((size, mode))
    fig, ax = plt.subplots()
    return fig, f"{size}/{mode}"


def test_live_renders_once_then_on_every_change():
    calls.clear()
    box = live(_view, {"size": [8, 16, 32], "mode": ["a", "b"]}, start={"size": 16})
    controls, _picture, caption, note = box.children
    assert "run this cell again" in note.value
    slider, readout, menu = controls.children
    assert calls == [(16, "a")] and caption.value == "16/a"
    slider.value = 32
    menu.value = "b"
    assert calls[-1] == (32, "b") and caption.value == "32/b"
    assert readout.value == "32" and not slider.readout  # the value as text, no readout that ignores typing
    assert type(slider).__name__ == "SelectionSlider" and type(menu).__name__ == "Dropdown"


def test_consecutive_integers_get_a_typed_slider_and_labels_are_words():
    from vit_edu.widgets import _control

    box = live(lambda size, mode_name: _view(size, mode_name), {"size": [8, 16, 32], "mode_name": ["a", "b"]})

    token = _control("token_index", list(range(196)), 5)
    assert type(token).__name__ == "IntSlider" and (token.min, token.max, token.value) == (0, 195, 5)
    assert box.children[0].children[2].description == "mode name"


def test_live_rejects_unknown_start():
    import pytest

    with pytest.raises(ValueError, match="unknown controls"):
        live(_view, {"size": [8]}, start={"colour": 1})


def test_explore_gives_the_widget_and_the_player_in_one_output():
    from vit_edu.widgets import explore

    calls.clear()
    out = explore(_view, {"size": [8, 16, 32], "mode": ["a", "b"]}, site_controls={"size": [8, 32], "mode": ["a"]},
                  start={"size": 16, "mode": "b"})
    bundle = out._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == out.box.model_id
    html = bundle["text/html"]
    assert html.startswith('<div class="vit-frames"') and "8/a" in html and "32/a" in html
    assert "16/b" not in html  # the player offers only the site's values, starting where it can (mode a)
    assert "run this cell" in bundle["text/plain"]
    assert out.box.children[2].value == "16/b"  # the live face starts where asked


def test_a_control_with_one_value_is_shown_as_text_and_passed_to_the_view():
    import pytest

    calls.clear()
    box = live(_view, {"size": [8, 16], "mode": ["only"]})
    slider, readout, fixed = box.children[0].children
    assert type(fixed).__name__ == "HTML" and fixed.value == "mode <b>only</b>"  # in its place, after size
    assert calls == [(8, "only")]
    with pytest.raises(ValueError, match="only values offered"):
        live(_view, {"size": [8, 16], "mode": ["only"]}, start={"mode": "other"})


def test_values_keep_a_gap_before_the_next_label_and_pictures_keep_their_own_size():
    from vit_edu.widgets.frames import png_size

    calls.clear()
    sizes = {8: (2, 6), 16: (2, 2)}  # a tall picture, then a short one

    def view(size, mode):
        fig, _ = _view(size, mode)
        fig.set_size_inches(*sizes[size])
        return fig, ""

    box = live(view, {"size": [8, 16], "mode": ["a", "b"]})
    (slider, readout, menu), picture = box.children[0].children, box.children[1]
    assert readout.layout.margin.split()[1] == "1.6em" and menu.layout.margin.split()[1] == "1.6em"
    tall = png_size(picture.value)
    slider.value = 16
    short = png_size(picture.value)
    assert short[1] < tall[1] / 2 and picture.layout.width == f"{short[0]}px"  # shown at its own pixel width
    assert picture.layout.min_height is None and picture.layout.height == "auto"  # no box kept from the tall one


def test_the_widget_box_keeps_keys_pressed_on_its_controls():
    from vit_edu.widgets import KEY_GUARD, LIVE_CLASS

    box = live(_view, {"size": [8, 16], "mode": ["a", "b"]})
    assert LIVE_CLASS in box._dom_classes and box.children[3].value.endswith(KEY_GUARD)
    assert f"closest('.{LIVE_CLASS}')" in KEY_GUARD and "stopPropagation" in KEY_GUARD


def test_a_slider_value_keeps_a_gap_from_the_handle_at_its_maximum():
    from vit_edu.widgets import READOUT_STYLE

    box = live(lambda size, step, mode: _view(size, mode), {"size": [8, 16, 32], "step": [1, 2, 3], "mode": ["a", "b"]})
    _slider, readout, typed, _menu = box.children[0].children
    assert readout.layout.margin.split()[3] == "0.6em"  # the value text after a SelectionSlider
    assert type(typed).__name__ == "IntSlider" and READOUT_STYLE in box.children[3].value  # an IntSlider's readout
    assert ".vit-live .widget-readout { margin-left: 0.6em; }" in READOUT_STYLE


def test_in_a_lab_kernel_explore_skips_the_player_and_keeps_the_first_picture(monkeypatch):
    from vit_edu.widgets import LAB_KERNEL, LIVE_FALLBACK_CLASS, explore

    monkeypatch.setenv(LAB_KERNEL, "en")
    calls.clear()
    out = explore(_view, {"size": [8, 16, 32], "mode": ["a", "b"]}, start={"size": 16}, alt="sizes")
    bundle = out._repr_mimebundle_()
    assert calls == [(16, "a")]  # the live widget's one picture, no frames for a player
    html = bundle["text/html"]
    assert html.startswith(f'<div class="{LIVE_FALLBACK_CLASS}">') and "vit-frames" not in html
    assert 'alt="sizes"' in html and "16/a" in html and "Run this cell for the live widget" in html
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == out.box.model_id


def test_a_lab_kernel_with_an_unknown_language_says_which(monkeypatch):
    import pytest

    from vit_edu.widgets import LAB_KERNEL, explore

    monkeypatch.setenv(LAB_KERNEL, "fr")
    with pytest.raises(ValueError, match=r"VIT_EDU_LAB_KERNEL='fr'.*\('en', 'zh'\)"):
        explore(_view, {"size": [8]})


def test_a_chinese_lab_kernel_shows_the_chinese_editions_words(monkeypatch):
    """Labels, menu options, caption and notes as the Chinese edition's player has them; the values unchanged."""
    from vit_edu.book import i18n, output_text
    from vit_edu.widgets import LAB_KERNEL, RESTART_TEXT, explore
    from vit_edu.widgets import distill_explorer as de

    monkeypatch.setenv(LAB_KERNEL, "zh")
    table = i18n.table("15_distillation", context=i18n.OUTPUT) | i18n.table(i18n.BOOK_CATALOGUE, context=i18n.OUTPUT)
    out = explore(de.distill_explorer_view, de.CONTROLS, site_controls=de.SITE_CONTROLS, start=de.START)
    controls, _picture, caption, note = out.box.children
    temperature, _readout, alpha, _readout2, student = controls.children
    assert temperature.description == output_text.translate("temperature", table) != "temperature"
    assert student.value == de.START["student"]  # the view still gets its own values
    assert student.label == output_text.translate(de.START["student"], table) and output_text.CJK.search(student.label)
    _fig, english = de.distill_explorer_view(**de.START)
    assert caption.value == output_text.translate(english, table) != english
    assert output_text.translate(RESTART_TEXT, table) in note.value
    assert output_text.CJK.search(out._repr_mimebundle_()["text/html"].split("<p")[-1])  # the fallback's note
