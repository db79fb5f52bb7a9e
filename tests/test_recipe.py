"""vit_edu.training.recipe (one knob at a time) and the constant schedule it adds to TrainConfig."""

import json

import pytest
from torch import nn

from vit_edu.training import PRESETS, TrainConfig
from vit_edu.training.loop import make_optimizer
from vit_edu.training.recipe import ARMS, arm_config, main, run_one


def rates(cfg: TrainConfig) -> list[float]:
    optimizer, scheduler = make_optimizer(nn.Linear(2, 2), cfg)
    out = []
    for _ in range(cfg.steps):
        out.append(scheduler.get_last_lr()[0])
        optimizer.step()
        scheduler.step()
    return out


def test_constant_schedule_holds_the_peak_after_the_warm_up():
    constant = rates(TrainConfig(steps=20, warmup_steps=4, lr=1.0, schedule="constant"))
    cosine = rates(TrainConfig(steps=20, warmup_steps=4, lr=1.0))
    assert constant[:4] == cosine[:4] and constant[0] < 1.0  # the same warm-up
    assert constant[4:] == [1.0] * 16
    assert cosine[-1] < 0.05  # while cosine decays toward zero
    with pytest.raises(ValueError, match="schedule must be 'cosine' or 'constant', got 'step'"):
        TrainConfig(schedule="step")


def test_an_unknown_arm_names_itself():
    with pytest.raises(ValueError, match="unknown arm 'lr 5'"):
        run_one("lr 5", 0)


def test_the_script_trains_each_arm_with_its_own_settings(tmp_path):
    out = tmp_path / "recipe.json"
    arms = ["preset", "batch 128, lr 4e-3", "constant lr 1e-4", "depth 8", "CNN, lr 1e-2"]
    main(["--seeds", "0", "--steps", "40", "--train-size", "256", "--arms", *arms, "--out", str(out)])
    data = json.loads(out.read_text())
    rows = {arm: data["results"][arm][0] for arm in arms}
    assert rows["preset"]["steps"] == 40 and rows["preset"]["batch_size"] == 32 and rows["preset"]["lr"] == 1e-3
    assert rows["batch 128, lr 4e-3"]["steps"] == 10 and rows["batch 128, lr 4e-3"]["batch_size"] == 128
    assert rows["batch 128, lr 4e-3"]["lr"] == 4e-3
    assert rows["depth 8"]["parameters"] > rows["preset"]["parameters"]
    assert rows["CNN, lr 1e-2"]["model"] == "CNN" and rows["CNN, lr 1e-2"]["steps"] < 40  # the bench's share
    assert all(0 <= r["test_accuracy"] <= 1 for r in rows.values())
    assert data["arms"]["constant lr 1e-4"] == ARMS["constant lr 1e-4"]


def test_the_larger_batch_arms_see_as_many_images_as_the_preset():
    preset = PRESETS["shapes-vit"][1]
    for arm in ("batch 128, lr 1e-3", "batch 128, lr 2e-3", "batch 128, lr 4e-3"):
        settings = ARMS[arm]
        assert settings["batch_size"] * settings["steps"] == preset.batch_size * preset.steps
        assert settings["batch_size"] * settings["warmup_steps"] == preset.batch_size * preset.warmup_steps


def test_every_arm_warms_up_for_the_presets_share_of_its_run():
    preset = PRESETS["shapes-vit"][1]
    for arm in ARMS:
        _, _, cfg = arm_config(arm, 0)
        assert abs(cfg.warmup_steps / cfg.steps - preset.warmup_steps / preset.steps) < 0.01, arm
    _, _, big = arm_config("batch 128, lr 4e-3", 0)
    assert big.warmup_steps * big.batch_size == preset.warmup_steps * preset.batch_size  # the same warm-up images
