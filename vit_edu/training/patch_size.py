"""Chapter 8's experiment: does the patch size change what a ViT learns, not only what it costs?

The ``shapes-vit`` preset trains on 32×32 images with patches of 4, 8 and 16 (grids of 8×8, 4×4 and 2×2
tokens), under two budgets: the same number of steps for every patch size, and the same seconds. For the
second, the seconds per step of each patch size are measured first (one short probe, before any training);
each patch size then gets as many steps as fit in the seconds that the reference patch size (the preset's 8)
needs for the common step count. The JSON keeps the measured seconds per step and the step counts they gave,
so the equal-seconds arm reruns as a fixed number of steps (``--seconds-per-step``) on any machine.

    python -m vit_edu.training.patch_size --seeds 0 1 2 --out vit_edu/checkpoints/patch_size.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import torch

from vit_edu.model import VisionTransformer
from vit_edu.training.bench import seconds_per_step
from vit_edu.training.presets import PRESETS, fit_preset, shapes_splits

PRESET = "shapes-vit"
PATCH_SIZES = (4, 8, 16)
REFERENCE_PATCH = 8  # the preset's own patch size: its seconds for STEPS steps set the equal-seconds budget
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
    ``steps * seconds[reference]``, and patch size P gets ``round(budget / seconds[P])`` steps.
    """
    if reference not in seconds:
        raise ValueError(f"reference patch size {reference} has no measured seconds per step; have {sorted(seconds)}")
    bad = {p: s for p, s in seconds.items() if not s > 0}
    if bad or steps <= 0:
        raise ValueError(f"need steps > 0 and seconds per step > 0, got steps={steps}, non-positive seconds {bad}")
    budget = steps * seconds[reference]
    return {p: max(1, round(budget / s)) for p, s in seconds.items()}


def measure_seconds_per_step(patch_sizes: Sequence[int], probe: int = 10, rounds: int = 3) -> dict[int, float]:
    """Seconds of one training step of the preset at each patch size (batch and optimiser as in training).

    The patch sizes take turns for ``rounds`` rounds of ``probe`` timed steps each, and each keeps its fastest
    round's median: on a shared machine, load that comes and goes then slows every patch size alike or none.
    """
    model_cfg, train_cfg = PRESETS[PRESET]
    probe_set = shapes_splits(dataclasses.replace(train_cfg, train_size=train_cfg.batch_size), model_cfg.image_size[0])[0]
    models = {}
    for p in patch_sizes:
        torch.manual_seed(0)
        models[p] = VisionTransformer(dataclasses.replace(model_cfg, patch_size=p))
    times: dict[int, list[float]] = {p: [] for p in patch_sizes}
    for _ in range(rounds):
        for p, model in models.items():
            times[p].append(seconds_per_step(model, probe_set, train_cfg, probe=probe))
    return {p: min(t) for p, t in times.items()}


def train_one(patch: int, steps: int, seed: int, train_size: int) -> dict:
    """The preset at patch size ``patch`` for ``steps`` steps: test accuracy and loss, training seconds.

    Warm-up stays the preset's 60 steps; only runs shorter than 120 steps (the tests) warm up for half their steps.
    """
    warmup = min(PRESETS[PRESET][1].warmup_steps, steps // 2)
    _, _, _, metrics = fit_preset(PRESET, progress=False, patch_size=patch, steps=steps, warmup_steps=warmup,
                                  eval_every=steps, train_size=train_size, seed=seed)
    return {"patch": patch, "seed": seed, "steps": steps, **metrics}


def run(seeds: Sequence[int], patch_sizes: Sequence[int] = PATCH_SIZES, steps: int = STEPS,
        reference: int = REFERENCE_PATCH, seconds: Mapping[int, float] | None = None,
        train_size: int | None = None) -> dict:
    """Both budgets for every patch size and seed; ``seconds`` (seconds per step by patch size) skips the probe.

    A run with the same patch size, steps and seed in both budgets (the reference patch size) is trained once.
    """
    model_cfg, train_cfg = PRESETS[PRESET]
    image_size = model_cfg.image_size[0]
    patch_sizes = check_patch_sizes(list(patch_sizes), image_size)
    if reference not in patch_sizes:
        raise ValueError(f"reference patch size {reference} is not among the patch sizes {list(patch_sizes)}")
    if len(seeds) < 2:
        raise ValueError(f"paired differences need at least 2 seeds, got {list(seeds)}")
    train_size = train_cfg.train_size if train_size is None else train_size
    start = time.perf_counter()
    measured = seconds is None
    if measured:
        seconds = measure_seconds_per_step(patch_sizes)
    seconds = {p: float(seconds[p]) for p in patch_sizes}
    step_counts = {"equal steps": dict.fromkeys(patch_sizes, steps),
                   "equal seconds": equal_seconds_steps(seconds, steps, reference)}
    done: dict[tuple[int, int, int], dict] = {}
    runs = []
    for budget in BUDGETS:
        for p in patch_sizes:
            for seed in seeds:
                key = (p, step_counts[budget][p], seed)
                if key not in done:
                    done[key] = train_one(*key, train_size=train_size)
                    print(f"P = {p:2d}, {key[1]:5d} steps, seed {seed}: test accuracy "
                          f"{100 * done[key]['test_accuracy']:.1f}% in {done[key]['train_seconds']:.0f} s", flush=True)
                runs.append({"budget": budget, **done[key]})
    return {
        "preset": PRESET, "image_size": image_size, "patch_sizes": list(patch_sizes),
        "tokens": {str(p): (image_size // p) ** 2 for p in patch_sizes}, "reference_patch": reference,
        "steps": steps, "train_size": train_size, "batch_size": train_cfg.batch_size, "seeds": list(seeds),
        "seconds_per_step": {str(p): round(s, 5) for p, s in seconds.items()}, "seconds_measured": measured,
        "budget_seconds": round(steps * seconds[reference], 2),
        "step_counts": {b: {str(p): n for p, n in c.items()} for b, c in step_counts.items()},
        "runs": runs, "torch": torch.__version__, "threads": torch.get_num_threads(),
        "seconds": round(time.perf_counter() - start, 1),
    }


def parse_seconds(items: Sequence[str]) -> dict[int, float]:
    """``["4=0.09", "8=0.023"]`` → ``{4: 0.09, 8: 0.023}`` (seconds per step by patch size)."""
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
                        help="skip the probe: e.g. the values a shipped JSON recorded, to rerun its step counts")
    parser.add_argument("--train-size", type=int, help="training images (default: the preset's)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    seconds = parse_seconds(args.seconds_per_step) if args.seconds_per_step else None
    result = run(args.seeds, steps=args.steps, seconds=seconds, train_size=args.train_size)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"seconds per step {result['seconds_per_step']}, steps {result['step_counts']}, "
          f"{result['seconds']:.0f} s in all → {args.out}")


if __name__ == "__main__":
    main()
