"""Chapter 11's position-embedding ablation on tasks whose answer is where things are (:mod:`vit_edu.data.arrangement`).

``python -m vit_edu.training.positions_matter --seeds 0 1 2 --out vit_edu/checkpoints/positions_matter.json``
trains the ``shapes-vit`` recipe once per task, position embedding (none, learned 1-D, sin-cos 2-D, relative bias)
and seed, on the same number of images and steps as the shapes ablation, and stores test accuracies and seconds.
With ``--add`` the arms already in ``--out`` (same seeds) are kept and only the missing ones are trained.
"""

from __future__ import annotations

import json
import time

import torch

from vit_edu.config import POS_EMBEDS
from vit_edu.data.arrangement import ARRANGEMENT_TASKS, arrangement_split
from vit_edu.training.presets import PRESETS, experiment_parser, fit_preset, preset_overrides

PRESET = "shapes-vit"


def run_one(task: str, pos_embed: str, seed: int, **overrides) -> dict:
    """Train one arm on ``task`` from scratch: its test accuracy, steps and seconds."""
    model_cfg, train_cfg = PRESETS[PRESET]
    train_size = overrides.get("train_size", train_cfg.train_size)
    splits = tuple(arrangement_split(task, split, size, image_size=model_cfg.image_size[0], seed=seed)
                   for split, size in (("train", train_size), ("val", 1000), ("test", 1000)))
    start = time.process_time()
    _, cfg, _, metrics = fit_preset(PRESET, progress=False, splits=splits, pos_embed=pos_embed, seed=seed, **overrides)
    return {"seed": seed, "steps": cfg.steps, "train_size": cfg.train_size,
            "cpu_seconds": round(time.process_time() - start, 1), **metrics}


def run(tasks: list[str], seeds: list[int], kept: dict | None = None,
        **overrides) -> dict[str, dict[str, list[dict]]]:
    """Rows per task and position embedding, one per seed (the same seeds in every arm: paired by seed).

    Arms in ``kept`` (task → kind → rows) whose seeds are ``seeds`` are reused, not trained again.
    """
    results: dict[str, dict[str, list[dict]]] = {}
    for task in tasks:
        results[task] = {}
        for kind in POS_EMBEDS:
            rows = (kept or {}).get(task, {}).get(kind)
            if rows is not None and [r["seed"] for r in rows] == list(seeds):
                results[task][kind] = rows
                continue
            results[task][kind] = []
            for seed in seeds:
                row = run_one(task, kind, seed, **overrides)
                print(f"{task:8s} {kind:8s} seed {seed}: test accuracy {100 * row['test_accuracy']:.1f}% "
                      f"in {row['cpu_seconds']:.0f} CPU s", flush=True)
                results[task][kind].append(row)
    return results


def main(argv: list[str] | None = None) -> None:
    parser = experiment_parser(__doc__)
    parser.add_argument("--tasks", nargs="+", choices=sorted(ARRANGEMENT_TASKS), default=sorted(ARRANGEMENT_TASKS))
    parser.add_argument("--add", action="store_true", help="keep the arms already in --out; train only new ones")
    args = parser.parse_args(argv)
    overrides = preset_overrides(args)
    kept = json.loads(args.out.read_text())["results"] if args.add and args.out.exists() else None
    start = time.time()
    results = run(args.tasks, args.seeds, kept, **overrides)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "preset": PRESET, "classes": {t: list(ARRANGEMENT_TASKS[t]) for t in args.tasks}, "torch": torch.__version__,
        "threads": torch.get_num_threads(), "seconds": round(time.time() - start, 1), "results": results}, indent=1))
    print(f"→ {args.out}")


if __name__ == "__main__":
    main()
