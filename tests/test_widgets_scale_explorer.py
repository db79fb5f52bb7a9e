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
    NUM_KEYS,
    entropy,
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
    controls, picture, caption = box.children
    assert picture.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert "d = 64, ÷√d" in caption.value
    first = picture.value
    d_slider, scaling_menu = controls.children
    scaling_menu.value = "no scaling"
    assert "d = 64, no scaling" in caption.value
    assert picture.value != first
    d_slider.value = 1024
    assert "d = 1024, no scaling" in caption.value
