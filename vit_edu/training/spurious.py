"""A spurious cue on the shapes task: does the model learn the background hue, and do attention and occlusion say so?

``python -m vit_edu.training.spurious --seeds 0 1 2 --out vit_edu/checkpoints/spurious_cue.json`` trains the
``shapes-vit`` model twice per seed on the same objects: the *cue* arm on backgrounds whose hue band is the
image's class (:mod:`vit_edu.data.spurious`, mode ``"label"``), the *control* arm on backgrounds whose band is
drawn independently of the class. Both are tested on the same 1000 test objects three ways: with an independent
background (no cue), with the matching background, and with the background of another class (the cue swapped).
On the cue-free test images it also records how much of the CLS attention of every layer, of attention rollout
and of the occlusion drops lies on the object's patches, with :mod:`vit_edu.explain` as chapter 10 uses it.

Occlusion is scored on the class each model *predicts*, not on the true class: a cue model gets three cue-free
images in four wrong, and on those p(true class) is about 0 before any patch is covered, so it cannot drop
(``p_true_below_001`` records how often). Besides one patch at a time, with three fills, the whole background is
replaced at once by a neutral grey, object kept (:func:`vit_edu.data.spurious.replace_background`), and the
changed predictions are counted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import torch

from vit_edu.data.shapes import DEFAULT_SIZES, split_seed
from vit_edu.data.spurious import HUE_BAND, SpuriousShapes, make_spurious, replace_background
from vit_edu.explain import attention_rollout, cls_attention, localisation_score, object_fraction
from vit_edu.explain.occlusion import logit_margin, occlusion_logits
from vit_edu.model import VisionTransformer
from vit_edu.stats import PairedDifference, paired_difference
from vit_edu.training.loop import evaluate, train
from vit_edu.training.presets import PRESETS

ARMS: dict[str, str] = {"cue": "label", "control": "independent"}  # arm -> background mode of its training images


TEST_MODES: dict[str, str] = {"cue_free": "independent", "matched": "label", "swapped": "swapped"}


# The preset's own budget (1000 steps of 32 images out of 20,000), validated once at the end: one run took about
# 35 s of one CPU thread, the six runs of three seeds 3.3 CPU-minutes (cpu_seconds in the JSON).
BUDGET: dict[str, int] = {"steps": 1000, "train_size": 20000, "eval_every": 1000, "warmup_steps": 60}


N_OCCLUSION = 300  # occlusion needs 16 forward passes per image; the first 300 cue-free test images, as in ch. 10


# How a covered patch is filled: the chapter's default (the image's own mean colour, which on these images is
# mostly the background's hue), black, and a grey with no hue at all.
OCCLUSION_FILLS: dict[str, float | None] = {"mean colour": None, "black": 0.0, "grey 0.5": 0.5}


BACKGROUND_FILL = 0.3  # the whole background's replacement: a grey (no class's hue) as dark as the backgrounds


def test_sets(seed: int, image_size: int = 32, size: int = DEFAULT_SIZES["test"]) -> dict[str, SpuriousShapes]:
    """The test objects of ``seed`` on the three backgrounds of :data:`TEST_MODES` (same objects, same labels)."""
    return {name: make_spurious(size, mode, image_size=image_size, seed=split_seed(seed, "test"))
            for name, mode in TEST_MODES.items()}


@torch.no_grad()
def measure(model: VisionTransformer, tests: dict[str, SpuriousShapes], n_occlusion: int = N_OCCLUSION) -> dict:
    """Accuracies on the three test sets, how often the prediction follows a swapped background, the object's
    share of the CLS attention (per layer, heads averaged) and of rollout, and on the cue-free images what covering
    changes: one patch at a time (each fill of :data:`OCCLUSION_FILLS`, scored on the predicted class) and the
    whole background at once (:data:`BACKGROUND_FILL`)."""
    if set(tests) != set(TEST_MODES):
        raise ValueError(f"tests must hold exactly {sorted(TEST_MODES)}, got {sorted(tests)}")
    if isinstance(n_occlusion, bool) or not isinstance(n_occlusion, int) or not 0 < n_occlusion <= len(tests["cue_free"]):
        raise ValueError(f"n_occlusion must be an integer in 1..{len(tests['cue_free'])}, got {n_occlusion!r}")
    model.eval()
    row = {f"accuracy_{name}": evaluate(model, t.images, t.labels)["accuracy"] for name, t in tests.items()}
    swapped = tests["swapped"]
    pred = torch.cat([model(x).argmax(-1) for x in swapped.images.split(500)])
    row["follows_background"] = (pred == swapped.band).float().mean().item()

    free, patch = tests["cue_free"], model.config.patch_size
    batches = [model(x, return_attention=True) for x in free.images.split(250)]
    logits = torch.cat([b[0] for b in batches])  # (B, K)
    attn = [torch.cat([b[1][layer] for b in batches]) for layer in range(len(batches[0][1]))]  # L × (B, h, S, S)
    fraction = object_fraction(free.masks, patch)  # (B, N)
    cls = cls_attention(attn)  # (L, B, h, N)
    row["attention_object_share"] = [localisation_score(c.mean(1), fraction)[0].mean().item() for c in cls]
    mass, baseline = localisation_score(attention_rollout(attn, "mean", 0.0)[:, 0, 1:], fraction)
    row["rollout_object_share"], row["object_baseline"] = mass.mean().item(), baseline.mean().item()

    # One patch at a time, on the first n_occlusion images, scored on the class the model predicts.
    n = n_occlusion
    predicted = logits[:n].argmax(-1)  # (n,)
    p_true = logits[:n].softmax(-1).gather(1, free.labels[:n, None])[:, 0]  # (n,)
    row["p_true_below_001"] = (p_true < 0.01).float().mean().item()  # nothing left to drop on these images
    frac, base_p = fraction[:n], logits[:n].softmax(-1).gather(1, predicted[:, None])  # (n, N), (n, 1)
    base_margin = logit_margin(logits[:n], predicted)[:, None].clamp(min=1e-6)  # (n, 1): > 0, the argmax leads
    per_fill = {"occlusion_changes": {}, "occlusion_largest_drop": {}, "occlusion_margin_shrink": {}}
    for name, fill in OCCLUSION_FILLS.items():
        covered = occlusion_logits(model, free.images[:n], patch, fill)  # (n, N, K)
        classes = predicted[:, None].expand(-1, covered.shape[1])  # (n, N): the uncovered image's prediction
        drop = base_p - covered.softmax(-1).gather(2, classes[..., None])[..., 0]  # (n, N): of p(predicted class)
        margin = logit_margin(covered, classes)  # (n, N)
        per_fill["occlusion_changes"][name] = (margin < 0).any(-1).float().mean().item()  # some patch flips it
        per_fill["occlusion_largest_drop"][name] = drop.amax(-1).mean().item()
        per_fill["occlusion_margin_shrink"][name] = ((base_margin - margin) / base_margin).amax(-1).mean().item()
        if fill is None:  # the chapter's occlusion map: positive drops, scored like an attention map
            positive = drop.clamp(min=0)
            hurt = positive.sum(-1) > 0  # images where covering some patch lowers p(predicted class)
            row["occlusion_object_share"] = (localisation_score(positive[hurt], frac[hurt])[0].mean().item()
                                             if hurt.any() else None)
            row["occlusion_images"] = int(hurt.sum())
            row["occlusion_drop_object"] = drop[frac > 0.5].mean().item()  # patches more than half object
            row["occlusion_drop_background"] = drop[frac == 0].mean().item()  # patches without object
    row.update(per_fill)

    # The whole background at once, object kept, on all cue-free test images.
    plain = torch.cat([model(x).argmax(-1) for x in replace_background(free.images, free.masks, BACKGROUND_FILL)
                       .split(500)])  # (B,)
    row["background_changes"] = (plain != logits.argmax(-1)).float().mean().item()
    row["background_accuracy"] = (plain == free.labels).float().mean().item()
    row["background_top_class"] = torch.bincount(plain, minlength=len(free.classes)).max().item() / len(plain)
    return row


def run_one(arm: str, seed: int, tests: dict[str, SpuriousShapes], n_occlusion: int = N_OCCLUSION, **budget) -> dict:
    """Train the preset's model on ``arm``'s backgrounds for ``seed`` and measure it (``budget`` overrides
    :data:`BUDGET`)."""
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {list(ARMS)}, got {arm!r}")
    model_cfg, train_cfg = PRESETS["shapes-vit"]
    cfg = dataclasses.replace(train_cfg, **{**BUDGET, **budget}, seed=seed)
    size = model_cfg.image_size[0]
    train_set = make_spurious(cfg.train_size, ARMS[arm], image_size=size, seed=split_seed(seed, "train"))
    val_set = make_spurious(DEFAULT_SIZES["val"], ARMS[arm], image_size=size, seed=split_seed(seed, "val"))
    torch.manual_seed(seed)
    model = VisionTransformer(model_cfg)
    history = train(model, train_set, val_set, cfg, progress=False)
    # val_accuracy: on held-out images drawn like the arm's own training images (what a practitioner would see)
    return {"seed": seed, "val_accuracy": history[-1]["val_accuracy"], **measure(model, tests, n_occlusion),
            "train_seconds": history[-1]["seconds"]}


def run(seeds: list[int], n_occlusion: int = N_OCCLUSION, **budget) -> dict:
    """Both arms on every seed, paired by seed (same objects, initialisation and batch order)."""
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must name at least one seed, each once, got {seeds}")
    settings = {**BUDGET, **budget}
    start, cpu_start = time.perf_counter(), time.process_time()
    results: dict[str, list[dict]] = {arm: [] for arm in ARMS}
    for seed in seeds:
        tests = test_sets(seed)
        for arm in ARMS:
            row = run_one(arm, seed, tests, n_occlusion, **settings)
            print(f"{arm:8s} seed {seed}: val {100 * row['val_accuracy']:.1f}%, cue-free test "
                  f"{100 * row['accuracy_cue_free']:.1f}%, swapped {100 * row['accuracy_swapped']:.1f}% "
                  f"(follows the background {100 * row['follows_background']:.1f}%) in {row['train_seconds']:.0f} s",
                  flush=True)
            results[arm].append(row)
    return {"preset": "shapes-vit", "budget": settings, "arms": ARMS, "test_modes": TEST_MODES, "hue_band": HUE_BAND,
            "n_occlusion": n_occlusion, "occlusion_fills": OCCLUSION_FILLS, "background_fill": BACKGROUND_FILL,
            "torch": torch.__version__, "threads": torch.get_num_threads(),
            "seconds": round(time.perf_counter() - start, 1),
            "cpu_seconds": round(time.process_time() - cpu_start, 1), "results": results}


def paired(data: dict, metric: str, key: int | str | None = None,
           bounds: tuple[float, float] | None = None) -> PairedDifference:
    """Cue minus control of ``metric`` (a key of every result row; ``key`` picks one entry of a per-layer list or
    a per-fill dict), paired by seed. ``bounds``: the smallest and largest possible difference, ``(-1, 1)`` for a
    share, so that an interval running past them says so when printed."""
    rows = data["results"]
    seeds = [r["seed"] for r in rows["cue"]]
    if seeds != [r["seed"] for r in rows["control"]]:
        raise ValueError(f"the arms must hold the same seeds in the same order, got {seeds} and "
                         f"{[r['seed'] for r in rows['control']]}")
    if metric not in rows["cue"][0]:
        raise ValueError(f"unknown metric {metric!r}; the rows hold {sorted(rows['cue'][0])}")
    entry = rows["cue"][0][metric]
    if isinstance(entry, dict):  # one value per fill
        allowed, ok = list(entry), key in entry
    elif isinstance(entry, list):  # one value per layer
        allowed = f"0..{len(entry) - 1}"
        ok = isinstance(key, int) and not isinstance(key, bool) and 0 <= key < len(entry)
    else:  # one value
        allowed, ok = None, key is None
    if not ok:
        raise ValueError(f"metric {metric!r} takes the key(s) {allowed}, got {key!r}")
    pick = (lambda r: r[metric]) if key is None else (lambda r: r[metric][key])
    return paired_difference([pick(r) for r in rows["control"]], [pick(r) for r in rows["cue"]], bounds=bounds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, help="override the step budget (for a quick check)")
    parser.add_argument("--train-size", dest="train_size", type=int)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    budget = {k: getattr(args, k) for k in ("steps", "train_size") if getattr(args, k) is not None}
    if "steps" in budget:  # a quick check: evaluate once, keep the warm-up inside the shorter run
        budget["eval_every"] = budget["steps"]
        budget["warmup_steps"] = min(BUDGET["warmup_steps"], budget["steps"] // 10)
    data = run(args.seeds, **budget)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"→ {args.out}")


if __name__ == "__main__":
    main()
