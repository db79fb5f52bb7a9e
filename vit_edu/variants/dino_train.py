"""Chapter 16's DINO experiment: self-distillation on unlabelled shapes images, then where three encoders look.

Per seed, on the shapes task of :mod:`vit_edu.data` (32×32 images, patches of 8):

1. DINO (:mod:`vit_edu.variants.dino`) with the "shapes-vit" encoder (chapter 9's ViT: D = 128, 4 blocks of 4
   heads) for ``--steps`` steps on the 20,000 training images WITHOUT labels; the teacher is kept. Collapse is
   checked on held-out images: the teacher's mean entropy, the entropy of its batch-averaged distribution and the
   share of images whose argmax is the single most common prototype;
2. the supervised ViT of the same size (the "shapes-vit" preset; seed 0 reuses vit_edu/checkpoints/shapes_vit.pt,
   trained with that recipe) and the MAE encoder of chapter 16 (seed 0 reuses vit_edu/checkpoints/shapes_mae.pt;
   other seeds are pre-trained with :func:`vit_edu.variants.mae_pretrain.pretrain` at its shipped budget, the
   same initial weights and data as ``mae_pretrain`` would use). The MAE encoder is narrower (D = 64);
3. on the 1000 held-out test images with their object masks: the last layer's CLS attention, averaged over the
   heads, scored by chapter 10's :func:`localisation_score` (attention mass on the object / the object's share of
   the image, per image, then averaged; 1 = a map that ignores the object), also per head; and a k-NN
   classifier (k = 20, cosine similarity, votes weighted by exp(sim / 0.07) as in the DINO paper) on the final CLS
   token, with the 20,000 training images and their labels as the memory bank.

    python -m vit_edu.variants.dino_train --seeds 0 1 2 --out vit_edu/checkpoints/dino_shapes.json \
        --checkpoint vit_edu/checkpoints/dino_shapes.pt
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from vit_edu._checks import check_positive_int
from vit_edu.data import CLASS_NAMES, ShapesDataset
from vit_edu.explain.attention_maps import cls_attention
from vit_edu.explain.localisation import localisation_score, object_fraction
from vit_edu.model import VisionTransformer
from vit_edu.training import PRESETS, TrainConfig, make_optimizer
from vit_edu.training.checkpoint import load_checkpoint
from vit_edu.training.presets import fit_preset
from vit_edu.variants.dino import DINO, DINOConfig, collapse_stats, multi_crop, save_teacher
from vit_edu.variants.mae import MaskedAutoencoder, load_mae
from vit_edu.variants.mae_pretrain import MAE, UNLABELLED
from vit_edu.variants.mae_pretrain import Budget as MAEBudget
from vit_edu.variants.mae_pretrain import pretrain as mae_pretrain

ENCODER = PRESETS["shapes-vit"][0]  # the supervised ViT's size, so the encoders compare
# The paper's teacher momentum starts at 0.996 for hundreds of thousands of steps; over a few hundred steps the
# teacher would then barely leave its random start (Σ(1 - m) ≈ 1.2 over 600 steps), so the toy starts at 0.99.
# Colour jitter is off: in 100-step trial runs with it on (channel shuffle, p = 0.8), the teacher's targets went flat
# (entropy near log K, most images on one prototype) at learning rates 1e-3 and 3e-4. Without it the run trains.
DINO_CONFIG = DINOConfig(ENCODER, teacher_momentum=0.99, jitter_prob=0.0, grayscale_prob=0.0)
CHECKPOINTS = Path(__file__).resolve().parents[1] / "checkpoints"


@dataclasses.dataclass(frozen=True)
class Budget:
    """DINO's optimisation (AdamW, warm-up then cosine, gradient clipping at 3 as in the paper) and the k-NN."""

    steps: int = 600
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.04
    warmup_steps: int = 60
    grad_clip: float = 3.0
    knn_k: int = 20
    knn_temp: float = 0.07

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "knn_k"):
            check_positive_int(name, getattr(self, name))
        if not 0 <= self.warmup_steps < self.steps:
            raise ValueError(f"warmup_steps must be in [0, steps={self.steps}), got {self.warmup_steps}")


