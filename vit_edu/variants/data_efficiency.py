"""Chapter 15's experiment: can a CNN teacher that knows more than the student's labels help a ViT on few labels?

For each seed, one set of ``labelled + unlabelled + teacher`` images is drawn from the shapes task (20,000 by
default) and cut into three disjoint parts: the student's ``labelled`` images (500: the ViT is well below its
ceiling there), ``unlabelled`` images whose labels the student never sees (4,500), and the teacher's own labelled
images (15,000). The teacher is chapter 9's parameter-matched :class:`vit_edu.training.cnn.SmallCNN`, trained on its
part only, so its predictions on the student's images are predictions, not memories. Five students, every one
``--vit-steps`` steps of chapter 9's recipe (AdamW 1e-3, weight decay 0.05, batches of 32, warm-up then cosine):

* ``ViT``: the ``shapes-vit`` preset's model on the labelled images;
* ``two heads, no teacher``: :class:`vit_edu.variants.distill.DistilledViT` with ``kind="none"`` on the labelled
  images (both heads learn the labels: does the second token alone change anything?);
* ``ViT on pseudo-labels``: the plain ViT on the labelled images plus the unlabelled ones with the teacher's top
  class as their label (more, teacher-labelled data, no distillation token);
* ``distilled (hard)``: the DistilledViT on the same images, DeiT's hard distillation (α = ½): the CLS head learns
  the labelled images' labels, the distillation head the teacher's top class on every image;
* ``distilled (soft)``: the same with soft distillation at the paper's α = 0.1 and τ = 3.

Comparing ``distilled`` with ``ViT on pseudo-labels`` separates the token from the extra pseudo-labelled data.
Accuracy is measured on a held-out test split (``--test-size`` images). Seeds can run as separate processes and
``--merge`` joins their files; the defaults are what ``make checkpoints`` runs:

    OMP_NUM_THREADS=1 python -m vit_edu.variants.data_efficiency --seeds 0 1 2 --out vit_edu/checkpoints/data_efficiency.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from vit_edu.data import ImageSplit, ShapesDataset
from vit_edu.model import VisionTransformer
from vit_edu.trace import count_parameters
from vit_edu.training import PRESETS, TrainConfig, evaluate, train
from vit_edu.training.cnn import matching_cnn
from vit_edu.variants.distill import UNLABELLED, DistilledViT, teacher_logits, train_distilled

MODELS = ("ViT", "two heads, no teacher", "ViT on pseudo-labels", "distilled (hard)", "distilled (soft)")
HARD = {"alpha": 0.5}  # DeiT's hard distillation: label and teacher terms weighted ½ and ½
SOFT = {"alpha": 0.1, "tau": 3.0}  # DeiT's soft distillation settings
BATCH, VAL_SIZE = 32, 100


@dataclass(frozen=True)
class Setting:
    """The experiment's sizes and budgets: the student's labelled and unlabelled images, the teacher's images."""

    labelled: int = 500
    unlabelled: int = 4500
    teacher_size: int = 15000
    vit_steps: int = 800
    cnn_steps: int = 150
    test_size: int = 1000

    def __post_init__(self) -> None:
        if self.labelled < BATCH or self.unlabelled < 0 or self.teacher_size < BATCH:
            raise ValueError(f"need labelled >= {BATCH}, unlabelled >= 0, teacher_size >= {BATCH}; got "
                             f"{self.labelled}, {self.unlabelled}, {self.teacher_size}")
        if min(self.vit_steps, self.cnn_steps) < 2 or self.test_size < 1:
            raise ValueError(f"need at least 2 steps per model and a test set; got vit_steps={self.vit_steps}, "
                             f"cnn_steps={self.cnn_steps}, test_size={self.test_size}")


