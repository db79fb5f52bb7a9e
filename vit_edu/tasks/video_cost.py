"""Chapter 20's cost measurement: multiply-adds and seconds per training step as the clip grows longer.

The chapter's model (:data:`vit_edu.tasks.video_train.ARMS`' widths: D = 64, 2 blocks, 4 heads, 32-pixel frames in
8-pixel patches, N = 16 tokens a frame) with space-only (S), joint (ST) and divided (T+S) attention, at
T = 2 … 128 frames. For each: the multiply-adds of one forward pass counted from the shapes
(:func:`vit_edu.tasks.video.attention_macs`), and the seconds of one forward and backward pass of a batch of
``--batch`` random clips, the best of ``--repeats`` after one untimed call, in CPU seconds of the calling thread on
ONE thread (as chapter 14's :mod:`vit_edu.variants.attention_cost`). The exponent k of cost ∝ T^k is the slope
of a least-squares line through the log-log points, over all T and over the long clips (T ≥ ``LONG_T``).

    OMP_NUM_THREADS=1 python -m vit_edu.tasks.video_cost --out vit_edu/checkpoints/video_cost.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from vit_edu.tasks.video import ATTENTIONS, SHORT_NAMES, VideoConfig, VideoTransformer, attention_macs
from vit_edu.variants.attention_cost import best_seconds, fit_exponent

FRAMES = (2, 4, 8, 16, 32, 64, 128)
LONG_T = 16  # the "long" exponents are fitted on T >= this, where joint attention's T² part dominates its count


def step_call(config: VideoConfig, batch: int):
    """A zero-argument call: one forward and backward pass of ``batch`` random clips (loss: the logits' sum)."""
    torch.manual_seed(0)
    model = VideoTransformer(config)
    clips = torch.rand(batch, config.frames, 3, config.image_size, config.image_size)

    def call() -> None:
        model.zero_grad(set_to_none=True)
        model(clips).sum().backward()

    return call


def measure(frames: Sequence[int] = FRAMES, batch: int = 4, repeats: int = 5) -> dict:
    """Every attention at every T: multiply-adds (attention and the rest), seconds per step; and the exponents."""
    bad = [t for t in frames if isinstance(t, bool) or not isinstance(t, int) or t < 2]
    if bad or len(frames) < 2:
        raise ValueError(f"frames must be at least two whole numbers ≥ 2, got {list(frames)}")
    rows: dict[str, list[dict]] = {SHORT_NAMES[a]: [] for a in ATTENTIONS}
    for t in frames:
        for attention in ATTENTIONS:
            config = VideoConfig(frames=t, attention=attention)
            seconds = best_seconds(step_call(config, batch), repeats)
            macs = attention_macs(config)
            rows[SHORT_NAMES[attention]].append({"frames": t, "seconds": seconds, **macs})
            print(f"T = {t:3d}  {SHORT_NAMES[attention]:4s} {macs['tokens']:5d} tokens  {seconds * 1e3:9.1f} ms  "
                  f"{macs['total'] / 1e6:8.1f} M multiply-adds ({macs['attention'] / 1e6:7.1f} M attention)",
                  flush=True)
    exponents = {}
    for name, runs in rows.items():
        spans = {"all": runs, "long": [r for r in runs if r["frames"] >= LONG_T]}
        exponents[name] = {f"{what}_{span}": fit_exponent([r["frames"] for r in pick], [r[key] for r in pick])
                           for what, key in (("time", "seconds"), ("macs", "total"), ("attention_macs", "attention"))
                           for span, pick in spans.items() if len(pick) >= 2}  # "long" needs two clips ≥ LONG_T
    return {
        "setting": {**dataclasses.asdict(VideoConfig()), "frames": list(frames), "batch": batch, "repeats": repeats,
                    "long_t": LONG_T, "threads": torch.get_num_threads(),
                    "timing": f"best of {repeats} forward + backward passes after one untimed pass, "
                              "CPU time of the calling thread",
                    "macs": "one forward pass of one clip, counted from the shapes"},
        "machine": {"torch": torch.__version__, "processor": platform.processor() or platform.machine(),
                    "cpu_capability": torch.backends.cpu.get_cpu_capability()},
        "runs": rows,
        "exponents": exponents,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    start = time.process_time()
    result = measure(FRAMES, args.batch, args.repeats)
    result["seconds"] = time.process_time() - start
    for name, k in result["exponents"].items():
        print(f"{name:4s} " + "  ".join(f"{key} {value:.2f}" for key, value in k.items()))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
