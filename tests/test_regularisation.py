"""The regularisation comparison (vit_edu.training.regularisation) and the crop + flip augmentation it uses."""

import json

import pytest
import torch

from vit_edu.training import TrainConfig, crop_flip, regularisation
from vit_edu.training.augment import rand_augment


def test_crop_flip_without_padding_is_identity_or_mirror():
    torch.manual_seed(0)
    x = torch.rand(64, 3, 8, 8)
    y = crop_flip(x, padding=0)
    flipped = [torch.equal(y[i], x[i].flip(-1)) for i in range(64)]
    same = [torch.equal(y[i], x[i]) for i in range(64)]
    assert all(f or s for f, s in zip(flipped, same))
    assert 10 < sum(flipped) < 54  # about half the images are mirrored


def test_crop_flip_shifts_within_padding():
    x = torch.zeros(1, 1, 16, 16)
    x[0, 0, 8, 8] = 1.0
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):
        y = crop_flip(x, gen, padding=4)
        assert y.shape == x.shape
        r, c = (y[0, 0] == 1).nonzero()[0].tolist()
        assert abs(r - 8) <= 4 and (abs(c - 8) <= 4 or abs(c - 7) <= 4)


def test_crop_flip_rejects_bad_input():
    with pytest.raises(ValueError, match="B, C, H, W"):
        crop_flip(torch.zeros(3, 8, 8))
    with pytest.raises(ValueError, match="padding"):
        crop_flip(torch.zeros(1, 3, 8, 8), padding=-1)


def test_augment_field_is_checked():
    assert TrainConfig().augment == "none"
    with pytest.raises(ValueError, match="augment"):
        TrainConfig(augment="rotate")


def test_run_writes_every_arm_and_seed(tmp_path):
    out = tmp_path / "reg.json"
    regularisation.main(["--seeds", "0", "1", "--steps", "4", "--train-size", "64",
                         "--arms", "none", "DropPath 0.1", "--out", str(out)])
    data = json.loads(out.read_text())
    assert list(data["results"]) == ["none", "DropPath 0.1"]
    assert [r["seed"] for r in data["results"]["none"]] == [0, 1]
    for rows in data["results"].values():
        for r in rows:
            assert 0 <= r["train_accuracy"] <= 1 and 0 <= r["test_accuracy"] <= 1
            assert r["train_loss"] > 0 and r["test_loss"] > 0
            assert round(64 * r["train_accuracy"], 6).is_integer()  # a share of the 64 training images
    summary = regularisation.summarise(data)
    assert summary["none"]["n"] == 2
    assert summary["none"]["min"] <= summary["none"]["mean"] <= summary["none"]["max"]
    fit = regularisation.summarise(data, "train_accuracy")
    assert fit["none"]["mean"] == sum(r["train_accuracy"] for r in data["results"]["none"]) / 2


def test_train_accuracy_is_measured_on_the_arms_own_clean_images(monkeypatch):
    """CutMix changes the batches it trains on; the training metrics must still see the plain images, in eval mode."""
    from vit_edu.data import ShapesDataset

    calls = []

    def spy(model, images, labels):
        calls.append((model.training, images.clone(), labels.clone()))
        return {"accuracy": 0.5, "loss": 1.0}

    monkeypatch.setattr(regularisation, "evaluate", spy)
    row = regularisation.run_one("CutMix", 1, steps=3, train_size=40, eval_every=3, warmup_steps=1)
    assert (row["train_accuracy"], row["train_loss"]) == (0.5, 1.0)
    assert row["seed"] == 1 and 0 <= row["test_accuracy"] <= 1
    (training, images, labels), = calls
    plain = ShapesDataset("train", size=40, seed=1)
    assert not training
    assert torch.equal(images, plain.images) and torch.equal(labels, plain.labels)


def test_summarise_names_a_missing_metric():
    data = {"results": {"none": [{"seed": 0, "test_accuracy": 0.9}]}}
    with pytest.raises(KeyError, match="train_accuracy.*none.*0"):
        regularisation.summarise(data, "train_accuracy")


def test_run_rejects_unknown_arm_and_no_seeds():
    with pytest.raises(ValueError, match="unknown arm"):
        regularisation.run([0], ["dropout 0.5"])
    with pytest.raises(ValueError, match="seed"):
        regularisation.run([])


def test_the_shipped_comparison_is_the_current_experiment():
    """The JSON chapter 9 reads was made with today's budget and arms, every arm on the same seeds."""
    from vit_edu.training import CHECKPOINTS

    data = json.loads((CHECKPOINTS / "regularisation.json").read_text())
    assert data["budget"] == regularisation.BUDGET and data["arms"] == regularisation.ARMS
    seeds = [[r["seed"] for r in rows] for rows in data["results"].values()]
    assert list(data["results"]) == list(regularisation.ARMS) and all(s == seeds[0] for s in seeds)
    assert len(seeds[0]) >= 3
    rows = [r for rows in data["results"].values() for r in rows]
    assert all(0 <= r["test_accuracy"] <= 1 and 0 <= r["train_accuracy"] <= 1 for r in rows)
    assert all(r["train_loss"] >= 0 and r["test_loss"] >= 0 for r in rows)


def test_rand_augment_changes_images_but_keeps_their_shape_and_range():
    torch.manual_seed(0)
    x = torch.rand(16, 3, 32, 32)
    y = rand_augment(x)
    assert y.shape == x.shape and y.dtype == torch.float32 and 0 <= y.min() and y.max() <= 1
    changed = (y - x).abs().flatten(1).amax(1) > 2 / 255  # beyond the 8-bit rounding
    assert changed.sum() >= 12  # two operations at magnitude 9: most images change
    with pytest.raises(ValueError, match="B, C, H, W"):
        rand_augment(torch.zeros(3, 8, 8))


def test_add_to_keeps_the_old_arms_and_refuses_a_different_budget(tmp_path):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    common = ["--seeds", "0", "--steps", "4", "--train-size", "64"]
    regularisation.main([*common, "--arms", "none", "--out", str(first)])
    regularisation.main([*common, "--arms", "RandAugment", "--add-to", str(first), "--out", str(second)])
    data = json.loads(second.read_text())
    assert list(data["results"]) == ["none", "RandAugment"]
    assert data["results"]["none"] == json.loads(first.read_text())["results"]["none"]
    assert data["added"][0]["arms"] == ["RandAugment"]
    with pytest.raises(ValueError, match="arm\\(s\\) \\['none'\\] already in the file"):
        regularisation.main([*common, "--arms", "none", "--add-to", str(first), "--out", str(tmp_path / "c.json")])
    with pytest.raises(ValueError, match="budgets differ"):
        regularisation.main(["--seeds", "0", "--steps", "5", "--train-size", "64", "--arms", "CutMix",
                             "--add-to", str(first), "--out", str(tmp_path / "d.json")])
