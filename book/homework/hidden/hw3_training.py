"""Homework 3's checks (instructor only): the public examples and the hidden checks, computed with the references.

``make(draw)`` builds every example: its inputs (hidden ones drawn from the course's secret through ``draw``),
what the book's reference returns on them, and what each classic mistake returns, with its hint. The five
experiments run here too, on one thread, exactly as their exercises state them, with the book's functions where
the student uses their own (``attention_rollout`` for ``my_rollout``, ``interpolate_pos_embed`` for
``my_interpolate``); their results, the readings' letters and the diagnosis are the hidden checks' answers, compared
within each experiment's tolerance. Nothing of this module enters the package, the site or a grading sandbox: only
the data it returns does. 32 points: 16 for code, 12 for the experiments and their readings, 4 for the warm-ups and
the diagnosis.
"""

import dataclasses
import math
import random
from functools import cache

import torch
import torch.nn.functional as F

import vit_edu
from vit_edu.config import ViTConfig
from vit_edu.data import ShapesDataset
from vit_edu.explain import (attention_rollout, cls_attention, localisation_score, object_fraction, patch_distances,
                             position_similarity)
from vit_edu.homework.assignment import Assignment, seeded
from vit_edu.homework.checks import Example, Mistake
from vit_edu.homework.plain import Recipe, decode, encode, recipe
from vit_edu.model import VisionTransformer
from vit_edu.position import interpolate_pos_embed
from vit_edu.training import CHECKPOINTS, TrainConfig, load_checkpoint, make_optimizer, parameter_groups, train

# The answers typed by hand: what the runs support, and the cause of each broken run.
LR_READING = "c"
ROLLOUT_READING = "b"
DIAGNOSIS = {"a": "learning_rate", "b": "pos_rows", "c": "resolution", "d": "input_norm", "e": "num_classes",
             "f": "patch_size"}

# The experiments' settings, as their exercises state them.
LR_GRID = (3e-4, 3e-3)  # exercise 9.3
FUSIONS, RESIDUALS = ("mean", "max"), (0.5, 2.0)  # exercise 10.3, each list in this order
NEW_SIZES = (24, 56)  # exercise 12.3
DECAY_LRS = (30, 60, 100)  # exercise 13.3

# Tolerances of the experiments: wide enough for another CPU, narrow enough to tell the recipe asked for from a
# neighbouring one.
LR_TOL = 0.02  # one validation accuracy on 400 images: 8 images
SCORE_TOL = 0.003  # a mean localisation score over 500 images
FLIP_TOL = 0.0006  # over 5000 (image, permutation) pairs: 3 pairs of the share, ~11% of the mean distance
ACC_TOL = 0.0101  # an accuracy on 400 scenes: 4 scenes
GROWTH_TOL = 0.1  # relative, a ratio of weight sizes

# Seconds one cell of an experiment may run in its grading process: about ten times what it takes on one thread.
TRAINING_SECONDS = 90  # six training runs of 100 steps (about 6 s)
RUN_SECONDS = 30  # the other experiments (under 3 s)

EXPLAIN_REFS = ("vit_edu.explain.attention_maps.attention_rollout", "vit_edu.explain.attention_maps.fuse_heads")
INTERPOLATE_REFS = ("vit_edu.position.interpolate_pos_embed", "vit_edu.resolution.change_resolution")
# 12.2 asks for bilinear resampling built by hand (two weight matrices): the library's resizers are taken away.
RESIZERS = ("torch.nn.functional.interpolate", "torch.nn.functional.upsample",
            "torch.nn.functional.upsample_bilinear")


# ---------------------------------------------------------------- the experiments


def lr_runs() -> dict[float, list[float]]:
    """Exercise 9.3: validation accuracy of three seeds at each of the two learning rates."""
    cfg = ViTConfig(image_size=32, patch_size=8, num_classes=4, embed_dim=32, depth=2, num_heads=4, mlp_dim=64,
                    input_norm=(0.5, 0.25))
    train_set = ShapesDataset("train", size=3200, seed=1)
    val_set = ShapesDataset("val", size=400, seed=1)
    runs = {}
    for lr in LR_GRID:
        runs[lr] = []
        for seed in range(3):
            torch.manual_seed(seed)
            model = VisionTransformer(cfg)
            run = TrainConfig(steps=100, batch_size=32, lr=lr, warmup_steps=10, label_smoothing=0.0, eval_every=100,
                              seed=seed)
            runs[lr].append(train(model, train_set, val_set, run, progress=False)[-1]["val_accuracy"])
    return runs


def rollout_scores(model: VisionTransformer, weighted: bool = True) -> dict:
    """Exercise 10.3: mean localisation score of rollout's CLS row on 500 validation images (``weighted=False``:
    the plain rollout at both weights, what a ``my_rollout`` that ignores its weight gives)."""
    val = ShapesDataset("val", size=500, seed=0)
    with torch.no_grad():
        _, attentions = model(val.images, return_attention=True)
    fraction = object_fraction(val.masks, model.config.patch_size)
    scores: dict = {}
    for fusion in FUSIONS:
        scores[fusion] = []
        for residual in RESIDUALS:
            # rownorm(fuse(A) + w·I) = rownorm(fuse(A / w) + I): the book's rollout on rescaled maps
            maps = [a / residual for a in attentions] if weighted else attentions
            mass, baseline = localisation_score(attention_rollout(maps, fusion)[:, 0, 1:], fraction)
            scores[fusion].append(mass.mean().item())
    scores["baseline"] = baseline.mean().item()
    return scores


