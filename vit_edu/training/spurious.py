"""A spurious cue on the shapes task: does the model learn the background hue, and do attention and occlusion say so?

``python -m vit_edu.training.spurious --seeds 0 1 2 --out vit_edu/checkpoints/spurious_cue.json`` trains the
``shapes-vit`` model twice per seed on the same objects: the *cue* arm on backgrounds whose hue band is the
image's class (:mod:`vit_edu.data.spurious`, mode ``"label"``), the *control* arm on backgrounds whose band is
drawn independently of the class. Both are tested on the same 1000 test objects three ways: with an independent
background (no cue), with the matching background, and with the background of another class (the cue swapped).
On the cue-free test images it also records how much of the CLS attention of every layer, of attention rollout
and of the occlusion drops lies on the object's patches, with :mod:`vit_edu.explain` as chapter 10 uses it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import torch

from vit_edu.data.shapes import DEFAULT_SIZES, split_seed
from vit_edu.data.spurious import HUE_BAND, SpuriousShapes, make_spurious
from vit_edu.explain import attention_rollout, cls_attention, localisation_score, object_fraction, occlusion_sensitivity
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


def test_sets(seed: int, image_size: int = 32, size: int = DEFAULT_SIZES["test"]) -> dict[str, SpuriousShapes]:
    """The test objects of ``seed`` on the three backgrounds of :data:`TEST_MODES` (same objects, same labels)."""
    return {name: make_spurious(size, mode, image_size=image_size, seed=split_seed(seed, "test"))
            for name, mode in TEST_MODES.items()}


@torch.no_grad()
def measure(model: VisionTransformer, tests: dict[str, SpuriousShapes], n_occlusion: int = N_OCCLUSION) -> dict:
    """Accuracies on the three test sets, how often the prediction follows a swapped background, and the object's
    share of the CLS attention (per layer, heads averaged), of rollout and of the occlusion drops (cue-free images)."""
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
    batches = [model(x, return_attention=True)[1] for x in free.images.split(250)]
    attn = [torch.cat([b[layer] for b in batches]) for layer in range(len(batches[0]))]  # L × (B, h, S, S)
    fraction = object_fraction(free.masks, patch)  # (B, N)
    cls = cls_attention(attn)  # (L, B, h, N)
    row["attention_object_share"] = [localisation_score(c.mean(1), fraction)[0].mean().item() for c in cls]
    mass, baseline = localisation_score(attention_rollout(attn, "mean", 0.0)[:, 0, 1:], fraction)
    row["rollout_object_share"], row["object_baseline"] = mass.mean().item(), baseline.mean().item()

    occ = occlusion_sensitivity(model, free.images[:n_occlusion], free.labels[:n_occlusion], patch)  # (n, N)
    frac = fraction[:n_occlusion]
    positive = occ.clamp(min=0)
    hurt = positive.sum(-1) > 0  # images where covering some patch lowers p(true class); the others have no map
    row["occlusion_object_share"] = (localisation_score(positive[hurt], frac[hurt])[0].mean().item()
                                     if hurt.any() else None)
    row["occlusion_images"] = int(hurt.sum())
    row["occlusion_drop_object"] = occ[frac > 0.5].mean().item()  # patches more than half object
    row["occlusion_drop_background"] = occ[frac == 0].mean().item()  # patches without object
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
            "n_occlusion": n_occlusion, "torch": torch.__version__, "threads": torch.get_num_threads(),
            "seconds": round(time.perf_counter() - start, 1),
            "cpu_seconds": round(time.process_time() - cpu_start, 1), "results": results}


def paired(data: dict, metric: str, layer: int | None = None) -> PairedDifference:
    """Cue minus control of ``metric`` (a key of every result row; ``layer`` indexes a per-layer list), paired by
    seed."""
    rows = data["results"]
    seeds = [r["seed"] for r in rows["cue"]]
    if seeds != [r["seed"] for r in rows["control"]]:
        raise ValueError(f"the arms must hold the same seeds in the same order, got {seeds} and "
                         f"{[r['seed'] for r in rows['control']]}")
    if metric not in rows["cue"][0]:
        raise ValueError(f"unknown metric {metric!r}; the rows hold {sorted(rows['cue'][0])}")
    pick = (lambda r: r[metric]) if layer is None else (lambda r: r[metric][layer])
    return paired_difference([pick(r) for r in rows["control"]], [pick(r) for r in rows["cue"]])


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
