"""Regularisation measured on the shapes task: none, crop + flip, label smoothing, CutMix, DropPath, over seeds.

``python -m vit_edu.training.regularisation --seeds 0 1 2 --out vit_edu/checkpoints/regularisation.json`` trains the
``shapes-vit`` preset on a small training set (so that there is something to regularise) once per arm and seed,
with a short budget, and stores test accuracy, test loss and seconds as a small JSON file that chapter 9 reads.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from vit_edu.training import fit_preset

# Each arm changes one setting from the preset (whose label smoothing is 0 and which has no augmentation).
ARMS: dict[str, dict] = {
    "none": {},
    "crop + flip": {"augment": "crop-flip"},
    "label smoothing 0.1": {"label_smoothing": 0.1},
    "CutMix": {"mix": "cutmix"},
    "DropPath 0.1": {"drop_path_rate": 0.1},
}
BUDGET: dict[str, int] = {"steps": 400, "train_size": 2000, "eval_every": 400, "warmup_steps": 40}


def run(seeds: list[int], arms: list[str] | None = None, **budget) -> dict:
    """Test metrics for every arm and seed; ``budget`` overrides ``BUDGET`` (steps, train_size, eval_every)."""
    if not seeds:
        raise ValueError("seeds must name at least one seed")
    arms = list(ARMS) if arms is None else arms
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        raise ValueError(f"unknown arm(s) {unknown}; choose from {list(ARMS)}")
    settings = {**BUDGET, **budget}
    results: dict[str, list[dict]] = {}
    for arm in arms:
        for seed in seeds:
            _, _, _, metrics = fit_preset("shapes-vit", progress=False, **settings, **ARMS[arm], seed=seed)
            print(f"{arm:20s} seed {seed}: test accuracy {100 * metrics['test_accuracy']:.1f}% "
                  f"in {metrics['train_seconds']:.0f} s", flush=True)
            results.setdefault(arm, []).append({"seed": seed, **metrics})
    return {"preset": "shapes-vit", "budget": settings, "arms": {a: ARMS[a] for a in arms},
            "torch": torch.__version__, "threads": torch.get_num_threads(), "results": results}


def summarise(data: dict) -> dict[str, dict[str, float]]:
    """Per arm: mean, min and max test accuracy over the seeds, and the number of seeds."""
    out = {}
    for arm, rows in data["results"].items():
        acc = [r["test_accuracy"] for r in rows]
        out[arm] = {"mean": sum(acc) / len(acc), "min": min(acc), "max": max(acc), "n": len(acc)}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, help="override the step budget (for a quick check)")
    parser.add_argument("--train-size", dest="train_size", type=int)
    parser.add_argument("--arms", nargs="+", choices=list(ARMS))
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    budget = {k: getattr(args, k) for k in ("steps", "train_size") if getattr(args, k) is not None}
    if "steps" in budget:  # a quick check: evaluate once, keep the warm-up inside the shorter run
        budget["eval_every"] = budget["steps"]
        budget["warmup_steps"] = min(60, budget["steps"] // 10)
    data = run(args.seeds, args.arms, **budget)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"→ {args.out}")


if __name__ == "__main__":
    main()