def tile_flips(model: VisionTransformer) -> dict[str, float]:
    """Exercise 11.3: share of changed predictions and mean total variation over 500 images × 10 permutations,
    with the distance of the logits instead of the probabilities (a classic mistake) as "tv_logits"."""
    images = ShapesDataset("test", seed=0).images[500:1000]
    p = model.config.patch_size
    g = torch.Generator().manual_seed(11)
    perms = [torch.randperm(model.config.num_patches, generator=g) for _ in range(10)]
    flips, tv, tv_logits = [], [], []
    with torch.no_grad():
        intact = model(images)  # (500, K) logits
        for perm in perms:
            tokens = vit_edu.patchify(images, p)[:, perm]  # position i gets the tile from position perm[i]
            moved = model(vit_edu.unpatchify(tokens, p, model.config.image_size, 3))
            flips.append(moved.argmax(-1) != intact.argmax(-1))
            tv.append(0.5 * (moved.softmax(-1) - intact.softmax(-1)).abs().sum(-1))
            tv_logits.append(0.5 * (moved - intact).abs().sum(-1))
    return {"flips": torch.cat(flips).float().mean().item(), "tv": torch.cat(tv).mean().item(),
            "tv_logits": torch.cat(tv_logits).mean().item()}


def resized_acc(model: VisionTransformer) -> dict[int, float]:
    """Exercise 12.3: accuracy on the first 400 test scenes at 24×24 and 56×56, table resampled bilinearly."""
    out = {}
    old = model.pos_embed.embedding.detach()
    for size in NEW_SIZES:
        side = size // model.config.patch_size
        resized = VisionTransformer(dataclasses.replace(model.config, image_size=(size, size)))
        state = dict(model.state_dict())
        state["pos_embed.embedding"] = interpolate_pos_embed(old, (side, side), old_grid=model.config.grid_size,
                                                             mode="bilinear", align_corners=False)
        resized.load_state_dict(state)
        resized.eval()
        test = ShapesDataset("test", image_size=size, seed=0)
        with torch.no_grad():
            pred = resized(test.images[:400]).argmax(-1)
        out[size] = (pred == test.labels[:400]).float().mean().item()
    return out


