"""Homework 3 (chapters 9–13): each ``expect_*`` judges an answer on given inputs, each ``check_*`` is the public check.

``expect_*(got, *inputs)`` computes what the book's reference (or torch itself) gives on the inputs and raises
``AssertionError`` with a hint for the classic mistakes; the public ``check_*(answer)`` runs it on the public
example only. The hidden checks (other inputs, in the instructor's build) call the same ``expect_*``. The
experiments' reference numbers and the answers to the multiple-choice and diagnosis questions come from the
instructor's answer key, never from this module: their public checks test the form of an answer and a property
every honest run has, not its value.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from vit_edu.config import ViTConfig
from vit_edu.explain import attention_rollout, cls_attention, patch_distances, position_similarity
from vit_edu.homework.feedback.common import as_tuple, call, close, expect_shape, fmt, require, seeded
from vit_edu.model import VisionTransformer
from vit_edu.position import interpolate_pos_embed
from vit_edu.training import parameter_groups

__all__ = [
    "decay_model", "expect_decay_split", "check_decay_split",
    "scheduled_lrs", "expect_lr_schedule", "check_lr_schedule",
    "LR_GRID", "expect_lr_runs", "check_lr_runs", "READINGS", "expect_reading", "check_lr_reading",
    "random_attentions", "expect_rollout", "check_rollout", "expect_cls_map", "check_cls_map",
    "FUSIONS", "RESIDUALS", "expect_rollout_scores", "check_rollout_scores", "check_rollout_reading",
    "position_table", "expect_centred_similarity", "check_centred_similarity",
    "expect_centre_distances", "check_centre_distances", "expect_tile_flips", "check_tile_flips",
    "expect_new_table_shape", "check_new_table_shape", "expect_interpolate", "check_interpolate",
    "NEW_SIZES", "expect_resized_acc", "check_resized_acc",
    "expect_first_loss", "check_first_loss", "DIAGNOSES", "SYMPTOMS", "expect_diagnosis", "check_diagnosis",
    "DECAY_LRS", "expect_decay_growth", "check_decay_growth",
]

READINGS = ("a", "b", "c", "d")


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _numbers(answer: Any, n: int, what: str, low: float = -math.inf, high: float = math.inf) -> list[float]:
    """``answer`` as a list of ``n`` finite numbers in ``[low, high]``, or a failed check saying what is wrong."""
    if not isinstance(answer, (list, tuple)) or len(answer) != n or not all(_number(v) for v in answer):
        raise AssertionError(f"{what} should be a list of {n} numbers, got {answer!r}")
    if not all(low <= v <= high for v in answer):
        raise AssertionError(f"{what} should lie between {low:g} and {high:g}, got {answer!r}")
    return [float(v) for v in answer]


def _counted(values: list[float], total: int, what: str) -> None:
    """Fail unless every value is a whole count out of ``total`` (an accuracy on ``total`` images)."""
    for v in values:
        if abs(v * total - round(v * total)) > 1e-3:  # float32 means are exact to ~1e-7
            raise AssertionError(f"{what}: {v!r} is not a fraction of {total} images (k / {total}): report the "
                                 f"fraction of the {total} images, not a percentage or a rounded number")


def _keyed(answer: Any, keys: tuple, name: str) -> dict:
    """``answer`` as a dict with exactly ``keys`` (numbers compared as floats), or a failed check."""
    require(answer, name)
    if not isinstance(answer, dict):
        raise AssertionError(f"{name} should be a dict with keys {list(keys)}, got {type(answer).__name__}")
    found = {}
    for k in keys:
        match = [a for a in answer if a == k or (_number(a) and _number(k) and math.isclose(a, k))]
        if len(match) != 1:
            raise AssertionError(f"{name} should be a dict with keys {list(keys)}, got keys {list(answer)}")
        found[k] = answer[match[0]]
    if len(answer) != len(keys):
        raise AssertionError(f"{name} should be a dict with keys {list(keys)}, got keys {list(answer)}")
    return found


def expect_reading(got: Any, want: str, what: str) -> None:
    """A multiple-choice answer: one of the letters, and the key's."""
    if not isinstance(got, str) or got.strip().lower() not in READINGS:
        raise AssertionError(f"{what} should be one of the letters {', '.join(map(repr, READINGS))}, got {got!r}")
    if got.strip().lower() != want:
        raise AssertionError(f"{what}: not the reading the runs support")


