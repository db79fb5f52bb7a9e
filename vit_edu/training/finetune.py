"""Pre-train, then fine-tune: the shipped shapes ViT against a linear probe and training from scratch, on a new task.

``python -m vit_edu.training.finetune --seeds 0 1 2 --out vit_edu/checkpoints/finetune.json`` trains three arms on a
task the shipped model never saw: *how large is the object* (small, medium or large by the area of its mask), with
labels read from the object masks of :func:`vit_edu.data.make_shapes`, on images of other data seeds than the
pre-training images. The arms, each with a fresh zero-initialised 3-class head and paired by seed (the seed picks
the labelled subset and the batch order, and for "scratch" the initial weights):

* ``fine-tune``: every weight trained, starting from the pre-trained ones;
* ``fine-tune, small lr``: the same at a peak learning rate of 2e-4 instead of 1e-3, to see whether a gentler
  update keeps more of the pre-trained features and so changes the comparison with scratch;
* ``linear probe``: the pre-trained encoder frozen, only the head trained;
* ``scratch``: the same architecture from a random initialisation, same steps and schedule.

Every arm runs for several labelled-set sizes and at 32×32 and 48×48 (the pre-trained model resized with
:func:`vit_edu.resolution.change_resolution`; "scratch" built for 48×48 directly). Test accuracy is measured on
balanced held-out images. ``--sizes``, ``--labels`` and ``--arms`` run part of the grid (to spread it over
processes, or to add an arm); ``--merge FILE`` adds the new rows to an earlier result file (:func:`merge`), whose rows
stay as they were: every run depends only on its arm, label count, image size and seed, not on what ran before it.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from vit_edu.data import ImageSplit, make_shapes
from vit_edu.model import VisionTransformer
from vit_edu.resolution import change_resolution
from vit_edu.stats import paired_difference
from vit_edu.training.checkpoint import CHECKPOINTS, load_checkpoint
from vit_edu.training.config import TrainConfig
from vit_edu.training.loop import evaluate, train


SIZE_CLASSES: tuple[str, ...] = ("small", "medium", "large")


# Class edges on the object's area as a fraction of the image: about the terciles of make_shapes' objects (0.041 to
# 0.29 of the image, the same at every image size), so all three classes are common in any pool.
SIZE_EDGES: tuple[float, ...] = (0.10, 0.15)


ARMS: tuple[str, ...] = ("fine-tune", "fine-tune, small lr", "linear probe", "scratch")


# Data seeds of the new task's images. The pre-trained model saw make_shapes seeds 1, 2 and 3 (train, val and test
# of ShapesDataset seed 0); the new task draws its images from two other seeds, one for training, one for testing.
POOL_SEED, TEST_SEED = 1001, 1002


@dataclass(frozen=True)
class FinetuneSettings:
    """The budget and recipe shared by every run. ``lr`` is the peak rate of each arm: the preset's 1e-3 for the
    arms that train the whole network, 2e-4 for the second fine-tune (the rate of chapter 12's short fine-tune at
    48×48), and 1e-2 for the probe, which trains one zero-initialised linear layer on fixed features and needs a
    larger step to move far in the same number of steps. ``arms`` are the arms to run."""

    steps: int = 300
    batch_size: int = 32
    warmup_steps: int = 30
    weight_decay: float = 0.05
    lr: tuple[tuple[str, float], ...] = (("fine-tune", 1e-3), ("fine-tune, small lr", 2e-4), ("linear probe", 1e-2),
                                         ("scratch", 1e-3))
    arms: tuple[str, ...] = ARMS
    labels: tuple[int, ...] = (50, 200, 1000)
    sizes: tuple[int, ...] = (32, 48)
    pool: int = 2400  # images each labelled subset is drawn from (balanced per class)
    test: int = 1200  # balanced held-out test images

    def __post_init__(self) -> None:
        bad = [n for n in self.labels if isinstance(n, bool) or not isinstance(n, int) or n < len(SIZE_CLASSES)]
        if bad or not self.labels:
            raise ValueError(f"labels must be integers ≥ {len(SIZE_CLASSES)} (one per class), got {self.labels}")
        if max(self.labels) > self.pool // 2:
            raise ValueError(f"the pool of {self.pool} images is too small for {max(self.labels)} balanced labels")
        if {arm for arm, _ in self.lr} != set(ARMS):
            raise ValueError(f"lr must name every arm of {ARMS}, got {[arm for arm, _ in self.lr]}")
        if not self.arms or len(set(self.arms)) != len(self.arms) or not set(self.arms) <= set(ARMS):
            raise ValueError(f"arms must be distinct arms of {ARMS}, at least one, got {list(self.arms)}")
        if self.test % len(SIZE_CLASSES):
            raise ValueError(f"test must divide by {len(SIZE_CLASSES)}, got {self.test}")
        TrainConfig(steps=self.steps, batch_size=self.batch_size, warmup_steps=self.warmup_steps)  # checks them


def size_labels(masks: torch.Tensor) -> torch.Tensor:
    """The size class (index into :data:`SIZE_CLASSES`) of each object: its ``(n, H, W)`` mask's area as a fraction
    of the image, cut at :data:`SIZE_EDGES`."""
    if masks.ndim != 3 or masks.dtype != torch.bool:
        raise ValueError(f"masks must be a boolean (n, H, W) tensor, got {masks.dtype} {tuple(masks.shape)}")
    fraction = masks.flatten(1).float().mean(1)  # (n,)
    return torch.bucketize(fraction, torch.tensor(SIZE_EDGES), right=True)


def balanced_subset(labels: torch.Tensor, n: int, generator: torch.Generator) -> torch.Tensor:
    """Indices of ``n`` items drawn at random with the class counts differing by at most one."""
    k = int(labels.max()) + 1
    if n < k:
        raise ValueError(f"n must be at least the number of classes {k}, got {n}")
    per_class = [n // k + (c < n % k) for c in range(k)]
    picks = []
    for c, m in enumerate(per_class):
        members = torch.nonzero(labels == c).flatten()
        if len(members) < m:
            raise ValueError(f"class {c} has {len(members)} items, fewer than the {m} asked for")
        picks.append(members[torch.randperm(len(members), generator=generator)[:m]])
    return torch.cat(picks)[torch.randperm(n, generator=generator)]


def size_split(n: int, image_size: int, seed: int) -> ImageSplit:
    """``n`` shapes images of data seed ``seed`` with their size labels (not balanced: see :func:`balanced_subset`)."""
    images, _, masks = make_shapes(n, image_size=image_size, seed=seed)
    return ImageSplit(images, size_labels(masks), SIZE_CLASSES)


def labelled_split(pool: ImageSplit, n_labels: int, seed: int) -> ImageSplit:
    """The ``n_labels`` balanced labelled images a run of seed ``seed`` trains on, drawn from ``pool``."""
    index = balanced_subset(pool.labels, n_labels, torch.Generator().manual_seed(seed))
    return ImageSplit(pool.images[index], pool.labels[index], SIZE_CLASSES)


def held_out_split(n: int, image_size: int) -> ImageSplit:
    """The ``n`` balanced held-out images every run is tested on: drawn (generator seed 0) from ``2n`` images of
    data seed :data:`TEST_SEED`."""
    pool = size_split(2 * n, image_size, TEST_SEED)
    keep = balanced_subset(pool.labels, n, torch.Generator().manual_seed(0))
    return ImageSplit(pool.images[keep], pool.labels[keep], SIZE_CLASSES)


def make_arm(arm: str, image_size: int, seed: int, pretrained: VisionTransformer) -> VisionTransformer:
    """The model an arm starts from, with a fresh zero-initialised head for the size classes."""
    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r}: choose one of {ARMS}")
    if arm == "scratch":
        torch.manual_seed(seed)
        return VisionTransformer(dataclasses.replace(pretrained.config, image_size=(image_size, image_size),
                                                     num_classes=len(SIZE_CLASSES)))
    same = image_size == pretrained.config.image_size[0]  # fine-tune (either rate) or linear probe
    model = copy.deepcopy(pretrained) if same else change_resolution(pretrained, image_size)  # interpolated table
    model.head = nn.Linear(model.config.embed_dim, len(SIZE_CLASSES))
    nn.init.zeros_(model.head.weight)
    nn.init.zeros_(model.head.bias)
    model.config = dataclasses.replace(model.config, num_classes=len(SIZE_CLASSES))
    if arm == "linear probe":
        for name, p in model.named_parameters():
            p.requires_grad_(name.startswith("head."))
    return model


def run_one(arm: str, n_labels: int, image_size: int, seed: int, settings: FinetuneSettings,
            pretrained: VisionTransformer, pool: ImageSplit, test: ImageSplit) -> dict:
    """Train one arm on ``n_labels`` balanced labelled images drawn by ``seed``; test accuracy and seconds."""
    labelled = labelled_split(pool, n_labels, seed)
    model = make_arm(arm, image_size, seed, pretrained)
    cfg = TrainConfig(steps=settings.steps, batch_size=settings.batch_size, lr=dict(settings.lr)[arm],
                      weight_decay=settings.weight_decay, warmup_steps=settings.warmup_steps, label_smoothing=0.0,
                      train_size=n_labels, eval_every=settings.steps, seed=seed)
    history = train(model, labelled, labelled, cfg, progress=False)  # "val" = its own labelled images: the fit
    result = evaluate(model, test.images, test.labels)
    return {"arm": arm, "labels": n_labels, "image_size": image_size, "seed": seed,
            "train_accuracy": history[-1]["val_accuracy"], "test_accuracy": result["accuracy"],
            "test_loss": result["loss"], "seconds": history[-1]["seconds"]}


def run(seeds: list[int], settings: FinetuneSettings | None = None, checkpoint: str | Path | None = None) -> dict:
    """Every arm × labelled-set size × image size × seed; the settings, versions and seconds with the rows."""
    if not seeds or len(set(seeds)) != len(seeds) or any(isinstance(s, bool) or not isinstance(s, int) or s < 0
                                                         for s in seeds):
        raise ValueError(f"seeds must be distinct non-negative integers, at least one, got {seeds}")
    settings = FinetuneSettings() if settings is None else settings
    checkpoint = CHECKPOINTS / "shapes_vit.pt" if checkpoint is None else Path(checkpoint)
    pretrained, _ = load_checkpoint(checkpoint)
    start, rows = time.process_time(), []
    for size in settings.sizes:
        pool = size_split(settings.pool, size, POOL_SEED)
        test = held_out_split(settings.test, size)
        for n_labels in settings.labels:
            for arm in settings.arms:
                for seed in seeds:
                    row = run_one(arm, n_labels, size, seed, settings, pretrained, pool, test)
                    print(f"{size}×{size} {n_labels:5d} labels {arm:19s} seed {seed}: "
                          f"test {100 * row['test_accuracy']:.1f}%, train {100 * row['train_accuracy']:.1f}% "
                          f"({row['seconds']:.1f} s)", flush=True)
                    rows.append(row)
    seconds = round(time.process_time() - start, 1)
    return {"task": "object size: mask area as a fraction of the image", "size_edges": list(SIZE_EDGES),
            "classes": list(SIZE_CLASSES),
            "pretrained": checkpoint.name, "data_seeds": {"pool": POOL_SEED, "test": TEST_SEED},
            "settings": {**dataclasses.asdict(settings), "lr": dict(settings.lr)}, "seeds": list(seeds),
            "torch": torch.__version__, "threads": torch.get_num_threads(), "cpu_seconds": seconds,
            "parts": [{"arms": list(settings.arms), "cpu_seconds": seconds}], "rows": rows}


def accuracies(data: dict, arm: str, n_labels: int, image_size: int) -> list[float]:
    """Test accuracies of one arm, labelled-set size and image size, in the order of ``data["seeds"]``."""
    found = {r["seed"]: r["test_accuracy"] for r in data["rows"]
             if (r["arm"], r["labels"], r["image_size"]) == (arm, n_labels, image_size)}
    missing = [s for s in data["seeds"] if s not in found]
    if missing:
        raise ValueError(f"no run of {arm!r} with {n_labels} labels at {image_size} px for seeds {missing}")
    return [found[s] for s in data["seeds"]]


# The paired differences summarise() reports, as (name, arm b, arm a): b − a over the seeds.
DIFFERENCES: tuple[tuple[str, str, str], ...] = (
    ("fine-tune − scratch", "fine-tune", "scratch"),
    ("fine-tune − linear probe", "fine-tune", "linear probe"),
    ("small lr − fine-tune", "fine-tune, small lr", "fine-tune"),
    ("small lr − scratch", "fine-tune, small lr", "scratch"),
)


def summarise(data: dict) -> dict[tuple[int, int], dict]:
    """Per (image size, labels): each arm's mean, min and max accuracy, and the paired differences of
    :data:`DIFFERENCES` (:class:`vit_edu.stats.PairedDifference`, over the seeds) whose two arms the file holds.

    The arms are those with rows in ``data`` (a file written before an arm existed lacks it), in :data:`ARMS`'s order.
    """
    present = [arm for arm in ARMS if any(r["arm"] == arm for r in data["rows"])]
    out = {}
    for size in data["settings"]["sizes"]:
        for n in data["settings"]["labels"]:
            acc = {arm: accuracies(data, arm, n, size) for arm in present}
            cell: dict = {"arms": {arm: {"mean": sum(v) / len(v), "min": min(v), "max": max(v)}
                                   for arm, v in acc.items()}}
            for name, b, a in DIFFERENCES:
                if a in acc and b in acc:
                    cell[name] = paired_difference(acc[a], acc[b])
            out[(size, n)] = cell
    return out


# What two result files must share for their rows to be one experiment.
_SHARED = ("task", "size_edges", "classes", "pretrained", "data_seeds", "seeds", "torch", "threads")
_SHARED_SETTINGS = ("steps", "batch_size", "warmup_steps", "weight_decay", "labels", "sizes", "pool", "test")


def merge(base: dict, extra: dict) -> dict:
    """``base`` with the rows of ``extra`` added: runs of arms ``base`` lacks, on the same grid, seeds and versions.

    ``base``'s rows are kept as they are and come first; the learning rate of each added arm joins
    ``settings["lr"]``, ``settings["arms"]`` lists every arm, ``cpu_seconds`` is the sum and ``parts`` says which
    arms each run trained in how many seconds. Raises ``ValueError`` naming any setting the two files disagree on,
    or any arm both hold.
    """
    base, extra = json.loads(json.dumps(base)), json.loads(json.dumps(extra))  # as stored: tuples become lists
    differ = [key for key in _SHARED if base.get(key) != extra.get(key)]
    differ += [f"settings.{key}" for key in _SHARED_SETTINGS if base["settings"].get(key) != extra["settings"].get(key)]
    if differ:
        raise ValueError(f"the two result files differ in {differ}: their rows are not one experiment")
    base_arms = list(dict.fromkeys(r["arm"] for r in base["rows"]))
    extra_arms = list(dict.fromkeys(r["arm"] for r in extra["rows"]))
    both = [arm for arm in extra_arms if arm in base_arms]
    if both:
        raise ValueError(f"both files hold runs of {both}: merge adds arms, it does not replace runs")
    lr = {**base["settings"]["lr"], **{arm: extra["settings"]["lr"][arm] for arm in extra_arms}}
    parts = base.get("parts", [{"arms": base_arms, "cpu_seconds": base["cpu_seconds"]}])  # files from before parts
    return {**base,
            "settings": {**base["settings"], "lr": lr, "arms": [arm for arm in ARMS if arm in base_arms + extra_arms]},
            "cpu_seconds": round(base["cpu_seconds"] + extra["cpu_seconds"], 1),
            "parts": [*parts, *extra["parts"]],
            "rows": base["rows"] + extra["rows"]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, help="override the step budget (for a quick check)")
    parser.add_argument("--sizes", type=int, nargs="+", help="image sizes to run (default: 32 and 48)")
    parser.add_argument("--labels", type=int, nargs="+", help="labelled-set sizes to run (default: 50 200 1000)")
    parser.add_argument("--arms", nargs="+", help=f"arms to run (default: all of {', '.join(ARMS)})")
    parser.add_argument("--merge", type=Path, help="an earlier result file to add these runs to (see merge())")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    settings = FinetuneSettings()
    for name in ("sizes", "labels", "arms"):  # a part of the grid, e.g. to spread the runs over processes
        if getattr(args, name) is not None:
            settings = dataclasses.replace(settings, **{name: tuple(getattr(args, name))})
    if args.steps is not None:
        settings = dataclasses.replace(settings, steps=args.steps, warmup_steps=min(30, args.steps // 10))
    base = None if args.merge is None else json.loads(args.merge.read_text())  # read first: --out may be the same file
    data = run(args.seeds, settings)
    if base is not None:
        data = merge(base, data)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"→ {args.out} ({data['cpu_seconds']:.0f} s of CPU time)")


if __name__ == "__main__":
    main()
