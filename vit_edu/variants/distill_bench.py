"""Chapter 15's performance goal, measured side by side in one run: does the distilled ViT reach 99.5% test
accuracy on the shipped shapes task within the wall-clock budget the CNN uses?

One seed, the ``shapes-vit`` preset's data (20,000 training images, 1,000 test images) and recipe. In order:

1. the CNN of chapter 9 (:func:`vit_edu.training.cnn.matching_cnn`) trains ``--cnn-steps`` steps (chapter 9's shipped
   comparison gave it 150-171 steps, the seconds of the ViT's 1000); its training seconds are THE budget;
2. the trained CNN becomes the teacher: its logits for all training images, computed once (timed);
3. the distilled ViT (:class:`vit_edu.variants.distill.DistilledViT`, hard distillation) and, for reference, the
   plain ViT each get as many steps as fit in the budget, from the ratio of step times measured here (as
   :mod:`vit_edu.training.bench` does: a ratio is steadier on a shared machine than an absolute time).

The JSON records each model's test accuracy and training seconds, the teacher's inference seconds, and whether
the goal was met: accuracy ≥ 99.5% AND training seconds ≤ the CNN's (the teacher's own cost comes on top and is
reported, not hidden). Seconds are wall-clock on whatever CPU runs this; no test asserts them.

    python -m vit_edu.variants.distill_bench --out vit_edu/checkpoints/distill_bench.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import torch
from torch import nn

from vit_edu.model import VisionTransformer
from vit_edu.trace import count_parameters
from vit_edu.training import PRESETS, evaluate, shapes_splits, train
from vit_edu.training.bench import seconds_per_step
from vit_edu.training.cnn import matching_cnn
from vit_edu.variants.distill import DistilledViT, teacher_logits, train_distilled

GOAL = 0.995
CNN_STEPS = 160


class _BothHeads(nn.Module):
    """The student as one logits tensor (the heads' sum) so that :func:`seconds_per_step` can time its steps."""

    def __init__(self, student: DistilledViT) -> None:
        super().__init__()
        self.student = student

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        cls_logits, dist_logits = self.student.forward_heads(images)
        return cls_logits + dist_logits


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cnn-steps", type=int, default=CNN_STEPS)
    parser.add_argument("--kind", choices=["hard", "soft"], default="hard")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    model_cfg, base = PRESETS["shapes-vit"]
    base = dataclasses.replace(base, seed=args.seed)
    train_set, val_set, test_set = shapes_splits(base, model_cfg.image_size[0])
    torch.manual_seed(args.seed)
    vit = VisionTransformer(model_cfg)
    torch.manual_seed(args.seed)
    student = DistilledViT(model_cfg)
    torch.manual_seed(args.seed)
    cnn = matching_cnn(count_parameters(vit), model_cfg.num_classes)
    t_cnn = seconds_per_step(cnn, train_set, base)
    ratios = {"ViT": t_cnn / seconds_per_step(vit, train_set, base),
              "distilled ViT": t_cnn / seconds_per_step(_BothHeads(student), train_set, base)}
    results = {}
    cnn_cfg = dataclasses.replace(base, steps=args.cnn_steps, warmup_steps=min(base.warmup_steps, args.cnn_steps - 1),
                                  eval_every=args.cnn_steps)
    history = train(cnn, train_set, val_set, cnn_cfg, progress=False)
    budget = history[-1]["seconds"]
    results["CNN"] = {"steps": args.cnn_steps, "seconds": budget,
                      "accuracy": evaluate(cnn, test_set.images, test_set.labels)["accuracy"]}
    start = time.perf_counter()
    targets = teacher_logits(cnn, train_set.images)
    teacher_seconds = round(time.perf_counter() - start, 2)
    for name, model in (("ViT", vit), ("distilled ViT", student)):
        steps = max(base.warmup_steps + 1, int(args.cnn_steps * ratios[name]))
        cfg = dataclasses.replace(base, steps=steps, eval_every=steps)
        if name == "ViT":
            history = train(model, train_set, val_set, cfg, progress=False)
        else:
            history = train_distilled(model, targets, train_set, val_set, cfg, kind=args.kind)
        results[name] = {"steps": steps, "seconds": history[-1]["seconds"],
                         "accuracy": evaluate(model, test_set.images, test_set.labels)["accuracy"]}
        print(f"{name}: {steps} steps, {results[name]['seconds']:.1f} s, "
              f"{100 * results[name]['accuracy']:.1f}%", flush=True)
    print(f"CNN: {args.cnn_steps} steps, {budget:.1f} s, {100 * results['CNN']['accuracy']:.1f}%; "
          f"teacher logits {teacher_seconds:.1f} s")
    student_result = results["distilled ViT"]
    goal = {"accuracy": GOAL, "accuracy_met": student_result["accuracy"] >= GOAL,
            "time_met": student_result["seconds"] <= budget}
    goal["met"] = goal["accuracy_met"] and goal["time_met"]
    setting = {"seed": args.seed, "kind": args.kind, "train_size": len(train_set), "test_size": len(test_set),
               "threads": torch.get_num_threads(), "torch": torch.__version__, "step_ratios": ratios,
               "teacher_seconds": teacher_seconds}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"setting": setting, "results": results, "goal": goal}, indent=1))
    print(f"goal met: {goal['met']} → {args.out}")


if __name__ == "__main__":
    main()
