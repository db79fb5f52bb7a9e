"""The chapter 10 widget: every control value; the drawn map and the caption's score must be vit_edu.explain's."""

import itertools
import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from tests.conftest import assert_explains_problem, site_frame_count
from vit_edu.data import CLASS_NAMES, ShapesDataset
from vit_edu.explain import HEAD_FUSIONS, attention_rollout, cls_attention, localisation_score, object_fraction
from vit_edu.training import load_checkpoint
from vit_edu.widgets import attention_explorer as ae
from vit_edu.widgets.attention_explorer import CONTROLS, IMAGES, ROLLOUT, SITE_CONTROLS, attention_explorer_view


@pytest.fixture(scope="module")
def direct():
    """Everything recomputed here, independently of the widget's cache: model, images, maps, object fractions."""
    model, info = load_checkpoint(ae.CHECKPOINT)
    test = ShapesDataset("test", seed=info["train_config"]["seed"])
    index = torch.tensor(list(IMAGES.values()))
    with torch.no_grad():
        logits, attentions = model(test.images[index], return_attention=True)
    return {
        "info": info,
        "test": test,
        "index": index,
        "probs": logits.softmax(-1),
        "attentions": attentions,
        "fraction": object_fraction(test.masks[index], info["model_config"]["patch_size"]),
    }


def expected_weights(direct, i, layer, head, discard):
    """The (N,) map for a setting, straight from vit_edu.explain."""
    attn = direct["attentions"]
    if layer == ROLLOUT:
        fusion = head if head in HEAD_FUSIONS else "mean"
        rollout = attention_rollout(attn, fusion, discard)  # (n, S, S)
        torch.testing.assert_close(rollout.sum(-1), torch.ones_like(rollout[..., 0]))  # rows sum to 1
        return rollout[i, 0, 1:]
    cls = cls_attention(attn)[layer - 1, i]  # (h, N)
    if head == "mean":
        return cls.mean(0)
    if head == "max":
        return cls.amax(0)
    if head == "min":
        return cls.amin(0)
    return cls[head]  # heads are numbered from 0


def check_frame(direct, image, layer, head, discard):
    fig, caption = attention_explorer_view(image=image, layer=layer, head=head, discard=discard)
    try:
        i = list(IMAGES).index(image)
        weights = expected_weights(direct, i, layer, head, discard)
        mass, baseline = localisation_score(weights[None], direct["fraction"][i : i + 1])
        # Two panels: the image with its outline, then the same image with the map on top.
        assert len(fig.axes) == 2
        ax_img, ax_map = fig.axes
        assert len(ax_img.images) == 1 and len(ax_map.images) == 2
        overlay = np.asarray(ax_map.images[1].get_array())
        assert overlay.shape == (ae.GRID, ae.GRID)
        np.testing.assert_allclose(overlay.ravel(), weights.numpy(), rtol=1e-5, atol=1e-7)
        assert ax_map.images[1].get_interpolation() == "nearest"
        assert ax_img.collections and ax_map.collections, "the object's outline is drawn on both panels"
        # Caption: the bold number is the localisation score, then the baseline, straight from vit_edu.explain.
        assert re.search(r"<b>([0-9.]+)</b>", caption).group(1) == f"{float(mass):.4f}"
        assert f"the object covers {float(baseline):.4f} of the image" in caption
        assert f"ratio {float(mass) / float(baseline):.2f}" in caption
        label = int(direct["test"].labels[direct["index"][i]])
        assert f"Label {CLASS_NAMES[label]}" in caption
        assert f"predicts {CLASS_NAMES[int(direct['probs'][i].argmax())]}" in caption
        # Controls that do not apply say so.
        if layer == ROLLOUT:
            assert "rollout" in caption.lower()
            assert "The row sums to 1.0000" in caption
            if head not in HEAD_FUSIONS:
                assert f"Head {head} does not apply to rollout" in caption
            else:
                assert "does not apply" not in caption
            assert "applies to rollout only" not in caption
        else:
            assert f"Layer {layer}" in caption
            assert ("applies to rollout only" in caption) == (discard > 0)
            if head in HEAD_FUSIONS:
                assert f"<i>{head}</i> of its" in caption
            else:
                assert f"head {head}:" in caption
                assert "The row sums to 1.0000" in caption
    finally:
        plt.close(fig)


