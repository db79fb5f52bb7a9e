"""The CNN's built-in priors against what a trained ViT does, measured on the shapes task over seeds.

``python -m vit_edu.training.priors --seeds 0 1 2 --out vit_edu/checkpoints/vit_vs_cnn_priors.json`` takes, per
seed, the ``shapes-vit`` preset (seed 0: the shipped checkpoint; other seeds trained here, about a minute each)
and the parameter-matched CNN of chapter 9's bench (same data, recipe and seed; as many steps as the bench gave
it for that seed). On the seed's first test images it measures, for both models:

* the effective receptive field after each block / conv stage (share of pixels a central output depends on,
  and the radius that holds 90% of its input-gradient mass), from :mod:`vit_edu.explain.receptive_field`;
* how much one query's attention row changes from image to image, for the trained ViT and, as its control, for
  the same seed's untrained ViT (the preset's initial weights). A CNN's kernel is the same for every image by
  definition, so it has nothing to measure here;
* under shifts of 1 and 8 pixels, both circular and as an ordinary translation with edge fill
  (:mod:`vit_edu.explain.shifts`): the error of the features against the shifted features, the same error for a
  map that did not move (the control), the share of predictions that change (on all images, and on those whose
  object stays wholly in view), and the change of the true class's probability; for the CNN also the circular
  error with circular padding (the control that removes the image borders).

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
from vit_edu.explain.receptive_field import (FeatureFn, attention_row_variation, cnn_stage_outputs,
                                             effective_receptive_field, vit_block_outputs)
from vit_edu.explain.shifts import (SHIFT_MODES, equivariance_error, map_stride, prediction_changes, shift_report,
                                    unmoved_error, with_circular_padding)
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


def untrained_vit(seed: int) -> VisionTransformer:
    """The preset ViT as ``fit_preset`` draws it for ``seed`` before its first step: the control for attention rows."""
    torch.manual_seed(seed)
    return VisionTransformer(PRESETS[PRESET][0]).eval()


def object_in_view(masks: torch.Tensor, pixels: int) -> torch.Tensor:
    """``(B,)`` True where the object of ``(B, H, W)`` masks stays wholly in the image, away from the edge fill, when
    moved ``pixels`` to the right: no object pixel in the first column or in the last ``pixels`` columns."""
    if masks.ndim != 3 or not 0 < pixels < masks.shape[-1]:
        raise ValueError(f"need (B, H, W) masks and 0 < pixels < W, got shape {tuple(masks.shape)} and {pixels}")
    return ~(masks[..., :1].any(dim=(1, 2)) | masks[..., -pixels:].any(dim=(1, 2)))


def measure(vit: VisionTransformer, untrained: VisionTransformer, cnn: SmallCNN, images: torch.Tensor,
            labels: torch.Tensor, masks: torch.Tensor) -> dict:
    """Every measurement of the module docstring, for one seed's models on the same images ``(B, 3, H, W)``."""
    vit_maps = lambda x: vit_block_outputs(vit, x)  # noqa: E731 - entering block 1, then after each block
    cnn_maps = lambda x: cnn_stage_outputs(cnn, x)  # noqa: E731 - after each conv stage
    circular = with_circular_padding(cnn)  # the same weights without image borders: the padding's share of the error
    in_view = {s: object_in_view(masks, s) for s in SHIFTS}  # (B,) per shift

    def shifts(model: torch.nn.Module, maps: FeatureFn) -> dict:
        """Per shift mode, then per shift: the shift report, plus the prediction changes where the object stays in view."""
        out = {}
        for mode in SHIFT_MODES:
            report = shift_report(model, maps, images, labels, SHIFTS, mode)
            for s in SHIFTS:
                keep = in_view[s]
                report[f"{s} px"]["flipped_object_in_view"] = prediction_changes(
                    model, images[keep], labels[keep], s, mode)["flipped"]
            out[mode] = report
        return out

    return {
        "object_in_view": {f"{s} px": in_view[s].float().mean().item() for s in SHIFTS},
        "ViT": {"receptive_field": effective_receptive_field(vit_maps, images),
                "attention_row_variation": attention_row_variation(vit, images),
                "attention_row_variation_untrained": attention_row_variation(untrained, images),
                "shifts": shifts(vit, vit_maps),
                "unmoved_error": {f"{s} px": unmoved_error(vit_maps, images, s) for s in SHIFTS},
                "test_accuracy": evaluate(vit, images, labels)["accuracy"]},
        "CNN": {"receptive_field": effective_receptive_field(cnn_maps, images),
                "shifts": shifts(cnn, cnn_maps),
                "unmoved_error": {f"{s} px": unmoved_error(cnn_maps, images, s) for s in SHIFTS},
                "circular_padding_equivariance_error": {f"{s} px": equivariance_error(
                    lambda x: cnn_stage_outputs(circular, x), images, s, "circular") for s in SHIFTS},
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
        images, labels, masks = test.images[: args.images], test.labels[: args.images], test.masks[: args.images]
        row = {"seed": seed, "cnn_steps": cnn_steps(seed),
               **measure(vit, untrained_vit(seed), cnn, images, labels, masks)}
        print(f"seed {seed}: ViT share per layer {[round(r['share'], 3) for r in row['ViT']['receptive_field']]}, "
              f"CNN {[round(r['share'], 3) for r in row['CNN']['receptive_field']]}", flush=True)
        runs.append(row)
    model_cfg = PRESETS[PRESET][0]
    width = model_cfg.image_size[1]
    with torch.no_grad():
        probe = torch.zeros(1, 3, *model_cfg.image_size)  # (1, 3, H, W): only the maps' widths are read
        strides = {name: [map_stride(width, m.shape[-1]) for m in maps(probe)] for name, maps in
                   (("vit", lambda x: vit_block_outputs(vit, x)), ("cnn", lambda x: cnn_stage_outputs(cnn, x)))}
    data = {"preset": PRESET, "images": args.images, "shifts": list(SHIFTS), "threshold": 0.01, "mass": 0.9,
            "shift_modes": {"circular": "torch.roll: what leaves on the right re-enters on the left",
                            "translation": "moved right; the new left columns repeat the first column (edge fill)"},
            "vit_strides": strides["vit"], "cnn_strides": strides["cnn"],
            "cnn_width": cnn.features[0].out_channels, "vit_layers": ["embedding"] + [f"block {i + 1}" for i in range(model_cfg.depth)],
            "cnn_layers": [f"conv {i + 1}" for i in range(len(runs[0]["CNN"]["receptive_field"]))],
            "torch": torch.__version__, "threads": torch.get_num_threads(),
            "seconds": round(time.perf_counter() - start, 1), "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"→ {args.out}")


if __name__ == "__main__":
    main()
