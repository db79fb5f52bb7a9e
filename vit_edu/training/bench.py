"""Accuracy against training seconds on the shapes task: the ViT preset and a parameter-matched CNN.

Run ``python -m vit_edu.training.bench [--seeds 0 1 2] [--out results.json]``. The ViT trains the preset's fixed
number of steps; the CNN gets the same data and recipe and as many steps as fit in the same seconds, set from
the ratio of the two models' step times measured here (a ratio is steadier than an absolute probe). Prints
validation accuracy as training proceeds and each model's test accuracy; ``--out`` keeps the curves as JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import torch
from torch import nn

from vit_edu.data import ShapesDataset
from vit_edu.model import VisionTransformer
from vit_edu.trace import count_parameters
from vit_edu.training import PRESETS, TrainConfig, evaluate, make_optimizer, shapes_splits, train
from vit_edu.training.cnn import matching_cnn


def seconds_per_step(model: nn.Module, train_set: ShapesDataset, cfg: TrainConfig, probe: int = 12,
                     warmup: int = 3) -> float:
    """Median time of one training step, measured on a throw-away copy of the weights and optimiser.

    The first ``warmup`` steps are not timed: they include one-off costs (allocations, kernel selection for
    the convolutions) that would make the CNN look several times slower than it is.
    """
    optimizer, _ = make_optimizer(model, dataclasses.replace(cfg, steps=warmup + probe + 1, warmup_steps=0))
    criterion = nn.CrossEntropyLoss()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    times = []
    for _ in range(warmup + probe):
        x, y = train_set.images[: cfg.batch_size], train_set.labels[: cfg.batch_size]
        start = time.perf_counter()
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    model.load_state_dict(state)
    times = sorted(times[warmup:])
    return times[len(times) // 2]


def run(name: str, model: nn.Module, cfg: TrainConfig, sets: tuple) -> dict:
    """Train ``model`` for ``cfg.steps`` steps; print and return its curve and test accuracy."""
    train_set, val_set, test_set = sets
    history = train(model, train_set, val_set, cfg, progress=False)
    test = evaluate(model, test_set.images, test_set.labels)
    print(f"\n{name}: {count_parameters(model):,} parameters, {cfg.steps} steps of {cfg.batch_size}")
    for row in history:
        print(f"  {row['seconds']:6.1f} s  step {row['step']:5d}  val accuracy {100 * row['val_accuracy']:6.2f}%")
    print(f"  test accuracy {100 * test['accuracy']:.2f}% after {history[-1]['seconds']:.1f} s of training")
    return {"parameters": count_parameters(model), "steps": cfg.steps, "test_accuracy": test["accuracy"],
            "seconds": history[-1]["seconds"], "history": history}


def compare(preset: str, seed: int) -> dict:
    """One seed: the preset ViT, then the parameter-matched CNN on the same wall-clock time."""
    model_cfg, train_cfg = PRESETS[preset]
    train_cfg = dataclasses.replace(train_cfg, seed=seed)
    sets = shapes_splits(train_cfg, model_cfg.image_size[0])
    torch.manual_seed(seed)
    vit = VisionTransformer(model_cfg)
    torch.manual_seed(seed)
    cnn = matching_cnn(count_parameters(vit), model_cfg.num_classes)
    ratio = seconds_per_step(vit, sets[0], train_cfg) / seconds_per_step(cnn, sets[0], train_cfg)
    cnn_steps = max(train_cfg.warmup_steps + 1, round(train_cfg.steps * ratio))
    cnn_cfg = dataclasses.replace(train_cfg, steps=cnn_steps, eval_every=max(1, round(train_cfg.eval_every * ratio)))
    return {"seed": seed, "ViT": run(f"ViT ({preset}), seed {seed}", vit, train_cfg, sets),
            "CNN": run(f"CNN (parameter-matched), seed {seed}", cnn, cnn_cfg, sets)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="shapes-vit")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--out", type=Path, help="write every curve and result to this JSON file")
    args = parser.parse_args(argv)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    runs = [compare(args.preset, seed) for seed in args.seeds]
    print("\nsummary (test accuracy, training seconds):")
    for r in runs:
        print(f"  seed {r['seed']}: " + ", ".join(f"{k} {100 * r[k]['test_accuracy']:.2f}% in {r[k]['seconds']:.0f} s"
                                                 for k in ("ViT", "CNN")))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"preset": args.preset, "threads": torch.get_num_threads(),
                                        "torch": torch.__version__, "runs": runs}, indent=1))
        print(f"→ {args.out}")


if __name__ == "__main__":
    main()
