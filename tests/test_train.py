import dataclasses
import json

import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

from vit_edu import ViTConfig, VisionTransformer
from vit_edu.data import ShapesDataset
from vit_edu.training import (PRESETS, TrainConfig, evaluate, fit_preset, load_checkpoint, make_mixer, make_optimizer,
                              parameter_groups, save_checkpoint, train)
from vit_edu.training.__main__ import main
from vit_edu.training.pos_embed_ablation import main as ablation_main

TINY = ViTConfig(image_size=16, patch_size=4, num_classes=4, embed_dim=32, depth=2, num_heads=2, mlp_dim=64)


@pytest.fixture(scope="module")
def splits():
    return (ShapesDataset("train", size=256, image_size=16, seed=3),
            ShapesDataset("val", size=128, image_size=16, seed=3))


def test_no_weight_decay_on_norms_biases_and_embeddings():
    model = VisionTransformer(TINY)
    decay, no_decay = parameter_groups(model, 0.05)
    names = {id(p): n for n, p in model.named_parameters()}
    decayed = {names[id(p)] for p in decay["params"]}
    spared = {names[id(p)] for p in no_decay["params"]}
    assert "blocks.0.attn.qkv.weight" in decayed and "head.weight" in decayed
    assert {"cls_token", "pos_embed.embedding", "blocks.0.norm1.weight", "blocks.0.attn.qkv.bias"} <= spared
    assert decay["weight_decay"] == 0.05 and no_decay["weight_decay"] == 0.0
    assert len(decayed) + len(spared) == len(names)


def test_schedule_warms_up_linearly_then_decays_by_cosine():
    cfg = TrainConfig(steps=100, warmup_steps=10, lr=1.0)
    optimizer, scheduler = make_optimizer(VisionTransformer(TINY), cfg)
    lrs = []
    for _ in range(cfg.steps):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert lrs[0] == pytest.approx(0.1) and lrs[10] == pytest.approx(1.0)  # full rate after 10 steps
    assert lrs[0] < lrs[5] < lrs[9] < lrs[10]
    assert lrs[55] == pytest.approx(0.5, abs=0.02)  # halfway through the cosine
    assert lrs[-1] < 0.01


def test_mixers_give_soft_labels():
    x, y = torch.rand(8, 3, 16, 16), torch.arange(8) % 4
    assert make_mixer(TrainConfig(mix="none"), 4) is None
    for mix in ("cutmix", "mixup", "both"):
        _, soft = make_mixer(TrainConfig(mix=mix), 4)(x, y)
        assert soft.shape == (8, 4)
        torch.testing.assert_close(soft.sum(1), torch.ones(8))


def test_training_learns_and_is_deterministic(splits):
    train_set, val_set = splits
    cfg = TrainConfig(steps=60, batch_size=32, warmup_steps=5, eval_every=20, lr=3e-3, mix="cutmix")

    def run():
        torch.manual_seed(0)
        model = VisionTransformer(TINY)
        before = evaluate(model, val_set.images, val_set.labels)["loss"]
        history = train(model, train_set, val_set, cfg, progress=False)
        return model, before, history

    model, before, history = run()
    assert [row["step"] for row in history] == [20, 40, 60]
    assert history[-1]["val_loss"] < before
    _, _, again = run()
    assert [r["val_loss"] for r in again] == [r["val_loss"] for r in history]


def test_checkpoint_round_trip(tmp_path, splits):
    torch.manual_seed(0)
    model = VisionTransformer(dataclasses.replace(TINY, pos_embed="sincos")).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    path = tmp_path / "ck.pt"
    save_checkpoint(path, model, TrainConfig(), [{"step": 1}], {"test_accuracy": 0.5})
    loaded, info = load_checkpoint(path)
    assert loaded.config == model.config
    assert info["metrics"] == {"test_accuracy": 0.5} and info["history"] == [{"step": 1}]
    x = splits[1].images[:4]
    torch.testing.assert_close(loaded(x), model(x), atol=2e-2, rtol=2e-2)  # weights stored in half precision


def test_nan_is_detected(splits):
    model = VisionTransformer(TINY)
    with torch.no_grad():
        model.head.weight.fill_(float("nan"))
    with pytest.raises(FloatingPointError, match="loss became nan at step 1"):
        train(model, *splits, TrainConfig(steps=5, warmup_steps=0, batch_size=16), progress=False)


