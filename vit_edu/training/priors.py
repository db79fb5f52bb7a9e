"""The CNN's built-in priors against what a trained ViT does, measured on the shapes task over seeds.

``python -m vit_edu.training.priors --seeds 0 1 2 --out vit_edu/checkpoints/vit_vs_cnn_priors.json`` takes, per
seed, the ``shapes-vit`` preset (seed 0: the shipped checkpoint; other seeds trained here, about a minute each)
and the parameter-matched CNN of chapter 9's bench (same data, recipe and seed; as many steps as the bench gave
it for that seed). On the seed's first test images it measures, for both models:

* the effective receptive field after each block / conv stage (share of pixels a central output depends on,
  and the radius that holds 90% of its input-gradient mass), from :mod:`vit_edu.explain.receptive_field`;
* how much one query's attention row changes from image to image (the CNN's kernel is the same for all);
* the equivariance of the features and the invariance of the prediction under shifts of 1 and 8 pixels,
  from :mod:`vit_edu.explain.shifts`.

Only the measurements are written (no weights). ``--cache DIR`` keeps the trained weights in ``DIR`` and reuses
them on a later run, so the measurements can be redone without training again.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import torch

from vit_edu.data import ShapesDataset
from vit_edu.explain.receptive_field import (attention_row_variation, cnn_stage_outputs, effective_receptive_field,
                                             input_gradient_maps, mean_total_variation, vit_block_outputs)
from vit_edu.explain.shifts import equivariance_error, shift_report, with_circular_padding
from vit_edu.model import VisionTransformer
from vit_edu.trace import count_parameters
from vit_edu.training.checkpoint import CHECKPOINTS, load_checkpoint
from vit_edu.training.cnn import SmallCNN, matching_cnn
from vit_edu.training.loop import evaluate, train
from vit_edu.training.presets import PRESETS, fit_preset, shapes_splits

PRESET = "shapes-vit"
SHIFTS = (1, 8)  # one pixel, and one patch of the preset (8 pixels)


def cnn_steps(seed: int) -> int:
    """The CNN's step count in chapter 9's bench for ``seed`` (the ViT's seconds at the CNN's speed), from its JSON."""
    runs = json.loads((CHECKPOINTS / "vit_vs_cnn.json").read_text())["runs"]
    steps = {r["seed"]: r["CNN"]["steps"] for r in runs}
    return steps.get(seed, round(sum(steps.values()) / len(steps)))


def train_vit(seed: int) -> VisionTransformer:
    """Seed 0 is the shipped ``shapes_vit.pt``; any other seed trains the preset from scratch."""
    if seed == 0:
        return load_checkpoint(CHECKPOINTS / "shapes_vit.pt")[0]
    return fit_preset(PRESET, seed=seed, progress=False)[0].eval()


def train_cnn(seed: int) -> SmallCNN:
    """The bench's CNN for ``seed``: parameter-matched to the preset ViT, same data and recipe, bench's steps."""
    model_cfg, train_cfg = PRESETS[PRESET]
    steps = cnn_steps(seed)
    cfg = dataclasses.replace(train_cfg, seed=seed, steps=steps, eval_every=steps)
    sets = shapes_splits(cfg, model_cfg.image_size[0])
    target = count_parameters(VisionTransformer(model_cfg))
    torch.manual_seed(seed)  # as the bench: the CNN's weights are drawn right after seeding
    cnn = matching_cnn(target, model_cfg.num_classes)
    train(cnn, sets[0], sets[1], cfg, progress=False)
    return cnn.eval()


def trained(seed: int, cache: Path | None) -> tuple[VisionTransformer, SmallCNN]:
    """Both models for ``seed``, from ``cache`` when it holds them (else trained, and stored there)."""
    vit, cnn = None, None
    if cache is not None and (cache / f"vit_{seed}.pt").exists() and (cache / f"cnn_{seed}.pt").exists():
        vit = VisionTransformer(PRESETS[PRESET][0])
        vit.load_state_dict(torch.load(cache / f"vit_{seed}.pt", weights_only=True))
        cnn = matching_cnn(count_parameters(vit), vit.config.num_classes)
        cnn.load_state_dict(torch.load(cache / f"cnn_{seed}.pt", weights_only=True))
        return vit.eval(), cnn.eval()
    vit, cnn = train_vit(seed), train_cnn(seed)
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        torch.save(vit.state_dict(), cache / f"vit_{seed}.pt")
        torch.save(cnn.state_dict(), cache / f"cnn_{seed}.pt")
    return vit, cnn


def measure(vit: VisionTransformer, cnn: SmallCNN, images: torch.Tensor, labels: torch.Tensor) -> dict:
    """Every measurement of the module docstring, for one seed's pair of models on the same images."""
    vit_maps = lambda x: vit_block_outputs(vit, x)  # noqa: E731 - entering block 1, then after each block
    cnn_maps = lambda x: cnn_stage_outputs(cnn, x)  # noqa: E731 - after each conv stage
    first_conv = lambda x: [cnn.features[0](x)]  # noqa: E731 - the first conv's output, before BatchNorm and ReLU
    circular = with_circular_padding(cnn)  # the same weights without image borders: the padding's share of the error
    kernels = input_gradient_maps(first_conv, images, 0)  # (B, H, W): its central unit's weights on each pixel
    return {
        "ViT": {"receptive_field": effective_receptive_field(vit_maps, images),
                "attention_row_variation": attention_row_variation(vit, images),
                "shifts": shift_report(vit, vit_maps, images, labels, SHIFTS),
                "test_accuracy": evaluate(vit, images, labels)["accuracy"]},
        "CNN": {"receptive_field": effective_receptive_field(cnn_maps, images),
                "kernel_variation": mean_total_variation(kernels.flatten(1) / kernels.flatten(1).sum(dim=1, keepdim=True)),
                "shifts": shift_report(cnn, cnn_maps, images, labels, SHIFTS),
                "circular_padding_equivariance_error": {f"{s} px": equivariance_error(
                    lambda x: cnn_stage_outputs(circular, x), images, s) for s in SHIFTS},
                "test_accuracy": evaluate(cnn, images, labels)["accuracy"]},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--images", type=int, default=200, help="test images measured per seed")
    parser.add_argument("--cache", type=Path, help="keep trained weights here and reuse them (not shipped)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.images < 2:
        raise ValueError(f"--images must be at least 2, got {args.images}")
    start = time.perf_counter()
    runs = []
    for seed in args.seeds:
        vit, cnn = trained(seed, args.cache)
        test = ShapesDataset("test", seed=seed)
        images, labels = test.images[: args.images], test.labels[: args.images]
        row = {"seed": seed, "cnn_steps": cnn_steps(seed), **measure(vit, cnn, images, labels)}
        print(f"seed {seed}: ViT share per layer {[round(r['share'], 3) for r in row['ViT']['receptive_field']]}, "
              f"CNN {[round(r['share'], 3) for r in row['CNN']['receptive_field']]}", flush=True)
        runs.append(row)
    model_cfg = PRESETS[PRESET][0]
    data = {"preset": PRESET, "images": args.images, "shifts": list(SHIFTS), "threshold": 0.01, "mass": 0.9,
            "cnn_width": cnn.features[0].out_channels, "vit_layers": ["embedding"] + [f"block {i + 1}" for i in range(model_cfg.depth)],
            "cnn_layers": [f"conv {i + 1}" for i in range(len(runs[0]["CNN"]["receptive_field"]))],
            "torch": torch.__version__, "threads": torch.get_num_threads(),
            "seconds": round(time.perf_counter() - start, 1), "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"→ {args.out}")


if __name__ == "__main__":
    main()
