"""``python -m vit_edu.training --config shapes-vit --out vit_edu/checkpoints/shapes_vit.pt``: train a preset on the
shapes task (or a local CIFAR-10) and write a small checkpoint. Chapters load the shipped checkpoints instead.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from vit_edu.config import POS_EMBEDS
from vit_edu.training.checkpoint import save_checkpoint
from vit_edu.training.presets import PRESETS, fit_preset


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Train a small ViT (on the shapes task, or on a local CIFAR-10) and save a checkpoint.")
    parser.add_argument("--config", "--preset", dest="preset", choices=sorted(PRESETS), default="shapes-vit",
                        help="a named model + training preset from vit_edu.training.PRESETS")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--train-size", dest="train_size", type=int)
    parser.add_argument("--pos-embed", dest="pos_embed", choices=list(POS_EMBEDS))
    parser.add_argument("--mix", choices=["none", "cutmix", "mixup", "both"])
    parser.add_argument("--batch-size", dest="batch_size", type=int)
    parser.add_argument("--warmup-steps", dest="warmup_steps", type=int)
    parser.add_argument("--data", choices=["shapes", "cifar10"], default="shapes",
                        help="the generated shapes task, or CIFAR-10 from --root (e.g. --config cifar10-vit)")
    parser.add_argument("--root", type=Path, help="for --data cifar10: the folder that holds cifar-10-batches-py")
    parser.add_argument("--download", action="store_true", help="for --data cifar10: download it into --root first")
    args = parser.parse_args(argv)
    if args.data == "cifar10" and args.root is None:
        parser.error("--data cifar10 needs --root DIR (the folder that holds cifar-10-batches-py)")
    names = ("steps", "seed", "train_size", "pos_embed", "mix", "batch_size", "warmup_steps")
    overrides = {k: getattr(args, k) for k in names if getattr(args, k) is not None}
    model, train_cfg, history, metrics = fit_preset(args.preset, data=args.data, root=args.root,
                                                    download=args.download, **overrides)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_checkpoint(args.out, model, train_cfg, history, metrics)
    print(json.dumps(metrics), f"→ {args.out} ({args.out.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
