"""Chapter 8's experiment: the patch size of a ViT under a fixed budget of steps, and of CPU seconds.

The ``shapes-vit`` preset trains on 32×32 images with patches of 4, 8 and 16 (grids of 8×8, 4×4 and 2×2
tokens), under two budgets:

- **equal steps**: the same number of steps for every patch size; these runs are trained first, and the CPU
  seconds of their training loops (``time.process_time``, one thread) give each patch size's CPU seconds per
  step, averaged over hundreds of steps and every seed;
- **equal CPU seconds**: the budget is the mean CPU seconds that the reference patch size (the preset's 8) used
  for its equal-steps runs, and patch size P gets as many steps as its CPU seconds per step fit in it.

CPU time, not wall-clock time, because a shared machine's other work stretches the wall clock but not the CPU
seconds a one-thread process spends. Every run records the CPU seconds it actually used, so the chapter can check
that the equal-seconds arms used about the same. The step counts are in the JSON; ``--seconds-per-step`` with the
recorded CPU seconds per step reruns the same steps on any machine (same seed ⇒ same weights).

    OMP_NUM_THREADS=1 python -m vit_edu.training.patch_size --seeds 0 1 2 --out vit_edu/checkpoints/patch_size.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import torch

from vit_edu.data import ImageSplit
from vit_edu.model import VisionTransformer
from vit_edu.training.loop import evaluate, train
from vit_edu.training.presets import PRESETS, shapes_splits

PRESET = "shapes-vit"
PATCH_SIZES = (4, 8, 16)
REFERENCE_PATCH = 8  # the preset's own patch size: its CPU seconds for STEPS steps set the equal-seconds budget
STEPS = 600  # fewer than the preset's 1000, so that three patch sizes, two budgets and three seeds fit 15 CPU-minutes
BUDGETS = ("equal steps", "equal seconds")


def check_patch_sizes(patch_sizes: Sequence[int], image_size: int) -> tuple[int, ...]:
    """The patch sizes as a sorted tuple; each must be a positive integer that tiles the image exactly."""
    bad = [p for p in patch_sizes if not isinstance(p, int) or p <= 0 or image_size % p]
    if bad:
        raise ValueError(f"patch sizes {bad} do not tile a {image_size}×{image_size} image: "
                         f"choose positive divisors of {image_size}")
    if len(set(patch_sizes)) != len(patch_sizes) or len(patch_sizes) < 2:
        raise ValueError(f"need at least two different patch sizes, got {list(patch_sizes)}")
    return tuple(sorted(patch_sizes))


def equal_seconds_steps(seconds: Mapping[int, float], steps: int, reference: int) -> dict[int, int]:
    """Steps per patch size that fit the seconds ``reference`` needs for ``steps`` steps.

    ``seconds`` maps each patch size to its measured seconds per step; the budget is
    ``steps * seconds[reference]``, and patch size P gets ``round(budget / seconds[P])`` steps (at least 1).
    """
    if reference not in seconds:
        raise ValueError(f"reference patch size {reference} has no measured seconds per step; have {sorted(seconds)}")
    bad = {p: s for p, s in seconds.items() if not s > 0}
    if bad or steps <= 0:
        raise ValueError(f"need steps > 0 and seconds per step > 0, got steps={steps}, non-positive seconds {bad}")
    budget = steps * seconds[reference]
    return {p: max(1, round(budget / s)) for p, s in seconds.items()}


def cpu_seconds_per_step(runs: Sequence[Mapping]) -> dict[int, float]:
    """CPU seconds per training step by patch size: each patch size's total CPU seconds over its total steps.

    ``runs`` are rows with ``patch``, ``steps`` and ``cpu_seconds`` (the equal-steps runs); pooling every seed's
    run averages the step time over thousands of steps rather than a short probe.
    """
    totals: dict[int, list[float]] = {}
    for r in runs:
        if r["steps"] <= 0 or not r["cpu_seconds"] > 0:
            raise ValueError(f"run of patch {r['patch']} has steps={r['steps']}, cpu_seconds={r['cpu_seconds']}: "
                             "both must be > 0")
        t = totals.setdefault(r["patch"], [0.0, 0])
        t[0], t[1] = t[0] + r["cpu_seconds"], t[1] + r["steps"]
    if not totals:
        raise ValueError("no runs to measure CPU seconds per step from")
    return {p: s / n for p, (s, n) in sorted(totals.items())}


def train_one(patch: int, steps: int, seed: int, splits: tuple) -> dict:
    """The preset at patch size ``patch`` for ``steps`` steps: test accuracy and loss, CPU and wall seconds.

    ``splits`` are the seed's (train, val, test) sets. ``cpu_seconds`` is ``time.process_time`` around the training
    loop alone: the loop's one evaluation (at its last step) runs on a single batch of validation images, since the
    chapter reads the test set, which is scored after the clock stops. Warm-up stays the preset's 60 steps; only
    runs shorter than 120 steps (the tests) warm up for half their steps.
    """
    model_cfg, train_cfg = PRESETS[PRESET]
    train_cfg = dataclasses.replace(train_cfg, steps=steps, warmup_steps=min(train_cfg.warmup_steps, steps // 2),
                                    eval_every=steps, seed=seed)
    train_set, val_set, test_set = splits
    one_batch = ImageSplit(val_set.images[: train_cfg.batch_size], val_set.labels[: train_cfg.batch_size],
                           val_set.classes)
    torch.manual_seed(seed)  # as fit_preset: the seed fixes the initial weights, then the batch order
    model = VisionTransformer(dataclasses.replace(model_cfg, patch_size=patch))
    start = time.process_time()
    history = train(model, train_set, one_batch, train_cfg, progress=False)
    cpu = time.process_time() - start
    test = evaluate(model, test_set.images, test_set.labels)
    return {"patch": patch, "seed": seed, "steps": steps, "test_accuracy": test["accuracy"], "test_loss": test["loss"],
            "cpu_seconds": round(cpu, 2), "wall_seconds": history[-1]["seconds"]}


def run(seeds: Sequence[int], patch_sizes: Sequence[int] = PATCH_SIZES, steps: int = STEPS,
        reference: int = REFERENCE_PATCH, seconds: Mapping[int, float] | None = None,
        train_size: int | None = None) -> dict:
    """Both budgets for every patch size and seed, equal steps first.

    ``seconds`` (CPU seconds per step by patch size) fixes the equal-seconds step counts instead of the
    equal-steps runs' own CPU times. A run with the same patch size, steps and seed in both budgets (the reference
    patch size) is trained once and reported in both.
    """
    model_cfg, train_cfg = PRESETS[PRESET]
    image_size = model_cfg.image_size[0]
    patch_sizes = check_patch_sizes(list(patch_sizes), image_size)
    if reference not in patch_sizes:
        raise ValueError(f"reference patch size {reference} is not among the patch sizes {list(patch_sizes)}")
    if len(seeds) < 2:
        raise ValueError(f"paired differences need at least 2 seeds, got {list(seeds)}")
    if seconds is not None and set(seconds) != set(patch_sizes):
        raise ValueError(f"seconds per step given for patch sizes {sorted(seconds)}, need {list(patch_sizes)}")
    train_size = train_cfg.train_size if train_size is None else train_size
    start, cpu_start = time.perf_counter(), time.process_time()
    splits = {s: shapes_splits(dataclasses.replace(train_cfg, train_size=train_size, seed=s), image_size) for s in seeds}
    done: dict[tuple[int, int, int], dict] = {}

    def arm(budget: str, counts: Mapping[int, int]) -> list[dict]:
        rows = []
        for p in patch_sizes:
            for seed in seeds:
                key = (p, counts[p], seed)
                if key not in done:
                    done[key] = train_one(*key, splits=splits[seed])
                    print(f"P = {p:2d}, {key[1]:5d} steps, seed {seed}: test accuracy "
                          f"{100 * done[key]['test_accuracy']:.1f}% in {done[key]['cpu_seconds']:.1f} CPU s",
                          flush=True)
                rows.append({"budget": budget, **done[key]})
        return rows

    step_counts = {"equal steps": dict.fromkeys(patch_sizes, steps)}
    runs = arm("equal steps", step_counts["equal steps"])
    measured = seconds is None
    per_step = cpu_seconds_per_step(runs) if measured else {p: float(seconds[p]) for p in patch_sizes}
    step_counts["equal seconds"] = equal_seconds_steps(per_step, steps, reference)
    runs += arm("equal seconds", step_counts["equal seconds"])
    return {
        "preset": PRESET, "image_size": image_size, "patch_sizes": list(patch_sizes),
        "tokens": {str(p): (image_size // p) ** 2 for p in patch_sizes}, "reference_patch": reference,
        "steps": steps, "train_size": train_size, "batch_size": train_cfg.batch_size, "seeds": list(seeds),
        "cpu_seconds_per_step": {str(p): round(s, 6) for p, s in per_step.items()}, "seconds_measured": measured,
        "budget_cpu_seconds": round(steps * per_step[reference], 2),
        "step_counts": {b: {str(p): n for p, n in c.items()} for b, c in step_counts.items()},
        "runs": runs, "torch": torch.__version__, "threads": torch.get_num_threads(),
        "seconds": round(time.perf_counter() - start, 1), "cpu_seconds": round(time.process_time() - cpu_start, 1),
    }


def parse_seconds(items: Sequence[str]) -> dict[int, float]:
    """``["4=0.09", "8=0.023"]`` → ``{4: 0.09, 8: 0.023}`` (CPU seconds per step by patch size)."""
    out = {}
    for item in items:
        p, sep, s = item.partition("=")
        try:
            out[int(p)] = float(s)
        except ValueError:
            raise ValueError(f"--seconds-per-step takes PATCH=SECONDS items, got {item!r}") from None
        if not sep:
            raise ValueError(f"--seconds-per-step takes PATCH=SECONDS items, got {item!r}")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--seconds-per-step", nargs="+", metavar="PATCH=SECONDS",
                        help="CPU seconds per step, e.g. those a shipped JSON recorded, to rerun its step counts")
    parser.add_argument("--train-size", type=int, help="training images (default: the preset's)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    seconds = parse_seconds(args.seconds_per_step) if args.seconds_per_step else None
    result = run(args.seeds, steps=args.steps, seconds=seconds, train_size=args.train_size)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"CPU seconds per step {result['cpu_seconds_per_step']}, steps {result['step_counts']}, "
          f"{result['seconds']:.0f} s in all ({result['cpu_seconds']:.0f} CPU s) → {args.out}")


if __name__ == "__main__":
    main()
