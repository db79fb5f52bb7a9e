"""Four ways to initialise the same ViT, and the chapter-13 bench that compares them.

* ``"book"``: what :class:`~vit_edu.VisionTransformer` does: the official code's choices for the CLS token (0),
  the position table (N(0, 0.02²)) and the head (0); torchvision's for attention (one fused Xavier-uniform QKV
  matrix, PyTorch's default for the output projection), the MLP (Xavier-uniform) and the patch projection;
* ``"deit"``: DeiT's code, and timm's ViT up to version 0.5.4: every ``nn.Linear`` weight, the head included, the
  position table and the CLS token drawn with ``trunc_normal_(std=0.02)``, biases 0; LayerNorm 1 and 0; the patch
  convolution keeps PyTorch's default. ``trunc_normal_`` keeps its default cut at ±2 in absolute value, 100σ, so
  the draw is a normal with std 0.02 in practice. timm since 0.6 does the same except for the CLS token, which it
  draws from N(0, (10⁻⁶)²);
* ``"pytorch"``: every layer's own ``reset_parameters()``, PyTorch's default (uniform weights scaled by
  1/√fan_in, so the head is random too); CLS and position table as in the book, since PyTorch has no default
  for a bare parameter;
* ``"zero-pos"``: the book's scheme with an all-zero position table.

``python -m vit_edu.training.init_schemes --seeds 0 1 2 3 4 --out vit_edu/checkpoints/init_schemes.json`` trains the
bench once per scheme and seed and stores the first loss, the gradient norms of the first batch and the test
accuracy.
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

from vit_edu.config import ViTConfig
from vit_edu.data import CLASS_NAMES, ShapesDataset
from vit_edu.model import VisionTransformer
from vit_edu.training.config import TrainConfig
from vit_edu.training.debug import grad_norms
from vit_edu.training.loop import evaluate, train

SCHEMES = ("book", "deit", "pytorch", "zero-pos")
STD = 0.02  # the position table's std in the book's scheme, and every weight's in DeiT's

# Chapter 13's test bench: the tiny ViT and its training budget (the chapter checks that its own cell agrees).
BENCH_MODEL = ViTConfig(image_size=32, patch_size=8, num_classes=len(CLASS_NAMES), embed_dim=64, depth=2,
                        num_heads=4, mlp_dim=128, input_norm=(0.5, 0.25))
BENCH_TRAIN = TrainConfig(steps=150, batch_size=32, lr=1e-3, warmup_steps=15, label_smoothing=0.0, eval_every=30)


def _trunc_normal_(tensor: torch.Tensor) -> None:
    # DeiT's and timm's call: trunc_normal_(std=.02) with the default cut at a=-2, b=2 (absolute, i.e. ±100σ).
    nn.init.trunc_normal_(tensor, std=STD)


@torch.no_grad()
def reinit(model: VisionTransformer, scheme: str) -> VisionTransformer:
    """Overwrite every parameter of ``model`` in place with a fresh draw of ``scheme`` (one of :data:`SCHEMES`).

    Draws from the global RNG, so ``torch.manual_seed`` before the call fixes the result. Returns ``model``.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown initialisation scheme {scheme!r}; choose one of {SCHEMES}")
    if not isinstance(model, VisionTransformer):
        raise ValueError(f"reinit needs a vit_edu VisionTransformer, got {type(model).__name__}")
    learned = model.config.pos_embed == "learned"
    if scheme == "zero-pos" and not learned:
        raise ValueError(f"scheme 'zero-pos' needs a learned position table, the model has pos_embed="
                         f"{model.config.pos_embed!r}")
    if scheme in ("book", "zero-pos"):
        # The book's scheme is, by definition, what the constructor does: draw a fresh model and copy it.
        model.load_state_dict(VisionTransformer(model.config).state_dict())
        if scheme == "zero-pos":
            model.pos_embed.embedding.zero_()
    elif scheme == "pytorch":
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Conv2d, nn.LayerNorm)):
                module.reset_parameters()
        if model.cls_token is not None:
            model.cls_token.zero_()
        if learned:
            model.pos_embed.embedding.normal_(std=STD)
    else:  # deit
        for module in model.modules():
            if isinstance(module, nn.Linear):
                _trunc_normal_(module.weight)
                if module.bias is not None:
                    module.bias.zero_()
            elif isinstance(module, (nn.Conv2d, nn.LayerNorm)):
                module.reset_parameters()
        if model.cls_token is not None:
            _trunc_normal_(model.cls_token)
        if learned:
            _trunc_normal_(model.pos_embed.embedding)
    return model


def run_one(scheme: str, seed: int, sets: tuple[ShapesDataset, ShapesDataset, ShapesDataset],
            steps: int) -> dict:
    """Initialise the bench model with ``scheme`` (seed ``seed``), measure the first batch, train, test."""
    train_set, val_set, test_set = sets
    cfg = dataclasses.replace(BENCH_TRAIN, steps=steps, eval_every=steps, seed=seed)
    torch.manual_seed(seed)
    model = reinit(VisionTransformer(BENCH_MODEL), scheme)
    first = torch.randperm(len(train_set), generator=torch.Generator().manual_seed(seed))[: cfg.batch_size]
    model.train()
    loss = F.cross_entropy(model(train_set.images[first]), train_set.labels[first])
    model.zero_grad(set_to_none=True)
    loss.backward()  # the gradient of the first training batch, before any update
    norms = grad_norms(model)
    model.zero_grad(set_to_none=True)
    start = time.perf_counter()
    train(model, train_set, val_set, cfg, progress=False)
    seconds = time.perf_counter() - start
    test = evaluate(model, test_set.images, test_set.labels)
    return {"seed": seed, "first_loss": loss.item(), "grad_norms": norms,
            "test_accuracy": test["accuracy"], "seconds": round(seconds, 1)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=300, help="training steps per run")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    sets = (ShapesDataset("train", size=4800, seed=0), ShapesDataset("val", size=400, seed=0),
            ShapesDataset("test", size=1000, seed=0))
    results: dict[str, list[dict]] = {scheme: [] for scheme in SCHEMES}
    start = time.perf_counter()
    for seed in args.seeds:
        for scheme in SCHEMES:
            row = run_one(scheme, seed, sets, args.steps)
            results[scheme].append(row)
            print(f"{scheme:8s} seed {seed}: first loss {row['first_loss']:.3f}, "
                  f"test accuracy {100 * row['test_accuracy']:.1f}% in {row['seconds']:.0f} s", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "model": dataclasses.asdict(BENCH_MODEL),
        "train": dataclasses.asdict(dataclasses.replace(BENCH_TRAIN, steps=args.steps, eval_every=args.steps)),
        "train_size": len(sets[0]), "test_size": len(sets[2]), "seeds": args.seeds,
        "torch": torch.__version__, "threads": torch.get_num_threads(),
        "seconds": round(time.perf_counter() - start, 1), "results": results}, indent=1))
    print(f"→ {args.out}")


if __name__ == "__main__":
    main()
