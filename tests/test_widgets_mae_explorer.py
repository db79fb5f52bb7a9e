"""The chapter 16 widget: every control value, the site's subset, and what the caption and the panels claim."""

import itertools
import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from tests.conftest import assert_explains_problem, site_frame_count
from vit_edu.variants.mae import num_visible
from vit_edu.widgets.mae_explorer import (
    CHECKPOINT,
    CONTROLS,
    GREY,
    SITE_CONTROLS,
    START,
    mae_explorer_view,
    masked_view,
)

pytestmark = pytest.mark.skipif(not CHECKPOINT.exists(), reason="the shipped MAE checkpoint is missing")


def one_at_a_time():
    for name, values in CONTROLS.items():
        for value in values:
            yield {**START, name: value}


def check(settings):
    fig, caption = mae_explorer_view(**settings)
    try:
        v = masked_view(**settings)
        keep = num_visible(v["patches"], settings["mask_ratio"])
        assert v["visible"] == keep and int(v["mask"].sum()) == v["patches"] - keep
        assert f"the encoder sees <b>{keep}</b> of {v['patches']} patches" in caption
        assert caption.startswith(f"Test image {settings['image']} (")  # the caption names the image
        assert f"{keep + 1} tokens with the CLS token instead of {v['patches'] + 1}" in caption
        loss = float(re.search(r"Masked loss on this image <b>([0-9.]+)</b>", caption).group(1))
        assert loss == pytest.approx(v["loss"], abs=0.005) and 0 <= loss < 3
        assert len(fig.axes) == 3
        seen = np.asarray(fig.axes[1].get_images()[0].get_array())  # (H, W, 3)
        hidden = v["mask"].reshape(v["grid"]).repeat_interleave(v["patch"], 0).repeat_interleave(v["patch"], 1).numpy() > 0
        assert np.all(seen[hidden] == GREY)
        assert np.array_equal(seen[~hidden], v["image"].permute(1, 2, 0).numpy()[~hidden])
        rec = np.asarray(fig.axes[2].get_images()[0].get_array())
        assert np.array_equal(rec[~hidden], v["image"].permute(1, 2, 0).numpy()[~hidden])  # visible patches copied
        assert len(fig.axes[2].patches) == v["patches"] - keep  # one red outline per predicted patch
        assert fig.axes[1].get_title() == f"the encoder sees {keep} of {v['patches']}"
    finally:
        plt.close(fig)


@pytest.mark.parametrize("settings", list(one_at_a_time()), ids=str)
def test_every_control_value(settings):
    check(settings)


def test_every_ratio_and_seed_masks_as_the_package_does():
    for ratio, seed in itertools.product(CONTROLS["mask_ratio"], CONTROLS["mask_seed"]):
        v = masked_view(ratio, seed, 0)
        assert v["visible"] == num_visible(16, ratio)
    masks = {tuple(masked_view(0.75, s, 0)["mask"].tolist()) for s in CONTROLS["mask_seed"]}
    assert len(masks) > 1  # the seed changes which patches are hidden


def test_the_shipped_mae_beats_a_flat_guess_at_its_training_ratio():
    losses = [masked_view(0.75, s, i)["loss"] for s in range(4) for i in CONTROLS["image"]]
    assert sum(losses) / len(losses) < 0.9  # a prediction of zero (the patch's own mean) scores about 1


def test_site_player_is_a_small_subset_and_every_frame_draws():
    assert site_frame_count(SITE_CONTROLS, CONTROLS) <= 24
    assert all(START[name] in CONTROLS[name] for name in CONTROLS)
    assert 0.75 in SITE_CONTROLS["mask_ratio"]  # the ratio the model was trained at
    for combo in itertools.product(*SITE_CONTROLS.values()):
        check(dict(zip(SITE_CONTROLS, combo)))


def test_captions_of_different_images_differ():
    captions = {mae_explorer_view(0.5, 5, i)[1] for i in CONTROLS["image"]}
    plt.close("all")
    assert len(captions) == len(CONTROLS["image"])


def test_frames_are_deterministic():
    fig1, cap1 = mae_explorer_view(**START)
    fig2, cap2 = mae_explorer_view(**START)
    plt.close(fig1)
    plt.close(fig2)
    assert cap1 == cap2
    assert torch.equal(masked_view(**START)["reconstruction"], masked_view(**START)["reconstruction"])


@pytest.mark.parametrize("bad", [{"mask_ratio": 0.0}, {"mask_ratio": 1.0}, {"mask_seed": 8}, {"mask_seed": -1},
                                 {"image": 6}, {"image": 1.5}])
def test_bad_settings_explain_themselves(bad):
    assert_explains_problem(mae_explorer_view(**{**START, **bad}), "mask ratio must", "mask seed must", "image must")


def test_live_widget_updates_picture_and_caption():
    from vit_edu.widgets import live

    box = live(mae_explorer_view, CONTROLS, start=START)
    controls, picture, caption, _note = box.children
    assert picture.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert "mask ratio 75%" in caption.value
    first = picture.value
    by_name = {c.description: c for c in controls.children if getattr(c, "description", "")}
    assert {"mask ratio", "mask seed", "image"} <= set(by_name)
    by_name["mask seed"].value = 3
    assert "mask seed 3" in caption.value and picture.value != first
    by_name["mask ratio"].value = 0.5
    assert "mask ratio 50%" in caption.value
    by_name["image"].value = 5
    assert caption.value.startswith("Test image 5 (")
