"""The shipped results in vit_edu/checkpoints: small, loadable, and what they say they are."""

import dataclasses
import json
import math

import pytest
import torch

from vit_edu.config import POS_EMBEDS
from vit_edu.data import ShapesDataset
from vit_edu.training import CHECKPOINTS, PRESETS, TrainConfig, evaluate, load_checkpoint, norm_placement


@pytest.fixture(scope="module")
def checkpoint():
    return load_checkpoint(CHECKPOINTS / "shapes_vit.pt")


def test_checkpoint_is_small_and_is_the_preset(checkpoint):
    model, info = checkpoint
    assert (CHECKPOINTS / "shapes_vit.pt").stat().st_size <= 5_000_000
    assert model.config == PRESETS["shapes-vit"][0]
    assert TrainConfig(**info["train_config"]) == dataclasses.replace(PRESETS["shapes-vit"][1], seed=0)
    assert info["history"][-1]["step"] == info["train_config"]["steps"]


def test_checkpoint_reaches_its_recorded_test_accuracy(checkpoint):
    model, info = checkpoint
    test = ShapesDataset("test", seed=info["train_config"]["seed"])
    accuracy = evaluate(model, test.images, test.labels)["accuracy"]
    # Weights are stored in half precision: a prediction or two may flip.
    assert accuracy == pytest.approx(info["metrics"]["test_accuracy"], abs=0.003)
    assert accuracy >= 0.98


def test_ablation_covers_every_kind_and_seed():
    data = json.loads((CHECKPOINTS / "pos_embed_ablation.json").read_text())
    assert set(data["results"]) == set(POS_EMBEDS)
    seeds = {kind: sorted(r["seed"] for r in rows) for kind, rows in data["results"].items()}
    assert len(set(map(tuple, seeds.values()))) == 1 and len(seeds["learned"]) >= 2
    assert all(0.25 <= r["test_accuracy"] <= 1 for rows in data["results"].values() for r in rows)


def test_vit_vs_cnn_curves_are_complete():
    data = json.loads((CHECKPOINTS / "vit_vs_cnn.json").read_text())
    assert data["preset"] == "shapes-vit" and len(data["runs"]) >= 3
    for run in data["runs"]:
        for name in ("ViT", "CNN"):
            history = run[name]["history"]
            assert history[-1]["step"] == run[name]["steps"]
            assert [row["seconds"] for row in history] == sorted(row["seconds"] for row in history)
        # Parameter-matched within 5%.
        assert abs(run["CNN"]["parameters"] / run["ViT"]["parameters"] - 1) < 0.05


def test_torch_loads_the_checkpoint_with_weights_only():
    data = torch.load(CHECKPOINTS / "shapes_vit.pt", map_location="cpu", weights_only=True)
    assert all(v.dtype == torch.float16 for v in data["state_dict"].values() if v.is_floating_point())


def test_norm_placement_runs_are_complete():
    result = json.loads((CHECKPOINTS / "norm_placement.json").read_text())
    runs = result["runs"]
    combos = {(r["warmup"], r["norm"], r["seed"]) for r in runs}
    assert combos == {(w, n, s) for w in norm_placement.WARMUPS for n in ("pre", "post") for s in (0, 1, 2)}
    assert all(len(r["losses"]) == result["steps"] == norm_placement.STEPS for r in runs)
    assert result["chance_loss"] == pytest.approx(math.log(4))


def test_a_fresh_norm_placement_run_agrees_with_the_shipped_claims():
    """Chapter 7's claims hold for a run made now, on this CPU: Pre-LN learns, Post-LN stays at chance."""
    train_set = ShapesDataset("train", size=norm_placement.TRAIN_SIZE)
    val_set = ShapesDataset("val", size=norm_placement.VAL_SIZE)
    with torch.random.fork_rng():
        pre = norm_placement.train_once("pre", 0, 0, train_set, val_set)
        post = norm_placement.train_once("post", 0, 50, train_set, val_set)
    chance = math.log(4)
    assert sum(pre["losses"][-50:]) / 50 < chance - 0.3
    assert abs(sum(post["losses"][-50:]) / 50 - chance) < 0.1 and post["val_accuracy"] < 0.35


def test_norm_placement_rejects_a_negative_warmup():
    with pytest.raises(ValueError, match="warmup=-1"):
        norm_placement.train_once("pre", 0, -1, None, None)
