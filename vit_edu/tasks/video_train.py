"""Chapter 20's accuracy experiment: which attention tells left from right on the motion clips?

Arms (one model each, same widths, recipe, clips and seeds): space-only (S), joint space-time (ST), divided (T+S)
with frame patches, joint attention over tubelets (ViViT's 2×P×P blocks), and a control: space-only attention with
a time position table (frames still never attend to each other, but each token knows its frame's index). For
each seed: train on ``--train-size`` clips of :func:`vit_edu.data.clips.clip_split`, score on the test clips and
on the same clips played backwards (every label flips). Writes one JSON with every arm's per-seed numbers and
seconds, and optionally seed 0's weights of the arms the widget shows (half precision)::

    OMP_NUM_THREADS=1 python -m vit_edu.tasks.video_train --seeds 0 1 2 \
        --out vit_edu/checkpoints/video.json --model vit_edu/checkpoints/video.pt
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from vit_edu.data.clips import clip_split
from vit_edu.tasks.video import VideoConfig, VideoTransformer
from vit_edu.training import TrainConfig, make_optimizer

ARMS: dict[str, VideoConfig] = {
    "S": VideoConfig(attention="space"),
    "S + time table": VideoConfig(attention="space", time_embed=True),  # frames still apart, but each knows its index
    "ST": VideoConfig(attention="joint"),
    "T+S": VideoConfig(attention="divided"),
    "ST, tubelets": VideoConfig(attention="joint", tokens="tubelets"),
}
WIDGET_ARMS = ("ST", "T+S")  # the attentions the widget shows; their seed-0 weights go into --model
RUN = TrainConfig(steps=600, batch_size=32, lr=2e-3, weight_decay=0.05, warmup_steps=60, label_smoothing=0.0,
                  train_size=4000, eval_every=400)
TEST_SIZE = 500


def train_video(model: VideoTransformer, clips: torch.Tensor, labels: torch.Tensor, cfg: TrainConfig,
                seed: int) -> list[float]:
    """``cfg.steps`` AdamW steps of cross-entropy on shuffled batches (a new shuffle each pass); every step's loss."""
    gen = torch.Generator().manual_seed(seed)
    optimizer, scheduler = make_optimizer(model, cfg)
    model.train()
    losses, perm, cursor = [], torch.randperm(len(labels), generator=gen), 0
    for _ in range(cfg.steps):
        if cursor + cfg.batch_size > len(perm):
            perm, cursor = torch.randperm(len(labels), generator=gen), 0
        idx = perm[cursor : cursor + cfg.batch_size]
        cursor += cfg.batch_size
        loss = F.cross_entropy(model(clips[idx]), labels[idx])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    model.eval()
    return losses


@torch.no_grad()
def predict(model: VideoTransformer, clips: torch.Tensor, batch: int = 250) -> torch.Tensor:
    """Predicted labels ``(n,)`` of ``(n, T, 3, H, W)`` clips, in eval mode."""
    model.eval()
    return torch.cat([model(clips[i : i + batch]).argmax(1) for i in range(0, len(clips), batch)])


def score(model: VideoTransformer, clips: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
    """Accuracy on the clips, on the clips reversed in time (labels flipped), and how often both predictions agree.

    A model blind to the frames' order agrees on every clip, so its two accuracies add up to exactly 1.
    """
    forward, backward = predict(model, clips), predict(model, clips.flip(1))
    return {"accuracy": (forward == labels).float().mean().item(),
            "reversed_accuracy": (backward == 1 - labels).float().mean().item(),
            "same_prediction_reversed": (forward == backward).float().mean().item()}


def run_arm(config: VideoConfig, seed: int, cfg: TrainConfig, data: dict) -> tuple[VideoTransformer, dict]:
    """Train one arm for one seed; the model and its record (accuracies, CPU seconds, final loss)."""
    torch.manual_seed(seed)
    model = VideoTransformer(config)
    start = time.process_time()
    losses = train_video(model, *data["train"], cfg, seed)
    seconds = time.process_time() - start
    record = {"seed": seed, "train_seconds": seconds, "final_loss": sum(losses[-20:]) / 20,
              "loss_curve": losses[:: max(1, cfg.steps // 40)],
              "parameters": sum(p.numel() for p in model.parameters()),
              "train_accuracy": score(model, *data["train_eval"])["accuracy"], **score(model, *data["test"])}
    return model, record


def save_models(path: Path, models: dict[str, VideoTransformer]) -> None:
    """Half-precision weights and configs of the given arms, for the chapter and its widget."""
    torch.save({name: {"config": dataclasses.asdict(m.config),
                       "state_dict": {k: v.half() for k, v in m.state_dict().items()}}
                for name, m in models.items()}, path)


def load_models(path: str | Path) -> dict[str, VideoTransformer]:
    """The shipped arms (eval mode, float32); torch's random state is left alone."""
    data = torch.load(path, map_location="cpu", weights_only=True)
    models = {}
    for name, entry in data.items():
        with torch.random.fork_rng(devices=[]):
            model = VideoTransformer(VideoConfig(**entry["config"]))
        model.load_state_dict({k: v.float() for k, v in entry["state_dict"].items()})
        models[name] = model.eval()
    return models


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="S, ST, T+S and tubelets on the motion clips, over seeds.")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--steps", type=int, default=RUN.steps)
    parser.add_argument("--train-size", type=int, default=RUN.train_size)
    parser.add_argument("--out", type=Path, required=True, help="the JSON of every arm and seed")
    parser.add_argument("--model", type=Path, help="where to save the first seed's widget arms (.pt)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    cfg = dataclasses.replace(RUN, steps=args.steps, train_size=args.train_size, eval_every=args.steps)
    runs: dict[str, list[dict]] = {arm: [] for arm in args.arms}
    total = time.process_time()
    for i, seed in enumerate(args.seeds):
        train = clip_split("train", size=cfg.train_size, seed=seed)
        data = {"train": train, "train_eval": (train[0][:TEST_SIZE], train[1][:TEST_SIZE]),
                "test": clip_split("test", size=TEST_SIZE, seed=seed)}
        keep = {}
        for arm in args.arms:
            model, record = run_arm(ARMS[arm], seed, cfg, data)
            runs[arm].append(record)
            print(json.dumps({"arm": arm, **{k: v for k, v in record.items() if k != "loss_curve"}}), flush=True)
            if i == 0 and arm in WIDGET_ARMS:
                keep[arm] = model
        if i == 0 and args.model is not None and keep:
            args.model.parent.mkdir(parents=True, exist_ok=True)
            save_models(args.model, keep)
    result = {"arms": {arm: dataclasses.asdict(ARMS[arm]) for arm in args.arms}, "train": dataclasses.asdict(cfg),
              "test_size": TEST_SIZE, "chance": 0.5, "seconds": time.process_time() - total,
              "machine": {"torch": torch.__version__, "processor": platform.processor() or platform.machine(),
                          "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                          "threads": torch.get_num_threads()},
              "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"→ {args.out} ({result['seconds']:.0f} CPU seconds)")


if __name__ == "__main__":
    main()
