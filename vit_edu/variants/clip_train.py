"""Train the tiny CLIP with four colour–shape combinations held out, and measure zero-shot accuracy (chapter 17).

For each seed: images of the 12 seen combinations only, each step a batch with fresh captions (size and side
each named half the time); then, on test images of the seen and of the held-out combinations, zero-shot
accuracy for three tasks (shape, colour, the 16 combinations) next to chance and next to supervised linear
probes (logistic regression on the frozen CLS features, trained on the same training images with their
labels). Writes one JSON of all seeds and the first seed's model (half precision)::

    OMP_NUM_THREADS=1 python -m vit_edu.variants.clip_train --seeds 0 1 2 \
        --out vit_edu/checkpoints/tiny_clip.json --model vit_edu/checkpoints/tiny_clip.pt
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from vit_edu.training import TrainConfig, make_optimizer
from vit_edu.variants.clip import (
    COLOURS,
    SHAPES,
    CaptionedShapes,
    TinyCLIP,
    TinyCLIPConfig,
    all_combos,
    contrastive_loss,
    make_captioned_shapes,
    tokenize,
    zero_shot_accuracy,
)

# One colour per shape held out, each colour once (a diagonal of the 4×4 table): every shape and every colour is
# still seen in training, three times each, but never these four pairs.
HELD_OUT: tuple[tuple[str, str], ...] = (("red", "circle"), ("green", "square"), ("blue", "triangle"),
                                         ("yellow", "cross"))
SEEN: tuple[tuple[str, str], ...] = tuple(c for c in all_combos() if c not in HELD_OUT)
TASKS = ("shape", "colour", "combination")
CHANCE = {"shape": 1 / len(SHAPES), "colour": 1 / len(COLOURS), "combination": 1 / len(all_combos())}
# Sized for about a minute of training a seed on one CPU thread (the JSON records each seed's train_seconds).
RUN = TrainConfig(steps=1000, batch_size=64, lr=2e-3, weight_decay=0.1, warmup_steps=60, label_smoothing=0.0,
                  train_size=10_000, eval_every=1000)
TEST_SIZE = 1000  # test images of the seen combinations, and as many of the held-out ones


def train_clip(model: TinyCLIP, data: CaptionedShapes, cfg: TrainConfig = RUN, *, seed: int = 0,
               p_detail: float = 0.5) -> list[float]:
    """``cfg.steps`` AdamW steps of the contrastive loss on random batches; returns the loss of every step."""
    gen = torch.Generator().manual_seed(seed)
    optimizer, scheduler = make_optimizer(model, cfg)
    model.train()
    losses = []
    for _ in range(cfg.steps):
        idx = torch.randint(len(data), (cfg.batch_size,), generator=gen)
        tokens = tokenize(data.captions(idx.tolist(), generator=gen, p_detail=p_detail), model.config.context_length)
        loss = contrastive_loss(model.image_proj(model.image_features(data.images[idx])), model.text(tokens),
                                model.scale())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    model.eval()
    return losses


def linear_probe(train_x: torch.Tensor, train_y: torch.Tensor, test_x: torch.Tensor, classes: int,
                 steps: int = 300) -> torch.Tensor:
    """Logistic regression on frozen features (standardised on the training set, L-BFGS): predicted test classes."""
    mean, std = train_x.mean(0), train_x.std(0) + 1e-6
    a, b = (train_x - mean) / std, (test_x - mean) / std
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        head = torch.nn.Linear(a.shape[1], classes)
    opt = torch.optim.LBFGS(head.parameters(), max_iter=steps, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(head(a), train_y) + 1e-4 * head.weight.square().sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        return head(b).argmax(1)


def probe_accuracies(model: TinyCLIP, train: CaptionedShapes, tests: dict[str, CaptionedShapes]) -> dict:
    """Shape and colour probes on the CLS features; "combination" is right when both probes are."""
    with torch.no_grad():
        feats = {name: model.image_features(d.images) for name, d in tests.items()}
        train_feats = model.image_features(train.images)
    out: dict[str, dict[str, float]] = {t: {} for t in TASKS}
    for name, d in tests.items():
        shape = linear_probe(train_feats, train.shapes, feats[name], len(SHAPES)) == d.shapes
        colour = linear_probe(train_feats, train.colours, feats[name], len(COLOURS)) == d.colours
        for task, right in (("shape", shape), ("colour", colour), ("combination", shape & colour)):
            out[task][name] = right.float().mean().item()
    return out


def run_seed(seed: int, cfg: TrainConfig = RUN, config: TinyCLIPConfig = TinyCLIPConfig(), *,
             palette: str = "light") -> tuple[TinyCLIP, dict]:
    """Train one seed and measure it: the model and a JSON-ready record."""
    torch.manual_seed(seed)
    train = make_captioned_shapes(cfg.train_size, seed=3 * seed + 1, combos=SEEN, palette=palette)
    tests = {"seen": make_captioned_shapes(TEST_SIZE, seed=3 * seed + 2, combos=SEEN, palette=palette),
             "held_out": make_captioned_shapes(TEST_SIZE, seed=3 * seed + 3, combos=HELD_OUT, palette=palette)}
    model = TinyCLIP(config)
    start = time.perf_counter()
    losses = train_clip(model, train, cfg, seed=seed)
    seconds = time.perf_counter() - start
    zero_shot = {t: {name: zero_shot_accuracy(model, d, t) for name, d in tests.items()} for t in TASKS}
    record = {"seed": seed, "palette": palette, "train_seconds": seconds, "final_loss": sum(losses[-50:]) / 50,
              "loss_curve": losses[:: max(1, cfg.steps // 60)], "temperature": 1 / model.scale().item(),
              "zero_shot": zero_shot, "probe": probe_accuracies(model, train, tests)}
    return model, record


def save_model(path: Path, model: TinyCLIP, record: dict) -> None:
    """Half-precision weights, the config and the seed's record: what the chapter and its widget load."""
    state = {k: v.half() if v.is_floating_point() else v for k, v in model.state_dict().items()}
    torch.save({"config": dataclasses.asdict(model.config), "state_dict": state, "record": record}, path)