def largest_weights() -> dict[int, list[float]]:
    """Exercise 13.3: the largest |parameter| after each of four AdamW steps at lr 30, 60, 100 (decay 0.05)."""
    bench = ViTConfig(image_size=32, patch_size=8, num_classes=4, embed_dim=64, depth=2, num_heads=4, mlp_dim=128,
                      input_norm=(0.5, 0.25))
    train_set = ShapesDataset("train", size=4800, seed=0)
    out = {}
    for lr in DECAY_LRS:
        torch.manual_seed(0)
        model = VisionTransformer(bench)
        cfg = TrainConfig(steps=150, batch_size=32, lr=lr, warmup_steps=0, weight_decay=0.05, label_smoothing=0.0)
        optimizer, scheduler = make_optimizer(model, cfg)
        out[lr] = []
        for step in range(4):
            batch = slice(32 * step, 32 * (step + 1))
            loss = F.cross_entropy(model(train_set.images[batch]), train_set.labels[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            out[lr].append(max(p.detach().abs().max().item() for p in model.parameters()))
    return out


@cache
def experiments() -> dict:
    """Every experiment's numbers, once per process (they do not depend on the secret), on one thread so that they
    do not depend on the build machine's thread count. About 12 s."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            model, _ = load_checkpoint(CHECKPOINTS / "shapes_vit.pt")
            return {"lr_runs": lr_runs(), "rollout_scores": rollout_scores(model),
                    "unweighted_scores": rollout_scores(model, weighted=False), "tile_flips": tile_flips(model),
                    "resized_acc": resized_acc(model), "largest": largest_weights()}
    finally:
        torch.set_num_threads(threads)


def measured(answer: str, expect, mistakes: list[Mistake], **tolerance) -> Example:
    """A hidden check's example of an experiment: the reference run's numbers, within the tolerance."""
    return Example(answer, expect, what=answer, mistakes=mistakes, **tolerance)


def part(ex: Example, keys, **changes) -> Example:
    """The check of some entries of a dict answer (a point for each part of one value), with its mistakes' parts."""
    def sub(value):
        return {k: value[k] for k in keys} if isinstance(value, dict) else value

    mistakes = [dataclasses.replace(m, output=sub(m.output)) for m in ex.mistakes]
    return dataclasses.replace(ex, expect=sub(ex.expect), keys=list(keys), mistakes=mistakes, **changes)


# ---------------------------------------------------------------- chapter 9


def split_model(frozen: tuple[str, ...] = (), **config) -> Recipe:
    """A ViT's parameters as a module recipe: the ViT's own parts, in its order and under its names, except that
    each part in ``frozen`` ("cls_token", "head", "blocks.1", ...) comes as parameters of the same names and shapes
    with requires_grad=False (a recipe carries no requires_grad flag)."""
    cfg = ViTConfig(image_size=16, patch_size=8, num_classes=4, **config)
    model = VisionTransformer(cfg)
    given = recipe("vit_edu.config.ViTConfig", image_size=16, patch_size=8, num_classes=4, **config)
    real = {"patch_embed": recipe("vit_edu.embedding.PatchEmbedding", given),
            "pos_embed": recipe("vit_edu.embedding.PositionEmbedding", given),
            "blocks": recipe("torch.nn.ModuleList", [
                _frozen(block) if f"blocks.{i}" in frozen else recipe("vit_edu.block.EncoderBlock", given, i)
                for i, block in enumerate(model.blocks)]),
            "norm": recipe("torch.nn.LayerNorm", cfg.embed_dim, eps=cfg.ln_eps),
            "head": recipe("torch.nn.Linear", cfg.embed_dim, cfg.num_classes)}
    parts = []
    for name in ("patch_embed", "cls_token", "pos_embed", "blocks", "norm", "head"):
        if name == "cls_token":
            if model.cls_token is not None:
                parts.append((name, recipe("torch.nn.Parameter", torch.zeros(1, 1, cfg.embed_dim),
                                           requires_grad=name not in frozen)))
        else:
            parts.append((name, _frozen(getattr(model, name)) if name in frozen else real[name]))
    return recipe("torch.nn.ParameterDict", parts)


def _frozen(module: torch.nn.Module) -> Recipe:
    """``module``'s parameters, same names and shapes, as nested ParameterDicts with requires_grad=False."""
    entries = [(name, recipe("torch.nn.Parameter", torch.zeros(p.shape), requires_grad=False))
               for name, p in module.named_parameters(recurse=False)]
    entries += [(name, _frozen(child)) for name, child in module.named_children()
                if next(child.parameters(), None) is not None]
    return recipe("torch.nn.ParameterDict", entries)


def _is_embedding(name: str) -> bool:
    return "cls_token" in name or "pos_embed" in name


def counted(model: torch.nn.Module, group, size=torch.Tensor.numel) -> dict[str, int]:
    """The three groups' sizes when ``group(name, parameter)`` puts each parameter in one (a classic mistake's
    split; ``size``: what is counted of each)."""
    counts = {"decay": 0, "no_decay": 0, "frozen": 0}
    for name, p in model.named_parameters():
        counts[group(name, p)] += size(p)
    return counts


def _right_group(name: str, p: torch.Tensor) -> str:
    return "frozen" if not p.requires_grad else "no_decay" if p.ndim < 2 or _is_embedding(name) else "decay"


SPLIT_MISTAKES = [
    ("count numbers (p.numel()), not tensors", _right_group, lambda p: 1),
    ("the CLS token and the position table are 3-D tensors, but they are embeddings: no weight decay for them",
     lambda n, p: "frozen" if not p.requires_grad else "no_decay" if p.ndim < 2 else "decay", torch.Tensor.numel),
    ("a parameter with requires_grad=False is not trained: count it as frozen, in neither group",
     lambda n, p: "no_decay" if p.ndim < 2 or _is_embedding(n) else "decay", torch.Tensor.numel),
    ("biases and LayerNorm parameters (1-D tensors) get no weight decay either",
     lambda n, p: "frozen" if not p.requires_grad else "no_decay" if _is_embedding(n) else "decay",
     torch.Tensor.numel),
]


def decay_split(model_recipe: Recipe, what: str) -> Example:
    model = decode(encode(model_recipe), objects=True)
    groups = parameter_groups(model, 0.05)  # trainable parameters only, in the book's two groups
    want = {"decay": sum(p.numel() for p in groups[0]["params"]),
            "no_decay": sum(p.numel() for p in groups[1]["params"]),
            "frozen": sum(p.numel() for p in model.parameters() if not p.requires_grad)}
    mistakes = [Mistake(hint, out) for hint, group, size in SPLIT_MISTAKES
                if (out := counted(model, group, size)) != want]
    return Example("decay_split", want, [model_recipe], what=f"decay_split({what})", mistakes=mistakes)


def scheduled_lrs(base_lr: float, warmup_steps: int, total_steps: int, min_lr: float) -> list[float]:
    """The learning rate of each optimiser step under torch's LinearLR warm-up, then CosineAnnealingLR to ``min_lr``."""
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([param], lr=base_lr)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps, eta_min=min_lr)
    if warmup_steps:
        warmup = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps)
        scheduler = torch.optim.lr_scheduler.SequentialLR(optimizer, [warmup, cosine], [warmup_steps])
    else:
        scheduler = cosine
    lrs = []
    for _ in range(total_steps):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return lrs


