"""More tokens of the same images: the shapes task drawn at 64×64 pixels, cut into 16 or 64 patches (chapter 9).

Seed 003 explains why a small ViT trails a CNN on CIFAR-10: 32×32 pixels give only 64 tokens. This experiment
asks the shapes task the same question, where chapter 9's ViT does trail the CNN (2,000 training images):
``python -m vit_edu.training.token_count --seeds 0 1 2 --out vit_edu/checkpoints/token_count.json`` trains the
``shapes-vit`` recipe on the same scenes drawn at 32×32 with patches of 8 (16 tokens, the preset), and at 64×64
with patches of 16 (again 16 tokens, each twice as sharp) and of 8 (64 tokens, CIFAR's count), at equal steps.
It stores test and training accuracy, parameters and CPU seconds. The CNN's side is chapter 9's
``data_size.json`` (the same seeds and 2,000 images at 32×32).
"""

from __future__ import annotations

import dataclasses

from vit_edu.trace import count_parameters
from vit_edu.training.cnn import seeded_model
from vit_edu.training.loop import train_and_score
from vit_edu.training.presets import PRESETS, arms_main, shapes_splits

PRESET = "shapes-vit"
TRAIN_SIZE = 2000  # where chapter 9's ViT trails the CNN (data_size.json)
ARMS: dict[str, dict[str, int]] = {
    "32 px, P = 8": {"image_size": 32, "patch_size": 8},  # the preset: 16 tokens
    "64 px, P = 16": {"image_size": 64, "patch_size": 16},  # 16 tokens of twice the resolution
    "64 px, P = 8": {"image_size": 64, "patch_size": 8},  # 64 tokens, as CIFAR-10 with 4×4 patches
}


def run_one(arm: str, seed: int, steps: int | None = None, train_size: int = TRAIN_SIZE) -> dict:
    """Train one arm on one seed: tokens, parameters, CPU seconds, training and test accuracy."""
    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r}; choose from {list(ARMS)}")
    model_cfg, train_cfg = PRESETS[PRESET]
    model_cfg = dataclasses.replace(model_cfg, **ARMS[arm])
    steps = train_cfg.steps if steps is None else steps  # a shorter quick-check run keeps its warm-up inside it
    cfg = dataclasses.replace(train_cfg, seed=seed, train_size=train_size, steps=steps, eval_every=steps,
                              warmup_steps=min(train_cfg.warmup_steps, steps // 10))
    model = seeded_model(model_cfg, seed)
    return {"seed": seed, "tokens": model_cfg.num_patches, "parameters": count_parameters(model), "steps": steps,
            "train_size": train_size, **train_and_score(model, shapes_splits(cfg, model_cfg.image_size[0]), cfg)}


def main(argv: list[str] | None = None) -> None:
    arms_main(__doc__, PRESET, ARMS, run_one, argv)


if __name__ == "__main__":
    main()
