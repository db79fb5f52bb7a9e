"""The spurious-cue shapes variant (vit_edu.data.spurious) and the experiment that trains on it
(vit_edu.training.spurious), with the shipped result's structure as chapter 10 reads it."""

import json
from pathlib import Path

import pytest
import torch

import vit_edu
from vit_edu.data import CLASS_NAMES, make_shapes
from vit_edu.data.spurious import (CUE_MODES, HUE_BAND, HUE_CENTRES, background_hue, hsv_to_rgb, make_spurious,
                                   replace_background)
from vit_edu.explain import object_fraction, occlusion_sensitivity
from vit_edu.explain.occlusion import logit_margin, occlusion_logits
from vit_edu.training import spurious

SHIPPED = Path(vit_edu.__file__).parent / "checkpoints" / "spurious_cue.json"


def nearest_band(hue: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The class whose band centre is nearest to each hue, and the distance to it (on the hue circle)."""
    distance = (hue[:, None] - torch.tensor(HUE_CENTRES)[None] + 0.5) % 1.0 - 0.5  # (n, K)
    return distance.abs().argmin(-1), distance.abs().amin(-1)


def test_cue_is_perfectly_predictive_in_training():
    data = make_spurious(800, "label", seed=5)
    assert torch.equal(data.band, data.labels)
    band, distance = nearest_band(background_hue(data.images, data.masks))  # read from the pixels alone
    assert torch.equal(band, data.labels)
    assert float(distance.max()) < HUE_BAND / 2 + 0.01  # inside the band, up to the noise; bands are 0.1 apart


def test_cue_is_independent_at_test_and_wrong_when_swapped():
    free = make_spurious(4000, "independent", seed=6)
    band, _ = nearest_band(background_hue(free.images, free.masks))
    assert torch.equal(band, free.band)
    table = torch.bincount(free.band * 4 + free.labels, minlength=16).reshape(4, 4).double()  # band × label
    expected = table.sum(1, keepdim=True) * table.sum(0, keepdim=True) / table.sum()
    chi2 = ((table - expected) ** 2 / expected).sum()
    assert chi2 < 21.7  # 9 degrees of freedom: p > 0.01 for independent band and label
    swapped = make_spurious(400, "swapped", seed=6)
    assert not bool((swapped.band == swapped.labels).any())
    assert set(swapped.band.tolist()) == set(range(len(CLASS_NAMES)))


def test_object_pixels_labels_and_masks_are_those_of_make_shapes():
    images, labels, masks = make_shapes(64, seed=7)
    for mode in CUE_MODES:
        data = make_spurious(64, mode, seed=7)
        assert torch.equal(data.labels, labels) and torch.equal(data.masks, masks)
        inside = masks[:, None].expand_as(images)
        assert torch.equal(data.images[inside], images[inside])
        assert not torch.equal(data.images[~inside], images[~inside])  # the background was repainted
        assert data.images.min() >= 0 and data.images.max() <= 1


def test_modes_differ_only_in_the_background_band():
    a, b = make_spurious(32, "label", seed=2), make_spurious(32, "independent", seed=2)
    same = a.band == b.band
    assert same.any() and not same.all()
    torch.testing.assert_close(a.images[same], b.images[same], rtol=0, atol=0)
    assert torch.equal(make_spurious(32, "label", seed=2).images, a.images)  # seeded


def test_background_stays_dark_with_noise():
    data = make_spurious(200, "independent", seed=3)
    background = data.images.permute(1, 0, 2, 3)[:, ~data.masks]  # (3, pixels)
    assert float(background.amax(0).mean()) < 0.45  # darker than every object channel (≥ 0.65 before noise)
    smooth = data.images[:, :, 1:, :] - data.images[:, :, :-1, :]
    assert 0.02 < float(smooth.permute(1, 0, 2, 3)[:, ~(data.masks[:, 1:] | data.masks[:, :-1])].std()) < 0.08


def test_replace_background_keeps_the_object_and_greys_the_rest():
    data = make_spurious(16, "label", seed=4)
    plain = replace_background(data.images, data.masks, 0.3)
    inside = data.masks[:, None].expand_as(data.images)
    assert torch.equal(plain[inside], data.images[inside])
    assert bool((plain[~inside] == 0.3).all())
    assert background_hue(plain, data.masks).shape == (16,)  # a grey: every channel equal, so no class's band
    assert torch.equal(replace_background(data.images, data.masks, 0.0)[~inside], torch.zeros(int((~inside).sum())))


def test_hsv_to_rgb_primaries():
    rgb = hsv_to_rgb(torch.tensor([0.0, 1 / 3, 2 / 3]), torch.ones(3), torch.ones(3))
    torch.testing.assert_close(rgb, torch.eye(3))
    grey = hsv_to_rgb(torch.tensor([0.3]), torch.zeros(1), torch.tensor([0.4]))
    torch.testing.assert_close(grey, torch.full((1, 3), 0.4))


def test_bad_arguments_raise_value_error_naming_them():
    with pytest.raises(ValueError, match="'cue'"):
        make_spurious(8, "cue")
    with pytest.raises(ValueError, match="-3"):
        make_spurious(-3)
    with pytest.raises(ValueError, match="8"):
        make_spurious(4, image_size=8)
    with pytest.raises(ValueError, match=r"\(4, 3, 8\)"):
        background_hue(torch.zeros(4, 3, 8), torch.zeros(4, 8, 8, dtype=torch.bool))
    with pytest.raises(ValueError, match="'both'"):
        spurious.run_one("both", 0, {})
    with pytest.raises(ValueError, match=r"\[1, 1\]"):
        spurious.run([1, 1])
    model = vit_edu.VisionTransformer(spurious.PRESETS["shapes-vit"][0])
    tests = spurious.test_sets(0, size=8)
    with pytest.raises(ValueError, match="'matched'"):
        spurious.measure(model, {k: v for k, v in tests.items() if k != "matched"})
    with pytest.raises(ValueError, match="9"):
        spurious.measure(model, tests, n_occlusion=9)
    data = make_spurious(4, seed=1)
    with pytest.raises(ValueError, match=r"\(4, 3, 32, 32\) and \(4, 32, 31\)"):
        replace_background(data.images, data.masks[..., :31])
    with pytest.raises(ValueError, match="torch.float32"):
        replace_background(data.images, data.masks.float())
    with pytest.raises(ValueError, match="1.5"):
        replace_background(data.images, data.masks, 1.5)


def test_measure_scores_occlusion_on_the_predicted_class_and_replaces_the_whole_background():
    torch.manual_seed(0)
    model = vit_edu.VisionTransformer(spurious.PRESETS["shapes-vit"][0]).eval()
    torch.nn.init.normal_(model.head.weight)  # an untrained model's zero head would tie every class
    tests = spurious.test_sets(0, size=12)
    row = spurious.measure(model, tests, n_occlusion=12)
    free = tests["cue_free"]
    with torch.no_grad():
        predicted = model(free.images).argmax(-1)
        plain = model(replace_background(free.images, free.masks, spurious.BACKGROUND_FILL)).argmax(-1)
    occ = occlusion_sensitivity(model, free.images, predicted, 8)  # (12, 16): the chapter's occlusion, predicted class
    frac = object_fraction(free.masks, 8)
    assert row["occlusion_drop_object"] == pytest.approx(occ[frac > 0.5].mean().item(), abs=1e-6)
    assert row["occlusion_drop_background"] == pytest.approx(occ[frac == 0].mean().item(), abs=1e-6)
    assert row["occlusion_largest_drop"]["mean colour"] == pytest.approx(occ.amax(-1).mean().item(), abs=1e-6)
    assert row["background_changes"] == pytest.approx((plain != predicted).float().mean().item())
    assert row["background_accuracy"] == pytest.approx((plain == free.labels).float().mean().item())
    assert set(row["occlusion_changes"]) == set(spurious.OCCLUSION_FILLS)
    covered = occlusion_logits(model, free.images, 8, spurious.OCCLUSION_FILLS["black"])  # (12, 16, K)
    flips = (covered.argmax(-1) != predicted[:, None]).any(-1)  # (12,): some patch changes the prediction
    assert 0 < flips.float().mean() < 1, "the test needs both kinds of image"
    assert row["occlusion_changes"]["black"] == pytest.approx(flips.float().mean().item())
    with torch.no_grad():
        base = logit_margin(model(free.images), predicted)[:, None]  # (12, 1)
    shrink = ((base - logit_margin(covered, predicted[:, None].expand(-1, 16))) / base).amax(-1)  # (12,)
    assert bool((shrink[flips] > 1).all() and (shrink[~flips] <= 1).all())  # a flip takes more than the whole lead
    assert row["occlusion_margin_shrink"]["black"] == pytest.approx(shrink.mean().item(), rel=1e-5)


FIELDS = {"seed", "val_accuracy", "accuracy_cue_free", "accuracy_matched", "accuracy_swapped", "follows_background",
          "attention_object_share", "rollout_object_share", "object_baseline", "p_true_below_001",
          "occlusion_object_share", "occlusion_images", "occlusion_drop_object", "occlusion_drop_background",
          "occlusion_changes", "occlusion_largest_drop", "occlusion_margin_shrink", "background_changes",
          "background_accuracy", "background_top_class", "train_seconds"}


def check_result(data: dict, seeds: list[int], layers: int = 4) -> None:
    """The fields chapter 10 reads, for both arms and every seed."""
    assert {"budget", "torch", "threads", "seconds", "cpu_seconds", "hue_band", "occlusion_fills",
            "background_fill"} <= set(data)
    assert list(data["results"]) == ["cue", "control"]
    for rows in data["results"].values():
        assert [r["seed"] for r in rows] == seeds
        for r in rows:
            assert set(r) == FIELDS
            for key in ("val_accuracy", "accuracy_cue_free", "accuracy_matched", "accuracy_swapped",
                        "follows_background", "rollout_object_share", "object_baseline", "p_true_below_001",
                        "background_changes", "background_accuracy", "background_top_class"):
                assert 0 <= r[key] <= 1, key
            assert r["background_top_class"] >= 1 / len(CLASS_NAMES)
            for key in ("occlusion_changes", "occlusion_largest_drop", "occlusion_margin_shrink"):
                assert list(r[key]) == list(data["occlusion_fills"]), key
            assert all(0 <= v <= 1 for v in r["occlusion_changes"].values())
            assert r["accuracy_swapped"] + r["follows_background"] <= 1 + 1e-9  # a swapped band is never the label
            assert len(r["attention_object_share"]) == layers
            assert all(0 <= s <= 1 for s in r["attention_object_share"])


def test_two_step_run_returns_the_fields_the_chapter_reads(tmp_path):
    out = tmp_path / "spurious.json"
    spurious.main(["--seeds", "0", "1", "--steps", "2", "--train-size", "64", "--out", str(out)])
    data = json.loads(out.read_text())
    check_result(data, [0, 1])
    assert data["budget"]["steps"] == 2 and data["budget"]["train_size"] == 64
    diff = spurious.paired(data, "accuracy_cue_free")
    assert diff.n == 2
    cue, control = (data["results"][arm] for arm in ("cue", "control"))
    assert diff.differences == tuple(a["accuracy_cue_free"] - b["accuracy_cue_free"] for a, b in zip(cue, control))
    assert spurious.paired(data, "attention_object_share", 3).n == 2
    assert spurious.paired(data, "accuracy_cue_free", bounds=(-1, 1)).bounds == (-1, 1)
    assert spurious.paired(data, "occlusion_changes", "black").differences == tuple(
        a["occlusion_changes"]["black"] - b["occlusion_changes"]["black"] for a, b in zip(cue, control))
    with pytest.raises(ValueError, match="'accuracy'"):
        spurious.paired(data, "accuracy")
    with pytest.raises(ValueError, match="'white'"):
        spurious.paired(data, "occlusion_changes", "white")
    with pytest.raises(ValueError, match="None"):
        spurious.paired(data, "attention_object_share")
    with pytest.raises(ValueError, match="0"):
        spurious.paired(data, "accuracy_cue_free", 0)


def test_shipped_result():
    data = json.loads(SHIPPED.read_text())
    check_result(data, [0, 1, 2])
    assert data["budget"] == spurious.BUDGET and data["threads"] == 1
    assert data["occlusion_fills"] == spurious.OCCLUSION_FILLS and data["background_fill"] == spurious.BACKGROUND_FILL
    for arm in ("cue", "control"):
        assert all(r["occlusion_images"] <= data["n_occlusion"] for r in data["results"][arm])
