"""The chapter 17 widget: every control value, the site's subset, and what the caption and the bars claim."""

import itertools

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from tests.conftest import assert_explains_problem, site_frame_count
from vit_edu.variants import clip_train
from vit_edu.variants.clip import (
    COLOURS,
    SHAPES,
    class_embeddings,
    make_captioned_shapes,
    prompts,
    task_labels,
    zero_shot_probs,
)
from vit_edu.widgets.clip_explorer import (
    CONTROLS,
    GROUPS,
    IMAGES,
    SITE_CONTROLS,
    START,
    clip_explorer_view,
    shipped_clip,
    widget_images,
    zero_shot_view,
)


def one_at_a_time():
    for name, values in CONTROLS.items():
        for value in values:
            yield {**START, name: value}


def check(settings):
    fig, caption = clip_explorer_view(**settings)
    try:
        v = zero_shot_view(settings["combinations"], settings["image"], settings["prompts"])
        names, probs, k = v["names"], v["probs"], len(v["names"])
        assert k == {"shape": 4, "colour": 4, "combination": 16}[settings["prompts"]]
        torch.testing.assert_close(probs.sum(), torch.tensor(1.0))
        assert v["top"] == int(probs.argmax())
        assert f"true class <b>{names[v['label']]}</b> probability <b>{probs[v['label']]:.2f}</b>" in caption
        assert f"top choice is <b>{names[v['top']]}</b>" in caption
        assert ("(right)." in caption) == (v["top"] == v["label"])
        assert f"\"{v['caption']}\"" in caption
        assert ("never appeared in training" in caption) == (settings["combinations"] == GROUPS[1])
        image_ax, bars_ax = fig.axes
        (picture,) = image_ax.get_images()
        assert np.allclose(np.asarray(picture.get_array()), v["image"].permute(1, 2, 0).numpy())
        heights = [bar.get_width() for bar in bars_ax.patches]
        assert np.allclose(heights, probs.numpy())
        assert [t.get_text() for t in bars_ax.get_yticklabels()] == names
        assert bars_ax.patches[v["label"]].get_facecolor() == plt.matplotlib.colors.to_rgba("tab:green")
        if v["top"] != v["label"]:
            assert bars_ax.patches[v["top"]].get_facecolor() == plt.matplotlib.colors.to_rgba("tab:red")
    finally:
        plt.close(fig)


@pytest.mark.parametrize("settings", list(one_at_a_time()), ids=str)
def test_every_control_value(settings):
    check(settings)


def test_probabilities_are_the_packages_zero_shot_on_the_shipped_test_sets():
    """The view's numbers are zero_shot_probs of the shipped model on the first images of its own test sets."""
    model, record = shipped_clip()
    for group, held, offset in ((GROUPS[0], False, 2), (GROUPS[1], True, 3)):
        full = make_captioned_shapes(clip_train.TEST_SIZE, seed=3 * record["seed"] + offset,
                                     combos=clip_train.HELD_OUT if held else clip_train.SEEN)
        data = widget_images(group)
        assert torch.equal(data.images, full.images[:IMAGES]) and len(data) == IMAGES
        pairs = {(COLOURS[c], SHAPES[s]) for c, s in zip(data.colours, data.shapes)}
        assert pairs <= set(clip_train.HELD_OUT if held else clip_train.SEEN)
        for task in clip_train.TASKS:
            expected = zero_shot_probs(model, data.images, class_embeddings(model, prompts(task)[1]))
            for i in range(IMAGES):
                v = zero_shot_view(group, i, task)
                torch.testing.assert_close(v["probs"], expected[i])
                assert v["label"] == int(task_labels(data, task)[i])


def test_site_player_is_a_small_subset_and_every_frame_draws():
    assert site_frame_count(SITE_CONTROLS, CONTROLS) <= 24
    assert all(START[name] in CONTROLS[name] for name in CONTROLS)
    assert all(START[name] in SITE_CONTROLS[name] for name in SITE_CONTROLS)
    assert set(SITE_CONTROLS["combinations"]) == set(GROUPS)  # the site shows the point: seen or held out
    wrong = 0
    for combo in itertools.product(*SITE_CONTROLS.values()):
        settings = dict(zip(SITE_CONTROLS, combo))
        check(settings)
        v = zero_shot_view(**settings)
        wrong += v["top"] != v["label"]
    assert wrong > 0  # the site's images include mistakes, as its comment says


def test_frames_are_deterministic():
    fig1, cap1 = clip_explorer_view(**START)
    fig2, cap2 = clip_explorer_view(**START)
    plt.close(fig1)
    plt.close(fig2)
    assert cap1 == cap2


@pytest.mark.parametrize("bad", [{"combinations": "unseen"}, {"image": IMAGES}, {"image": -1}, {"image": 1.5},
                                 {"image": True}, {"prompts": "size"}])
def test_bad_settings_explain_themselves(bad):
    assert_explains_problem(clip_explorer_view(**{**START, **bad}), "combinations must", "image must",
                            "prompts must")


def test_live_widget_updates_picture_and_caption():
    from vit_edu.widgets import live

    box = live(clip_explorer_view, CONTROLS, start=START)
    controls, picture, caption, _note = box.children
    assert picture.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Prompts: combination (16 classes" in caption.value
    first = picture.value
    by_name = {c.description: c for c in controls.children if getattr(c, "description", "")}
    assert {"combinations", "image", "prompts"} <= set(by_name)
    by_name["prompts"].value = "colour"
    assert "Prompts: colour (4 classes" in caption.value and picture.value != first
    by_name["combinations"].value = GROUPS[0]
    assert "never appeared" not in caption.value
