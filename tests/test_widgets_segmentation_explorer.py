"""The chapter 18 widget: every control value, the site's subset, and what the caption and the panels claim."""

import itertools
import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from tests.conftest import assert_explains_problem, site_frame_count
from vit_edu.tasks.segmentation import NUM_CLASSES
from vit_edu.widgets.segmentation_explorer import (
    ARM,
    CONTROLS,
    HEADS,
    SCENES,
    SITE_CONTROLS,
    START,
    scene_view,
    segmentation_explorer_view,
    shipped_models,
    scene_pool,
)


def one_at_a_time():
    for name, values in CONTROLS.items():
        for value in values:
            yield {**START, name: value}


def check(settings):
    fig, caption = segmentation_explorer_view(**settings)
    try:
        v = scene_view(**settings)
        p, head = settings["patch_size"], settings["head"]
        assert caption.startswith(f"Scene {settings['scene']}, patches of {p} ({(32 // p) ** 2} tokens), {head} head")
        iou = float(re.search(r"IoU <b>([\d.]+)</b>", caption).group(1))
        assert iou == pytest.approx(v["scene_iou"], abs=0.005) and 0 <= iou <= 1
        assert f"the mean over the {len(v['present'])} classes" in caption
        assert f"{v['wrong']} of 1024 pixels wrong" in caption
        assert v["wrong"] == int((v["pred"] != v["truth"]).sum())
        image, truth, pred = (ax.get_images()[0] for ax in fig.axes[:3])
        assert np.array_equal(np.asarray(truth.get_array()), scene_pool().semantic[settings["scene"]].numpy())
        assert np.array_equal(np.asarray(pred.get_array()), v["pred"].numpy())
        assert len(fig.axes[2].lines) == 2 * (32 // p - 1)  # the patch grid's inner lines
        assert fig.axes[2].get_title() == f"predicted: P = {p}, {head}"
    finally:
        plt.close(fig)


@pytest.mark.parametrize("settings", list(one_at_a_time()), ids=str)
def test_every_control_value(settings):
    check(settings)


def test_site_player_is_a_small_subset_and_every_frame_draws():
    assert site_frame_count(SITE_CONTROLS, CONTROLS) <= 32
    assert all(len(values) >= 2 for values in SITE_CONTROLS.values()), "a control with one value cannot move"
    assert all(START[name] in CONTROLS[name] for name in CONTROLS)
    assert set(SITE_CONTROLS["patch_size"]) == {4, 8} and set(SITE_CONTROLS["head"]) == set(HEADS)
    for combo in itertools.product(*SITE_CONTROLS.values()):
        check(dict(zip(SITE_CONTROLS, combo)))


def test_the_site_scenes_show_every_class():
    scenes = scene_pool()
    shown = set(torch.cat([scenes.labels[i] for i in SITE_CONTROLS["scene"]]).tolist())
    assert shown == set(range(NUM_CLASSES - 1))
    assert all(2 <= len(scenes.labels[i]) <= 4 for i in SCENES)


def test_the_four_models_are_the_arms_they_claim():
    models = shipped_models()
    for (p, head), name in ARM.items():
        assert models[name].config.patch_size == p and models[name].head_name == head


def test_frames_are_deterministic():
    fig1, cap1 = segmentation_explorer_view(**START)
    fig2, cap2 = segmentation_explorer_view(**START)
    plt.close(fig1)
    plt.close(fig2)
    assert cap1 == cap2


@pytest.mark.parametrize("bad", [{"scene": 0}, {"scene": 1.5}, {"patch_size": 16}, {"patch_size": "8"},
                                 {"head": "mla"}])
def test_bad_settings_explain_themselves(bad):
    assert_explains_problem(segmentation_explorer_view(**{**START, **bad}), "scene must", "patch size must",
                            "head must")


def test_live_widget_updates_picture_and_caption():
    from vit_edu.widgets import live

    box = live(segmentation_explorer_view, CONTROLS, start=START)
    controls, picture, caption, _note = box.children
    assert picture.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert "patches of 8" in caption.value
    first = picture.value
    by_name = {c.description: c for c in controls.children if getattr(c, "description", "")}
    assert {"scene", "patch size", "head"} <= set(by_name)
    by_name["patch size"].value = 4
    assert "patches of 4 (64 tokens)" in caption.value and picture.value != first
    by_name["head"].value = "progressive (PUP)"
    assert "progressive (PUP) head" in caption.value
