"""Chapter 3's question: how much does training the patch embedding matter?

The ``shapes-vit`` preset (patches of 8, D = 128) trains twice per seed, with the same initial weights, images
and batch order: once as usual, and once with its patch embedding (the stride-8 convolution's weights and bias)
frozen at its random start, so that only the rest of the model learns. Frozen, the embedding is a fixed random
linear map of each patch: with 192 numbers per patch and D = 128 it keeps a random 128-dimensional view of the
patch, and everything after it has to work with that view.

    OMP_NUM_THREADS=1 python -m vit_edu.training.frozen_embedding --seeds 0 1 2 --out vit_edu/checkpoints/frozen_embedding.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from vit_edu.model import VisionTransformer
from vit_edu.training.loop import evaluate, train
from vit_edu.training.presets import PRESETS, shapes_splits

PRESET = "shapes-vit"
STEPS = 600  # as chapter 8's patch-size runs: three seeds of both arms fit about five CPU-minutes on one thread
ARMS = ("trained", "frozen")  # the patch embedding learns, or stays at its random start


def train_arm(arm: str, seed: int, steps: int, splits: tuple) -> dict:
    """One run of the preset for ``steps`` steps with its patch embedding ``arm`` ("trained" or "frozen").

    Returns the test accuracy and loss, how far the patch embedding's weight moved (its change's norm over its
    initial norm: exactly 0 when frozen) and the CPU seconds of the training loop.
    """
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
    model_cfg, train_cfg = PRESETS[PRESET]
    train_cfg = dataclasses.replace(train_cfg, steps=steps, warmup_steps=min(train_cfg.warmup_steps, steps // 2),
                                    eval_every=steps, seed=seed)
    train_set, val_set, test_set = splits
    torch.manual_seed(seed)  # the same initial weights in both arms
    model = VisionTransformer(model_cfg)
    start_weight = model.patch_embed.proj.weight.detach().clone()  # (D, C, P, P)
    if arm == "frozen":
        model.patch_embed.requires_grad_(False)  # left out of the optimiser: no update, no weight decay
    cpu = time.process_time()
    train(model, train_set, val_set, train_cfg, progress=False)
    cpu = time.process_time() - cpu
    test = evaluate(model, test_set.images, test_set.labels)
    moved = ((model.patch_embed.proj.weight.detach() - start_weight).norm() / start_weight.norm()).item()
    return {"arm": arm, "seed": seed, "steps": steps, "test_accuracy": test["accuracy"], "test_loss": test["loss"],
            "embedding_moved": round(moved, 4), "cpu_seconds": round(cpu, 1)}


def run(seeds: Sequence[int], steps: int = STEPS, train_size: int | None = None) -> dict:
    """Both arms for every seed; the runs pair by seed."""
    if len(seeds) < 2 or len(set(seeds)) != len(seeds):
        raise ValueError(f"paired differences need at least 2 different seeds, got {list(seeds)}")
    model_cfg, train_cfg = PRESETS[PRESET]
    train_size = train_cfg.train_size if train_size is None else train_size
    start, cpu_start = time.perf_counter(), time.process_time()
    runs = []
    for seed in seeds:
        splits = shapes_splits(dataclasses.replace(train_cfg, train_size=train_size, seed=seed), model_cfg.image_size[0])
        for arm in ARMS:
            row = train_arm(arm, seed, steps, splits)
            print(f"seed {seed}, patch embedding {arm}: test accuracy {100 * row['test_accuracy']:.1f}% "
                  f"in {row['cpu_seconds']:.0f} CPU s", flush=True)
            runs.append(row)
    return {"preset": PRESET, "patch_size": model_cfg.patch_size, "embed_dim": model_cfg.embed_dim, "steps": steps,
            "train_size": train_size, "seeds": list(seeds), "arms": list(ARMS), "runs": runs,
            "torch": torch.__version__, "threads": torch.get_num_threads(),
            "seconds": round(time.perf_counter() - start, 1), "cpu_seconds": round(time.process_time() - cpu_start, 1)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--train-size", type=int, help="training images (default: the preset's)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    result = run(args.seeds, steps=args.steps, train_size=args.train_size)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{result['seconds']:.0f} s in all ({result['cpu_seconds']:.0f} CPU s) → {args.out}")


if __name__ == "__main__":
    main()