def _reading_form(answer: Any, name: str) -> None:
    require(answer, name)
    if not isinstance(answer, str) or answer.strip().lower() not in READINGS:
        raise AssertionError(f"{name} should be one of the letters {', '.join(map(repr, READINGS))}, got {answer!r}")


# ---------------------------------------------------------------- chapter 9


def decay_model(pool: str = "cls", pos_embed: str = "learned", qkv_bias: bool = True, frozen: tuple[str, ...] = (),
                depth: int = 1, seed: int = 0) -> VisionTransformer:
    """A small seeded ViT whose parameters under the module names ``frozen`` have ``requires_grad=False``."""
    cfg = ViTConfig(image_size=16, patch_size=8, embed_dim=16, depth=depth, num_heads=2, mlp_dim=32, num_classes=4,
                    pool=pool, pos_embed=pos_embed, qkv_bias=qkv_bias)
    torch.manual_seed(seed)
    model = VisionTransformer(cfg)
    for name, p in model.named_parameters():
        if any(name == f or name.startswith(f + ".") for f in frozen):
            p.requires_grad_(False)
    return model


def expect_decay_split(got: Any, model: torch.nn.Module) -> None:
    """``decay_split(model)`` = ``{"decay", "no_decay", "frozen"}``: numbers of parameters in each group."""
    groups = parameter_groups(model, 0.05)  # trainable parameters only, in the book's two groups
    params = dict(model.named_parameters())
    want = {"decay": sum(p.numel() for p in groups[0]["params"]),
            "no_decay": sum(p.numel() for p in groups[1]["params"]),
            "frozen": sum(p.numel() for p in params.values() if not p.requires_grad)}
    if not isinstance(got, dict) or set(got) != set(want):
        raise AssertionError(f"decay_split should return a dict with keys 'decay', 'no_decay', 'frozen', got {got!r}")
    if got == want:
        return
    trainable = {n: p for n, p in params.items() if p.requires_grad}
    embeddings = sum(p.numel() for n, p in trainable.items() if "cls_token" in n or "pos_embed" in n)
    tensors = {"decay": len(groups[0]["params"]), "no_decay": len(groups[1]["params"]),
               "frozen": sum(1 for p in params.values() if not p.requires_grad)}
    hint = ""
    if got == tensors:
        hint = ": count numbers (p.numel()), not tensors"
    elif embeddings and got.get("decay") == want["decay"] + embeddings:
        hint = (": the CLS token and the position table are 3-D tensors, but they are embeddings: "
                "no weight decay for them")
    elif want["frozen"] and got.get("frozen") == 0 and got.get("decay", 0) + got.get("no_decay", 0) == sum(
            p.numel() for p in params.values()):
        hint = ": a parameter with requires_grad=False is not trained: count it as frozen, in neither group"
    elif got.get("no_decay") == embeddings:
        hint = ": biases and LayerNorm parameters (1-D tensors) get no weight decay either"
    raise AssertionError(f"decay_split should give {want}, got {got}{hint}")


def check_decay_split(fn: Any) -> None:
    """Public: a CLS model whose patch embedding is frozen."""
    model = decay_model(frozen=("patch_embed",))
    expect_decay_split(call(fn, "decay_split", model), model)


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


def expect_lr_schedule(got: Any, base_lr: float, warmup_steps: int, total_steps: int, min_lr: float) -> None:
    """``[lr_at(step, ...) for step in range(total_steps)]`` equals torch's schedulers, step by step."""
    what = f"lr_at(step, {base_lr:g}, {warmup_steps}, {total_steps}, {min_lr:g})"
    want = scheduled_lrs(base_lr, warmup_steps, total_steps, min_lr)
    got = _numbers(got, total_steps, f"[{what} for step in range({total_steps})]")
    for step, (g, w) in enumerate(zip(got, want, strict=True)):
        if math.isclose(g, w, rel_tol=1e-5, abs_tol=1e-12):
            continue
        hint = ""
        if step < warmup_steps:
            if math.isclose(g, base_lr * step / warmup_steps, rel_tol=1e-5, abs_tol=1e-12):
                hint = ": LinearLR's warm-up starts at base_lr / W (start_factor = 1/W), not at 0"
            elif math.isclose(g, base_lr * (step + 1) / warmup_steps, rel_tol=1e-5):
                hint = ": the warm-up reaches base_lr only at step W, not at step W − 1"
            else:
                hint = " (warm-up)"
        else:
            t = (step - warmup_steps) / (total_steps - warmup_steps)
            if math.isclose(g, base_lr * (1 + math.cos(math.pi * t)) / 2, rel_tol=1e-5, abs_tol=1e-12):
                hint = ": the cosine ends at min_lr, not at 0"
            elif math.isclose(g, min_lr + (base_lr - min_lr) * (1 + math.cos(math.pi * step / total_steps)) / 2,
                              rel_tol=1e-5):
                hint = ": the cosine runs over the T − W steps after the warm-up, starting at step W"
            else:
                hint = " (cosine decay)"
        raise AssertionError(f"{what} at step {step} should be {w:.6g}, got {g!r}{hint}")


