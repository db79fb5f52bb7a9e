"""Chapter 16's experiment: MAE pre-training on unlabelled shapes images, then a linear probe and a short fine-tune.

Per seed, on the shapes task of :mod:`vit_edu.data` (32×32 images, patches of 8: 16 patch tokens):

1. pre-train a tiny MAE (:mod:`vit_edu.variants.mae`; encoder D = 64, 4 blocks; decoder D = 64, 2 blocks) for
   ``--pretrain-steps`` steps on the 20,000 training images WITHOUT their labels, 75% of the patches masked;
2. linear probe (线性探针): freeze an encoder, average its final patch tokens, standardise the features, and
   train only a linear classifier on ``--labelled`` labelled images; test accuracy on the 1000 test images.
   Done for the pre-trained encoder and for the same encoder at its random initialisation (the same weights the
   pre-training started from);
3. fine-tune (微调) the whole encoder with a new zero head on the same labelled images, ``--finetune-steps``
   steps with :func:`vit_edu.training.train`, from the pre-trained weights and from random init (that is,
   supervised training from scratch) with the same recipe and steps; and, as a reference, supervised training
   from scratch with the same steps on all 20,000 labelled images. Test and training accuracy are recorded.

The fine-tune length is chosen so that the reference reaches its ceiling while the 1,000-label arm does not, so
that pre-training has a gap it could close. Measured on seed 0 while choosing it: at 400 steps every arm stopped
near 75%; at 1000 steps (chapter 9's preset length) the reference reached 98.5% and the 1,000-label arm 88.9%
(with 100% training accuracy); at 2000 steps the reference reached 99.6%, its ceiling, so 2000 it is.

Shrunk to fit minutes, not hours, on ONE thread for three seeds (the chapter says how many; the JSON records both the
wall-clock seconds and the process's CPU seconds, which on a shared machine are the ones to compare): a tiny encoder, 1200
pre-training steps of 64 images (about 4 passes over the images; the paper trains for 800–1600 epochs on
ImageNet), probes of 300 steps and fine-tunes of 2000. The pre-trained MAE of the first seed is saved (weights
in half precision) for the chapter's reconstructions and widget.

    python -m vit_edu.variants.mae_pretrain --seeds 0 1 2 --out vit_edu/checkpoints/mae_probe.json \
        --checkpoint vit_edu/checkpoints/shapes_mae.pt
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from vit_edu._checks import check_positive_int
from vit_edu.data import CLASS_NAMES, ImageSplit, ShapesDataset
from vit_edu.model import VisionTransformer
from vit_edu.training import PRESETS, TrainConfig, evaluate, make_optimizer, train
from vit_edu.variants.mae import MAEConfig, MaskedAutoencoder, save_mae

# The shapes preset's input standardisation and patches, narrowed to D = 64 so three seeds fit the budget; fixed
# sin-cos position embeddings, as the MAE paper uses.
ENCODER = dataclasses.replace(PRESETS["shapes-vit"][0], embed_dim=64, mlp_dim=128, depth=4, num_heads=4,
                              pos_embed="sincos")
MAE = MAEConfig(ENCODER, mask_ratio=0.75, decoder_dim=64, decoder_depth=2, decoder_heads=4, decoder_mlp_dim=128)
UNLABELLED, LABELLED = 20000, 1000


@dataclasses.dataclass(frozen=True)
class Budget:
    """Steps and batch sizes of each stage (the same for every seed and every arm that shares a stage)."""

    pretrain_steps: int = 1200
    pretrain_batch: int = 64
    pretrain_lr: float = 1.5e-3
    probe_steps: int = 300
    finetune_steps: int = 2000
    finetune_batch: int = 32
    finetune_lr: float = 1e-3
    labelled: int = LABELLED

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if f.type == "int":
                check_positive_int(f.name, getattr(self, f.name))
        if self.labelled > UNLABELLED:
            raise ValueError(f"labelled {self.labelled} exceeds the {UNLABELLED} training images")


def pretrain(model: MaskedAutoencoder, images: torch.Tensor, steps: int, batch_size: int, lr: float,
             seed: int, log_every: int = 100) -> list[dict]:
    """MAE pre-training in place on unlabelled ``(n, C, H, W)`` images: AdamW, warm-up, cosine; returns the loss curve."""
    check_positive_int("steps", steps)
    cfg = TrainConfig(steps=steps, batch_size=batch_size, lr=lr, weight_decay=0.05,
                      warmup_steps=min(100, steps // 10), seed=seed)
    optimizer, scheduler = make_optimizer(model, cfg)
    order = torch.Generator().manual_seed(seed)
    masks = torch.Generator().manual_seed(seed + 10_000)  # the masks' own stream
    history, running = [], 0.0
    model.train()
    start = time.perf_counter()
    for step in range(1, steps + 1):
        index = torch.randint(0, len(images), (batch_size,), generator=order)
        loss = model(images[index], generator=masks).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        running += loss.item()
        if step % log_every == 0 or step == steps:
            history.append({"step": step, "loss": running / (step - (history[-1]["step"] if history else 0)),
                            "seconds": round(time.perf_counter() - start, 2)})
            running = 0.0
    model.eval()
    return history


@torch.no_grad()
def masked_loss(model: MaskedAutoencoder, images: torch.Tensor, seed: int = 0) -> float:
    """The MAE loss on held-out images with fixed masks (a generator seeded with ``seed``)."""
    model.eval()
    return float(model(images, generator=torch.Generator().manual_seed(seed)).loss)


@torch.no_grad()
def pooled_features(encoder: VisionTransformer, images: torch.Tensor, batch_size: int = 500) -> torch.Tensor:
    """``(n, D)``: the mean of the encoder's final (normalised) patch tokens, with the encoder frozen in eval mode."""
    encoder.eval()
    prefix = encoder.config.num_prefix_tokens
    return torch.cat([encoder.forward_features(images[i:i + batch_size])[:, prefix:].mean(dim=1)
                      for i in range(0, len(images), batch_size)])