def train_dino(images: torch.Tensor, val_images: torch.Tensor, budget: Budget, seed: int,
               log_every: int = 50) -> tuple[DINO, list[dict]]:
    """DINO on unlabelled ``(n, C, H, W)`` images; the log holds the loss and collapse checks on ``val_images``."""
    torch.manual_seed(seed)
    model = DINO(DINO_CONFIG)
    cfg = TrainConfig(steps=budget.steps, batch_size=budget.batch_size, lr=budget.lr,
                      weight_decay=budget.weight_decay, warmup_steps=budget.warmup_steps, seed=seed)
    optimizer, scheduler = make_optimizer(model.student, cfg)
    order = torch.Generator().manual_seed(seed)
    crops = torch.Generator().manual_seed(seed + 10_000)  # the crops' own stream
    history, running, start = [], 0.0, time.perf_counter()
    model.train()
    for step in range(1, budget.steps + 1):
        index = torch.randint(0, len(images), (budget.batch_size,), generator=order)
        global_crops, local_crops = multi_crop(images[index], DINO_CONFIG, crops)  # (2, B, ...), (L, B, ...)
        out = model(global_crops, local_crops)
        optimizer.zero_grad(set_to_none=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.student.parameters(), budget.grad_clip)
        optimizer.step()
        scheduler.step()
        model.after_step(out.teacher_logits, step, budget.steps)
        running += out.loss.item()
        if step % log_every == 0 or step == budget.steps:
            row = {"step": step, "loss": running / (step - (history[-1]["step"] if history else 0)),
                   "seconds": round(time.perf_counter() - start, 1), **teacher_collapse(model, val_images)}
            history.append(row)
            running = 0.0
            print(f"  step {step}: loss {row['loss']:.3f}, teacher entropy {row['entropy']:.2f}, batch entropy "
                  f"{row['batch_entropy']:.2f} of {row['max_entropy']:.2f}, top share {row['top_share']:.2f}, "
                  f"{row['prototypes_used']} prototypes used, {row['seconds']:.0f} s", flush=True)
            model.train()
    model.eval()
    return model, history


@torch.no_grad()
def teacher_collapse(model: DINO, images: torch.Tensor) -> dict[str, float]:
    """:func:`collapse_stats` of the teacher on whole held-out images (no crops)."""
    model.teacher.eval()
    logits = model.teacher(images)[None]  # (1, B, K)
    return collapse_stats(logits, model.center, model.config.teacher_temp)


@torch.no_grad()
def cls_features(encoder: VisionTransformer, images: torch.Tensor, batch_size: int = 500) -> torch.Tensor:
    """``(n, D)``: the final (normalised) CLS token, encoder in eval mode."""
    encoder.eval()
    return torch.cat([encoder.forward_features(images[i:i + batch_size])[:, 0]
                      for i in range(0, len(images), batch_size)])


@torch.no_grad()
def knn_accuracy(train_x: torch.Tensor, train_y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor,
                 num_classes: int, k: int = 20, temperature: float = 0.07) -> float:
    """Weighted k-NN on cosine similarity (the DINO paper's evaluation): each of the k nearest training features
    votes for its label with weight ``exp(sim / temperature)``."""
    if train_x.ndim != 2 or test_x.ndim != 2 or train_x.shape[1] != test_x.shape[1]:
        raise ValueError(f"features must be (n, D) with the same D, got {tuple(train_x.shape)} and "
                         f"{tuple(test_x.shape)}")
    check_positive_int("k", k)
    if k > len(train_x):
        raise ValueError(f"k = {k} exceeds the {len(train_x)} training features")
    sims = F.normalize(test_x, dim=-1) @ F.normalize(train_x, dim=-1).T  # (n_test, n_train)
    top, index = sims.topk(k, dim=-1)  # (n_test, k)
    votes = torch.zeros(len(test_x), num_classes).scatter_add_(1, train_y[index], (top / temperature).exp())
    return float((votes.argmax(-1) == test_y).float().mean())


@torch.no_grad()
def last_cls_attention(encoder: VisionTransformer, images: torch.Tensor) -> torch.Tensor:
    """The last layer's CLS attention to each patch, per head: ``(B, C, H, W)`` -> ``(B, h, N)``."""
    encoder.eval()
    _, attentions = encoder(images, return_attention=True)
    return cls_attention(attentions[-1:], encoder.config.num_prefix_tokens)[0]  # (B, h, N)


@torch.no_grad()
def localisation(encoder: VisionTransformer, images: torch.Tensor, masks: torch.Tensor) -> dict:
    """Mean over images of mass / baseline for the head-averaged map, and for each head's own map."""
    weights = last_cls_attention(encoder, images)  # (B, h, N)
    fraction = object_fraction(masks, encoder.config.patch_size)  # (B, N)
    mass, base = localisation_score(weights.mean(1), fraction)
    per_head = []
    for h in range(weights.shape[1]):
        m, b = localisation_score(weights[:, h], fraction)
        per_head.append(float((m / b).mean()))
    return {"mean_heads": float((mass / base).mean()), "per_head": per_head}