def check_lr_schedule(fn: Any) -> None:
    """Public: a warm-up of 4 of 12 steps, and the same rates without warm-up over 6 steps."""
    for w, t in ((4, 12), (0, 6)):
        expect_lr_schedule([call(fn, "lr_at", s, 1e-3, w, t, 1e-4) for s in range(t)], 1e-3, w, t, 1e-4)


LR_GRID = (3e-4, 3e-3)  # exercise 9.3's two learning rates


def _lr_runs_form(answer: Any) -> dict[float, list[float]]:
    runs = _keyed(answer, LR_GRID, "lr_runs")
    return {lr: _numbers(runs[lr], 3, f"lr_runs[{lr:g}] (seeds 0, 1, 2)", 0.0, 1.0) for lr in LR_GRID}


def expect_lr_runs(answer: Any, lr: float, want: list[float], tolerance: float) -> None:
    """The three runs at learning rate ``lr``, each within ``tolerance`` of the key's run of the same recipe."""
    got = _lr_runs_form(answer)[lr]
    for seed, (g, w) in enumerate(zip(got, want, strict=True)):
        if abs(g - w) > tolerance:
            raise AssertionError(f"lr_runs[{lr:g}] for seed {seed} is {g:.4f}: not within {tolerance:g} of the "
                                 f"reference run of the same recipe (seed the model and TrainConfig)")


def check_lr_runs(answer: Any) -> None:
    """Public: two learning rates × three seeds, validation accuracies on 400 images, not all equal."""
    runs = _lr_runs_form(answer)
    for lr in LR_GRID:
        _counted(runs[lr], 400, f"lr_runs[{lr:g}]")
    if len({v for lr in LR_GRID for v in runs[lr]}) == 1:
        raise AssertionError("all six accuracies are equal: did every run use its own learning rate and seed?")


def check_lr_reading(answer: Any) -> None:
    """Public: the form of the reading (the letter is graded by the hidden check)."""
    _reading_form(answer, "lr_reading")


# ---------------------------------------------------------------- chapter 10


def random_attentions(layers: int, b: int, h: int, s: int, seed: int) -> list[torch.Tensor]:
    """``layers`` seeded attention maps ``(B, h, S, S)`` whose rows sum to 1, uneven enough to tell fusions apart."""
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(b, h, s, s, generator=g) * 2).softmax(-1) for _ in range(layers)]


def _fuse(a: torch.Tensor, fusion: str) -> torch.Tensor:
    return a.mean(1) if fusion == "mean" else a.amax(1)