def load_model(path: str | Path) -> tuple[TinyCLIP, dict]:
    """The trained tiny CLIP (eval mode, float32) and its record; torch's random state is left alone."""
    data = torch.load(path, map_location="cpu", weights_only=True)
    with torch.random.fork_rng(devices=[]):
        model = TinyCLIP(TinyCLIPConfig(**data["config"]))
    model.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in data["state_dict"].items()})
    return model.eval(), data["record"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Train the tiny CLIP over seeds; zero-shot vs chance vs probes.")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=RUN.steps)
    parser.add_argument("--out", type=Path, required=True, help="the JSON of every seed")
    parser.add_argument("--model", type=Path, help="where to save the first seed's model (.pt)")
    args = parser.parse_args(argv)
    cfg = dataclasses.replace(RUN, steps=args.steps, eval_every=args.steps)
    records = []
    for i, seed in enumerate(args.seeds):
        model, record = run_seed(seed, cfg)
        records.append(record)
        print(json.dumps({k: record[k] for k in ("seed", "train_seconds", "zero_shot", "probe")}), flush=True)
        if i == 0 and args.model is not None:
            args.model.parent.mkdir(parents=True, exist_ok=True)
            save_model(args.model, model, record)
    result = {"config": dataclasses.asdict(TinyCLIPConfig()), "train": dataclasses.asdict(cfg),
              "held_out": [list(c) for c in HELD_OUT], "chance": CHANCE, "test_size": TEST_SIZE,
              "threads": torch.get_num_threads(), "seeds": records}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(f"→ {args.out}")


if __name__ == "__main__":
    main()
