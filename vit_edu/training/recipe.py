"""The training recipe's knobs, one at a time: learning rate and schedule, batch size, depth and weight decay.

``python -m vit_edu.training.recipe --seeds 0 1 2 --out vit_edu/checkpoints/recipe.json`` trains the ``shapes-vit``
preset once per arm and seed, each arm changing the settings it names, and the parameter-matched CNN of chapter 9
at three learning rates (with the bench's steps for each seed, about the ViT's seconds), so that the two models'
sensitivity to the learning rate can be compared on the same seeds. The arms answer the seeds' rules of thumb:

* a larger batch wants a somewhat larger learning rate (batch 128 for the same number of epochs, at the preset's
  rate, √4 times it and 4 times it);
* a ViT is more sensitive to the learning rate than a CNN (both at 1e-4, 1e-3 and 1e-2);
* a constant 1e-4 converges, slower and a little lower (against the preset's warm-up and cosine decay);
* the seed's recipe for more accuracy: twice the depth, weight decay 0.03 instead of 0.05.

Each run stores its test and training accuracy, steps and CPU seconds; a run whose loss stops being finite is
stored as diverged, with the step.
"""

from __future__ import annotations

import dataclasses
import time

from vit_edu.config import ViTConfig
from vit_edu.trace import count_parameters
from vit_edu.training.cnn import seeded_model
from vit_edu.training.config import TrainConfig
from vit_edu.training.loop import train_and_score
from vit_edu.training.presets import PRESETS, arms_main, shapes_splits
from vit_edu.training.priors import cnn_steps

PRESET = "shapes-vit"
_BATCH_128 = {"batch_size": 128, "steps": 250, "warmup_steps": 15}  # 4× the images per step, same epochs
ARMS: dict[str, dict] = {
    "preset": {},
    "lr 1e-4": {"lr": 1e-4},
    "lr 1e-2": {"lr": 1e-2},
    "constant lr 1e-4": {"lr": 1e-4, "schedule": "constant"},
    "batch 128, lr 1e-3": _BATCH_128,
    "batch 128, lr 2e-3": {**_BATCH_128, "lr": 2e-3},
    "batch 128, lr 4e-3": {**_BATCH_128, "lr": 4e-3},
    "depth 8": {"depth": 8},
    "weight decay 0.03": {"weight_decay": 0.03},
    "CNN": {"model": "CNN"},
    "CNN, lr 1e-4": {"model": "CNN", "lr": 1e-4},
    "CNN, lr 1e-2": {"model": "CNN", "lr": 1e-2},
}


def arm_config(arm: str, seed: int, steps: int | None = None,
               train_size: int | None = None) -> tuple[str, ViTConfig, TrainConfig]:
    """What one arm trains on one seed: ``("ViT" or "CNN", model config, training config)``. ``steps`` and
    ``train_size`` shrink the run for a quick check (the steps scale each arm's own count by ``steps`` / the
    preset's).

    Every arm warms up for the same share of its run as its settings say: the preset's 60 of 1000 steps, the
    batch-128 arms' 15 of 250 (as many images as the preset's warm-up), and the CNN 6% of its bench steps.
    """
    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r}; choose from {list(ARMS)}")
    settings = dict(ARMS[arm])
    model_name = settings.pop("model", "ViT")
    model_cfg, train_cfg = PRESETS[PRESET]
    model_fields = {f.name for f in dataclasses.fields(model_cfg)}
    model_cfg = dataclasses.replace(model_cfg, **{k: v for k, v in settings.items() if k in model_fields})
    settings = {k: v for k, v in settings.items() if k not in model_fields}
    nominal = settings.pop("steps", train_cfg.steps)
    share = settings.pop("warmup_steps", train_cfg.warmup_steps) / nominal  # warm-up's share of the run
    arm_steps = cnn_steps(seed) if model_name == "CNN" else nominal
    if steps is not None:
        arm_steps = max(2, round(arm_steps * steps / train_cfg.steps))
    cfg = dataclasses.replace(train_cfg, seed=seed, steps=arm_steps, eval_every=arm_steps,
                              warmup_steps=min(round(share * arm_steps), arm_steps // 2), **settings,
                              **({"train_size": train_size} if train_size else {}))
    return model_name, model_cfg, cfg


def run_one(arm: str, seed: int, steps: int | None = None, train_size: int | None = None) -> dict:
    """Train one arm (:func:`arm_config`) on one seed: test and training accuracy, CPU seconds."""
    model_name, model_cfg, cfg = arm_config(arm, seed, steps, train_size)
    model = seeded_model(model_cfg, seed, model_name)
    row = {"seed": seed, "model": model_name, "steps": cfg.steps, "batch_size": cfg.batch_size, "lr": cfg.lr,
           "parameters": count_parameters(model)}
    start = time.process_time()
    try:
        return {**row, **train_and_score(model, shapes_splits(cfg, model_cfg.image_size[0]), cfg)}
    except FloatingPointError as error:  # the loss became NaN or infinite: the run diverged
        return {**row, "diverged": str(error), "cpu_seconds": round(time.process_time() - start, 1)}


def main(argv: list[str] | None = None) -> None:
    arms_main(__doc__, PRESET, ARMS, run_one, argv)


if __name__ == "__main__":
    main()