def linear_probe(train_x: torch.Tensor, train_y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor,
                 num_classes: int, steps: int = 300, lr: float = 0.05, seed: int = 0) -> float:
    """Test accuracy of a linear classifier trained (full batch, AdamW) on frozen features ``(n, D)``.

    Features are standardised with the training features' mean and standard deviation (the paper puts a
    BatchNorm without affine parameters before its probe for the same reason: features of different encoders
    live on different scales).
    """
    if train_x.ndim != 2 or test_x.ndim != 2 or train_x.shape[1] != test_x.shape[1]:
        raise ValueError(f"features must be (n, D) with the same D, got {tuple(train_x.shape)} and {tuple(test_x.shape)}")
    mean, std = train_x.mean(0), train_x.std(0) + 1e-6
    xs, ts = (train_x - mean) / std, (test_x - mean) / std
    torch.manual_seed(seed)
    head = nn.Linear(train_x.shape[1], num_classes)
    optimizer = torch.optim.AdamW(head.parameters(), lr=lr, weight_decay=1e-4)
    for _ in range(steps):
        loss = F.cross_entropy(head(xs), train_y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        return float((head(ts).argmax(1) == test_y).float().mean())


def fine_tune(encoder: VisionTransformer, train_set: ImageSplit, val_set: ShapesDataset, test_set: ShapesDataset,
              budget: Budget, seed: int) -> dict:
    """Train every weight with a fresh zero head for ``budget.finetune_steps`` steps; test and training accuracy."""
    with torch.no_grad():
        nn.init.zeros_(encoder.head.weight)
        nn.init.zeros_(encoder.head.bias)
    cfg = TrainConfig(steps=budget.finetune_steps, batch_size=budget.finetune_batch, lr=budget.finetune_lr,
                      weight_decay=0.05, warmup_steps=min(50, budget.finetune_steps // 10), label_smoothing=0.0,
                      train_size=len(train_set), seed=seed, eval_every=budget.finetune_steps)
    history = train(encoder, train_set, val_set, cfg, progress=False)
    test = evaluate(encoder, test_set.images, test_set.labels)
    seen = evaluate(encoder, train_set.images, train_set.labels)  # the images it trained on: how well it fits them
    return {"test_accuracy": test["accuracy"], "train_accuracy": seen["accuracy"], "seconds": history[-1]["seconds"]}


def run_seed(seed: int, budget: Budget, checkpoint: Path | None = None) -> dict:
    """One seed: pre-train, probe both encoders, fine-tune both, and the all-labels reference."""
    train_all = ShapesDataset("train", size=UNLABELLED, seed=seed)
    val_set, test_set = ShapesDataset("val", seed=seed), ShapesDataset("test", seed=seed)
    labelled = ImageSplit(train_all.images[:budget.labelled], train_all.labels[:budget.labelled], CLASS_NAMES)
    torch.manual_seed(seed)
    mae = MaskedAutoencoder(MAE)
    torch.manual_seed(seed)
    scratch = VisionTransformer(ENCODER)  # the same initial weights as mae.encoder
    assert all(torch.equal(a, b) for a, b in zip(scratch.state_dict().values(), mae.encoder.state_dict().values()))
    before = masked_loss(mae, val_set.images)
    curve = pretrain(mae, train_all.images, budget.pretrain_steps, budget.pretrain_batch, budget.pretrain_lr, seed)
    after = masked_loss(mae, val_set.images)
    if checkpoint is not None:
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        save_mae(checkpoint, mae, {"seed": seed, "val_masked_loss_before": before, "val_masked_loss_after": after,
                                   "pretrain_steps": budget.pretrain_steps})
    probe = {}
    for name, encoder in (("random init", scratch), ("MAE", mae.encoder)):
        probe[name] = linear_probe(pooled_features(encoder, labelled.images), labelled.labels,
                                   pooled_features(encoder, test_set.images), test_set.labels,
                                   len(CLASS_NAMES), budget.probe_steps, seed=seed)
    tuned = {"random init": fine_tune(scratch, labelled, val_set, test_set, budget, seed),
             "MAE": fine_tune(mae.encoder, labelled, val_set, test_set, budget, seed)}
    torch.manual_seed(seed)
    everything = ImageSplit(train_all.images, train_all.labels, CLASS_NAMES)
    reference = fine_tune(VisionTransformer(ENCODER), everything, val_set, test_set, budget, seed)
    row = {"seed": seed, "val_masked_loss_before": before, "val_masked_loss_after": after,
           "pretrain_seconds": curve[-1]["seconds"], "pretrain_curve": curve, "probe": probe, "finetune": tuned,
           "supervised_all_labels": reference}
    print(f"seed {seed}: masked loss {before:.3f} -> {after:.3f} in {curve[-1]['seconds']:.0f} s; probe "
          + ", ".join(f"{k} {100 * v:.1f}%" for k, v in probe.items()) + "; fine-tune "
          + ", ".join(f"{k} {100 * v['test_accuracy']:.1f}%" for k, v in tuned.items())
          + f"; all labels {100 * reference['test_accuracy']:.1f}%", flush=True)
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--checkpoint", type=Path, help="save the first seed's pre-trained MAE here")
    parser.add_argument("--pretrain-steps", type=int, default=Budget.pretrain_steps)
    parser.add_argument("--finetune-steps", type=int, default=Budget.finetune_steps)
    parser.add_argument("--labelled", type=int, default=LABELLED)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    budget = Budget(pretrain_steps=args.pretrain_steps, finetune_steps=args.finetune_steps, labelled=args.labelled)
    start, cpu = time.perf_counter(), time.process_time()
    runs = [run_seed(seed, budget, args.checkpoint if i == 0 else None) for i, seed in enumerate(args.seeds)]
    result = {"budget": dataclasses.asdict(budget), "mae_config": MAE.to_dict(), "unlabelled": UNLABELLED,
              "test_images": len(ShapesDataset("test", seed=0)), "threads": torch.get_num_threads(),
              "torch": torch.__version__, "total_seconds": round(time.perf_counter() - start, 1),
              "cpu_seconds": round(time.process_time() - cpu, 1), "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"→ {args.out} in {result['total_seconds']:.0f} s ({result['cpu_seconds']:.0f} s of CPU time)")


if __name__ == "__main__":
    main()
