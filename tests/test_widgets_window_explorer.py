"""The chapter 14 widget: every control value, the site's subset, and what the caption and the panels claim."""

import itertools
import re

import matplotlib.pyplot as plt
import numpy as np
import pytest

from tests.conftest import assert_explains_problem, site_frame_count
from vit_edu.widgets.window_explorer import (
    CONTROLS,
    GRID,
    SHIFTS,
    SITE_CONTROLS,
    START,
    fields,
    layer_shift,
    window_explorer_view,
)


def one_at_a_time():
    for name, values in CONTROLS.items():
        for value in values:
            yield {**START, name: value}


def check(settings):
    fig, caption = window_explorer_view(**settings)
    try:
        m, layers = settings["window_size"], settings["layers"]
        shifted = settings["shifted_windows"] == SHIFTS[0]
        reach = fields(m, shifted, layers, settings["row"], settings["column"]).numpy()
        counts = [int(r.sum()) for r in reach]
        assert f"token (row {settings['row']}, column {settings['column']})" in caption
        assert f"<b>{', '.join(map(str, counts))}</b> of the {GRID * GRID}" in caption
        assert counts == sorted(counts) and counts[0] == m * m  # layer 1: exactly the token's window
        if not shifted or m == GRID:
            assert counts == [m * m] * layers  # without a shift the field never grows
        assert len(fig.axes) == layers
        for depth, ax in enumerate(fig.axes, start=1):
            (image,) = ax.get_images()
            assert np.array_equal(np.asarray(image.get_array()), reach[depth - 1])
            kind = "shifted" if layer_shift(m, depth, shifted) else "regular"
            assert ax.get_title() == f"layer {depth}, {kind}\n{counts[depth - 1]} of {GRID * GRID} tokens"
            (ring,) = ax.collections
            assert ring.get_offsets().tolist() == [[settings["column"], settings["row"]]]
        after = {1: "After layer 1 its", 2: "After layers 1 and 2 its"}.get(layers, f"After layers 1 to {layers} its")
        assert after in caption
        full = re.search(r"on all of them from layer <b>(\d+)</b>", caption)
        if GRID * GRID in counts:
            first = counts.index(GRID * GRID) + 1
            if layers == 1:
                assert caption.endswith(": on all of them.")
            else:
                assert int(full.group(1)) == first
                assert caption.endswith(" on." if first < layers else ", the last one shown.")
        else:
            assert full is None
            grows = shifted and m < GRID
            assert ("not yet on all of them" in caption) == grows
            assert ("only its own window's, at any depth" in caption) == (not grows)
        shifted_layers = [d for d in range(1, layers + 1) if layer_shift(m, d, shifted)]
        if shifted_layers:
            names = [str(d) for d in shifted_layers]
            listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
            assert f"shifted by {m // 2} in layer{'s' if len(names) > 1 else ''} {listed};" in caption
        elif shifted and m < GRID:
            assert "not in the one layer shown" in caption and layers == 1
    finally:
        plt.close(fig)


@pytest.mark.parametrize("settings", list(one_at_a_time()), ids=str)
def test_every_control_value(settings):
    check(settings)


CORNERS = {(0, 0), (0, GRID - 1), (GRID - 1, 0), (GRID - 1, GRID - 1)}


def test_every_token_and_setting_numbers():
    """All 3 × 2 × 64 token settings at full depth (numbers only): a token's field grows to the grid only with the
    shift, and with 2×2 windows a corner token needs 7 of the 8 layers the widget offers."""
    for m, shift in itertools.product(CONTROLS["window_size"], SHIFTS):
        for row, col in itertools.product(range(GRID), range(GRID)):
            counts = fields(m, shift == SHIFTS[0], max(CONTROLS["layers"]), row, col).sum(dim=(1, 2)).tolist()
            assert counts[0] == m * m
            if shift == SHIFTS[0] or m == GRID:
                assert counts[-1] == GRID * GRID  # within the widget's deepest setting
                if m == 2 and (row, col) in CORNERS:
                    assert counts.index(GRID * GRID) + 1 == 7
            else:
                assert counts[-1] == m * m


def test_site_player_is_a_small_subset_and_every_frame_draws():
    assert site_frame_count(SITE_CONTROLS, CONTROLS) <= 32
    assert all(len(values) >= 2 for values in SITE_CONTROLS.values()), "a control with one value cannot move"
    # With the deepest setting the site shows a corner token of 2×2 shifted windows reaching the whole grid.
    assert max(SITE_CONTROLS["layers"]) == max(CONTROLS["layers"]) and 0 in SITE_CONTROLS["row"]
    assert all(START[name] in CONTROLS[name] for name in CONTROLS)
    assert set(SITE_CONTROLS["shifted_windows"]) == set(SHIFTS)  # the site shows the point: shift or not
    for combo in itertools.product(*SITE_CONTROLS.values()):
        check(dict(zip(SITE_CONTROLS, combo)))


def test_frames_are_deterministic():
    fig1, cap1 = window_explorer_view(**START)
    fig2, cap2 = window_explorer_view(**START)
    plt.close(fig1)
    plt.close(fig2)
    assert cap1 == cap2


def test_global_window_caption():
    fig, caption = window_explorer_view(**{**START, "window_size": 8, "layers": 2})
    plt.close(fig)
    assert "global attention" in caption and "from layer <b>1</b> on" in caption


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        # One layer: no "layers 1 to 1", no "after 1 layer, not yet".
        ({"layers": 1}, "shifted by 1 in every second layer (from layer 2, so not in the one layer shown); token "
                        "(row 3, column 2). After layer 1 its output depends on <b>4</b> of the 64 input tokens: "
                        "not yet on all of them."),
        ({"layers": 1, "window_size": 8}, "After layer 1 its output depends on <b>64</b> of the 64 input tokens: "
                                          "on all of them."),
        ({"layers": 2, "window_size": 4, "row": 3, "column": 3},
         "4×4 windows, shifted by 2 in layer 2; token (row 3, column 3). After layers 1 and 2 its output depends on "
         "<b>16, 64</b> of the 64 input tokens, layer by layer: on all of them from layer <b>2</b>, the last one "
         "shown."),
        ({"shifted_windows": SHIFTS[1]}, "never shifted"),
    ],
)
def test_caption_edge_cases(settings, expected):
    fig, caption = window_explorer_view(**{**START, **settings})
    plt.close(fig)
    assert expected in caption
    assert "1 to 1" not in caption and "after 1 layer" not in caption


@pytest.mark.parametrize("bad", [{"window_size": 3}, {"shifted_windows": "always"}, {"layers": 0}, {"layers": 9},
                                 {"row": 8}, {"column": -1}, {"row": 2.5}])
def test_bad_settings_explain_themselves(bad):
    assert_explains_problem(window_explorer_view(**{**START, **bad}), "window size must", "shifted windows must",
                            "layers must", "row and column must")


def test_live_widget_updates_picture_and_caption():
    from vit_edu.widgets import live

    box = live(window_explorer_view, CONTROLS, start=START)
    controls, picture, caption, _note = box.children
    assert picture.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert "2×2 windows, shifted" in caption.value
    first = picture.value
    by_name = {c.description: c for c in controls.children if getattr(c, "description", "")}
    assert {"window size", "shifted windows", "layers", "row", "column"} <= set(by_name)
    by_name["shifted windows"].value = SHIFTS[1]
    assert "never shifted" in caption.value and picture.value != first
    by_name["window size"].value = 4
    assert "4×4 windows" in caption.value
