"""The chapter 19 widget: every control value, the site's subset, and what the caption and the panels claim."""

import itertools
import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from tests.conftest import assert_explains_problem, site_frame_count
from vit_edu.data import CLASS_NAMES
from vit_edu.widgets.detection_explorer import (
    CONTROLS,
    SITE_CONTROLS,
    START,
    detection_explorer_view,
    detector_outputs,
    query_view,
    offered_scenes,
)


def one_at_a_time():
    for name, values in CONTROLS.items():
        for value in values:
            yield {**START, name: value}


def check(settings):
    fig, caption = detection_explorer_view(**settings)
    try:
        v = query_view(**settings)
        prob = detector_outputs(settings["model"])["prob"][settings["scene"], settings["query"]]
        torch.testing.assert_close(prob.sum(), torch.tensor(1.0))
        assert v["score"] == pytest.approx(float(prob[:-1].max()))
        assert f"{settings['model']}, query {settings['query']} on scene {settings['scene']}" in caption
        assert f"<b>{CLASS_NAMES[v['label']]}</b> {v['score']:.2f}, no object {v['no_object']:.2f}" in caption
        n = len(offered_scenes().labels[settings["scene"]])
        assert f"(objects in the scene: {n})" in caption
        assert f"best IoU with a true {CLASS_NAMES[v['label']]} <b>{v['best_iou']:.2f}</b>" in caption
        assert 0 <= v["best_iou"] <= 1
        row, col = (int(x) for x in re.search(r"row (\d), column (\d)", caption).groups())
        grid = v["grid"].numpy()
        assert grid[row, col] == grid.max() and grid.min() >= 0
        image_ax, attention_ax = fig.axes
        (shown,) = attention_ax.get_images()
        assert np.allclose(np.asarray(shown.get_array()), grid)
        dashed = [p for p in image_ax.patches if p.get_linestyle() == "--"]
        assert len(dashed) == n and len(image_ax.patches) == n + 1  # the true boxes and the query's box
    finally:
        plt.close(fig)


@pytest.mark.parametrize("settings", list(one_at_a_time()), ids=str)
def test_every_control_value(settings):
    check(settings)


def test_site_player_is_a_small_subset_and_every_frame_draws():
    assert site_frame_count(SITE_CONTROLS, CONTROLS) <= 32
    assert all(len(values) >= 2 for values in SITE_CONTROLS.values()), "a control with one value cannot move"
    assert all(START[name] in SITE_CONTROLS[name] for name in CONTROLS)
    for combo in itertools.product(*SITE_CONTROLS.values()):
        check(dict(zip(SITE_CONTROLS, combo)))


def test_attention_rows_are_distributions_over_the_patches():
    for model in CONTROLS["model"]:
        attention = detector_outputs(model)["attention"]  # (S, Q, 16)
        assert attention.shape[1:] == (8, 16)
        total = attention.sum(-1)
        if model == "DETR":  # cross-attention: all of it on the patches
            torch.testing.assert_close(total, torch.ones_like(total))
        else:  # YOLOS: the detection tokens also attend to each other
            assert bool((total < 1).all()) and bool((total > 0).all())


def test_frames_are_deterministic():
    fig1, cap1 = detection_explorer_view(**START)
    fig2, cap2 = detection_explorer_view(**START)
    plt.close(fig1)
    plt.close(fig2)
    assert cap1 == cap2


@pytest.mark.parametrize("bad", [{"model": "SSD"}, {"scene": 6}, {"scene": -1}, {"query": 8}, {"query": 1.5}])
def test_bad_settings_explain_themselves(bad):
    assert_explains_problem(detection_explorer_view(**{**START, **bad}), "model must", "scene must", "query must")


def test_live_widget_updates_picture_and_caption():
    from vit_edu.widgets import live

    box = live(detection_explorer_view, CONTROLS, start=START)
    controls, picture, caption, _note = box.children
    assert picture.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert "DETR, query 0" in caption.value
    first = picture.value
    by_name = {c.description: c for c in controls.children if getattr(c, "description", "")}
    assert {"model", "scene", "query"} <= set(by_name)
    by_name["query"].value = 3
    assert "DETR, query 3" in caption.value and picture.value != first
    by_name["model"].value = "YOLOS"
    assert "YOLOS, query 3" in caption.value