def supervised_vit(seed: int) -> tuple[VisionTransformer, float]:
    """The "shapes-vit" preset for ``seed``: the shipped checkpoint for seed 0, else trained now; and seconds."""
    if seed == 0:
        model, data = load_checkpoint(CHECKPOINTS / "shapes_vit.pt")
        if TrainConfig(**data["train_config"]) != dataclasses.replace(PRESETS["shapes-vit"][1], seed=0) \
                or model.config != ENCODER:
            raise RuntimeError("vit_edu/checkpoints/shapes_vit.pt is not the shapes-vit preset with seed 0")
        return model, 0.0
    start = time.perf_counter()
    model, _, _, _ = fit_preset("shapes-vit", progress=False, seed=seed)
    return model.eval(), round(time.perf_counter() - start, 1)


def mae_encoder(seed: int, images: torch.Tensor) -> tuple[VisionTransformer, float]:
    """Chapter 16's MAE encoder for ``seed``: the shipped one for seed 0, else pre-trained now; and seconds."""
    if seed == 0:
        mae, _ = load_mae(CHECKPOINTS / "shapes_mae.pt")
        return mae.encoder.eval(), 0.0
    mb = MAEBudget()
    torch.manual_seed(seed)
    mae = MaskedAutoencoder(MAE)
    curve = mae_pretrain(mae, images, mb.pretrain_steps, mb.pretrain_batch, mb.pretrain_lr, seed)
    return mae.encoder.eval(), curve[-1]["seconds"]


def run_seed(seed: int, budget: Budget, checkpoint: Path | None = None) -> dict:
    """One seed: DINO, the supervised ViT and the MAE encoder; localisation and k-NN for each."""
    train_set = ShapesDataset("train", size=UNLABELLED, seed=seed)
    val_set, test_set = ShapesDataset("val", seed=seed), ShapesDataset("test", seed=seed)
    dino, history = train_dino(train_set.images, val_set.images[:500], budget, seed)
    if checkpoint is not None:
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        save_teacher(checkpoint, dino, {"seed": seed, "steps": budget.steps, "final": history[-1]})
    supervised, supervised_seconds = supervised_vit(seed)
    mae, mae_seconds = mae_encoder(seed, train_set.images)
    row = {"seed": seed, "dino_seconds": history[-1]["seconds"], "supervised_seconds": supervised_seconds,
           "mae_seconds": mae_seconds, "dino_history": history, "collapse": teacher_collapse(dino, test_set.images),
           "localisation": {}, "knn": {}}
    for name, encoder in (("DINO", dino.teacher.backbone), ("supervised", supervised), ("MAE", mae)):
        row["localisation"][name] = localisation(encoder, test_set.images, test_set.masks)
        row["knn"][name] = knn_accuracy(cls_features(encoder, train_set.images), train_set.labels,
                                        cls_features(encoder, test_set.images), test_set.labels, len(CLASS_NAMES),
                                        budget.knn_k, budget.knn_temp)
    scores = row["localisation"].items()
    print(f"seed {seed}: localisation " + ", ".join(f"{k} {v['mean_heads']:.2f}" for k, v in scores)
          + "; k-NN " + ", ".join(f"{k} {100 * v:.1f}%" for k, v in row["knn"].items())
          + f"; collapse check: entropy {row['collapse']['entropy']:.2f}, top share {row['collapse']['top_share']:.2f}",
          flush=True)
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--checkpoint", type=Path, help="save the first seed's DINO teacher here")
    parser.add_argument("--steps", type=int, default=Budget.steps)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    budget = Budget(steps=args.steps)
    start, cpu = time.perf_counter(), time.process_time()
    runs = [run_seed(seed, budget, args.checkpoint if i == 0 else None) for i, seed in enumerate(args.seeds)]
    result = {"budget": dataclasses.asdict(budget), "dino_config": DINO_CONFIG.to_dict(),
              "mae_budget": dataclasses.asdict(MAEBudget()), "unlabelled": UNLABELLED,
              "test_images": len(ShapesDataset("test", seed=0)),
              "localisation_metric": "last layer CLS attention, mean over heads (and per head); per image "
                                     "mass / baseline (localisation_score), averaged over the test images",
              "threads": torch.get_num_threads(), "torch": torch.__version__,
              "total_seconds": round(time.perf_counter() - start, 1),
              "cpu_seconds": round(time.process_time() - cpu, 1), "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"→ {args.out} in {result['total_seconds']:.0f} s ({result['cpu_seconds']:.0f} s of CPU time)")


if __name__ == "__main__":
    main()