def lr_schedule(base: float, w: int, t: int, floor: float) -> list[Example]:
    """One example per step of the schedule, each with the step's classic mistakes."""
    examples = []
    for step, want in enumerate(scheduled_lrs(base, w, t, floor)):
        if step < w:
            wrong = {"LinearLR's warm-up starts at base_lr / W (start_factor = 1/W), not at 0": base * step / w,
                     "the warm-up reaches base_lr only at step W, not at step W − 1": base * (step + 1) / w}
        else:
            progress = (step - w) / (t - w)
            wrong = {"the cosine ends at min_lr, not at 0": base * (1 + math.cos(math.pi * progress)) / 2,
                     "the cosine runs over the T − W steps after the warm-up, starting at step W":
                         floor + (base - floor) * (1 + math.cos(math.pi * step / t)) / 2}
        mistakes = [Mistake(hint, out) for hint, out in wrong.items() if not math.isclose(out, want, rel_tol=1e-5)]
        examples.append(Example("lr_at", want, [step, base, w, t, floor], what=f"lr_at({step}, {base:g}, {w}, {t}, "
                                f"{floor:g})", atol=1e-12, rtol=1e-5, mistakes=mistakes))
    return examples


def chapter9(a: Assignment, draw) -> None:
    q = a.question("ch09_decay_split", ("decay_split",),
                   references=("vit_edu.training.loop.parameter_groups", "vit_edu.training.loop.make_optimizer"))
    q.public = [decay_split(split_model(("patch_embed",), embed_dim=16, depth=1, num_heads=2, mlp_dim=32),
                            "a CLS model whose patch embedding is frozen")]
    r = random.Random(draw("decay_split"))

    def size() -> dict:
        heads = r.choice((2, 4))
        return {"embed_dim": 8 * heads * r.randint(1, 2), "num_heads": heads, "mlp_dim": 16 * r.randint(1, 4)}

    q.check("mean pooling and two blocks",
            [decay_split(split_model(pool="mean", depth=2, **size()), "a mean-pooled model with two blocks")])
    block = r.randint(0, 1)
    q.check("frozen parameters with sin-cos positions and no qkv bias", [
        decay_split(split_model(("cls_token", f"blocks.{block}"), pos_embed="sincos", qkv_bias=False, depth=2,
                                **size()), f"sin-cos positions, no qkv bias, CLS token and block {block} frozen"),
        decay_split(split_model(("head", "norm", f"blocks.{1 - block}"), depth=2, **size()),
                    f"head, final LayerNorm and block {1 - block} frozen")])

    q = a.question("ch09_lr_schedule", ("lr_at",),
                   references=("vit_edu.training.loop.make_optimizer", "torch.optim.lr_scheduler.LinearLR",
                               "torch.optim.lr_scheduler.CosineAnnealingLR", "torch.optim.lr_scheduler.SequentialLR"))
    q.public = lr_schedule(1e-3, 4, 12, 1e-4) + lr_schedule(1e-3, 0, 6, 1e-4)
    r = random.Random(draw("lr_schedule"))
    base = r.choice((1e-4, 3e-4, 5e-4, 1e-3, 2e-3))
    w = r.randint(5, 12)
    q.check("another warm-up length and floor",
            lr_schedule(base, w, w + r.randint(20, 40), base * r.choice((0.02, 0.1))))
    w = r.randint(3, 8)
    q.check("no warm-up or a floor of 0", lr_schedule(r.choice((5e-4, 1e-3)), 0, r.randint(15, 30), 0.0) +
            lr_schedule(r.choice((1e-3, 2e-3)), w, w + r.randint(6, 12), 0.0))

    runs = experiments()["lr_runs"]
    q = a.question("ch09_lr_seeds", ("lr_runs",), cell_seconds=TRAINING_SECONDS)
    q.public = [Example("lr_runs", {lr: [0.5, 0.5, 0.5] for lr in LR_GRID}, form_only=True, what="lr_runs")]
    whole = measured("lr_runs", runs, [
        Mistake("report fractions of the 400 validation images, not percentages",
                {lr: [100 * v for v in runs[lr]] for lr in LR_GRID}),
        Mistake("each learning rate's list holds the runs at that rate", dict(zip(LR_GRID, reversed(runs.values()))))],
        atol=LR_TOL, rtol=0.0)
    for lr in LR_GRID:
        q.check(f"the three runs at lr {lr:g}", [part(whole, [lr])])

    q = a.question("ch09_lr_reading", ("lr_reading",))
    q.public = [Example("lr_reading", "?", form_only=True, what="lr_reading")]
    q.check("what the six runs support", [Example("lr_reading", LR_READING, what="lr_reading")])


# ---------------------------------------------------------------- chapter 10


def random_attentions(layers: int, b: int, h: int, s: int, seed: int) -> list[torch.Tensor]:
    """``layers`` seeded attention maps ``(B, h, S, S)`` whose rows sum to 1, uneven enough to tell fusions apart."""
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(b, h, s, s, generator=g) * 2).softmax(-1) for _ in range(layers)]


def _fuse(a: torch.Tensor, fusion: str) -> torch.Tensor:
    return a.mean(1) if fusion == "mean" else a.amax(1)


def _rownorm(m: torch.Tensor) -> torch.Tensor:
    return m / m.sum(-1, keepdim=True)


def _chain(steps: list[torch.Tensor], reverse: bool = False) -> torch.Tensor:
    """``Â_L ⋯ Â_1`` (``reverse``: ``Â_1 ⋯ Â_L``) of ``(B, S, S)`` steps."""
    b, s, _ = steps[0].shape
    r = torch.eye(s).expand(b, s, s)
    for step in steps:
        r = r @ step if reverse else step @ r
    return r


