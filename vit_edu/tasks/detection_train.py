"""Chapter 19's experiments: DETR with Hungarian matching against a fixed assignment, and DETR against YOLOS.

Per seed, on the scenes of :mod:`vit_edu.data.scenes` (32×32 pictures of 0–4 shapes; 4000 training scenes, the 500
test scenes scored), each arm trains from scratch with the same steps, batches, optimiser and initial backbone:

* ``detr``: :class:`~vit_edu.tasks.detection.DETR`, Hungarian matching (the reference arm);
* ``fixed``: the same DETR, but query j is always paired with the j-th listed object (the control for matching);
* ``yolos``: :class:`~vit_edu.tasks.detection.YOLOS` with as many parameters as the DETR (see :data:`YOLOS_DEPTH`);
* ``yolos-2``, ``yolos-3``: YOLOS with 2 and 3 blocks, whose multiply-adds per image bracket the DETR's (equal
  compute per image cannot be met exactly with whole blocks).

Each run records COCO mAP and AP@0.5 (torchmetrics, pycocotools backend), the duplicates among confident
predictions, the parameters, the multiply-adds per image (torch's flop counter / 2) and the CPU seconds of training.
One thread; the first seed's model of each arm may be saved in half precision for the chapter's figures and widget.

    python -m vit_edu.tasks.detection_train --arms detr fixed --seeds 0 1 2 \
        --out vit_edu/checkpoints/detection_matching.json --checkpoint-dir vit_edu/checkpoints
    python -m vit_edu.tasks.detection_train --arms yolos --seeds 0 1 2 \
        --out vit_edu/checkpoints/detection_yolos.json --checkpoint-dir vit_edu/checkpoints
    python -m vit_edu.tasks.detection_train --arms yolos-2 yolos-3 --seeds 0 1 2 \
        --out vit_edu/checkpoints/detection_yolos_macs.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import time
from pathlib import Path

import torch
from torch import nn

from vit_edu.config import ViTConfig
from vit_edu.data.scenes import scene_split
from vit_edu.tasks.detection import (
    DETR,
    YOLOS,
    average_precision,
    count_duplicates,
    predict,
    set_loss,
    to_cxcywh,
)
from vit_edu.training import TrainConfig, make_optimizer
from vit_edu.variants.mae import count_flops

# The shapes preset's input standardisation and 8-pixel patches (a 4×4 grid of 16 tokens), narrowed to fit the budget.
BACKBONE = ViTConfig(image_size=32, patch_size=8, embed_dim=64, depth=2, num_heads=4, mlp_dim=128, pool="mean",
                     input_norm=(0.5, 0.25))
NUM_QUERIES = 8
DECODER_DEPTH = 2
YOLOS_DEPTH = 5  # encoder blocks of the YOLOS arm: as many parameters as the DETR arm (within 1%)
YOLOS_DEPTHS = {"yolos": YOLOS_DEPTH, "yolos-2": 2, "yolos-3": 3}  # each YOLOS arm's blocks
ARMS = ("detr", "fixed", *YOLOS_DEPTHS)


@dataclasses.dataclass(frozen=True)
class Budget:
    """Steps, batch and optimiser shared by every arm and seed."""

    steps: int = 2000
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 1e-4
    warmup_steps: int = 100
    grad_clip: float = 1.0
    train_size: int = 4000


def build(arm: str, seed: int) -> nn.Module:
    """The arm's model, initialised from ``seed``."""
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
    torch.manual_seed(seed)
    if arm in YOLOS_DEPTHS:
        return YOLOS(dataclasses.replace(BACKBONE, depth=YOLOS_DEPTHS[arm]), NUM_QUERIES)
    return DETR(BACKBONE, NUM_QUERIES, DECODER_DEPTH)


def load_detector(arm: str, path: Path) -> nn.Module:
    """The arm's model with the half-precision weights saved at ``path``, back in float32, in eval mode."""
    model = build(arm, 0)
    model.load_state_dict({k: v.float() for k, v in torch.load(path, weights_only=True).items()})
    return model.eval()


def macs_per_image(model: nn.Module, image_size: int = 32) -> int:
    """Multiply-adds of one forward pass on one image (the explicit attention path, which the flop counter sees)."""
    images = torch.rand(1, 3, image_size, image_size)
    was = model.training
    model.eval()
    flops = count_flops(lambda: model(images, need_weights=True))
    model.train(was)
    return flops // 2


