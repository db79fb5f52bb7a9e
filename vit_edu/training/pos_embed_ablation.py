"""Position-embedding ablation on the shapes task (cf. the ViT paper's Table 8): none, learned 1-D, sin-cos 2-D, relative bias.

``python -m vit_edu.training.pos_embed_ablation --seeds 0 1 2 3 4 --out vit_edu/checkpoints/pos_embed_ablation.json``
trains the preset once per kind and seed and stores the test accuracies (and training seconds) as a small JSON file.
With ``--add`` the seeds already in ``--out`` are kept and only the missing ones are trained.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import torch

from vit_edu.config import POS_EMBEDS
from vit_edu.training import PRESETS, fit_preset
from vit_edu.training.presets import experiment_parser, preset_overrides


def kept_results(path: Path, preset: str, **overrides) -> dict[str, list[dict]]:
    """The rows already in ``path``, checked to come from the same preset, step count and training-set size."""
    data = json.loads(path.read_text())
    train_cfg = dataclasses.replace(PRESETS[preset][1], **overrides)
    wanted = {"preset": preset, "steps": train_cfg.steps, "train_size": train_cfg.train_size}
    for kind, rows in data["results"].items():
        for row in rows:
            found = {"preset": data["preset"], "steps": row["steps"], "train_size": row["train_size"]}
            if found != wanted:
                raise ValueError(f"{path} holds {kind} seed {row['seed']} with {found}, but this run uses {wanted}: "
                                 "drop --add to retrain every seed")
    return data["results"]


def run(preset: str, seeds: list[int], kept: dict[str, list[dict]] | None = None, **overrides) -> dict:
    """Test accuracy and seconds for every position-embedding kind and seed (``overrides`` as in ``fit_preset``).

    Rows in ``kept`` are reused; only the (kind, seed) pairs they lack are trained.
    """
    results = {kind: list((kept or {}).get(kind, [])) for kind in POS_EMBEDS}
    for kind in POS_EMBEDS:
        have = {row["seed"] for row in results[kind]}
        for seed in seeds:
            if seed in have:
                continue
            _, train_cfg, _, metrics = fit_preset(preset, progress=False, **overrides, pos_embed=kind, seed=seed)
            print(f"{kind:8s} seed {seed}: test accuracy {100 * metrics['test_accuracy']:.2f}% "
                  f"in {metrics['train_seconds']:.0f} s", flush=True)
            results[kind].append({"seed": seed, "steps": train_cfg.steps,
                                  "train_size": train_cfg.train_size, **metrics})
        results[kind].sort(key=lambda row: row["seed"])
    return results


def main(argv: list[str] | None = None) -> None:
    parser = experiment_parser(__doc__, seeds=[0, 1])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="shapes-vit")
    parser.add_argument("--add", action="store_true", help="keep the seeds already in --out; train only new ones")
    args = parser.parse_args(argv)
    overrides = preset_overrides(args)
    kept = kept_results(args.out, args.preset, **overrides) if args.add and args.out.exists() else None
    results = run(args.preset, args.seeds, kept, **overrides)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"preset": args.preset, "torch": torch.__version__,
                                    "threads": torch.get_num_threads(), "results": results}, indent=1))
    print(f"→ {args.out}")


if __name__ == "__main__":
    main()