def _no_keepdim(attentions: list[torch.Tensor], fusion: str, w: float) -> torch.Tensor | None:
    """Rollout that divides by ``sum(-1)`` without keepdim (a wrong broadcast), or None where that raises."""
    steps = [_fuse(a, fusion) + w * torch.eye(a.shape[-1]) for a in attentions]  # L × (B, S, S)
    try:
        return _chain([step / step.sum(-1) for step in steps])
    except RuntimeError:
        return None


def apart(want: torch.Tensor, wrong: list[tuple[str, torch.Tensor | None]]) -> list[Mistake]:
    """The classic mistakes whose output differs from the right one on these inputs (None: the mistake raises)."""
    return [Mistake(hint, out) for hint, out in wrong if out is not None and (
        out.shape != want.shape or not torch.allclose(out.double(), want.double(), atol=1e-5, rtol=1e-4))]


def rollout(attentions: list[torch.Tensor], fusion: str, w: float) -> Example:
    b, _, s, _ = attentions[0].shape
    eye = torch.eye(s)
    wrong = [
        ("every row should sum to 1: divide each row by its own sum (keepdim=True), after adding the identity",
         _no_keepdim(attentions, fusion, w)),
        (f"the identity should be weighted: fuse(A) + {w:g}·I, not fuse(A) + I",
         attention_rollout(attentions, fusion)),
        ("add the residual path (the weighted identity) before renormalising",
         _chain([_rownorm(_fuse(a, fusion)) for a in attentions])),
        ("multiply in layer order, R = Â_L ⋯ Â_1 (the newest layer on the left)",
         _chain([_rownorm(_fuse(a, fusion) + w * eye) for a in attentions], reverse=True)),
        ("the weight multiplies the identity, not the attention: fuse(A) + w·I",
         _chain([_rownorm(w * _fuse(a, fusion) + eye) for a in attentions])),
        ("fusion='max' takes the element-wise maximum over the heads (amax), fusion='mean' their mean",
         attention_rollout([a / w for a in attentions], "mean" if fusion == "max" else "max")),
    ]
    # fuse(A / w) + I = (fuse(A) + w·I) / w, and the row normalisation removes the 1/w.
    want = attention_rollout([a / w for a in attentions], fusion)  # (B, S, S)
    return Example("my_rollout", want, [attentions, fusion, w], shape_hint=" (B, S, S)",
                   what=f"my_rollout({len(attentions)} × {tuple(attentions[0].shape)}, {fusion!r}, {w:g})",
                   mistakes=apart(want, wrong))


def cls_map(attentions: list[torch.Tensor], grid: tuple[int, int], layer: int, prefix: int) -> Example:
    b = attentions[0].shape[0]
    n = grid[0] * grid[1]
    raw = cls_attention(attentions, num_prefix_tokens=prefix)[layer].mean(1)  # (B, N)
    want = _rownorm(raw).reshape(b, *grid)
    fused = attentions[layer].mean(1)  # (B, S, S)
    wrong = [("renormalise the patch weights of each image to sum to 1 (the CLS token keeps some weight itself)",
              raw.reshape(b, *grid)),
             ("take row 0 (what the CLS query reads), not column 0 (who reads the CLS token)",
              _rownorm(fused[:, prefix:, 0]).reshape(b, *grid))]
    wrong += [(f"use the layer asked for, attentions[{layer}]", _rownorm(a.mean(1)[:, 0, prefix:]).reshape(b, *grid))
              for i, a in enumerate(attentions) if i != layer % len(attentions)]
    if prefix > 1:
        wrong.append((f"the first {prefix} keys are prefix tokens, the patches are the keys from {prefix} on",
                      _rownorm(fused[:, 0, 1:1 + n]).reshape(b, *grid)))
    return Example("cls_map", want, [attentions, grid, layer, prefix], shape_hint=" (B, gh, gw)",
                   what=f"cls_map(attentions, {grid}, layer={layer}, prefix={prefix})", mistakes=apart(want, wrong))


