"""The ViT against the parameter-matched CNN as the training set grows: 500, 2,000, 5,000 and 20,000 shapes images.

``python -m vit_edu.training.data_size --seeds 0 1 2 --out vit_edu/checkpoints/data_size.json`` trains the
``shapes-vit`` preset and chapter 9's parameter-matched :class:`~vit_edu.training.cnn.SmallCNN` on ``n`` training
images drawn for each seed (a different ``n`` draws a different set: the sizes share the seed's initial weights and
test images, not their training images), with the same recipe and the budget of chapter 9's bench: the ViT the
preset's 1000 steps, the CNN (about 9 times slower per step) as many steps as the bench gave it for that seed,
which take about the same seconds. Each warms up for a tenth of its steps, at most the preset's 60. It stores
test and training accuracy and CPU seconds. This is the toy side of the paper's claim that a ViT needs more data
than a CNN to catch up; the large-data side (ImageNet-21k, JFT) is out of a CPU's reach.
"""

from __future__ import annotations

import dataclasses
import json
import time

import torch

from vit_edu.trace import count_parameters
from vit_edu.training.cnn import seeded_model
from vit_edu.training.loop import train_and_score
from vit_edu.training.priors import cnn_steps
from vit_edu.training.presets import PRESETS, experiment_parser, preset_overrides, shapes_splits

PRESET = "shapes-vit"
SIZES = (500, 2000, 5000, 20000)
MODELS = ("ViT", "CNN")


def run_one(model_name: str, train_size: int, seed: int, **overrides) -> dict:
    """Train one model on ``train_size`` images of ``seed``; its parameters, CPU seconds and test accuracy."""
    if model_name not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model_name!r}")
    model_cfg, train_cfg = PRESETS[PRESET]
    steps = overrides.pop("steps", train_cfg.steps)
    if model_name == "CNN":  # the bench's share of the ViT's steps
        steps = max(2, round(steps * cnn_steps(seed) / train_cfg.steps))
    # One evaluation, at the end; a shorter quick-check run keeps its warm-up inside it.
    cfg = dataclasses.replace(train_cfg, seed=seed, train_size=train_size, steps=steps, eval_every=steps,
                              warmup_steps=min(train_cfg.warmup_steps, steps // 10), **overrides)
    model = seeded_model(model_cfg, seed, model_name)
    return {"seed": seed, "train_size": train_size, "parameters": count_parameters(model), "steps": cfg.steps,
            **train_and_score(model, shapes_splits(cfg, model_cfg.image_size[0]), cfg)}


def main(argv: list[str] | None = None) -> None:
    parser = experiment_parser(__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="training-set sizes")
    args = parser.parse_args(argv)
    overrides = {k: v for k, v in preset_overrides(args).items() if k != "train_size"}
    start = time.time()
    results: dict[str, dict[str, list[dict]]] = {m: {} for m in MODELS}
    for size in args.sizes:
        for name in MODELS:
            for seed in args.seeds:
                row = run_one(name, size, seed, **overrides)
                print(f"{name} on {size:5d} images, seed {seed}: test {100 * row['test_accuracy']:.1f}% "
                      f"(train {100 * row['train_accuracy']:.1f}%) in {row['cpu_seconds']:.0f} CPU s", flush=True)
                results[name].setdefault(str(size), []).append(row)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"preset": PRESET, "torch": torch.__version__, "threads": torch.get_num_threads(),
                                    "seconds": round(time.time() - start, 1), "results": results}, indent=1))
    print(f"→ {args.out}")


if __name__ == "__main__":
    main()
