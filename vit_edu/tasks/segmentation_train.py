"""Chapter 18's experiment: SETR-style segmenters on the scenes, arm by arm, over seeds; per-seed mIoU to JSON.

Arms (each trained on the same scenes, in the same order, from the same initial draw for a seed):

* ``base``: patches of 8, the naive head, a learned position table, from scratch (the control of every comparison);
* ``pup``: the base with the progressive (PUP) head;
* ``P4``: patches of 4 (an 8×8 grid, 4× the tokens), the naive head;
* ``no position``: the base without a position table (a bag of patches to the encoder);
* ``from classifier``: the base whose encoder starts from the shipped classifier ``shapes_vit.pt``;
* ``P4 pup``: patches of 4 and the progressive head. One run costs as much as three of the base, so by default it is
  trained on the first seed only (for the widget); a second invocation adds the other seeds (below).

Each run records test mIoU over all pixels, near class boundaries (within 1 px) and inside regions, the per-class IoU
and its seconds. With ``--weights`` seed 0's models of the four patch-size × head arms are saved (fp16) for the widget.

    OMP_NUM_THREADS=1 python -m vit_edu.tasks.segmentation_train --seeds 0 1 2 \
        --out vit_edu/checkpoints/segmentation.json --weights vit_edu/checkpoints/segmentation.pt
    OMP_NUM_THREADS=1 python -m vit_edu.tasks.segmentation_train --seeds 1 2 --arms "P4 pup" --first-seed-only \
        --out vit_edu/checkpoints/segmentation_p4_pup.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from vit_edu.config import ViTConfig
from vit_edu.data.scenes import Scenes, scene_split
from vit_edu.tasks.segmentation import SegmentationViT, load_encoder, predict, scores
from vit_edu.training.checkpoint import CHECKPOINTS, load_checkpoint
from vit_edu.training.config import TrainConfig
from vit_edu.training.loop import make_optimizer
from vit_edu.training.presets import PRESETS

BACKBONE = PRESETS["shapes-vit"][0]  # 32 px, D 128, 4 blocks of 4 heads, MLP 256, input_norm: the classifier's shape
WIDGET_ARMS = ("base", "pup", "P4", "P4 pup")  # the patch-size × head arms whose seed-0 weights the widget shows
FIRST_SEED_ONLY = ("P4 pup",)  # by default trained on the first seed only (the widget's model), to fit 15 minutes


@dataclasses.dataclass(frozen=True)
class Arm:
    """One arm: patch size, head, position table, and whether the encoder starts from the shipped classifier."""

    patch_size: int = 8
    head: str = "naive"
    pos_embed: str = "learned"
    pretrained: bool = False

    def config(self) -> ViTConfig:
        """The classifier's encoder shape with this arm's patch size and position table."""
        return dataclasses.replace(BACKBONE, patch_size=self.patch_size, pos_embed=self.pos_embed)


ARMS: dict[str, Arm] = {
    "base": Arm(),
    "pup": Arm(head="pup"),
    "P4": Arm(patch_size=4),
    "P4 pup": Arm(patch_size=4, head="pup"),
    "no position": Arm(pos_embed="none"),
    "from classifier": Arm(pretrained=True),
}


@dataclasses.dataclass(frozen=True)
class Budget:
    """What every arm gets: steps of AdamW (warm-up then cosine) on batches from ``train_size`` scenes."""

    steps: int = 600
    batch_size: int = 32
    lr: float = 2e-3
    weight_decay: float = 0.05
    warmup_steps: int = 30
    train_size: int = 4000


def build(arm: Arm, seed: int) -> SegmentationViT:
    """The arm's model, its initial weights drawn from ``seed`` (the classifier's encoder copied in if pretrained)."""
    torch.manual_seed(seed)
    model = SegmentationViT(arm.config(), head=arm.head)
    if arm.pretrained:
        classifier, _ = load_checkpoint(CHECKPOINTS / "shapes_vit.pt")
        load_encoder(model, classifier)
    return model


def train(model: SegmentationViT, scenes: Scenes, budget: Budget, seed: int) -> float:
    """Per-pixel cross-entropy with AdamW, warm-up then cosine; returns the training seconds."""
    cfg = TrainConfig(steps=budget.steps, batch_size=budget.batch_size, lr=budget.lr,
                      weight_decay=budget.weight_decay, warmup_steps=budget.warmup_steps, seed=seed)
    optimizer, scheduler = make_optimizer(model, cfg)
    order = torch.Generator().manual_seed(seed)  # the same batches for every arm of a seed
    model.train()
    start = time.perf_counter()
    for _ in range(budget.steps):
        index = torch.randint(0, len(scenes), (budget.batch_size,), generator=order)
        logits = model(scenes.images[index])  # (B, K, H, W)
        loss = F.cross_entropy(logits, scenes.semantic[index])  # every pixel one classification
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
    return time.perf_counter() - start


def run(name: str, seed: int, budget: Budget, train_set: Scenes, test_set: Scenes) -> tuple[dict, SegmentationViT]:
    """Train one arm on one seed and score it on the test scenes."""
    model = build(ARMS[name], seed)
    seconds = train(model, train_set, budget, seed)
    row = {"arm": name, "seed": seed, "seconds": round(seconds, 1),
           **scores(predict(model, test_set.images), test_set.semantic)}
    print(f"{name:>16} seed {seed}: mIoU {row['miou']:.3f} (boundary {row['boundary_miou']:.3f}, "
          f"interior {row['interior_miou']:.3f}) in {seconds:.0f} s", flush=True)
    return row, model


def save_weights(path: Path, models: dict[str, SegmentationViT]) -> None:
    """The first seed's models in half precision with their arms, for the widget."""
    torch.save({name: {"arm": dataclasses.asdict(ARMS[name]),
                       "state_dict": {k: v.half() for k, v in m.state_dict().items()}}
                for name, m in models.items()}, path)


