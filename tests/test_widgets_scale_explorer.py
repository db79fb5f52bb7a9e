"""The chapter 5 widget: sweep every setting and check what the caption and the bars claim."""

import itertools
import math
import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from tests.conftest import assert_explains_problem
from vit_edu.widgets.scale_explorer import (
    CONTROLS,
    FLOOR,
    NUM_KEYS,
    entropy,
    keys_for,
    scale_explorer_view,
    scores,
    softmax_weights,
)


def _number(pattern: str, caption: str) -> float:
    match = re.search(pattern, caption)
    assert match, (pattern, caption)
    return float(match.group(1))


@pytest.mark.parametrize(("d", "scaling"), list(itertools.product(CONTROLS["d"], CONTROLS["scaling"])))
def test_every_setting(d, scaling):
    fig, caption = scale_explorer_view(d=d, scaling=scaling)
    try:
        weights = softmax_weights(d, scaling)
        assert weights.shape == (NUM_KEYS,)
        assert bool((weights >= 0).all())
        torch.testing.assert_close(weights.sum(), torch.tensor(1.0))
        assert f"d = {d}, {scaling}" in caption
        assert _number(r"largest weight <b>([0-9.]+)</b>", caption) == pytest.approx(float(weights.max()), abs=5e-5)
        assert _number(r"entropy <b>([0-9.]+)</b>", caption) == pytest.approx(entropy(weights), abs=5e-4)
        assert f"{math.log(NUM_KEYS):.3f}" in caption
        (ax,) = fig.axes
        heights = np.asarray(ax.lines[0].get_ydata())
        assert len(heights) == NUM_KEYS
        assert np.all(np.diff(heights) <= 0), "bars are sorted, largest first"
        assert heights.sum() == pytest.approx(1.0, abs=1e-5)
        assert heights[0] == pytest.approx(float(weights.max()), abs=1e-6)
        assert ax.get_yscale() == "log"
        assert ax.get_ylim()[0] == pytest.approx(FLOOR)
        assert _number(r"<b>(\d+)</b> of 197 keys hold 90%", caption) == keys_for(weights)
        assert _number(r"<b>(\d+)</b> keys get less than", caption) == int((weights < FLOOR).sum())
    finally:
        plt.close(fig)


@pytest.mark.parametrize("d", CONTROLS["d"])
def test_scaling_keeps_score_variance_near_one_and_weights_spread(d):
    raw = scores(d)
    assert float((raw / math.sqrt(d)).std()) == pytest.approx(1.0, abs=0.25)
    scaled, unscaled = softmax_weights(d, "÷√d"), softmax_weights(d, "no scaling")
    assert float(scaled.max()) < 0.15
    assert float(unscaled.max()) > float(scaled.max())
    assert entropy(unscaled) < entropy(scaled) <= math.log(NUM_KEYS)


@pytest.mark.parametrize("d", CONTROLS["d"])
def test_scaled_curve_is_visible_on_the_log_axis(d):
    # The linear 0-1 axis drew every ÷√d curve flat at 0; on the log axis every weight lies above the floor
    # and the curve spans more than a factor of 5, so its shape can be seen.
    w = softmax_weights(d, "÷√d")
    assert float(w.min()) > 10 * FLOOR
    assert float(w.max()) / float(w.min()) > 5
    assert keys_for(w) > 50  # spread: many keys needed for 90% of the weight
    assert keys_for(softmax_weights(d, "no scaling")) < keys_for(w)


def test_keys_for():
    assert keys_for(torch.tensor([1.0, 0.0, 0.0])) == 1
    assert keys_for(torch.full((10,), 0.1)) == 9
    assert keys_for(torch.tensor([0.5, 0.3, 0.2]), share=0.8) == 2
    with pytest.raises(ValueError, match="share must lie in"):
        keys_for(torch.tensor([1.0]), share=0.0)


def test_no_scaling_collapses_at_large_d():
    for d in (256, 512, 1024):
        assert float(softmax_weights(d, "no scaling").max()) > 0.99


def test_frames_are_deterministic():
    for d, scaling in itertools.product(CONTROLS["d"], CONTROLS["scaling"]):
        fig1, cap1 = scale_explorer_view(d=d, scaling=scaling)
        fig2, cap2 = scale_explorer_view(d=d, scaling=scaling)
        plt.close(fig1)
        plt.close(fig2)
        assert cap1 == cap2


@pytest.mark.parametrize(("d", "scaling"), [(0, "÷√d"), (-4, "no scaling"), (64.5, "÷√d"), (64, "divide"), (True, "÷√d")])
def test_bad_settings_explain_themselves(d, scaling):
    assert_explains_problem(scale_explorer_view(d=d, scaling=scaling), "scaling must be", "positive whole number")


def test_live_widget_updates_picture_and_caption():
    from vit_edu.widgets import live

    box = live(scale_explorer_view, CONTROLS, start={"d": 64})
    controls, picture, caption = box.children[:3]  # (a note may follow)
    assert picture.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert "d = 64, ÷√d" in caption.value
    first = picture.value
    by_name = {c.description: c for c in controls.children if getattr(c, "description", "")}
    d_slider, scaling_menu = by_name["d"], by_name["scaling"]
    scaling_menu.value = "no scaling"
    assert "d = 64, no scaling" in caption.value
    assert picture.value != first
    d_slider.value = 1024
    assert "d = 1024, no scaling" in caption.value
