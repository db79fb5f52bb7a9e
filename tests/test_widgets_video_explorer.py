"""The chapter 20 widget: every control value, the site's subset, and what the caption and the panels claim."""

import itertools
import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from tests.conftest import assert_explains_problem, site_frame_count
from vit_edu.data.clips import DIRECTIONS
from vit_edu.widgets.video_explorer import (
    CONTROLS,
    FRAMES,
    GAP,
    GRID,
    KINDS,
    PATCH,
    SITE_CONTROLS,
    START,
    TOKENS,
    _frame_data,
    attention_map,
    shape_pixels,
    shipped_models,
    video_explorer_view,
    widget_clips,
)


def one_at_a_time():
    for name, values in CONTROLS.items():
        for value in values:
            yield {**START, name: value}


def check(settings):
    fig, caption = video_explorer_view(**settings)
    try:
        d = _frame_data(**settings)
        if d["place"] is None:
            assert "Nothing to show" in caption and "covers no patch" in caption
            return
        amap = d["map"]  # (T, N)
        assert amap.shape == (FRAMES, GRID * GRID)
        assert abs(float(amap.sum()) - 1) < 1e-4 and float(amap.min()) >= 0  # a distribution over the clip's tokens
        assert len(fig.axes) == 2
        (image,) = fig.axes[1].get_images()
        maps = np.ma.filled(np.asarray(image.get_array(), dtype=float), np.nan)  # (H, T·W + gaps)
        for t in range(FRAMES):
            left = t * (32 + GAP)
            cell = maps[::PATCH, left : left + 32 : PATCH]  # one value per patch
            assert np.allclose(cell, amap[t].reshape(GRID, GRID).numpy())
            assert np.isnan(maps[:, left + 32 : left + 32 + GAP]).all() or t == FRAMES - 1
        shares = [text.get_text() for text in fig.axes[1].texts]
        assert shares == [f"{100 * float(amap[t].sum()):.0f}%" for t in range(FRAMES)]
        assert [text.get_text() for text in fig.axes[0].texts] == [f"frame {t}" for t in range(FRAMES)]
        own = re.search(r"<b>(\d+)%</b> of its attention on its own frame", caption)
        assert int(own.group(1)) == round(100 * float(amap[settings["frame"]].sum()))
        mover = re.search(r"<b>(\d+)%</b> on the patches where the moving shape is, frame by frame \(those are "
                          r"(\d+)% of the clip's tokens: attention spread evenly would put (\d+)% there\)", caption)
        assert int(mover.group(1)) == round(100 * float(amap[d["moving"]].sum()))
        assert int(mover.group(2)) == int(mover.group(3)) == round(100 * float(d["moving"].float().mean()))
        assert f"Clip {settings['clip']} moves <b>{DIRECTIONS[d['label']]}</b>" in caption
        assert f"the {settings['attention']} model says" in caption
        assert "not why the model decides" in caption
    finally:
        plt.close(fig)


@pytest.mark.parametrize("settings", list(one_at_a_time()), ids=str)
def test_every_control_value(settings):
    check(settings)


def test_site_player_is_a_small_subset_and_every_frame_draws():
    assert site_frame_count(SITE_CONTROLS, CONTROLS) <= 32
    assert all(len(values) >= 2 for values in SITE_CONTROLS.values()), "a control with one value cannot move"
    assert all(START[name] in CONTROLS[name] for name in CONTROLS)
    _, labels = widget_clips()
    assert [int(labels[c]) for c in SITE_CONTROLS["clip"]] == [0, 1]  # the site shows clip 0 (left), 2 (right)
    for combo in itertools.product(*SITE_CONTROLS.values()):
        settings = dict(zip(SITE_CONTROLS, combo))
        assert _frame_data(**settings)["place"] is not None, settings  # every site frame has its token
        check(settings)


def test_space_time_row_is_the_joint_weights_row():
    clips, _ = widget_clips()
    model = shipped_models()["ST"]
    with torch.no_grad():
        _, weights = model.forward_features(clips[:1], need_weights=True)
    row = weights[-1]["joint"][0].mean(0)[3 * GRID * GRID + 5]  # frame 3, place 5
    torch.testing.assert_close(attention_map(model, clips[0], 3, 5).flatten(), row)


def test_divided_map_is_the_product_of_space_and_time_weights():
    clips, _ = widget_clips()
    model = shipped_models()["T+S"]
    with torch.no_grad():
        _, weights = model.forward_features(clips[:1], need_weights=True)
    space, time = weights[-1]["space"].mean(1), weights[-1]["time"].mean(1)  # (T, N, N), (N, T, T)
    amap = attention_map(model, clips[0], 2, 6)
    for t, m in ((0, 6), (5, 1), (2, 9)):
        torch.testing.assert_close(amap[t, m], space[2, 6, m] * time[m, 2, t])


def test_shape_pixels_finds_one_still_and_one_moving_shape():
    clips, _ = widget_clips()
    for clip in clips:
        moving, still = shape_pixels(clip)
        assert still.sum() > 0 and torch.all(moving.sum(1) > 0)  # each frame shows the moving shape
        centre = (moving * torch.arange(GRID * GRID).remainder(GRID)).sum(1) / moving.sum(1)  # mean patch column
        assert not torch.allclose(centre[0], centre[-1])  # it moves


def test_frames_are_deterministic():
    fig1, cap1 = video_explorer_view(**START)
    fig2, cap2 = video_explorer_view(**START)
    plt.close(fig1)
    plt.close(fig2)
    assert cap1 == cap2


@pytest.mark.parametrize("bad", [{"clip": 6}, {"clip": -1}, {"frame": 8}, {"frame": 1.5}, {"attention": "S"},
                                 {"token": "the CLS token"}])
def test_bad_settings_explain_themselves(bad):
    assert_explains_problem(video_explorer_view(**{**START, **bad}), "clip must", "frame must", "attention must",
                            "token must")


def test_live_widget_updates_picture_and_caption():
    from vit_edu.widgets import live

    box = live(video_explorer_view, CONTROLS, start=START)
    controls, picture, caption, _note = box.children
    assert picture.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert "the ST model says" in caption.value
    first = picture.value
    by_name = {c.description: c for c in controls.children if getattr(c, "description", "")}
    assert {"clip", "frame", "attention", "token"} <= set(by_name)
    by_name["attention"].value = KINDS[1]
    assert "the T+S model says" in caption.value and picture.value != first
    by_name["token"].value = TOKENS[1]
    assert "the still shape's patch" in caption.value