def expect_rollout(got: Any, attentions: list[torch.Tensor], fusion: str, residual: float) -> None:
    """``my_rollout(attentions, fusion, residual)``: rollout with ``residual`` times the identity per layer."""
    b, _, s, _ = attentions[0].shape
    what = f"my_rollout({len(attentions)} × (B, h, S, S), {fusion!r}, {residual:g})"
    expect_shape(got, (b, s, s), what, " (B, S, S)")
    sums = got.sum(-1)
    if not close(sums, torch.ones_like(sums)):
        raise AssertionError(f"every row of {what} should sum to 1, got row sums {fmt(sums)}: divide each row by "
                             f"its own sum (keepdim=True), after adding the identity")
    # fuse(A / w) + I = (fuse(A) + w·I) / w, and the row normalisation removes the 1/w.
    want = attention_rollout([a / residual for a in attentions], fusion)
    if close(got, want):
        return
    eye = torch.eye(s)
    alternatives = {
        "plain": attention_rollout(attentions, fusion),
        "none": _chain([_fuse(a, fusion) / _fuse(a, fusion).sum(-1, keepdim=True) for a in attentions]),
        "reversed": _chain([_rownorm(_fuse(a, fusion) + residual * eye) for a in attentions], reverse=True),
        "complement": _chain([_rownorm(residual * _fuse(a, fusion) + eye) for a in attentions]),
        "fusion": attention_rollout([a / residual for a in attentions], "mean" if fusion == "max" else "max"),
    }
    hints = {"plain": f": the identity should be weighted: fuse(A) + {residual:g}·I, not fuse(A) + I",
             "none": ": add the residual path (the weighted identity) before renormalising",
             "reversed": ": multiply in layer order, R = Â_L ⋯ Â_1 (the newest layer on the left)",
             "complement": ": the weight multiplies the identity, not the attention: fuse(A) + w·I",
             "fusion": (": fusion='max' takes the element-wise maximum over the heads (amax), fusion='mean' their "
                        "mean")}
    hint = next((hints[k] for k, alt in alternatives.items() if residual != 1 or k != "complement"
                 if close(got, alt)), "")
    raise AssertionError(f"{what}: row 0 of image 0 should be {fmt(want[0, 0])}, got {fmt(got[0, 0])}{hint}")


def _rownorm(m: torch.Tensor) -> torch.Tensor:
    return m / m.sum(-1, keepdim=True)


def _chain(steps: list[torch.Tensor], reverse: bool = False) -> torch.Tensor:
    b, s, _ = steps[0].shape
    r = torch.eye(s).expand(b, s, s)
    for step in steps:
        r = r @ step if reverse else step @ r
    return r


def check_rollout(fn: Any) -> None:
    """Public: one image, max fusion, weight 0.5 (a missing keepdim shows here: the rows no longer sum to 1)."""
    att = random_attentions(2, 1, 2, 3, seed=20)
    expect_rollout(call(fn, "my_rollout", [a.clone() for a in att], "max", 0.5), att, "max", 0.5)


def expect_cls_map(got: Any, attentions: list[torch.Tensor], grid: tuple[int, int], layer: int, prefix: int) -> None:
    """``cls_map(attentions, grid, layer, prefix)``: CLS row over the patch keys, heads averaged, summing to 1."""
    b = attentions[0].shape[0]
    gh, gw = grid
    what = f"cls_map(attentions, {grid}, layer={layer}, prefix={prefix})"
    expect_shape(got, (b, gh, gw), what, " (B, gh, gw)")
    raw = cls_attention(attentions, num_prefix_tokens=prefix)[layer].mean(1)  # (B, N)
    want = (raw / raw.sum(-1, keepdim=True)).reshape(b, gh, gw)
    if close(got, want):
        return
    hint = ""
    last = attentions[layer].mean(1)  # (B, S, S)
    column = last[:, prefix:, 0]
    if close(got, raw.reshape(b, gh, gw)):
        hint = ": renormalise the patch weights of each image to sum to 1 (the CLS token keeps some weight itself)"
    elif close(got, (column / column.sum(-1, keepdim=True)).reshape(b, gh, gw)):
        hint = ": take row 0 (what the CLS query reads), not column 0 (who reads the CLS token)"
    elif any(close(got, (m / m.sum(-1, keepdim=True)).reshape(b, gh, gw))
             for m in (a.mean(1)[:, 0, prefix:] for i, a in enumerate(attentions)
                       if i != layer % len(attentions))):
        hint = f": use the layer asked for, attentions[{layer}]"
    elif prefix > 1 and any(close(got, (m / m.sum(-1, keepdim=True)).reshape(b, gh, gw))
                            for m in (last[:, 0, 1:1 + gh * gw], last[:, 0, -gh * gw:][:, : gh * gw])):
        hint = f": the first {prefix} keys are prefix tokens, the patches are the keys from {prefix} on"
    raise AssertionError(f"{what}: image 0 should be {fmt(want[0])}, got {fmt(got[0])}{hint}")


