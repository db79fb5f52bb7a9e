"""Chapter 7's experiment: does the place of the LayerNorm (Pre-LN or Post-LN) change how a small ViT trains?

Two tiny ViTs that differ only in ``norm`` train on the shapes task from the same initial weights and the same
batches, at one constant learning rate, with and without a linear warm-up, over several seeds. A short run
amplifies float32 rounding, so its exact numbers change from CPU to CPU; the experiment therefore ships as
``checkpoints/norm_placement.json`` (``make checkpoints``), and chapter 7 plots it and asserts its claims.

    python -m vit_edu.training.norm_placement --seeds 0 1 2 --out vit_edu/checkpoints/norm_placement.json
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import torch
import torch.nn.functional as F

from vit_edu.config import ViTConfig
from vit_edu.data import CLASS_NAMES, ShapesDataset
from vit_edu.model import VisionTransformer

STEPS, LR, BATCH = 300, 3e-3, 24
WARMUPS = (0, 50)  # linear warm-up over this many steps; 0: the full learning rate from the first step
TRAIN_SIZE, VAL_SIZE = 2000, 500


def model_config(norm: str) -> ViTConfig:
    """The chapter's tiny ViT: 8×8 patches of a 32×32 image (16 tokens), D 64, 6 blocks, mean pooling."""
    return ViTConfig(image_size=32, patch_size=8, num_classes=len(CLASS_NAMES), embed_dim=64, depth=6,
                     num_heads=4, mlp_dim=128, pool="mean", norm=norm, input_norm=(0.5, 0.25))


def train_once(norm: str, seed: int, warmup: int, train_set: ShapesDataset, val_set: ShapesDataset,
               steps: int = STEPS, lr: float = LR) -> dict:
    """Adam at ``lr`` (warmed up linearly over ``warmup`` steps): training losses, validation accuracy."""
    if warmup < 0 or steps <= 0:
        raise ValueError(f"need warmup >= 0 and steps > 0, got warmup={warmup}, steps={steps}")
    torch.manual_seed(seed)  # the same initial weights for both norms
    model = VisionTransformer(model_config(norm))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup) if warmup else 1.0)
    batches = torch.Generator().manual_seed(seed)  # the same batches for both norms
    losses = []
    for _ in range(steps):
        idx = torch.randint(len(train_set), (BATCH,), generator=batches)
        loss = F.cross_entropy(model(train_set.images[idx]), train_set.labels[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        predictions = model(val_set.images).argmax(dim=-1)  # (VAL_SIZE,)
    return {
        "norm": norm, "seed": seed, "warmup": warmup, "steps": steps, "lr": lr,
        "losses": [round(v, 4) for v in losses],
        "val_accuracy": (predictions == val_set.labels).float().mean().item(),
        "classes_predicted": predictions.unique().numel(),
    }


def run(seeds: tuple[int, ...] = (0, 1, 2), warmups: tuple[int, ...] = WARMUPS, steps: int = STEPS) -> dict:
    """Every (warm-up, norm, seed) combination, with the settings that the rows share."""
    train_set, val_set = ShapesDataset("train", size=TRAIN_SIZE), ShapesDataset("val", size=VAL_SIZE)
    runs = [train_once(norm, seed, warmup, train_set, val_set, steps)
            for warmup in warmups for norm in ("pre", "post") for seed in seeds]
    return {"lr": LR, "batch": BATCH, "steps": steps, "train_size": TRAIN_SIZE, "val_size": VAL_SIZE,
            "chance_loss": math.log(len(CLASS_NAMES)), "runs": runs}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--steps", type=int, default=STEPS)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    result = run(tuple(args.seeds), steps=args.steps)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for r in result["runs"]:
        print(f"warm-up {r['warmup']:3d}  {r['norm']}-LN  seed {r['seed']}: last-50 loss "
              f"{sum(r['losses'][-50:]) / 50:.3f}, val accuracy {100 * r['val_accuracy']:.1f}%")


if __name__ == "__main__":
    main()