def train_detector(model: nn.Module, scenes, budget: Budget, matcher: str, seed: int) -> list[dict]:
    """Train in place with AdamW, warm-up and cosine decay; return the mean loss every 250 steps."""
    cfg = TrainConfig(steps=budget.steps, batch_size=budget.batch_size, lr=budget.lr,
                      weight_decay=budget.weight_decay, warmup_steps=budget.warmup_steps, seed=seed)
    optimizer, scheduler = make_optimizer(model, cfg)
    size = scenes.images.shape[-1]
    labels = scenes.labels
    boxes = [to_cxcywh(b, size) for b in scenes.boxes]
    order = torch.Generator().manual_seed(seed)
    perm, cursor, curve, running = torch.randperm(len(scenes), generator=order), 0, [], 0.0
    model.train()
    for step in range(1, budget.steps + 1):
        if cursor + budget.batch_size > len(perm):
            perm, cursor = torch.randperm(len(scenes), generator=order), 0
        index = perm[cursor : cursor + budget.batch_size].tolist()
        cursor += budget.batch_size
        loss = set_loss(model(scenes.images[index]), [labels[i] for i in index], [boxes[i] for i in index], matcher)
        optimizer.zero_grad(set_to_none=True)
        loss["total"].backward()
        nn.utils.clip_grad_norm_(model.parameters(), budget.grad_clip)
        optimizer.step()
        scheduler.step()
        running += loss["total"].item()
        if step % 250 == 0:
            curve.append({"step": step, "loss": round(running / 250, 4)})
            running = 0.0
    model.eval()
    return curve


def run(arm: str, seed: int, budget: Budget, checkpoint: Path | None = None) -> dict:
    """One arm, one seed: train, then score on the test scenes."""
    train_set = scene_split("train", size=budget.train_size, seed=seed)
    test_set = scene_split("test", seed=seed)
    model = build(arm, seed)
    start = time.process_time()
    curve = train_detector(model, train_set, budget, "fixed" if arm == "fixed" else "hungarian", seed)
    seconds = time.process_time() - start
    pred = predict(model, test_set.images)
    targets = test_set.targets()
    row = {"arm": arm, "seed": seed, "cpu_seconds": round(seconds, 1), "curve": curve,
           **average_precision(pred, targets), **count_duplicates(pred, targets)}
    if checkpoint is not None:
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        torch.save({k: v.half() for k, v in model.state_dict().items()}, checkpoint)
    print(f"{arm} seed {seed}: mAP {100 * row['map']:.1f}, AP50 {100 * row['map_50']:.1f}, found {row['found']}/"
          f"{row['objects']}, duplicates {row['duplicates']}, {seconds:.0f} s", flush=True)
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=["detr", "fixed"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--checkpoint-dir", type=Path,
                        help="save each arm's first-seed model as detection_<arm>.pt here")
    parser.add_argument("--steps", type=int, default=Budget.steps)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    budget = Budget(steps=args.steps)
    start, cpu = time.perf_counter(), time.process_time()
    runs = []
    for arm in args.arms:
        for i, seed in enumerate(args.seeds):
            path = args.checkpoint_dir / f"detection_{arm}.pt" if args.checkpoint_dir and i == 0 else None
            runs.append(run(arm, seed, budget, path))
    models = {arm: build(arm, 0) for arm in args.arms}
    result = {"budget": dataclasses.asdict(budget), "backbone": BACKBONE.to_dict(), "num_queries": NUM_QUERIES,
              "decoder_depth": DECODER_DEPTH, "yolos_depth": YOLOS_DEPTH,
              "yolos_depths": {a: YOLOS_DEPTHS[a] for a in args.arms if a in YOLOS_DEPTHS},
              "params": {a: sum(p.numel() for p in m.parameters()) for a, m in models.items()},
              "macs_per_image": {a: macs_per_image(m) for a, m in models.items()},
              "threads": torch.get_num_threads(), "torch": torch.__version__,
              "cpu": platform.processor() or platform.machine(),
              "total_seconds": round(time.perf_counter() - start, 1),
              "cpu_seconds": round(time.process_time() - cpu, 1), "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"→ {args.out} in {result['total_seconds']:.0f} s ({result['cpu_seconds']:.0f} s of CPU time)")


if __name__ == "__main__":
    main()