def chapter10(a: Assignment, draw) -> None:
    q = a.question("ch10_rollout", ("my_rollout",), references=EXPLAIN_REFS)
    q.public = [rollout(random_attentions(2, 1, 2, 3, seed=20), "max", 0.5)]
    q.check("mean fusion with weight 2 on a batch of 2", [rollout(random_attentions(2, 2, 3, 4, draw("rollout/1")),
                                                                  "mean", 2.0)])
    q.check("max fusion with weight 0.5 on a batch of 2 and weight 3 on one image",
            [rollout(random_attentions(3, 2, 3, 5, draw("rollout/2")), "max", 0.5),
             rollout(random_attentions(4, 1, 2, 6, draw("rollout/3")), "max", 3.0)], points=2)

    q = a.question("ch10_cls_map", ("cls_map",), references=("vit_edu.explain.attention_maps.cls_attention",))
    q.public = [cls_map(random_attentions(2, 2, 3, 6, seed=21), (2, 2), 0, 2)]
    q.check("two prefix tokens in the first layer on a 2×3 grid",
            [cls_map(random_attentions(3, 2, 2, 2 + 6, draw("cls_map/1")), (2, 3), 0, 2)])
    q.check("one CLS token in the last layer on a 3×2 grid",
            [cls_map(random_attentions(2, 3, 4, 1 + 6, draw("cls_map/2")), (3, 2), -1, 1)])

    scores, unweighted = experiments()["rollout_scores"], experiments()["unweighted_scores"]
    q = a.question("ch10_rollout_scores", ("rollout_scores",), references=EXPLAIN_REFS, depends=("ch10_rollout",),
                   cell_seconds=RUN_SECONDS)
    q.public = [Example("rollout_scores", {"mean": [0.5, 0.5], "max": [0.5, 0.5], "baseline": 0.5}, form_only=True,
                        what="rollout_scores")]
    whole = measured("rollout_scores", scores, [
        Mistake("both residual weights give the same scores: did my_rollout get the weight?", unweighted),
        Mistake("each list holds the score at weight 0.5 first, then at 2",
                {**scores, **{f: scores[f][::-1] for f in FUSIONS}})], atol=SCORE_TOL, rtol=0.0)
    q.check("mean and max fusion at both residual weights", [part(whole, FUSIONS)])
    q.check("the baseline", [part(whole, ["baseline"])])

    q = a.question("ch10_rollout_reading", ("rollout_reading",))
    q.public = [Example("rollout_reading", "?", form_only=True, what="rollout_reading")]
    q.check("what the four scores say", [Example("rollout_reading", ROLLOUT_READING, what="rollout_reading")])


# ---------------------------------------------------------------- chapter 11


def position_table(prefix: int, n: int, d: int, seed: int, offset: float = 3.0) -> torch.Tensor:
    """A seeded ``(1, prefix + N, D)`` table whose patch rows share a large common offset."""
    return seeded(1, prefix + n, d, seed=seed) + offset * seeded(1, 1, d, seed=seed + 1)


def centred_similarity(pos: torch.Tensor, prefix: int) -> Example:
    rows = pos[0, prefix:]  # (N, D)
    n = rows.shape[0]
    centred = rows - rows.mean(0)
    want = position_similarity(centred)  # (N, N)
    wrong = [("subtract the mean patch row (the part every patch shares) before the cosine", position_similarity(rows)),
             ("the mean to remove is the mean row (over the N patches, dim 0), not each row's own mean",
              position_similarity(rows - rows.mean(1, keepdim=True))),
             ("normalise each centred row to length 1: cosine, not the plain dot product", centred @ centred.T)]
    if prefix:
        wrong.append(("take the mean over the patch rows only, without the prefix rows",
                      position_similarity(rows - pos[0].mean(0))))
    mistakes = apart(want, wrong)
    if prefix:
        mistakes.append(Mistake(f"drop the {prefix} prefix row(s) first, they have no place on the grid",
                                shape=(n + prefix, n + prefix)))
    return Example("centred_similarity", want, [pos, prefix], shape_hint=" (N, N)",
                   what=f"centred_similarity(pos of shape {tuple(pos.shape)}, prefix={prefix})", mistakes=mistakes)


