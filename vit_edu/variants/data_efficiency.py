"""Chapter 15's experiment: test accuracy against training-set size for the ViT, the CNN and the distilled ViTs.

For each seed, one training set of the largest size is drawn from the shapes task; every smaller set is its
first n images (so the sets are nested). On each set, three models of about the same parameter count train
with chapter 9's recipe (AdamW 1e-3, weight decay 0.05, batches of 32, warm-up then cosine, no augmentation):

* ``ViT``: the ``shapes-vit`` preset's model, ``--vit-steps`` steps;
* ``CNN``: chapter 9's parameter-matched :class:`vit_edu.training.cnn.SmallCNN`, ``--cnn-steps`` steps (a CNN step costs
  about six ViT steps on a CPU, so the two get roughly the same seconds);
* ``distilled ViT (hard)`` and ``distilled ViT (soft)``: :class:`vit_edu.variants.distill.DistilledViT` trained
  with DeiT's loss from THAT CNN (trained on the same n images, as DeiT's teacher saw the same ImageNet),
  ``--vit-steps`` steps: hard distillation (the teacher's top class), and soft distillation at τ = 3 (DeiT's
  temperature) with α = ½ (the weights of DeiT's hard loss).

Without data augmentation, a teacher that fits its training images gives hard targets equal to their labels, so
hard distillation can only help where the teacher gets training images wrong; the soft targets also carry the
teacher's probabilities for the other classes. Both are run so that the chapter can show the difference.

Accuracy is measured on a held-out test split (``--test-size`` images). Every size gets the same number of steps
(800 ViT steps of 32 images, 150 CNN steps, about the same seconds): 51 passes over 500 images, 1.3 over 20,000,
so the small sets are learnt by heart and the question is what each model makes of them. One seed takes about
45 minutes on one CPU thread, so seeds run as separate processes and ``--merge`` joins their files; the defaults
are what ``make checkpoints`` runs:

    OMP_NUM_THREADS=1 python -m vit_edu.variants.data_efficiency --seeds 0 1 2 --out vit_edu/checkpoints/data_efficiency.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from vit_edu.data import ImageSplit, ShapesDataset
from vit_edu.model import VisionTransformer
from vit_edu.trace import count_parameters
from vit_edu.training import PRESETS, TrainConfig, evaluate, train
from vit_edu.training.cnn import matching_cnn
from vit_edu.variants.distill import DistilledViT, teacher_logits, train_distilled

SIZES = (500, 2000, 5000, 20000)
MODELS = ("ViT", "CNN", "distilled ViT (hard)", "distilled ViT (soft)")
SOFT = {"alpha": 0.5, "tau": 3.0}  # soft distillation: DeiT's temperature, the hard loss's weights
VIT_STEPS, CNN_STEPS, BATCH, TEST_SIZE, VAL_SIZE = 800, 150, 32, 1000, 100


def recipe(steps: int, size: int, seed: int) -> TrainConfig:
    """Chapter 9's recipe, shortened: ``steps`` steps of 32 images, 10% warm-up, one evaluation at the end."""
    _, preset = PRESETS["shapes-vit"]
    return TrainConfig(steps=steps, batch_size=BATCH, lr=preset.lr, weight_decay=preset.weight_decay,
                       warmup_steps=max(1, steps // 10), label_smoothing=0.0, train_size=size, seed=seed,
                       eval_every=steps)


def one_size(full: ImageSplit, val: ImageSplit, test: ImageSplit, size: int, seed: int, vit_steps: int,
             cnn_steps: int) -> dict:
    """Train the four models on the first ``size`` images of ``full``; their test accuracy and seconds."""
    model_cfg, _ = PRESETS["shapes-vit"]
    subset = ImageSplit(full.images[:size], full.labels[:size], full.classes)
    out = {}
    torch.manual_seed(seed)
    vit = VisionTransformer(model_cfg)
    history = train(vit, subset, val, recipe(vit_steps, size, seed), progress=False)
    out["ViT"] = {"accuracy": evaluate(vit, test.images, test.labels)["accuracy"], "seconds": history[-1]["seconds"]}
    torch.manual_seed(seed)
    cnn = matching_cnn(count_parameters(vit), model_cfg.num_classes)
    history = train(cnn, subset, val, recipe(cnn_steps, size, seed), progress=False)
    out["CNN"] = {"accuracy": evaluate(cnn, test.images, test.labels)["accuracy"], "seconds": history[-1]["seconds"]}
    start = time.perf_counter()
    targets = teacher_logits(cnn, subset.images)  # (size, K): the teacher's logits, once
    teacher_seconds = time.perf_counter() - start
    agreement = (targets.argmax(1) == subset.labels).float().mean().item()
    for kind, options in (("hard", {}), ("soft", SOFT)):
        torch.manual_seed(seed)
        student = DistilledViT(model_cfg)
        history = train_distilled(student, targets, subset, val, recipe(vit_steps, size, seed), kind=kind, **options)
        out[f"distilled ViT ({kind})"] = {"accuracy": evaluate(student, test.images, test.labels)["accuracy"],
                                          "seconds": round(history[-1]["seconds"] + teacher_seconds, 2),
                                          "teacher_train_agreement": agreement}
    return out


def summarise(runs: list[dict], sizes: list[int]) -> dict:
    """Per model and size: mean, min and max test accuracy over the seeds."""
    summary = {}
    for name in MODELS:
        rows = []
        for size in sizes:
            accs = [r["models"][name]["accuracy"] for r in runs if r["size"] == size]
            rows.append({"size": size, "mean": statistics.fmean(accs), "min": min(accs), "max": max(accs),
                         "seeds": len(accs)})
        summary[name] = rows
    return summary


def merge(paths: list[Path], out: Path) -> None:
    """Join result files that differ only in their seeds (one process per seed) into one."""
    parts = [json.loads(p.read_text()) for p in paths]
    keep = ("sizes", "vit_steps", "cnn_steps", "batch_size", "test_size", "distillation", "torch")
    for p, part in zip(paths, parts):
        if any(part["setting"][k] != parts[0]["setting"][k] for k in keep):
            raise ValueError(f"{p} was run with another setting than {paths[0]}: "
                             f"{ {k: part['setting'][k] for k in keep} } vs { {k: parts[0]['setting'][k] for k in keep} }")
    seeds = [s for part in parts for s in part["setting"]["seeds"]]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"the files repeat seeds: {seeds}")
    runs = [r for part in parts for r in part["runs"]]
    setting = {**parts[0]["setting"], "seeds": seeds,
               "total_seconds": round(sum(part["setting"]["total_seconds"] for part in parts), 1)}
    out.write_text(json.dumps({"setting": setting, "runs": runs, "summary": summarise(runs, setting["sizes"])},
                              indent=1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--vit-steps", type=int, default=VIT_STEPS)
    parser.add_argument("--cnn-steps", type=int, default=CNN_STEPS)
    parser.add_argument("--test-size", type=int, default=TEST_SIZE)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--merge", type=Path, nargs="+", help="join these result files (same setting, other seeds)")
    args = parser.parse_args(argv)
    if args.merge:
        merge(args.merge, args.out)
        return
    if sorted(set(args.sizes)) != args.sizes or min(args.sizes) < BATCH:
        parser.error(f"--sizes must be increasing and at least {BATCH}, got {args.sizes}")
    if len(args.seeds) < 1 or min(args.vit_steps, args.cnn_steps) < 2:
        parser.error("need at least one seed and at least 2 steps per model")
    start = time.perf_counter()
    runs = []
    for seed in args.seeds:
        full = ShapesDataset("train", size=max(args.sizes), seed=seed)
        val = ShapesDataset("val", size=VAL_SIZE, seed=seed)
        test = ShapesDataset("test", size=args.test_size, seed=seed)
        for size in args.sizes:
            models = one_size(full, val, test, size, seed, args.vit_steps, args.cnn_steps)
            runs.append({"seed": seed, "size": size, "models": models})
            print(f"seed {seed}, {size:5d} images: " + ", ".join(
                f"{k} {100 * v['accuracy']:.1f}% ({v['seconds']:.0f} s)" for k, v in models.items()), flush=True)
    setting = {"sizes": args.sizes, "seeds": args.seeds, "vit_steps": args.vit_steps, "cnn_steps": args.cnn_steps,
               "batch_size": BATCH, "test_size": args.test_size, "distillation": {"hard": {}, "soft": SOFT},
               "threads": torch.get_num_threads(), "torch": torch.__version__,
               "total_seconds": round(time.perf_counter() - start, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"setting": setting, "runs": runs, "summary": summarise(runs, args.sizes)},
                                   indent=1))
    print(f"{setting['total_seconds']:.0f} s in all → {args.out}")


if __name__ == "__main__":
    main()