def recipe(steps: int, size: int, seed: int) -> TrainConfig:
    """Chapter 9's recipe, shortened: ``steps`` steps of 32 images, 10% warm-up, one evaluation at the end."""
    _, preset = PRESETS["shapes-vit"]
    return TrainConfig(steps=steps, batch_size=BATCH, lr=preset.lr, weight_decay=preset.weight_decay,
                       warmup_steps=max(1, steps // 10), label_smoothing=0.0, train_size=size, seed=seed,
                       eval_every=steps)


def _result(model: torch.nn.Module, test: ImageSplit, history: list[dict], extra: float = 0.0) -> dict:
    return {"accuracy": evaluate(model, test.images, test.labels)["accuracy"],
            "seconds": round(history[-1]["seconds"] + extra, 2)}


def one_seed(s: Setting, seed: int) -> dict:
    """The teacher and the five students for one seed: test accuracies, seconds and the teacher's agreements."""
    model_cfg, _ = PRESETS["shapes-vit"]
    n, u = s.labelled, s.unlabelled
    full = ShapesDataset("train", size=n + u + s.teacher_size, seed=seed)
    val = ShapesDataset("val", size=VAL_SIZE, seed=seed)
    test = ShapesDataset("test", size=s.test_size, seed=seed)
    labelled = ImageSplit(full.images[:n], full.labels[:n], full.classes)
    student_images = full.images[: n + u]  # (n + u, C, H, W): labelled first, then unlabelled
    true = full.labels[: n + u]
    teacher_set = ImageSplit(full.images[n + u :], full.labels[n + u :], full.classes)

    torch.manual_seed(seed)
    cnn = matching_cnn(count_parameters(VisionTransformer(model_cfg)), model_cfg.num_classes)
    history = train(cnn, teacher_set, val, recipe(s.cnn_steps, len(teacher_set), seed), progress=False)
    start = time.perf_counter()
    targets = teacher_logits(cnn, student_images)  # (n + u, K): the teacher's logits, once
    teacher_seconds = time.perf_counter() - start
    pseudo = targets.argmax(1)  # (n + u,)
    teacher = {**_result(cnn, test, history), "images": len(teacher_set),
               "agreement_labelled": (pseudo[:n] == true[:n]).float().mean().item(),
               "agreement_unlabelled": (pseudo[n:] == true[n:]).float().mean().item() if u else None}

    out = {}
    torch.manual_seed(seed)
    vit = VisionTransformer(model_cfg)
    out["ViT"] = _result(vit, test, train(vit, labelled, val, recipe(s.vit_steps, n, seed), progress=False))
    torch.manual_seed(seed)
    two = DistilledViT(model_cfg)
    history = train_distilled(two, targets[:n], labelled, val, recipe(s.vit_steps, n, seed), kind="none")
    out["two heads, no teacher"] = _result(two, test, history)
    pseudo_set = ImageSplit(student_images, torch.cat([true[:n], pseudo[n:]]), full.classes)
    torch.manual_seed(seed)
    vit = VisionTransformer(model_cfg)
    history = train(vit, pseudo_set, val, recipe(s.vit_steps, n + u, seed), progress=False)
    out["ViT on pseudo-labels"] = _result(vit, test, history, teacher_seconds)
    # The distilled students see the labels of the labelled images only; the rest are UNLABELLED for the CLS head.
    mixed = ImageSplit(student_images, torch.cat([true[:n], torch.full((u,), UNLABELLED)]), full.classes)
    for kind, options in (("hard", HARD), ("soft", SOFT)):
        torch.manual_seed(seed)
        student = DistilledViT(model_cfg)
        history = train_distilled(student, targets, mixed, val, recipe(s.vit_steps, n + u, seed), kind=kind,
                                  **options)
        out[f"distilled ({kind})"] = _result(student, test, history, teacher_seconds)
    return {"seed": seed, "teacher": teacher, "models": out}


def summarise(runs: list[dict]) -> dict:
    """Per model: mean, min and max test accuracy over the seeds."""
    summary = {}
    for name in MODELS:
        accs = [r["models"][name]["accuracy"] for r in runs]
        summary[name] = {"mean": statistics.fmean(accs), "min": min(accs), "max": max(accs), "seeds": len(accs)}
    return summary


def _write(out: Path, setting: dict, runs: list[dict]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"setting": setting, "runs": runs, "summary": summarise(runs)}, indent=1))


def merge(paths: list[Path], out: Path) -> None:
    """Join result files that differ only in their seeds (one process per seed) into one."""
    parts = [json.loads(p.read_text()) for p in paths]
    ignore = ("seeds", "total_seconds")
    first = {k: v for k, v in parts[0]["setting"].items() if k not in ignore}
    for p, part in zip(paths, parts):
        this = {k: v for k, v in part["setting"].items() if k not in ignore}
        if this != first:
            raise ValueError(f"{p} was run with another setting than {paths[0]}: {this} vs {first}")
    seeds = [s for part in parts for s in part["setting"]["seeds"]]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"the files repeat seeds: {seeds}")
    setting = {**parts[0]["setting"], "seeds": seeds,
               "total_seconds": round(sum(part["setting"]["total_seconds"] for part in parts), 1)}
    _write(out, setting, [r for part in parts for r in part["runs"]])


def main(argv: list[str] | None = None) -> None:
    defaults = Setting()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--labelled", type=int, default=defaults.labelled)
    parser.add_argument("--unlabelled", type=int, default=defaults.unlabelled)
    parser.add_argument("--teacher-size", type=int, default=defaults.teacher_size)
    parser.add_argument("--vit-steps", type=int, default=defaults.vit_steps)
    parser.add_argument("--cnn-steps", type=int, default=defaults.cnn_steps)
    parser.add_argument("--test-size", type=int, default=defaults.test_size)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--merge", type=Path, nargs="+", help="join these result files (same setting, other seeds)")
    args = parser.parse_args(argv)
    if args.merge:
        merge(args.merge, args.out)
        return
    try:
        s = Setting(args.labelled, args.unlabelled, args.teacher_size, args.vit_steps, args.cnn_steps, args.test_size)
    except ValueError as err:
        parser.error(str(err))
    start = time.perf_counter()
    runs = []
    for seed in args.seeds:
        run = one_seed(s, seed)
        runs.append(run)
        t = run["teacher"]
        print(f"seed {seed}: teacher {100 * t['accuracy']:.1f}% (agrees with {100 * t['agreement_labelled']:.1f}% "
              "of the labels), " + ", ".join(f"{k} {100 * v['accuracy']:.1f}% ({v['seconds']:.0f} s)"
                                                 for k, v in run["models"].items()), flush=True)
    setting = {**asdict(s), "seeds": args.seeds, "batch_size": BATCH, "distillation": {"hard": HARD, "soft": SOFT},
               "threads": torch.get_num_threads(), "torch": torch.__version__,
               "total_seconds": round(time.perf_counter() - start, 1)}
    _write(args.out, setting, runs)
    print(f"{setting['total_seconds']:.0f} s in all → {args.out}")


if __name__ == "__main__":
    main()