def test_constants_match_the_checkpoint(direct):
    cfg = direct["info"]["model_config"]
    assert cfg["depth"] == ae.DEPTH and cfg["num_heads"] == ae.HEADS and cfg["patch_size"] == ae.PATCH_SIZE
    assert cfg["pool"] == "cls" and cfg["image_size"] in (32, [32, 32], (32, 32))
    assert direct["info"]["train_config"]["seed"] == ae.SEED
    assert CONTROLS["layer"] == [1, 2, 3, 4, ROLLOUT]
    assert CONTROLS["head"] == ["mean", "max", "min", 0, 1, 2, 3]  # heads from 0, as in chapters 5 and 6


def test_images_are_one_per_class_and_named_right(direct):
    labels = direct["test"].labels
    assert sorted(int(labels[k]) for k in IMAGES.values()) == list(range(len(CLASS_NAMES)))
    for name, k in IMAGES.items():
        assert name == f"test #{k} ({CLASS_NAMES[int(labels[k])]})"


def test_model_and_sample_are_cached():
    assert ae.model() is ae.model()
    assert ae.sample() is ae.sample()


@pytest.mark.parametrize(("layer", "head"), list(itertools.product(CONTROLS["layer"], CONTROLS["head"])))
def test_every_layer_and_head(direct, layer, head):
    """Every layer × head for the first image: rollout with every discard ratio, a single layer (which ignores
    the ratio and says so) with none and the largest."""
    discards = CONTROLS["discard"] if layer == ROLLOUT else [0.0, CONTROLS["discard"][-1]]
    for discard in discards:
        check_frame(direct, CONTROLS["image"][0], layer, head, discard)


@pytest.mark.parametrize("image", CONTROLS["image"])
def test_every_image(direct, image):
    for layer, head, discard in [(1, 0, 0.0), (ae.DEPTH, "mean", 0.0), (ROLLOUT, "max", 0.5), (ROLLOUT, 3, 0.9)]:
        check_frame(direct, image, layer, head, discard)


def test_discard_changes_rollout_only(direct):
    image = CONTROLS["image"][0]
    rollouts = {d: ae.explorer_map(image, ROLLOUT, "mean", d)[0] for d in CONTROLS["discard"]}
    assert not torch.allclose(rollouts[0.0], rollouts[0.9])
    for d in CONTROLS["discard"]:
        torch.testing.assert_close(ae.explorer_map(image, 2, 3, d)[0], ae.explorer_map(image, 2, 3, 0.0)[0])


def test_site_controls_are_a_small_live_subset():
    assert site_frame_count(SITE_CONTROLS, CONTROLS) <= 60
    # No dead control on the site: every value of every control changes the picture, whatever the others are.
    for name, values in SITE_CONTROLS.items():
        others = {k: v for k, v in SITE_CONTROLS.items() if k != name}
        for combo in itertools.product(*others.values()):
            setting = dict(zip(others, combo))
            maps = [ae.explorer_map(**{**setting, name: v, "discard": 0.0})[0] for v in values]
            if name == "image":
                continue  # different images: different pictures by construction
            for a, b in itertools.combinations(maps, 2):
                assert not torch.allclose(a, b), (name, setting)


@pytest.mark.parametrize(
    ("controls", "expected"),
    [
        ({"image": "test #999 (circle)"}, "is not one of the 4 test images"),
        ({"layer": 0}, "this model has 4 layers"),
        ({"layer": 5}, "this model has 4 layers"),
        ({"layer": True}, "this model has 4 layers"),
        ({"layer": 2.0}, "this model has 4 layers"),
        ({"layer": "Rollout"}, "this model has 4 layers"),
        ({"head": 2.0}, "each layer has 4 heads"),
        ({"image": ["test #4 (circle)"]}, "is not one of the 4 test images"),
        ({"head": 4}, "each layer has 4 heads, numbered 0 to 3"),
        ({"head": -1}, "each layer has 4 heads"),
        ({"head": False}, "each layer has 4 heads"),
        ({"head": "sum"}, "each layer has 4 heads"),
        ({"discard": 1.0}, "a number in [0, 1)"),
        ({"discard": -0.1}, "a number in [0, 1)"),
        ({"discard": "half"}, "a number in [0, 1)"),
    ],
)
def test_bad_values_explain_themselves(controls, expected):
    assert_explains_problem(attention_explorer_view(**controls), expected)
