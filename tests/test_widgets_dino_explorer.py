"""The chapter 16 DINO widget: every control value, the site's subset, and what the caption and the panels claim."""

import itertools
import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from tests.conftest import assert_explains_problem, site_frame_count
from vit_edu.widgets.dino_explorer import (
    CONTROLS,
    FILES,
    SITE_CONTROLS,
    START,
    cls_map,
    dino_explorer_view,
    encoder,
)
from vit_edu.widgets.dino_explorer import test_images as shown_images

pytestmark = pytest.mark.skipif(not all(f.exists() for f in FILES.values()), reason="a shipped checkpoint is missing")


def one_at_a_time():
    for name, values in CONTROLS.items():
        for value in values:
            yield {**START, name: value}


def check(settings):
    fig, caption = dino_explorer_view(**settings)
    try:
        v = cls_map(**settings)
        assert float(v["map"].sum()) == pytest.approx(1.0, abs=1e-5) and (v["map"] >= 0).all()
        share = float(re.search(r"<b>(\d+)%</b> of the CLS token's attention", caption).group(1))
        assert share == pytest.approx(100 * v["mass"], abs=0.6)
        score = float(re.search(r"localisation score <b>([0-9.]+)</b>", caption).group(1))
        assert score == pytest.approx(v["mass"] / v["baseline"], abs=0.006)
        assert caption.startswith(f"{settings['model']} encoder")
        assert len(fig.axes) == 2
        layers = fig.axes[1].get_images()
        assert len(layers) == 2  # the image, and the attention over it
        drawn = np.asarray(layers[1].get_array())  # (H, W): each patch's weight, repeated over its pixels
        assert drawn.shape == (32, 32)
        assert np.allclose(drawn[::8, ::8], v["map"].numpy())
        picture = np.asarray(fig.axes[0].get_images()[0].get_array())
        assert np.array_equal(picture, shown_images()[0][settings["image"]].permute(1, 2, 0).numpy())
    finally:
        plt.close(fig)


@pytest.mark.parametrize("settings", list(one_at_a_time()), ids=str)
def test_every_control_value(settings):
    check(settings)


def test_the_mean_map_is_the_mean_of_the_head_maps():
    for model in CONTROLS["model"]:
        net = encoder(model)
        with torch.no_grad():
            _, att = net(shown_images()[0][:1], return_attention=True)
        heads = att[-1][0, :, 0, 1:]  # (h, N)
        mean = heads.mean(0)
        assert torch.allclose(cls_map(0, model, "mean")["map"].flatten(), mean / mean.sum(), atol=1e-6)
        assert torch.allclose(cls_map(0, model, 2)["map"].flatten(), heads[2] / heads[2].sum(), atol=1e-6)


def test_models_differ():
    maps = [cls_map(0, m, "mean")["map"] for m in CONTROLS["model"]]
    assert not torch.allclose(maps[0], maps[1]) and not torch.allclose(maps[0], maps[2])


def test_site_player_is_a_small_subset_and_every_frame_draws():
    assert site_frame_count(SITE_CONTROLS, CONTROLS) <= 24
    assert all(len(values) >= 2 for values in SITE_CONTROLS.values())  # every player control can move
    assert all(START[name] in SITE_CONTROLS[name] for name in CONTROLS)
    for combo in itertools.product(*SITE_CONTROLS.values()):
        check(dict(zip(SITE_CONTROLS, combo)))


def test_frames_are_deterministic():
    fig1, cap1 = dino_explorer_view(**START)
    fig2, cap2 = dino_explorer_view(**START)
    plt.close(fig1)
    plt.close(fig2)
    assert cap1 == cap2


@pytest.mark.parametrize("bad", [{"image": 6}, {"image": 1.5}, {"image": True}, {"model": "CLIP"}, {"head": 4},
                                 {"head": "max"}])
def test_bad_settings_explain_themselves(bad):
    assert_explains_problem(dino_explorer_view(**{**START, **bad}), "image must", "model must", "head must")


def test_live_widget_updates_picture_and_caption():
    from vit_edu.widgets import live

    box = live(dino_explorer_view, CONTROLS, start=START)
    controls, picture, caption, _note = box.children
    assert picture.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert caption.value.startswith("DINO encoder")
    first = picture.value
    by_name = {c.description: c for c in controls.children if getattr(c, "description", "")}
    assert {"image", "model", "head"} <= set(by_name)
    by_name["model"].value = "supervised"
    assert caption.value.startswith("supervised encoder") and picture.value != first
    by_name["head"].value = 1
    assert "head 1" in caption.value
