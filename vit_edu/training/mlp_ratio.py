"""The MLP's expansion ratio on the shapes task (chapter 7): hidden width 1×, 2× (the preset), 4× (the paper) and 8× D.

``python -m vit_edu.training.mlp_ratio --seeds 0 1 2 --out vit_edu/checkpoints/mlp_ratio.json`` trains the
``shapes-vit`` recipe once per ratio and seed at equal steps and stores parameters, CPU seconds and test accuracy.
"""

from __future__ import annotations

import json
import time

import torch

from vit_edu.trace import count_parameters
from vit_edu.training.presets import PRESETS, experiment_parser, fit_preset, preset_overrides

PRESET = "shapes-vit"
RATIOS = (1, 2, 4, 8)


def run_one(ratio: int, seed: int, **overrides) -> dict:
    """One run at hidden width ``ratio · D``: its parameters, CPU seconds and test accuracy."""
    if ratio not in RATIOS:
        raise ValueError(f"ratio must be one of {RATIOS}, got {ratio!r}")
    width = ratio * PRESETS[PRESET][0].embed_dim
    start = time.process_time()
    model, cfg, _, metrics = fit_preset(PRESET, progress=False, mlp_dim=width, seed=seed, **overrides)
    return {"seed": seed, "mlp_dim": width, "parameters": count_parameters(model), "steps": cfg.steps,
            "cpu_seconds": round(time.process_time() - start, 1), **metrics}


def main(argv: list[str] | None = None) -> None:
    parser = experiment_parser(__doc__)
    args = parser.parse_args(argv)
    overrides = preset_overrides(args)
    start = time.time()
    results = {}
    for ratio in RATIOS:
        results[str(ratio)] = []
        for seed in args.seeds:
            row = run_one(ratio, seed, **overrides)
            print(f"{ratio}× D seed {seed}: {100 * row['test_accuracy']:.1f}% in {row['cpu_seconds']:.0f} CPU s", flush=True)
            results[str(ratio)].append(row)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"preset": PRESET, "embed_dim": PRESETS[PRESET][0].embed_dim, "torch": torch.__version__,
                                    "threads": torch.get_num_threads(), "seconds": round(time.time() - start, 1),
                                    "results": results}, indent=1))
    print(f"→ {args.out}")


if __name__ == "__main__":
    main()