def check_cls_map(fn: Any) -> None:
    """Public: a CLS and a second prefix token, the first of two layers, a 2×2 grid."""
    att = random_attentions(2, 2, 3, 6, seed=21)
    expect_cls_map(call(fn, "cls_map", [a.clone() for a in att], (2, 2), 0, 2), att, (2, 2), 0, 2)


FUSIONS = ("mean", "max")
RESIDUALS = (0.5, 2.0)  # exercise 10.3's residual weights, in the order of each list


def _rollout_scores_form(answer: Any) -> dict[str, Any]:
    got = _keyed(answer, (*FUSIONS, "baseline"), "rollout_scores")
    out = {f: _numbers(got[f], len(RESIDUALS), f"rollout_scores[{f!r}] (residual weights 0.5, 2)", 0.0, 1.0)
           for f in FUSIONS}
    if not _number(got["baseline"]) or not 0 < got["baseline"] < 1:
        raise AssertionError(f"rollout_scores['baseline'] should be a number between 0 and 1, got {got['baseline']!r}")
    out["baseline"] = float(got["baseline"])
    return out


def expect_rollout_scores(answer: Any, want: dict[str, Any], tolerance: float, parts: tuple[str, ...]) -> None:
    """The mean localisation scores of ``parts`` (fusions and/or "baseline") within ``tolerance`` of the key's."""
    got = _rollout_scores_form(answer)
    for part in parts:
        g = got[part] if isinstance(got[part], list) else [got[part]]
        w = want[part] if isinstance(want[part], list) else [want[part]]
        for i, (a, b) in enumerate(zip(g, w, strict=True)):
            if abs(a - b) > tolerance:
                where = f"rollout_scores[{part!r}]" + (f"[{i}]" if part != "baseline" else "")
                raise AssertionError(f"{where} is {a:.4f}: not within {tolerance:g} of the reference (check the "
                                     f"images, the CLS row without its own column, and your rollout)")


def check_rollout_scores(answer: Any) -> None:
    """Public: the form, and the scores of one fusion differ between the two residual weights."""
    got = _rollout_scores_form(answer)
    for f in FUSIONS:
        if got[f][0] == got[f][1]:
            raise AssertionError(f"rollout_scores[{f!r}] is the same for both residual weights: did my_rollout get "
                                 f"the weight?")


def check_rollout_reading(answer: Any) -> None:
    """Public: the form of the reading (the letter is graded by the hidden check)."""
    _reading_form(answer, "rollout_reading")


# ---------------------------------------------------------------- chapter 11


def position_table(prefix: int, n: int, d: int, seed: int, offset: float = 3.0) -> torch.Tensor:
    """A seeded ``(1, prefix + N, D)`` table whose patch rows share a large common offset."""
    rows = seeded(1, prefix + n, d, seed=seed)
    return rows + offset * seeded(1, 1, d, seed=seed + 1)


def expect_centred_similarity(got: Any, pos: torch.Tensor, prefix: int) -> None:
    """``centred_similarity(pos, prefix)``: cosine similarity of the patch rows after removing their mean row."""
    n = pos.shape[1] - prefix
    what = f"centred_similarity(pos of shape {tuple(pos.shape)}, prefix={prefix})"
    if isinstance(got, torch.Tensor) and tuple(got.shape) == (n + prefix, n + prefix) and prefix:
        raise AssertionError(f"{what} should have shape {(n, n)}, got {tuple(got.shape)}: drop the {prefix} "
                             f"prefix row(s) first, they have no place on the grid")
    expect_shape(got, (n, n), what, " (N, N)")
    rows = pos[0, prefix:]
    want = position_similarity(rows - rows.mean(0))
    if close(got, want):
        return
    hint = ""
    if close(got, position_similarity(rows)):
        hint = ": subtract the mean patch row (the part every patch shares) before the cosine"
    elif close(got, position_similarity(rows - rows.mean(1, keepdim=True))):
        hint = ": the mean to remove is the mean row (over the N patches, dim 0), not each row's own mean"
    elif close(got, (rows - rows.mean(0)) @ (rows - rows.mean(0)).T):
        hint = ": normalise each centred row to length 1: cosine, not the plain dot product"
    elif close(got, position_similarity(pos[0, prefix:] - pos[0].mean(0))):
        hint = ": take the mean over the patch rows only, without the prefix rows"
    raise AssertionError(f"{what}: row 0 should be {fmt(want[0])}, got {fmt(got[0])}{hint}")