@pytest.mark.parametrize("changes,message", [({"steps": 0}, "steps must be a positive integer"),
                                             ({"warmup_steps": 700}, "warmup_steps must be in"),
                                             ({"mix": "cutout"}, "mix must be"),
                                             ({"lr": 0.0}, "lr must be > 0"),
                                             ({"grad_clip": 0.0}, "grad_clip must be None or > 0")])
def test_bad_train_config_raises(changes, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**changes)


def test_cli_writes_a_loadable_checkpoint_with_metrics(tmp_path):
    out = tmp_path / "ckpt.pt"
    main(["--config", "shapes-vit", "--steps", "70", "--seed", "3", "--train-size", "500", "--pos-embed", "sincos", "--out", str(out)])
    model, info = load_checkpoint(out)
    assert model.config == dataclasses.replace(PRESETS["shapes-vit"][0], pos_embed="sincos")
    assert info["train_config"]["steps"] == 70 and info["train_config"]["seed"] == 3
    assert info["train_config"]["train_size"] == 500
    assert 0.0 <= info["metrics"]["test_accuracy"] <= 1.0 and info["history"][-1]["step"] == 70
    assert out.stat().st_size < 5e6


def test_fit_preset_rejects_unknown_settings():
    with pytest.raises(ValueError, match=r"unknown setting\(s\) \['stpes'\]"):
        fit_preset(stpes=10)


def test_ablation_records_every_kind_and_seed(tmp_path):
    out = tmp_path / "ablation.json"
    ablation_main(["--seeds", "0", "--steps", "61", "--train-size", "300", "--out", str(out)])
    results = json.loads(out.read_text())["results"]
    assert sorted(results) == ["learned", "none", "relative", "sincos"]
    assert all(len(rows) == 1 and rows[0]["seed"] == 0 for rows in results.values())
    assert all(rows[0]["steps"] == 61 and rows[0]["train_size"] == 300 for rows in results.values())


def test_ablation_add_keeps_stored_seeds_and_refuses_another_recipe(tmp_path):
    out = tmp_path / "ablation.json"
    quick = ["--steps", "61", "--train-size", "100", "--out", str(out)]
    ablation_main(["--seeds", "1"] + quick)
    first = json.loads(out.read_text())["results"]
    for rows in first.values():
        rows[0]["train_seconds"] = -1.0  # a marker no real run writes: it survives only if seed 1 is not retrained
    out.write_text(json.dumps({"preset": "shapes-vit", "results": first}))
    ablation_main(["--add", "--seeds", "0", "1"] + quick)
    results = json.loads(out.read_text())["results"]
    assert all([row["seed"] for row in rows] == [0, 1] for rows in results.values())
    assert all(rows[1] == first[kind][0] and rows[0]["train_seconds"] >= 0 for kind, rows in results.items())
    with pytest.raises(ValueError, match="drop --add"):
        ablation_main(["--add", "--seeds", "2", "--steps", "62", "--train-size", "100", "--out", str(out)])


def test_grad_clip_bounds_the_global_gradient_norm_at_every_step(splits):
    norms = []

    def record(optimizer, args, kwargs):
        grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        norms.append(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item())

    handle = register_optimizer_step_pre_hook(record)
    try:
        for clip in (None, 0.05):
            torch.manual_seed(0)
            cfg = TrainConfig(steps=6, warmup_steps=0, batch_size=16, lr=1e-3, grad_clip=clip)
            train(VisionTransformer(TINY), *splits, cfg, progress=False)
    finally:
        handle.remove()
    unclipped, clipped = norms[:6], norms[6:]
    assert max(unclipped) > 0.05  # the bound is active, so the test can tell the difference
    assert max(clipped) <= 0.05 * (1 + 1e-4)


def test_loading_a_checkpoint_leaves_the_random_state_alone(tmp_path, splits):
    model = VisionTransformer(TINY)
    save_checkpoint(tmp_path / "c.pt", model, TrainConfig(steps=2, warmup_steps=0), [], {})
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    load_checkpoint(tmp_path / "c.pt")
    assert torch.equal(torch.rand(3), expected)