def load_models(path: Path = CHECKPOINTS / "segmentation.pt") -> dict[str, SegmentationViT]:
    """The shipped seed-0 models by arm name, in eval mode, float32 (torch's random state left as it was)."""
    data = torch.load(path, map_location="cpu", weights_only=True)
    models = {}
    with torch.random.fork_rng(devices=[]):
        for name, entry in data.items():
            arm = Arm(**entry["arm"])
            model = SegmentationViT(arm.config(), head=arm.head)
            model.load_state_dict({k: v.float() for k, v in entry["state_dict"].items()})
            models[name] = model.eval()
    return models


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--weights", type=Path, help="save the first seed's patch-size × head models here (fp16)")
    parser.add_argument("--steps", type=int, default=Budget.steps)
    parser.add_argument("--lr", type=float, default=Budget.lr)
    parser.add_argument("--batch-size", type=int, default=Budget.batch_size)
    parser.add_argument("--warmup-steps", type=int, default=Budget.warmup_steps)
    parser.add_argument("--first-seed-only", nargs="*", default=list(FIRST_SEED_ONLY), choices=list(ARMS),
                        help="arms to train on the first seed only (none: every seed)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    budget = Budget(steps=args.steps, lr=args.lr, batch_size=args.batch_size, warmup_steps=args.warmup_steps)
    train_set = scene_split("train", size=budget.train_size)
    test_set = scene_split("test")
    start, cpu = time.perf_counter(), time.process_time()
    runs, keep = [], {}
    for seed in args.seeds:
        for name in args.arms:
            if name in args.first_seed_only and seed != args.seeds[0]:
                continue
            row, model = run(name, seed, budget, train_set, test_set)
            runs.append(row)
            if seed == args.seeds[0] and name in WIDGET_ARMS:
                keep[name] = model
    if args.weights is not None:
        save_weights(args.weights, keep)
    result = {"budget": dataclasses.asdict(budget), "arms": {n: dataclasses.asdict(ARMS[n]) for n in args.arms},
              "backbone": BACKBONE.to_dict(), "boundary_width": 1, "test_scenes": len(test_set),
              "threads": torch.get_num_threads(), "torch": torch.__version__,
              "processor": platform.processor() or platform.machine(),
              "total_seconds": round(time.perf_counter() - start, 1),
              "cpu_seconds": round(time.process_time() - cpu, 1), "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"→ {args.out} in {result['total_seconds']:.0f} s ({result['cpu_seconds']:.0f} s of CPU time)")


if __name__ == "__main__":
    main()