def check_centred_similarity(fn: Any) -> None:
    pos = position_table(1, 4, 3, seed=22)
    expect_centred_similarity(call(fn, "centred_similarity", pos.clone(), 1), pos, 1)


def expect_centre_distances(got: Any, grid: tuple[int, int], patch_size: int) -> None:
    """``centre_distances(grid, patch_size)`` = pixel distances between patch centres ``(N, N)``, row-major."""
    n = grid[0] * grid[1]
    expect_shape(got, (n, n), f"centre_distances({grid}, {patch_size})", " (N, N)")
    want = patch_distances(grid, patch_size)
    if close(got, want, atol=1e-4):
        return
    hint = ""
    if close(got, want / patch_size, atol=1e-4):
        hint = ": multiply by the patch size: distances are in pixels"
    elif grid[0] != grid[1] and close(got, _transposed_distances(grid, patch_size), atol=1e-4):
        hint = ": patches are numbered row by row: patch i sits in row i // gw, column i % gw"
    raise AssertionError(f"centre_distances({grid}, {patch_size}): row 0 should be {fmt(want[0])}, "
                         f"got {fmt(got[0])}{hint}")


def _transposed_distances(grid: tuple[int, int], p: int) -> torch.Tensor:
    gh, gw = grid
    i = torch.arange(gh * gw)
    centres = torch.stack([i % gh, i // gh], dim=1).float() * p  # column-major numbering
    return torch.cdist(centres, centres)


def check_centre_distances(fn: Any) -> None:
    expect_centre_distances(call(fn, "centre_distances", (2, 3), 8), (2, 3), 8)


def _tile_flips_form(answer: Any) -> dict[str, float]:
    got = _keyed(answer, ("flips", "tv"), "tile_flips")
    for k in ("flips", "tv"):
        if not _number(got[k]) or not 0 <= got[k] <= 1:
            raise AssertionError(f"tile_flips[{k!r}] should be a number between 0 and 1, got {got[k]!r}")
    return {k: float(got[k]) for k in ("flips", "tv")}


def expect_tile_flips(answer: Any, want: dict[str, float], part: str, tolerance: float) -> None:
    """``tile_flips[part]`` within ``tolerance`` of the key's measurement."""
    got = _tile_flips_form(answer)[part]
    if abs(got - want[part]) > tolerance:
        raise AssertionError(f"tile_flips[{part!r}] is {got:.5f}: not within {tolerance:g} of the reference "
                             f"(check the images, the permutations and which tile goes where)")


def check_tile_flips(answer: Any) -> None:
    """Public: the form; a share of 5000 (image, permutation) pairs; changed classes need changed probabilities."""
    got = _tile_flips_form(answer)
    _counted([got["flips"]], 5000, "tile_flips['flips']")
    if got["flips"] > 0 and got["tv"] == 0:
        raise AssertionError("some predicted classes changed, so the class probabilities changed too: "
                             "tile_flips['tv'] cannot be 0")
    if got["tv"] > 0.5:
        raise AssertionError(f"tile_flips['tv'] is {got['tv']:.3f}: the total variation distance is half the sum of "
                             f"absolute differences, averaged over the pairs")


# ---------------------------------------------------------------- chapter 12


def expect_new_table_shape(got: Any, height: int, width: int, p: int, d: int, prefix: int) -> None:
    """``new_table_shape(height, width, p, d, prefix)`` = ``((gh, gw), (1, S, D))``."""
    what = f"new_table_shape({height}, {width}, {p}, {d}, {prefix})"
    got = as_tuple(got, what)
    gh, gw = height // p, width // p
    want = ((gh, gw), (1, prefix + gh * gw, d))
    if got != want:
        hint = ""
        if len(got) == 2 and got[1] == (1, gh * gw, d) and prefix:
            hint = f": the table keeps a row for each of the {prefix} prefix token(s)"
        elif len(got) == 2 and got[0] == (gw, gh):
            hint = ": the grid is (rows, columns) = (height / P, width / P)"
        raise AssertionError(f"{what} should be {want}, got {got}{hint}")


def check_new_table_shape(fn: Any) -> None:
    expect_new_table_shape(call(fn, "new_table_shape", 32, 48, 8, 128, 1), 32, 48, 8, 128, 1)


def expect_interpolate(got: Any, pos: torch.Tensor, old: tuple[int, int], new: tuple[int, int], prefix: int) -> None:
    """``my_interpolate(pos, old, new, prefix)``: bilinear, ``align_corners=False``, prefix rows untouched."""
    d = pos.shape[-1]
    what = f"my_interpolate(pos, {old}, {new}, prefix={prefix})"
    expect_shape(got, (1, prefix + new[0] * new[1], d), what, " (1, prefix + gh'·gw', D)")
    if prefix and not close(got[:, :prefix], pos[:, :prefix]):
        raise AssertionError(f"{what}: the first {prefix} row(s) (prefix tokens) should be copied unchanged: they "
                             f"have no place on the grid")
    want = interpolate_pos_embed(pos, new, old_grid=old, num_prefix_tokens=prefix, mode="bilinear",
                                 align_corners=False)
    if close(got, want, atol=1e-4):
        return
    grid = pos[:, prefix:]

    def resized(image: torch.Tensor, size: tuple[int, int], **kw: Any) -> torch.Tensor:
        return F.interpolate(image, size=size, **kw)

    image = grid.transpose(1, 2).reshape(1, d, *old)
    alternatives = {
        ": align_corners=False (half-pixel centres), not True": resized(image, new, mode="bilinear",
                                                                        align_corners=True),
        ": bilinear, not bicubic": resized(image, new, mode="bicubic", align_corners=False),
        ": transpose (1, N, D) to (1, D, N) before reshaping to (1, D, gh, gw)": resized(
            grid.reshape(1, d, *old), new, mode="bilinear", align_corners=False),
    }
    hint = next((h for h, alt in alternatives.items()
                 if close(got[:, prefix:], alt.reshape(1, d, -1).transpose(1, 2), atol=1e-4)), "")
    i = next(i for i in range(prefix, want.shape[1]) if not close(got[0, i], want[0, i], atol=1e-4))
    raise AssertionError(f"{what}: patch row {i - prefix} should be {fmt(want[0, i])}, got {fmt(got[0, i])}{hint}")


def check_interpolate(fn: Any) -> None:
    pos = seeded(1, 2 + 6, 2, seed=24)
    expect_interpolate(call(fn, "my_interpolate", pos.clone(), (2, 3), (4, 4), 2), pos, (2, 3), (4, 4), 2)


NEW_SIZES = (24, 56)  # exercise 12.3's image sizes


def _resized_form(answer: Any) -> dict[int, float]:
    got = _keyed(answer, NEW_SIZES, "resized_acc")
    for size in NEW_SIZES:
        if not _number(got[size]) or not 0 <= got[size] <= 1:
            raise AssertionError(f"resized_acc[{size}] should be an accuracy between 0 and 1, got {got[size]!r}")
    return {size: float(got[size]) for size in NEW_SIZES}


def expect_resized_acc(answer: Any, size: int, want: float, tolerance: float) -> None:
    """The accuracy at ``size`` within ``tolerance`` of the key's."""
    got = _resized_form(answer)[size]
    if abs(got - want) > tolerance:
        raise AssertionError(f"resized_acc[{size}] is {got:.4f}: not within {tolerance:g} of the reference (check the "
                             f"grid, the interpolated table and the 400 scenes)")


def check_resized_acc(answer: Any) -> None:
    """Public: the form, fractions of 400 scenes, and above chance (a resized model still works)."""
    got = _resized_form(answer)
    _counted(list(got.values()), 400, "resized_acc")
    for size, acc in got.items():
        if acc <= 0.25:
            raise AssertionError(f"resized_acc[{size}] is {acc:.3f}, chance level: did the model get its new table "
                                 f"and every other weight?")


# ---------------------------------------------------------------- chapter 13


def expect_first_loss(got: Any, num_classes: int, label_smoothing: float) -> None:
    """``first_loss(K, eps)`` = the cross-entropy (smoothing ``eps``) of an untrained ``vit_edu`` model."""
    cfg = ViTConfig(image_size=16, patch_size=8, embed_dim=16, depth=1, num_heads=2, mlp_dim=32,
                    num_classes=num_classes)
    torch.manual_seed(0)
    with torch.no_grad():
        logits = VisionTransformer(cfg)(torch.rand(3, 3, 16, 16))
    want = F.cross_entropy(logits, torch.arange(3) % num_classes, label_smoothing=label_smoothing).item()
    what = f"first_loss({num_classes}, {label_smoothing:g})"
    if not _number(got):
        raise AssertionError(f"{what} should be a number, got {got!r}")
    if math.isclose(got, want, rel_tol=1e-5):
        return
    k, eps = num_classes, label_smoothing
    hi, lo = 1 - eps + eps / k, eps / k
    floor = -hi * math.log(hi) - ((k - 1) * lo * math.log(lo) if eps > 0 else 0.0)
    hint = ""
    if eps and math.isclose(got, floor, rel_tol=1e-4):
        hint = (": that is the lowest loss the smoothed target allows (a perfect model), not the loss of a model "
                "that has not trained")
    elif eps and not math.isclose(got, want, rel_tol=1e-2):
        hint = ": what does an untrained vit_edu head predict? Then average the loss over the smoothed target"
    raise AssertionError(f"{what} should be {want:.5f}, got {got!r}{hint}")


def check_first_loss(fn: Any) -> None:
    expect_first_loss(call(fn, "first_loss", 4, 0.0), 4, 0.0)


DIAGNOSES = ("patch_size", "cls_width", "pos_rows", "learning_rate", "num_classes", "input_norm", "resolution")
SYMPTOMS = ("a", "b", "c", "d", "e", "f")


def _diagnosis_form(answer: Any) -> dict[str, str]:
    require(answer, "diagnosis")
    if not isinstance(answer, dict) or set(answer) != set(SYMPTOMS):
        raise AssertionError(f"diagnosis should be a dict with keys {list(SYMPTOMS)}, got {answer!r}")
    for k, v in answer.items():
        if v not in DIAGNOSES:
            raise AssertionError(f"diagnosis[{k!r}] should be one of {DIAGNOSES}, got {v!r}")
    return dict(answer)


def expect_diagnosis(answer: Any, key: dict[str, str], symptoms: tuple[str, ...]) -> None:
    """The causes of ``symptoms`` are the key's."""
    got = _diagnosis_form(answer)
    wrong = [s for s in symptoms if got[s] != key[s]]
    if wrong:
        raise AssertionError(f"{len(wrong)} of symptoms {', '.join(symptoms)} have the wrong cause: "
                             f"{', '.join(wrong)}")


def check_diagnosis(answer: Any) -> None:
    """Public: the form, and no cause given to two symptoms (each broken run has its own cause)."""
    got = _diagnosis_form(answer)
    used = sorted(got.values())
    twice = sorted({v for v in used if used.count(v) > 1})
    if twice:
        raise AssertionError(f"each run has a different cause, but {', '.join(twice)} is given twice")


DECAY_LRS = (30, 60, 100)  # exercise 13.3's learning rates


def _decay_growth_form(answer: Any) -> dict[int, float]:
    got = _keyed(answer, DECAY_LRS, "decay_growth")
    for lr in DECAY_LRS:
        if not _number(got[lr]) or got[lr] <= 0:
            raise AssertionError(f"decay_growth[{lr}] should be a positive number (a ratio of two weights' sizes), "
                                 f"got {got[lr]!r}")
    return {lr: float(got[lr]) for lr in DECAY_LRS}


def expect_decay_growth(answer: Any, want: dict[int, float], lrs: tuple[int, ...], rel_tolerance: float) -> None:
    """The growth ratios at ``lrs`` within ``rel_tolerance`` (relative) of the key's."""
    got = _decay_growth_form(answer)
    for lr in lrs:
        if abs(got[lr] - want[lr]) > rel_tolerance * want[lr]:
            raise AssertionError(f"decay_growth[{lr}] is {got[lr]:.3g}: not within {100 * rel_tolerance:g}% of the "
                                 f"reference (no warm-up, weight decay 0.05, the bench's first four batches)")


def check_decay_growth(answer: Any) -> None:
    """Public: the form, and a larger learning rate does not grow the weights more slowly."""
    got = _decay_growth_form(answer)
    if not got[30] <= got[60] <= got[100]:
        raise AssertionError(f"decay_growth {got}: a larger learning rate should not make the largest weight grow "
                             f"more slowly; check which ratio belongs to which run")