def _column_major_distances(grid: tuple[int, int], p: int) -> torch.Tensor:
    """Distances between patch centres numbered column by column (a classic mistake)."""
    gh, gw = grid
    i = torch.arange(gh * gw)
    centres = torch.stack([i % gh, i // gh], dim=1).float() * p
    return torch.cdist(centres, centres)


def centre_distances(grid: tuple[int, int], p: int) -> Example:
    want = patch_distances(grid, p)
    wrong = [Mistake("multiply by the patch size: distances are in pixels", want / p)]
    if grid[0] != grid[1]:
        wrong.append(Mistake("patches are numbered row by row: patch i sits in row i // gw, column i % gw",
                             _column_major_distances(grid, p)))
    return Example("centre_distances", want, [grid, p], what=f"centre_distances({grid}, {p})", atol=1e-4,
                   shape_hint=" (N, N)", mistakes=wrong)


def chapter11(a: Assignment, draw) -> None:
    q = a.question("ch11_centred_similarity", ("centred_similarity",),
                   references=("vit_edu.explain.distances.position_similarity",))
    q.public = [centred_similarity(position_table(1, 4, 3, seed=22), 1)]
    q.check("no prefix row and 9 patches", [centred_similarity(position_table(0, 9, 8, draw("similarity/1")), 0)])
    q.check("two prefix rows", [centred_similarity(position_table(2, 6, 5, draw("similarity/2")), 2)])

    q = a.question("ch11_centre_distances", ("centre_distances",),
                   references=("vit_edu.explain.distances.patch_distances",
                               "vit_edu.explain.distances.mean_attention_distance"))
    q.public = [centre_distances((2, 3), 8)]
    r = random.Random(draw("centre_distances"))
    rows = r.randint(2, 4)
    q.check("a grid wider than it is tall", [centre_distances((rows, rows + r.randint(1, 3)), r.randint(3, 16))])
    q.check("one column and a two-row grid", [centre_distances((r.randint(3, 6), 1), r.randint(3, 16)),
                                             centre_distances((2, r.randint(5, 8)), r.randint(3, 16))])

    flips = experiments()["tile_flips"]
    want = {"flips": flips["flips"], "tv": flips["tv"]}
    q = a.question("ch11_tile_flips", ("tile_flips",), cell_seconds=RUN_SECONDS)
    q.public = [Example("tile_flips", {"flips": 0.5, "tv": 0.5}, form_only=True, what="tile_flips")]
    whole = measured("tile_flips", want, [
        Mistake("the total variation distance is half the sum of the absolute differences",
                {**want, "tv": 2 * want["tv"]}),
        Mistake("compare the class probabilities (softmax of the logits), not the logits",
                {**want, "tv": flips["tv_logits"]})], atol=FLIP_TOL, rtol=0.0)
    q.check("share of changed predictions", [part(whole, ["flips"], atol=2 * FLIP_TOL)])
    q.check("mean total variation distance", [part(whole, ["tv"])])


# ---------------------------------------------------------------- chapter 12


def new_table_shape(height: int, width: int, p: int, d: int, prefix: int) -> Example:
    gh, gw = height // p, width // p
    wrong = [Mistake("the grid is (rows, columns) = (height / P, width / P)", ((gw, gh), (1, prefix + gh * gw, d)))]
    if prefix:
        wrong.insert(0, Mistake(f"the table keeps a row for each of the {prefix} prefix token(s)",
                                ((gh, gw), (1, gh * gw, d))))
    return Example("new_table_shape", ((gh, gw), (1, prefix + gh * gw, d)), [height, width, p, d, prefix],
                   what=f"new_table_shape({height}, {width}, {p}, {d}, {prefix})",
                   mistakes=[m for m in wrong if m.output != ((gh, gw), (1, prefix + gh * gw, d))])


def by_hand(pos: torch.Tensor, old: tuple[int, int], new: tuple[int, int], prefix: int, rule: str = "half-pixel",
            clamp: bool = True, channels_first: bool = False) -> torch.Tensor:
    """The table resampled with one weight matrix per axis, by a rule for where new row i sits among the old rows:
    the right one (``half-pixel``) or a classic slip (``corners``, ``no shift``, no clamping, channels read first)."""
    def weights(n_old: int, n_new: int) -> torch.Tensor:
        i = torch.arange(n_new, dtype=torch.float32)
        src = {"half-pixel": (i + 0.5) * n_old / n_new - 0.5, "no shift": i * n_old / n_new,
               "corners": i * (n_old - 1) / max(n_new - 1, 1)}[rule]  # (n_new,) old coordinates
        src = src.clamp(0, n_old - 1) if clamp else src.clamp(max=n_old - 1)
        low = src.floor().long()  # -1 without clamping wraps round to the last row
        high = (low + 1).clamp(max=n_old - 1)
        w = torch.zeros(n_new, n_old)
        w[torch.arange(n_new), low] += 1 - (src - low)
        w[torch.arange(n_new), high] += src - low
        return w

    (gh, gw), (nh, nw), d = old, new, pos.shape[-1]
    rows = pos[0, prefix:]  # (gh·gw, D)
    grid = rows.reshape(d, gh, gw).permute(1, 2, 0) if channels_first else rows.reshape(gh, gw, d)  # (gh, gw, D)
    out = torch.einsum("ah,bw,hwd->abd", weights(gh, nh), weights(gw, nw), grid)  # (gh', gw', D)
    return torch.cat([pos[:, :prefix], out.reshape(1, nh * nw, d)], dim=1)


def interpolate(pos: torch.Tensor, old: tuple[int, int], new: tuple[int, int], prefix: int) -> Example:
    wrong = [("half-pixel centres: new row i sits at (i + ½)·gh/gh' − ½, not at i·(gh − 1)/(gh' − 1) (that is "
              "align_corners=True)", by_hand(pos, old, new, prefix, rule="corners")),
             ("new row i sits at (i + ½)·gh/gh' − ½: the centre of a cell, not its corner i·gh/gh'",
              by_hand(pos, old, new, prefix, rule="no shift")),
             ("clamp the old coordinate to [0, gh − 1]: at the edge a negative index wraps round to the last row",
              by_hand(pos, old, new, prefix, clamp=False)),
             ("the patch rows go row by row over the grid: (gh·gw, D) reshapes to (gh, gw, D); read as (D, gh, gw) it "
              "mixes channels and positions (transpose first)", by_hand(pos, old, new, prefix, channels_first=True))]
    want = interpolate_pos_embed(pos, new, old_grid=old, num_prefix_tokens=prefix, mode="bilinear",
                                 align_corners=False)  # (1, prefix + gh'·gw', D)
    return Example("my_interpolate", want, [pos, old, new, prefix], atol=1e-4,
                   what=f"my_interpolate(pos of shape {tuple(pos.shape)}, {old}, {new}, prefix={prefix})",
                   shape_hint=" (1, prefix + gh'·gw', D)", mistakes=apart(want, wrong))


def chapter12(a: Assignment, draw) -> None:
    q = a.question("ch12_new_table_shape", ("new_table_shape",),
                   references=("vit_edu.config.ViTConfig.grid_size", "vit_edu.config.ViTConfig.num_patches",
                               "vit_edu.config.ViTConfig.seq_len"))
    q.public = [new_table_shape(32, 48, 8, 128, 1)]
    r = random.Random(draw("new_table_shape"))
    q.check("non-square images with 0 to 2 prefix tokens", [
        new_table_shape(p * gh, p * (gh + r.randint(1, 5)), p, r.randint(1, 16) * 64, prefix)
        for p, gh, prefix in ((16, r.randint(3, 8), 2), (8, r.randint(3, 8), 0), (14, r.randint(8, 16), 1))])

    q = a.question("ch12_interpolate", ("my_interpolate",), references=INTERPOLATE_REFS + RESIZERS)
    q.public = [interpolate(seeded(1, 2 + 6, 2, seed=24), (2, 3), (4, 4), 2)]
    q.check("two prefix rows from a 3×4 grid to 5×6",
            [interpolate(seeded(1, 2 + 12, 7, seed=draw("interpolate/1")), (3, 4), (5, 6), 2)], points=2)
    q.check("no prefix row to a smaller grid and non-square grids",
            [interpolate(seeded(1, 16, 5, seed=draw("interpolate/2")), (4, 4), (2, 3), 0),
             interpolate(seeded(1, 1 + 10, 3, seed=draw("interpolate/3")), (2, 5), (4, 3), 1)])

    accuracy = experiments()["resized_acc"]
    q = a.question("ch12_resized_acc", ("resized_acc",), references=INTERPOLATE_REFS, depends=("ch12_interpolate",),
                   cell_seconds=RUN_SECONDS)
    q.public = [Example("resized_acc", dict.fromkeys(NEW_SIZES, 0.5), form_only=True, what="resized_acc")]
    whole = measured("resized_acc", accuracy, [
        Mistake("report fractions of the 400 scenes, not percentages", {s: 100 * v for s, v in accuracy.items()})],
        atol=ACC_TOL, rtol=0.0)
    for size in NEW_SIZES:
        q.check(f"accuracy at {size}×{size}", [part(whole, [size])])


# ---------------------------------------------------------------- chapter 13


def first_loss(k: int, eps: float) -> Example:
    """The loss of an untrained vit_edu model, computed with one (its zero head predicts every class alike)."""
    cfg = ViTConfig(image_size=16, patch_size=8, embed_dim=16, depth=1, num_heads=2, mlp_dim=32, num_classes=k)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        with torch.no_grad():
            logits = VisionTransformer(cfg)(torch.rand(3, 3, 16, 16))
    want = F.cross_entropy(logits, torch.arange(3) % k, label_smoothing=eps).item()
    mistakes = []
    if eps:
        hi, lo = 1 - eps + eps / k, eps / k
        mistakes.append(Mistake("that is the lowest loss the smoothed target allows (a perfect model), not the loss "
                                "of a model that has not trained", -hi * math.log(hi) - (k - 1) * lo * math.log(lo)))
    return Example("first_loss", want, [k, eps], what=f"first_loss({k}, {eps:g})", atol=0.0, rtol=1e-5,
                   mistakes=mistakes)


def chapter13(a: Assignment, draw) -> None:
    q = a.question("ch13_first_loss", ("first_loss",))
    q.public = [first_loss(4, 0.0)]
    r = random.Random(draw("first_loss"))
    q.check("with and without label smoothing for 3 to 1000 classes",
            [first_loss(r.randint(5, 20), r.choice((0.1, 0.2))), first_loss(r.randint(500, 1000), 0.0),
             first_loss(3, r.choice((0.3, 0.4)))])

    q = a.question("ch13_diagnose", ("diagnosis",))
    q.public = [Example("diagnosis", dict.fromkeys(DIAGNOSIS, "?"), form_only=True, what="diagnosis")]
    whole = Example("diagnosis", DIAGNOSIS, what="diagnosis")
    for symptoms in ("abc", "def"):
        q.check(f"symptoms {symptoms[0]} to {symptoms[-1]}", [part(whole, list(symptoms))])

    largest = experiments()["largest"]
    growth = {lr: largest[lr][3] / largest[lr][2] for lr in DECAY_LRS}
    q = a.question("ch13_decay_growth", ("decay_growth",), cell_seconds=RUN_SECONDS)
    q.public = [Example("decay_growth", dict.fromkeys(DECAY_LRS, 1.0), form_only=True, what="decay_growth")]
    whole = measured("decay_growth", growth, [
        Mistake("r is the largest value after step 4 divided by the one after step 3",
                {lr: 1 / g for lr, g in growth.items()}),
        Mistake("a larger learning rate makes the largest weight grow faster: check which ratio belongs to which run",
                dict(zip(DECAY_LRS, reversed(growth.values()))))], atol=0.0, rtol=GROWTH_TOL)
    q.check("lr 60 and 100 (decay factor below −1)", [part(whole, DECAY_LRS[1:])])
    q.check("lr 30", [part(whole, DECAY_LRS[:1])])


def make(draw):
    """Homework 3's questions, public examples and hidden checks (``draw(label)``: a seed from the secret)."""
    a = Assignment("hw3_training")
    for chapter in (chapter9, chapter10, chapter11, chapter12, chapter13):
        chapter(a, draw)
    return a
