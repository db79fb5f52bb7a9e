"""Regularisation measured on the shapes task: none, crop + flip, label smoothing, CutMix, DropPath, dropout, RandAugment.

``python -m vit_edu.training.regularisation --seeds 0 1 2 --out vit_edu/checkpoints/regularisation.json`` trains the
``shapes-vit`` preset on a small training set once per arm and seed, long enough for the arm without regularisation
to fit its training images, so that a train/test gap exists for the regularisers to close. It stores accuracy and
loss on test images and on the arm's own clean training images (no augmentation, eval mode), and the seconds.
``--train-size 20000`` repeats chosen arms on ten times the images; ``--add-to FILE`` adds arms to a file made
with the same budget.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from vit_edu.training.loop import evaluate
from vit_edu.training.presets import fit_preset, shapes_splits

# Each arm changes one setting from the preset (whose label smoothing is 0 and which has no augmentation).
ARMS: dict[str, dict] = {
    "none": {},
    "crop + flip": {"augment": "crop-flip"},
    "label smoothing 0.1": {"label_smoothing": 0.1},
    "CutMix": {"mix": "cutmix"},
    "DropPath 0.1": {"drop_path_rate": 0.1},
    "dropout 0.1": {"dropout": 0.1},  # the ViT paper's regulariser: after the embedding, attention and MLP
    "RandAugment": {"augment": "randaugment"},  # seed 003's RandAugment(num_ops=2, magnitude=9)
}
BUDGET: dict[str, int] = {"steps": 1200, "train_size": 2000, "eval_every": 1200, "warmup_steps": 60}


def run_one(arm: str, seed: int, **settings) -> dict:
    """Train one arm on one seed; test metrics, and accuracy and loss on its own clean training images."""
    model, cfg, _, metrics = fit_preset("shapes-vit", progress=False, **settings, **ARMS[arm], seed=seed)
    train_set = shapes_splits(cfg, model.config.image_size[0])[0]  # the same images the arm trained on
    fit = evaluate(model, train_set.images, train_set.labels)  # eval mode, no augmentation or mixing
    return {"seed": seed, "train_accuracy": fit["accuracy"], "train_loss": fit["loss"], **metrics}


def run(seeds: list[int], arms: list[str] | None = None, **budget) -> dict:
    """Train and test metrics for every arm and seed; ``budget`` overrides ``BUDGET`` (steps, train_size, ...)."""
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
            row = run_one(arm, seed, **settings)
            print(f"{arm:20s} seed {seed}: train accuracy {100 * row['train_accuracy']:.1f}%, "
                  f"test accuracy {100 * row['test_accuracy']:.1f}% in {row['train_seconds']:.0f} s", flush=True)
            results.setdefault(arm, []).append(row)
    return {"preset": "shapes-vit", "budget": settings, "arms": {a: ARMS[a] for a in arms},
            "torch": torch.__version__, "threads": torch.get_num_threads(), "results": results}


def merge(old: dict, new: dict) -> dict:
    """``old``'s arms and results followed by ``new``'s; both must share the budget and seeds, and no arm twice."""
    if old["budget"] != new["budget"]:
        raise ValueError(f"budgets differ: {old['budget']} in the file, {new['budget']} in this run")
    old_seeds = {tuple(r["seed"] for r in rows) for rows in old["results"].values()}
    new_seeds = {tuple(r["seed"] for r in rows) for rows in new["results"].values()}
    if old_seeds != new_seeds:
        raise ValueError(f"seeds differ: {sorted(old_seeds)} in the file, {sorted(new_seeds)} in this run")
    twice = sorted(set(old["arms"]) & set(new["arms"]))
    if twice:
        raise ValueError(f"arm(s) {twice} already in the file")
    added = {"arms": list(new["arms"]), "torch": new["torch"], "threads": new["threads"]}
    return {**old, "arms": {**old["arms"], **new["arms"]}, "results": {**old["results"], **new["results"]},
            "added": old.get("added", []) + [added]}


def summarise(data: dict, metric: str = "test_accuracy") -> dict[str, dict[str, float]]:
    """Per arm: mean, min and max of ``metric`` (a key of every result row) over the seeds, and the number of seeds."""
    out = {}
    for arm, rows in data["results"].items():
        missing = [r["seed"] for r in rows if metric not in r]
        if missing:
            raise KeyError(f"metric {metric!r} missing for arm {arm!r}, seeds {missing}")
        values = [r[metric] for r in rows]
        out[arm] = {"mean": sum(values) / len(values), "min": min(values), "max": max(values), "n": len(values)}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, help="override the step budget (for a quick check)")
    parser.add_argument("--train-size", dest="train_size", type=int)
    parser.add_argument("--arms", nargs="+", choices=list(ARMS))
    parser.add_argument("--add-to", dest="add_to", type=Path, help="keep this file's arms and add the new ones")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    budget = {k: getattr(args, k) for k in ("steps", "train_size") if getattr(args, k) is not None}
    if "steps" in budget:  # a quick check: evaluate once, keep the warm-up inside the shorter run
        budget["eval_every"] = budget["steps"]
        budget["warmup_steps"] = min(60, budget["steps"] // 10)
    data = run(args.seeds, args.arms, **budget)
    if args.add_to is not None:
        data = merge(json.loads(args.add_to.read_text()), data)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"→ {args.out}")


if __name__ == "__main__":
    main()
