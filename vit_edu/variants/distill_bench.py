"""Chapter 15's performance goal, measured side by side in one run: does a distilled ViT reach 99.5% test
accuracy on the shipped shapes task within the wall-clock budget the CNN uses?

The ``shapes-vit`` preset's data (20,000 training images, 1,000 test images) and recipe, for each seed in turn:

1. the CNN of chapter 9 (:func:`vit_edu.training.cnn.matching_cnn`) trains ``--cnn-steps`` steps (chapter 9's shipped
   comparison gave it 150-171 steps, the seconds of the ViT's 1000); its training seconds are THE budget;
2. the trained CNN becomes the teacher: its logits for all training images, computed once (timed);
3. the student, a DeiT-Ti-like narrow ViT (:data:`STUDENT`: the preset at half its width, D = 64) with a
   distillation token (:class:`vit_edu.variants.distill.DistilledViT`, hard distillation), and two references
   without distillation, the same narrow ViT and the preset ViT, each get as many steps as fit in the budget,
   from the ratio of step times measured here (as :mod:`vit_edu.training.bench` does: a ratio is steadier on a
   shared machine than an absolute time).

The JSON records each model's test accuracy and training seconds per seed, the teacher's inference seconds and
how often its top class is the label on the training images, and whether the goal was met on each seed: accuracy ≥ 99.5% AND training seconds ≤ the CNN's (the teacher's own
cost comes on top and is reported, not hidden). Seconds are wall-clock on whatever CPU runs this; no test
asserts them.

    python -m vit_edu.variants.distill_bench --seeds 0 1 2 --out vit_edu/checkpoints/distill_bench.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import torch
from torch import nn

from vit_edu.config import ViTConfig
from vit_edu.data import DEFAULT_SIZES
from vit_edu.model import VisionTransformer
from vit_edu.trace import count_parameters
from vit_edu.training import PRESETS, TrainConfig, evaluate, shapes_splits, train
from vit_edu.training.bench import seconds_per_step
from vit_edu.training.cnn import matching_cnn
from vit_edu.variants.distill import DistilledViT, teacher_logits, train_distilled

GOAL = 0.995
CNN_STEPS = 160
MODEL, RECIPE = PRESETS["shapes-vit"]
# DeiT's smallest student (ViT-Ti) is a narrow ViT; here, the preset at half its width: 4 blocks of D 64, 4 heads.
STUDENT: ViTConfig = dataclasses.replace(MODEL, embed_dim=64, mlp_dim=128)
MODELS = ("CNN", "ViT", "narrow ViT", "distilled ViT")  # "distilled ViT" is the student: STUDENT plus the token


class _BothHeads(nn.Module):
    """The student as one logits tensor (the heads' sum) so that :func:`seconds_per_step` can time its steps."""

    def __init__(self, student: DistilledViT) -> None:
        super().__init__()
        self.student = student

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        cls_logits, dist_logits = self.student.forward_heads(images)
        return cls_logits + dist_logits


def _result(model: nn.Module, steps: int, history: list[dict], test_set) -> dict:
    """One model's row: steps, training seconds, test accuracy and parameter count."""
    return {"steps": steps, "seconds": history[-1]["seconds"],
            "accuracy": evaluate(model, test_set.images, test_set.labels)["accuracy"],
            "parameters": count_parameters(model)}


def run_seed(seed: int, cnn_steps: int, kind: str) -> dict:
    """One seed of the comparison: every model's steps, seconds and test accuracy, and the teacher's seconds."""
    base = dataclasses.replace(RECIPE, seed=seed)
    train_set, val_set, test_set = shapes_splits(base, MODEL.image_size[0])
    models: dict[str, nn.Module] = {}
    for name, build in (("ViT", lambda: VisionTransformer(MODEL)), ("narrow ViT", lambda: VisionTransformer(STUDENT)),
                        ("distilled ViT", lambda: DistilledViT(STUDENT))):
        torch.manual_seed(seed)
        models[name] = build()
    torch.manual_seed(seed)
    cnn = matching_cnn(count_parameters(models["ViT"]), MODEL.num_classes)
    t_cnn = seconds_per_step(cnn, train_set, base)
    timed = {"distilled ViT": _BothHeads(models["distilled ViT"])}
    ratios = {name: t_cnn / seconds_per_step(timed.get(name, model), train_set, base) for name, model in models.items()}
    cnn_cfg = dataclasses.replace(base, steps=cnn_steps, warmup_steps=min(base.warmup_steps, cnn_steps - 1),
                                  eval_every=cnn_steps)
    history = train(cnn, train_set, val_set, cnn_cfg, progress=False)
    results = {"CNN": _result(cnn, cnn_steps, history, test_set)}
    start = time.perf_counter()
    targets = teacher_logits(cnn, train_set.images)
    teacher_seconds = round(time.perf_counter() - start, 2)
    # With hard distillation the second head learns the teacher's top class; where that equals the label, the
    # teacher teaches nothing the labels do not.
    agreement = (targets.argmax(1) == train_set.labels).float().mean().item()
    for name, model in models.items():
        steps = max(base.warmup_steps + 1, int(cnn_steps * ratios[name]))
        cfg: TrainConfig = dataclasses.replace(base, steps=steps, eval_every=steps)
        if name == "distilled ViT":
            history = train_distilled(model, targets, train_set, val_set, cfg, kind=kind)
        else:
            history = train(model, train_set, val_set, cfg, progress=False)
        results[name] = _result(model, steps, history, test_set)
    for name in MODELS:
        r = results[name]
        print(f"seed {seed} {name:14s} {r['steps']:5d} steps {r['seconds']:6.1f} s {100 * r['accuracy']:.1f}%", flush=True)
    print(f"seed {seed} teacher logits {teacher_seconds:.1f} s, top class = label on {100 * agreement:.2f}% of the "
          f"training images", flush=True)
    student = results["distilled ViT"]
    goal = {"accuracy_met": student["accuracy"] >= GOAL, "time_met": student["seconds"] <= results["CNN"]["seconds"]}
    goal["met"] = goal["accuracy_met"] and goal["time_met"]
    return {"seed": seed, "results": results, "teacher_seconds": teacher_seconds, "teacher_agreement": agreement,
            "step_ratios": ratios, "goal": goal}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--cnn-steps", type=int, default=CNN_STEPS)
    parser.add_argument("--kind", choices=["hard", "soft"], default="hard")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    runs = [run_seed(seed, args.cnn_steps, args.kind) for seed in args.seeds]
    setting = {"seeds": args.seeds, "kind": args.kind, "goal_accuracy": GOAL, "cnn_steps": args.cnn_steps,
               "student": {"embed_dim": STUDENT.embed_dim, "depth": STUDENT.depth, "num_heads": STUDENT.num_heads,
                           "mlp_dim": STUDENT.mlp_dim},
               "train_size": RECIPE.train_size, "test_size": DEFAULT_SIZES["test"], "threads": torch.get_num_threads(),
               "torch": torch.__version__}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"setting": setting, "runs": runs}, indent=1))
    met = sum(run["goal"]["met"] for run in runs)
    print(f"goal met on {met} of {len(runs)} seeds → {args.out}")


if __name__ == "__main__":
    main()
