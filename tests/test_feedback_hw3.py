"""Homework 3's checks: the public checks name the classic mistakes, the hidden judges pass the master's solutions
and fail the mistakes with the intended partial marks, and the experiments' judges hold to their tolerances.

Fast: the answers run in this process (no kernel, no sandbox); the experiments' judges get keys made up here,
since ``tests/test_homework.py`` grades the master's real runs against the real key end to end.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import vit_edu
from vit_edu.homework.feedback import hw3
from vit_edu.homework.grade import load_module

import homework_helpers
from homework_helpers import master_solutions

ROOT = Path(__file__).resolve().parents[1]
NAME = "hw3_training"
MASTER = ROOT / "book" / "homework" / f"{NAME}.ipynb"
HIDDEN = ROOT / "book" / "homework" / "hidden"
CASES = load_module(f"hidden_{NAME}", (HIDDEN / f"{NAME}.py").read_text()).cases
JSON_KEY = json.loads((HIDDEN / f"{NAME}_key.json").read_text())
# Made-up reference numbers for the experiments' judges (the real ones come from hw3_training_key.py).
FAKE_KEY = {**JSON_KEY, "lr_runs": [[0.47, 0.395, 0.43], [0.505, 0.485, 0.49]],
            "rollout_scores": {"mean": [0.31, 0.39], "max": [0.30, 0.35], "baseline": 0.13},
            "tile_flips": {"flips": 0.0024, "tv": 0.0053}, "resized_acc": [0.895, 0.7825],
            "decay_growth": [1.2, 2.0, 4.0]}
IMPLEMENTED = ["ch09_decay_split", "ch09_lr_schedule", "ch10_rollout", "ch10_cls_map", "ch11_centred_similarity",
               "ch11_centre_distances", "ch12_new_table_shape", "ch12_interpolate", "ch13_first_loss"]


SOLUTIONS = master_solutions(MASTER)
GLOBALS = {"torch": torch, "F": F, "nn": nn, "math": math, "vit_edu": vit_edu}


def define(source: str) -> dict:
    """The names a cell defines (its trailing demo expression runs too, harmlessly)."""
    ns = dict(GLOBALS)
    exec(compile(source, "<answer>", "exec"), ns)
    return ns


def master(question: str) -> dict:
    return define(SOLUTIONS[question])


def score(question: str, ns: dict, key: dict = FAKE_KEY) -> float:
    return homework_helpers.score(CASES, question, ns, key)


def possible(question: str) -> float:
    return sum(CASES.points(question))


def public(question: str, ns: dict) -> None:
    check, answer = CASES.public[question]
    getattr(hw3, check)(ns.get(answer))


# ---------------------------------------------------------------- the layout


def test_points_and_questions():
    assert sum(c.points for c in CASES.cases) == 32
    assert set(CASES.answers) == set(SOLUTIONS)
    code = sum(possible(q) for q in IMPLEMENTED if q not in ("ch12_new_table_shape", "ch13_first_loss"))
    assert code == 16
    warmups = [possible(q) for q in ("ch12_new_table_shape", "ch13_first_loss", "ch13_diagnose")]
    assert max(warmups) <= 2 and sum(warmups) <= min(possible("ch10_rollout"), possible("ch12_interpolate")) + 1
    assert possible("ch10_rollout") == possible("ch12_interpolate") == 3


def test_the_package_and_the_hidden_module_hold_no_key():
    package = Path(hw3.__file__).read_text()
    hidden = (HIDDEN / f"{NAME}.py").read_text()
    assert "_DIAGNOSIS_KEY" not in package
    for text in (package, hidden):
        assert not any(f'"{s}": "{c}"' in text for s, c in JSON_KEY["diagnosis"].items())
        assert not any(re.search(rf"{name}\W+{JSON_KEY[name]!r}", text.replace('"', "'"))
                       for name in ("lr_reading", "rollout_reading"))


@pytest.mark.parametrize("question", IMPLEMENTED)
def test_master_solutions_pass_public_and_hidden_checks(question):
    ns = master(question)
    public(question, ns)
    assert score(question, ns) == possible(question)


# ---------------------------------------------------------------- classic mistakes, per question

NDIM_ONLY = '''def decay_split(model):
    counts = {"decay": 0, "no_decay": 0, "frozen": 0}
    for name, p in model.named_parameters():
        group = "frozen" if not p.requires_grad else "no_decay" if p.ndim < 2 else "decay"
        counts[group] += p.numel()
    return counts'''
NO_FROZEN = '''def decay_split(model):
    counts = {"decay": 0, "no_decay": 0, "frozen": 0}
    for name, p in model.named_parameters():
        keep = p.ndim < 2 or "cls_token" in name or "pos_embed" in name
        counts["no_decay" if keep else "decay"] += p.numel()
    return counts'''
TENSORS = '''def decay_split(model):
    counts = {"decay": 0, "no_decay": 0, "frozen": 0}
    for name, p in model.named_parameters():
        keep = p.ndim < 2 or "cls_token" in name or "pos_embed" in name
        counts["frozen" if not p.requires_grad else "no_decay" if keep else "decay"] += 1
    return counts'''
FROM_ZERO = '''def lr_at(step, base_lr, warmup_steps, total_steps, min_lr):
    if step < warmup_steps:
        return base_lr * step / warmup_steps
    t = (step - warmup_steps) / (total_steps - warmup_steps)
    return min_lr + (base_lr - min_lr) * (1 + math.cos(math.pi * t)) / 2'''
TO_ZERO = '''def lr_at(step, base_lr, warmup_steps, total_steps, min_lr):
    if step < warmup_steps:
        return base_lr * (1 / warmup_steps + (1 - 1 / warmup_steps) * step / warmup_steps)
    t = (step - warmup_steps) / (total_steps - warmup_steps)
    return base_lr * (1 + math.cos(math.pi * t)) / 2'''
ZERO_DIVISION = '''def lr_at(step, base_lr, warmup_steps, total_steps, min_lr):
    start = 1 / warmup_steps
    if step < warmup_steps:
        return base_lr * (start + (1 - start) * step / warmup_steps)
    t = (step - warmup_steps) / (total_steps - warmup_steps)
    return min_lr + (base_lr - min_lr) * (1 + math.cos(math.pi * t)) / 2'''


def rollout(step_line: str, fuse: str = 'a.mean(1) if fusion == "mean" else a.amax(1)', order: str = "step @ r",
            norm: str = "step / step.sum(-1, keepdim=True)") -> str:
    return f'''def my_rollout(attentions, fusion, residual):
    b, _, s, _ = attentions[0].shape
    eye = torch.eye(s)
    r = eye.expand(b, s, s)
    for a in attentions:
        fused = {fuse}
        step = {step_line}
        step = {norm}
        r = {order}
    return r'''


RIGHT_STEP = "fused + residual * eye"
CLS_MAP = '''def cls_map(attentions, grid, layer, prefix):
    w = {row}
    w = {norm}
    return w.reshape(w.shape[0], *grid)'''
RIGHT_ROW = "attentions[layer].mean(1)[:, 0, prefix:]"
RIGHT_NORM = "w / w.sum(-1, keepdim=True)"
SIMILARITY = '''def centred_similarity(pos, prefix):
    rows = {rows}
    rows = {centre}
    {unit}
    return unit @ unit.T'''
RIGHT_UNIT = "unit = rows / rows.norm(dim=-1, keepdim=True)"
DISTANCES = '''def centre_distances(grid, patch_size):
    gh, gw = grid
    i = torch.arange(gh * gw)
    centres = torch.stack([{rc}], dim=1).float(){scale}
    return torch.cdist(centres, centres)'''
TABLE_SHAPE = '''def new_table_shape(height, width, patch_size, dim, prefix):
    gh, gw = height // patch_size, width // patch_size
    return {out}'''
INTERPOLATE = '''def my_interpolate(pos, old_grid, new_grid, prefix):
    d = pos.shape[-1]
    kept, grid = pos[:, :{prefix}], pos[:, {prefix}:]
    image = {image}
    image = F.interpolate(image, size=tuple(new_grid), mode="{mode}", align_corners={corners})
    return torch.cat([kept, image.reshape(1, d, -1).transpose(1, 2)], dim=1)'''
RIGHT_IMAGE = "grid.transpose(1, 2).reshape(1, d, *old_grid)"
FLOOR = '''def first_loss(num_classes, label_smoothing):
    k, eps = num_classes, label_smoothing
    hi, lo = 1 - eps + eps / k, eps / k
    return -hi * math.log(hi) - ((k - 1) * lo * math.log(lo) if eps > 0 else 0.0)'''

# question, mistake, the public check's hint (or None where the public example cannot show it), hidden points
MISTAKES = [
    ("ch09_decay_split", NDIM_ONLY, "they are embeddings", 0),
    ("ch09_decay_split", NO_FROZEN, "requires_grad=False", 1),
    ("ch09_decay_split", TENSORS, "not tensors", 0),
    ("ch09_lr_schedule", FROM_ZERO, "start_factor = 1/W", 0),
    ("ch09_lr_schedule", TO_ZERO, "ends at min_lr", 1),
    ("ch09_lr_schedule", ZERO_DIVISION, "raised ZeroDivisionError", 1),
    ("ch10_rollout", rollout(RIGHT_STEP, norm="step / step.sum(-1)"), "keepdim=True", 0),
    ("ch10_rollout", rollout("fused + eye"), "weighted", 0),
    ("ch10_rollout", rollout("fused"), "add the residual path", 0),
    ("ch10_rollout", rollout(RIGHT_STEP, order="r @ step"), "layer order", 0),
    ("ch10_rollout", rollout(RIGHT_STEP, fuse="a.mean(1)"), "maximum over the heads", 1),
    ("ch10_rollout", rollout("residual * fused + eye"), "multiplies the identity", 0),
    ("ch10_cls_map", CLS_MAP.format(row=RIGHT_ROW, norm="w"), "renormalise", 0),
    ("ch10_cls_map", CLS_MAP.format(row="attentions[layer].mean(1)[:, prefix:, 0]", norm=RIGHT_NORM), "row 0", 0),
    ("ch10_cls_map", CLS_MAP.format(row="attentions[-1].mean(1)[:, 0, prefix:]", norm=RIGHT_NORM),
     "the layer asked", 1),
    ("ch10_cls_map", CLS_MAP.format(row="attentions[layer].mean(1)[:, 0, 1:1 + grid[0] * grid[1]]", norm=RIGHT_NORM),
     "prefix tokens", 1),
    ("ch11_centred_similarity", SIMILARITY.format(rows="pos[0, prefix:]", centre="rows", unit=RIGHT_UNIT),
     "subtract the mean patch row", 0),
    ("ch11_centred_similarity", SIMILARITY.format(rows="pos[0, prefix:]", centre="rows - rows.mean(1, keepdim=True)",
                                                  unit=RIGHT_UNIT), "not each row's own mean", 0),
    ("ch11_centred_similarity", SIMILARITY.format(rows="pos[0, prefix:]", centre="rows - rows.mean(0)",
                                                  unit="unit = rows"), "cosine, not the plain dot product", 0),
    ("ch11_centred_similarity", SIMILARITY.format(rows="pos[0]", centre="rows - rows.mean(0)", unit=RIGHT_UNIT),
     "drop the 1 prefix row", 1),
    ("ch11_centre_distances", DISTANCES.format(rc="i // gw, i % gw", scale=""), "multiply by the patch size", 0),
    ("ch11_centre_distances", DISTANCES.format(rc="i % gh, i // gh", scale=" * patch_size"), "row by row", 0),
    ("ch12_new_table_shape", TABLE_SHAPE.format(out="(gh, gw), (1, gh * gw, dim)"), "prefix token", 0),
    ("ch12_new_table_shape", TABLE_SHAPE.format(out="(gw, gh), (1, prefix + gh * gw, dim)"), "(rows, columns)", 0),
    ("ch12_interpolate", INTERPOLATE.format(prefix="prefix", image=RIGHT_IMAGE, mode="bilinear", corners=True),
     "align_corners=False", 0),
    ("ch12_interpolate", INTERPOLATE.format(prefix="prefix", image=RIGHT_IMAGE, mode="bicubic", corners=False),
     "not bicubic", 0),
    ("ch12_interpolate", INTERPOLATE.format(prefix="prefix", image="grid.reshape(1, d, *old_grid)", mode="bilinear",
                                            corners=False), "transpose", 0),
    ("ch12_interpolate", INTERPOLATE.format(prefix="1", image=RIGHT_IMAGE, mode="bilinear", corners=False),
     "raised RuntimeError", 0),
    ("ch13_first_loss", FLOOR, "should be 1.38629", 0),
]


@pytest.mark.parametrize("question, source, hint, points", MISTAKES,
                         ids=[f"{q}-{i}" for i, (q, *_) in enumerate(MISTAKES)])
def test_classic_mistakes_are_named_and_get_their_partial_marks(question, source, hint, points):
    ns = define(source)
    if hint is None:
        public(question, ns)  # the public example cannot show this one: the hidden checks must
    else:
        with pytest.raises(AssertionError, match=re.escape(hint)):
            public(question, ns)
    assert score(question, ns) == points


def test_first_loss_names_the_smoothing_floor():
    with pytest.raises(AssertionError, match="lowest loss the smoothed target allows"):
        hw3.expect_first_loss(define(FLOOR)["first_loss"](10, 0.1), 10, 0.1)


def test_calling_the_reference_scores_zero():
    wrapper = ("def my_rollout(attentions, fusion, residual):\n"
               "    return vit_edu.explain.attention_rollout([a / residual for a in attentions], fusion)")
    interp = ("def my_interpolate(pos, old_grid, new_grid, prefix):\n    return vit_edu.interpolate_pos_embed("
              "pos, new_grid, old_grid=old_grid, num_prefix_tokens=prefix, mode='bilinear', align_corners=False)")
    schedule = ('def lr_at(step, base_lr, warmup_steps, total_steps, min_lr):\n'
                '    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=base_lr)\n'
                '    cos = torch.optim.lr_scheduler.CosineAnnealingLR(opt, total_steps - warmup_steps, min_lr)\n'
                '    return min_lr')
    for question, source in (("ch10_rollout", wrapper), ("ch12_interpolate", interp), ("ch09_lr_schedule", schedule)):
        ns = define(source)
        if question != "ch09_lr_schedule":
            public(question, ns)  # right numbers ...
        assert score(question, ns) == 0  # ... but the reference's
        case = next(c for c in CASES.cases if c.question == question)
        assert "called the book's reference" in CASES.judge_one(case, CASES.probe_one(case, ns, 20.0), FAKE_KEY)[1]


# ---------------------------------------------------------------- the experiments, the readings, the diagnosis

MASTER_VALUES = {
    "lr_runs": {3e-4: [0.47, 0.395, 0.43], 3e-3: [0.505, 0.485, 0.49]},
    "rollout_scores": {"mean": [0.31, 0.39], "max": [0.30, 0.35], "baseline": 0.13},
    "tile_flips": {"flips": 0.0024, "tv": 0.0053},
    "resized_acc": {24: 0.895, 56: 0.7825},
    "decay_growth": {30: 1.2, 60: 2.0, 100: 4.0},
    "lr_reading": JSON_KEY["lr_reading"], "rollout_reading": JSON_KEY["rollout_reading"],
    "diagnosis": dict(JSON_KEY["diagnosis"]),
}
VALUED = {"ch09_lr_seeds": "lr_runs", "ch09_lr_reading": "lr_reading", "ch10_rollout_scores": "rollout_scores",
          "ch10_rollout_reading": "rollout_reading", "ch11_tile_flips": "tile_flips",
          "ch12_resized_acc": "resized_acc", "ch13_diagnose": "diagnosis", "ch13_decay_growth": "decay_growth"}


@pytest.mark.parametrize("question", sorted(VALUED))
def test_reference_values_pass(question):
    public(question, MASTER_VALUES)
    assert score(question, MASTER_VALUES) == possible(question)


def with_value(name: str, value) -> dict:
    return {**MASTER_VALUES, name: value}


# question, answer name, a wrong answer, the public check's message (None: passes it), hidden points
WRONG_VALUES = [
    ("ch09_lr_seeds", "lr_runs", {3e-4: [47, 39.5, 43], 3e-3: [50.5, 48.5, 49]}, "between 0 and 1", 0),
    ("ch09_lr_seeds", "lr_runs", {3e-4: [0.47, 0.395, 0.43]}, "keys", 0),
    ("ch09_lr_seeds", "lr_runs", {3e-4: [0.4, 0.4, 0.4], 3e-3: [0.4, 0.4, 0.4]}, "all six accuracies are equal", 0),
    ("ch09_lr_seeds", "lr_runs", {3e-4: [0.47, 0.395, 0.43], 3e-3: [0.4525, 0.485, 0.49]}, None, 1),  # one seed off
    ("ch09_lr_seeds", "lr_runs", {3e-4: [0.47, 0.395, 0.43], 3e-3: [0.505, 0.485, 0.491]}, "not a fraction of 400", 2),
    ("ch09_lr_reading", "lr_reading", "e", "one of the letters", 0),
    ("ch09_lr_reading", "lr_reading", "d", None, 0),
    ("ch10_rollout_scores", "rollout_scores", {"mean": [0.35, 0.35], "max": [0.32, 0.32], "baseline": 0.13},
     "the same for both residual weights", 1),
    ("ch10_rollout_scores", "rollout_scores", {"mean": [0.31, 0.39], "max": [0.31, 0.39], "baseline": 0.14},
     None, 0),
    ("ch10_rollout_reading", "rollout_reading", "a", None, 0),
    ("ch11_tile_flips", "tile_flips", {"flips": 0.00237, "tv": 0.0053}, "not a fraction of 5000", 2),
    ("ch11_tile_flips", "tile_flips", {"flips": 0.24, "tv": 0.53}, "half the sum of absolute differences", 0),
    ("ch11_tile_flips", "tile_flips", {"flips": 0.0024, "tv": 0.0}, "cannot be 0", 1),
    ("ch11_tile_flips", "tile_flips", {"flips": 0.0048, "tv": 0.0053}, None, 1),
    ("ch12_resized_acc", "resized_acc", {24: 0.25, 56: 0.25}, "chance level", 0),
    ("ch12_resized_acc", "resized_acc", {24: 0.895, 56: 0.85}, None, 1),
    ("ch13_decay_growth", "decay_growth", {30: 4.0, 60: 2.0, 100: 1.2}, "which ratio belongs to which run", 0),
    ("ch13_decay_growth", "decay_growth", {30: 1.2, 60: 1.5, 100: 4.0}, None, 1),
    ("ch13_decay_growth", "decay_growth", {30: 1.0, 60: 2.0, 100: 4.0}, None, 1),
    ("ch13_diagnose", "diagnosis", {**JSON_KEY["diagnosis"], "f": "resolution"}, "given twice", 1),
    ("ch13_diagnose", "diagnosis", {**JSON_KEY["diagnosis"], "a": "cls_width"}, None, 1),
    ("ch13_diagnose", "diagnosis", {k: "patch_size" for k in "abcdef"}, "given twice", 0),
]


@pytest.mark.parametrize("question, name, wrong, message, points", WRONG_VALUES,
                         ids=[f"{q}-{i}" for i, (q, *_) in enumerate(WRONG_VALUES)])
def test_wrong_values_fail(question, name, wrong, message, points):
    ns = with_value(name, wrong)
    if message is None:
        public(question, ns)
    else:
        with pytest.raises(AssertionError, match=re.escape(message)):
            public(question, ns)
    assert score(question, ns) == points


def test_the_tolerances_allow_another_machine_but_not_another_recipe():
    near = with_value("lr_runs", {3e-4: [0.4825, 0.39, 0.4175], 3e-3: [0.52, 0.4725, 0.5]})  # ±6 images
    assert score("ch09_lr_seeds", near) == 2
    swapped = with_value("lr_runs", {3e-4: [0.505, 0.485, 0.49], 3e-3: [0.47, 0.395, 0.43]})
    assert score("ch09_lr_seeds", swapped) == 0
    assert score("ch12_resized_acc", with_value("resized_acc", {24: 0.8925, 56: 0.775})) == 2  # 1 and 3 scenes
    assert score("ch11_tile_flips", with_value("tile_flips", {"flips": 0.0034, "tv": 0.0057})) == 2


def test_public_checks_reveal_no_key():
    messages = []
    for question, name in VALUED.items():
        for wrong in ({}, "x", [0.1], None):
            try:
                public(question, with_value(name, wrong))
            except AssertionError as e:
                messages.append(str(e))
    text = " ".join(messages)
    for value in ("0.47", "0.505", "0.7825", "0.0024", "1.2, 2.0"):
        assert value not in text
