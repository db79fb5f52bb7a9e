"""The experiments' reference numbers for homework 3, computed at ``make homework`` (instructor only).

Each function runs exactly the recipe its exercise states, with the book's own functions where the student writes
their own (``attention_rollout`` for ``my_rollout``, ``interpolate_pos_embed`` for ``my_interpolate``), on one
thread so that the numbers do not depend on the build machine's thread count. About 15 s on one core.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F

import vit_edu
from vit_edu import ViTConfig, VisionTransformer
from vit_edu.data import ShapesDataset
from vit_edu.explain import attention_rollout, localisation_score, object_fraction
from vit_edu.position import interpolate_pos_embed
from vit_edu.training import CHECKPOINTS, TrainConfig, load_checkpoint, make_optimizer, train


def lr_runs() -> list[list[float]]:
    """Exercise 9.3: validation accuracy of three seeds at each of the two learning rates."""
    cfg = ViTConfig(image_size=32, patch_size=8, num_classes=4, embed_dim=32, depth=2, num_heads=4, mlp_dim=64,
                    input_norm=(0.5, 0.25))
    train_set = ShapesDataset("train", size=3200, seed=1)
    val_set = ShapesDataset("val", size=400, seed=1)
    out = []
    for lr in (3e-4, 3e-3):
        accs = []
        for seed in range(3):
            torch.manual_seed(seed)
            model = VisionTransformer(cfg)
            run = TrainConfig(steps=100, batch_size=32, lr=lr, warmup_steps=10, label_smoothing=0.0, eval_every=100,
                              seed=seed)
            accs.append(train(model, train_set, val_set, run, progress=False)[-1]["val_accuracy"])
        out.append(accs)
    return out


def rollout_scores(model: VisionTransformer) -> dict:
    """Exercise 10.3: mean localisation score of the CLS row of weighted rollout on 500 validation images."""
    val = ShapesDataset("val", size=500, seed=0)
    with torch.no_grad():
        _, attentions = model(val.images, return_attention=True)
    fraction = object_fraction(val.masks, model.config.patch_size)
    scores: dict = {}
    for fusion in ("mean", "max"):
        scores[fusion] = []
        for residual in (0.5, 2.0):
            # rownorm(fuse(A) + w·I) = rownorm(fuse(A / w) + I): the book's rollout on rescaled maps
            r = attention_rollout([a / residual for a in attentions], fusion)[:, 0, 1:]
            mass, baseline = localisation_score(r, fraction)
            scores[fusion].append(mass.mean().item())
    scores["baseline"] = baseline.mean().item()
    return scores


def tile_flips(model: VisionTransformer) -> dict:
    """Exercise 11.3: share of changed predictions and mean total variation over 500 images × 10 permutations."""
    images = ShapesDataset("test", seed=0).images[500:1000]
    p = model.config.patch_size
    g = torch.Generator().manual_seed(11)
    perms = [torch.randperm(model.config.num_patches, generator=g) for _ in range(10)]
    flips, tv = [], []
    with torch.no_grad():
        intact = model(images).softmax(-1)
        for perm in perms:
            tokens = vit_edu.patchify(images, p)[:, perm]  # position i gets the tile from position perm[i]
            moved = model(vit_edu.unpatchify(tokens, p, model.config.image_size, 3)).softmax(-1)
            flips.append(moved.argmax(-1) != intact.argmax(-1))
            tv.append(0.5 * (moved - intact).abs().sum(-1))
    return {"flips": torch.cat(flips).float().mean().item(), "tv": torch.cat(tv).mean().item()}


def resized_acc(model: VisionTransformer) -> list[float]:
    """Exercise 12.3: accuracy on the first 400 test scenes at 24×24 and 56×56, table resampled bilinearly."""
    out = []
    old = model.pos_embed.embedding.detach()
    for size in (24, 56):
        side = size // model.config.patch_size
        resized = VisionTransformer(dataclasses.replace(model.config, image_size=(size, size)))
        state = dict(model.state_dict())
        state["pos_embed.embedding"] = interpolate_pos_embed(old, (side, side), old_grid=model.config.grid_size,
                                                             mode="bilinear", align_corners=False)
        resized.load_state_dict(state)
        resized.eval()
        test = ShapesDataset("test", image_size=size, seed=0)
        with torch.no_grad():
            pred = resized(test.images[:400]).argmax(-1)
        out.append((pred == test.labels[:400]).float().mean().item())
    return out


def decay_growth() -> list[float]:
    """Exercise 13.3: growth of the largest |weight| from step 3 to step 4 at lr 30, 60, 100 (decay 0.05)."""
    tiny = ViTConfig(image_size=32, patch_size=8, num_classes=4, embed_dim=64, depth=2, num_heads=4, mlp_dim=128,
                     input_norm=(0.5, 0.25))
    train_set = ShapesDataset("train", size=4800, seed=0)
    out = []
    for lr in (30, 60, 100):
        torch.manual_seed(0)
        model = VisionTransformer(tiny)
        cfg = TrainConfig(steps=150, batch_size=32, lr=lr, warmup_steps=0, weight_decay=0.05, label_smoothing=0.0)
        optimizer, scheduler = make_optimizer(model, cfg)
        largest = []
        for step in range(4):
            batch = slice(32 * step, 32 * (step + 1))
            loss = F.cross_entropy(model(train_set.images[batch]), train_set.labels[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            largest.append(max(p.detach().abs().max().item() for p in model.parameters()))
        out.append(largest[3] / largest[2])
    return out


def make_key() -> dict:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            model, _ = load_checkpoint(CHECKPOINTS / "shapes_vit.pt")
            return {"lr_runs": lr_runs(), "rollout_scores": rollout_scores(model), "tile_flips": tile_flips(model),
                    "resized_acc": resized_acc(model), "decay_growth": decay_growth()}
    finally:
        torch.set_num_threads(threads)
