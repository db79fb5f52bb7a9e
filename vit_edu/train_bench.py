"""Accuracy against training seconds on the shapes task: the ViT preset and a parameter-matched CNN.

Run ``python -m vit_edu.train_bench``. Both models get the same data, recipe and wall-clock budget (default
60 s of training on this machine): the number of steps is set from a short timing probe so that each fits
the budget. Prints validation accuracy as training proceeds and the final test accuracy of each.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import torch
from torch import nn

from vit_edu.cnn import matching_cnn
from vit_edu.data import ShapesDataset
from vit_edu.model import VisionTransformer
from vit_edu.train import PRESETS, TrainConfig, evaluate, make_optimizer, train
from vit_edu.trace import count_parameters


def seconds_per_step(model: nn.Module, train_set: ShapesDataset, cfg: TrainConfig, probe: int = 8) -> float:
    """Median time of one training step, measured on a throw-away copy of the optimiser state."""
    optimizer, _ = make_optimizer(model, dataclasses.replace(cfg, steps=probe + 1, warmup_steps=0))
    criterion = nn.CrossEntropyLoss()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    times = []
    for i in range(probe):
        x, y = train_set.images[: cfg.batch_size], train_set.labels[: cfg.batch_size]
        start = time.perf_counter()
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    model.load_state_dict(state)
    return sorted(times)[len(times) // 2]


def run(name: str, model: nn.Module, cfg: TrainConfig, budget: float, sets: tuple) -> dict:
    train_set, val_set, test_set = sets
    steps = max(cfg.warmup_steps + 1, int(budget / seconds_per_step(model, train_set, cfg)))
    cfg = dataclasses.replace(cfg, steps=steps, eval_every=max(1, steps // 8))
    history = train(model, train_set, val_set, cfg, progress=False)
    test = evaluate(model, test_set.images, test_set.labels)
    print(f"\n{name}: {count_parameters(model):,} parameters, {steps} steps of {cfg.batch_size}")
    for row in history:
        print(f"  {row['seconds']:6.1f} s  step {row['step']:5d}  val accuracy {100 * row['val_accuracy']:6.2f}%")
    print(f"  test accuracy {100 * test['accuracy']:.2f}% after {history[-1]['seconds']:.1f} s of training")
    return {"test_accuracy": test["accuracy"], "seconds": history[-1]["seconds"]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=60.0, help="training seconds per model")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="shapes-vit")
    args = parser.parse_args(argv)
    model_cfg, train_cfg = PRESETS[args.preset]
    size = model_cfg.image_size[0]
    sets = tuple(ShapesDataset(split, size=train_cfg.train_size if split == "train" else None, image_size=size,
                               seed=train_cfg.seed) for split in ("train", "val", "test"))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, budget {args.budget:.0f} s per model")
    torch.manual_seed(train_cfg.seed)
    vit = VisionTransformer(model_cfg)
    results = {"ViT": run(f"ViT ({args.preset})", vit, train_cfg, args.budget, sets)}
    torch.manual_seed(train_cfg.seed)
    cnn = matching_cnn(count_parameters(vit), model_cfg.num_classes)
    results["CNN"] = run("CNN (parameter-matched)", cnn, train_cfg, args.budget, sets)
    print("\nsummary: " + ", ".join(f"{k} {100 * v['test_accuracy']:.2f}% in {v['seconds']:.0f} s"
                                   for k, v in results.items()))


if __name__ == "__main__":
    main()
