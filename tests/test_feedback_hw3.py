"""Homework 3's checks as data: the public checks pass the master's answers and name each classic mistake; the
hidden checks, drawn from two secrets, give the master full marks and each mistake its hint and its partial marks;
the experiments' checks hold to their tolerances; the shipped public data holds no hidden value and is what
``make()`` gives now.

The master's answers are the code cells of ``book/homework/hw3_training.ipynb`` (its set-up, solutions and
experiments), run in this process; the mistakes are written out below. Hidden examples are judged as the grader
judges them: the answer's output encoded and decoded, the example read back from its JSON. The instructor's module
is loaded once, so its experiments run once (about 12 s), and so do the master's (about 10 s).
"""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path

import nbformat
import pytest
import torch

from vit_edu.homework.assignment import drawer
from vit_edu.homework.build import load_module, public_draw
from vit_edu.homework.checks import PUBLIC, check
from vit_edu.homework.plain import decode
from vit_edu.homework.strip import strip_package

from homework_helpers import in_process_grade as grade, master_namespace

ROOT = Path(__file__).resolve().parents[1]
NAME = "hw3_training"
MASTER = ROOT / "book" / "homework" / f"{NAME}.ipynb"
SECRETS = ("secret-one-xyz", "another-secret-42")
CODE = ("ch09_decay_split", "ch09_lr_schedule", "ch10_rollout", "ch10_cls_map", "ch11_centred_similarity",
        "ch11_centre_distances", "ch12_interpolate")
WARM_UPS = ("ch12_new_table_shape", "ch13_first_loss", "ch13_diagnose")
EXPERIMENTS = {"ch09_lr_seeds": "lr_runs", "ch10_rollout_scores": "rollout_scores", "ch11_tile_flips": "tile_flips",
               "ch12_resized_acc": "resized_acc", "ch13_decay_growth": "decay_growth"}
READINGS = {"ch09_lr_reading": "lr_reading", "ch10_rollout_reading": "rollout_reading"}


# ---------------------------------------------------------------- fixtures: built once per module


@pytest.fixture(scope="module")
def hidden():
    """The instructor's module, loaded once, so its experiments' reference runs are made once."""
    return load_module(f"hidden_{NAME}", ROOT / "book" / "homework" / "hidden" / f"{NAME}.py")


@pytest.fixture(scope="module")
def assignments(hidden):
    """The assignment built with each of two secrets."""
    return {secret: hidden.make(drawer(secret, NAME)) for secret in SECRETS}


@pytest.fixture(scope="module")
def master():
    """The master\'s answers: its set-up and solution cells run in one namespace, as in the notebook."""
    return master_namespace(MASTER)


def answers_of(assignment, question: str, ns: dict) -> dict:
    return {a: ns.get(a) for a in assignment.questions[question].answers}


# ---------------------------------------------------------------- the classic mistakes


def split_with(group):
    """A ``decay_split`` that puts each parameter in ``group(name, p)`` and counts its numbers."""
    def decay_split(model):
        counts = {"decay": 0, "no_decay": 0, "frozen": 0}
        for name, p in model.named_parameters():
            counts[group(name, p)] += p.numel()
        return counts
    return decay_split


def split_tensors(model):
    counts = {"decay": 0, "no_decay": 0, "frozen": 0}
    for name, p in model.named_parameters():
        kept = p.ndim < 2 or "cls_token" in name or "pos_embed" in name
        counts["frozen" if not p.requires_grad else "no_decay" if kept else "decay"] += 1
    return counts


def schedule_with(from_zero=False, to_zero=False, eager_start=False):
    """An ``lr_at`` with one slip: the warm-up from 0, the cosine to 0, or 1/W computed even when W = 0."""
    def lr_at(step, base_lr, warmup_steps, total_steps, min_lr):
        if eager_start:
            start = 1 / warmup_steps  # a ZeroDivisionError without warm-up
        if step < warmup_steps:
            start = 0.0 if from_zero else 1 / warmup_steps
            return base_lr * (start + (1 - start) * step / warmup_steps)
        t = (step - warmup_steps) / (total_steps - warmup_steps)
        floor = 0.0 if to_zero else min_lr
        return floor + (base_lr - floor) * (1 + math.cos(math.pi * t)) / 2
    return lr_at


def rollout_with(step_of=lambda fused, eye, w: fused + w * eye, fusion_of=None, keepdim=True, reverse=False):
    """A ``my_rollout`` with one slip: another step, fusion, row sum or order of the product."""
    def my_rollout(attentions, fusion, residual):
        b, _, s, _ = attentions[0].shape
        eye = torch.eye(s)
        r = eye.expand(b, s, s)
        for a in attentions:
            fused = a.mean(1) if (fusion_of or fusion) == "mean" else a.amax(1)
            step = step_of(fused, eye, residual)
            step = step / step.sum(-1, keepdim=True) if keepdim else step / step.sum(-1)
            r = r @ step if reverse else step @ r
        return r
    return my_rollout


def cls_map_with(keys=lambda fused, prefix, n: fused[:, 0, prefix:], layer_of=None, renormalise=True):
    """A ``cls_map`` with one slip: other keys, another layer, no renormalising."""
    def cls_map(attentions, grid, layer, prefix):
        fused = attentions[layer if layer_of is None else layer_of].mean(1)  # (B, S, S)
        w = keys(fused, prefix, grid[0] * grid[1])
        w = w / w.sum(-1, keepdim=True) if renormalise else w
        return w.reshape(w.shape[0], *grid)
    return cls_map


def similarity_with(rows_of=lambda pos, prefix: pos[0, prefix:], centre=lambda rows, pos: rows - rows.mean(0),
                    cosine=True):
    """A ``centred_similarity`` with one slip: the prefix rows kept, another mean, no normalising."""
    def centred_similarity(pos, prefix):
        rows = centre(rows_of(pos, prefix), pos)
        unit = rows / rows.norm(dim=-1, keepdim=True) if cosine else rows
        return unit @ unit.T
    return centred_similarity


def distances_with(column_major=False, pixels=True):
    """A ``centre_distances`` with one slip: patches numbered column by column, or distances in patches."""
    def centre_distances(grid, patch_size):
        gh, gw = grid
        i = torch.arange(gh * gw)
        rc = (i % gh, i // gh) if column_major else (i // gw, i % gw)
        centres = torch.stack(rc, dim=1).float() * (patch_size if pixels else 1)
        return torch.cdist(centres, centres)
    return centre_distances


def table_shape_with(prefix_rows=True, swapped=False):
    def new_table_shape(height, width, patch_size, dim, prefix):
        gh, gw = height // patch_size, width // patch_size
        return ((gw, gh) if swapped else (gh, gw)), (1, (prefix if prefix_rows else 0) + gh * gw, dim)
    return new_table_shape


def interpolate_with(rule="half-pixel", clamp=True, channels_first=False, prefix_of=None):
    """A ``my_interpolate`` written by hand, one axis at a time, with one slip: where new row i sits (``corners``:
    align_corners=True; ``no shift``: i·gh/gh'), no clamping at the edge, channels read first, a fixed prefix."""
    def my_interpolate(pos, old_grid, new_grid, prefix):
        prefix = prefix if prefix_of is None else prefix_of
        d = pos.shape[-1]
        rows = pos[0, prefix:]
        grid = rows.reshape(d, *old_grid).permute(1, 2, 0) if channels_first else rows.reshape(*old_grid, d)
        for axis, (n_old, n_new) in enumerate(zip(old_grid, new_grid)):
            resized = []
            for i in range(n_new):
                y = {"half-pixel": (i + 0.5) * n_old / n_new - 0.5, "no shift": i * n_old / n_new,
                     "corners": i * (n_old - 1) / max(n_new - 1, 1)}[rule]
                y = min(max(y, 0.0), n_old - 1) if clamp else min(y, n_old - 1)
                low = math.floor(y)
                high = min(low + 1, n_old - 1)
                resized.append((1 - (y - low)) * grid.select(axis, low) + (y - low) * grid.select(axis, high))
            grid = torch.stack(resized, dim=axis)
        return torch.cat([pos[:, :prefix], grid.reshape(1, -1, d)], dim=1)
    return my_interpolate


def smoothing_floor(num_classes, label_smoothing):
    """The lowest loss the smoothed target allows, not the first loss."""
    k, eps = num_classes, label_smoothing
    hi, lo = 1 - eps + eps / k, eps / k
    return -hi * math.log(hi) - ((k - 1) * lo * math.log(lo) if eps > 0 else 0.0)


def _embedding(name):
    return "cls_token" in name or "pos_embed" in name


# label: (question, answers changed, points its hidden checks then give, hint words, the public check names it,
# the hidden checks name it: False where the answer raises on their inputs)
MISTAKES = {
    "embeddings decayed": ("ch09_decay_split", {"decay_split": split_with(
        lambda n, p: "frozen" if not p.requires_grad else "no_decay" if p.ndim < 2 else "decay")}, 0,
        "they are embeddings", True, True),
    "frozen ignored": ("ch09_decay_split", {"decay_split": split_with(
        lambda n, p: "no_decay" if p.ndim < 2 or _embedding(n) else "decay")}, 1, "requires_grad=False", True, True),
    "tensors counted": ("ch09_decay_split", {"decay_split": split_tensors}, 0, "not tensors", True, True),
    "biases decayed": ("ch09_decay_split", {"decay_split": split_with(
        lambda n, p: "frozen" if not p.requires_grad else "no_decay" if _embedding(n) else "decay")}, 0,
        "get no weight decay either", True, True),
    "warm-up from 0": ("ch09_lr_schedule", {"lr_at": schedule_with(from_zero=True)}, 0, "start_factor = 1/W", True,
                       True),
    "cosine to 0": ("ch09_lr_schedule", {"lr_at": schedule_with(to_zero=True)}, 1, "ends at min_lr", True, True),
    "1/W when W = 0": ("ch09_lr_schedule", {"lr_at": schedule_with(eager_start=True)}, 1, "raised ZeroDivisionError",
                       True, False),
    "no keepdim": ("ch10_rollout", {"my_rollout": rollout_with(keepdim=False)}, 0, "keepdim=True", True, True),
    "identity not weighted": ("ch10_rollout", {"my_rollout": rollout_with(step_of=lambda f, eye, w: f + eye)}, 0,
                              "the identity should be weighted", True, True),
    "no residual": ("ch10_rollout", {"my_rollout": rollout_with(step_of=lambda f, eye, w: f)}, 0,
                    "add the residual path", True, True),
    "layers reversed": ("ch10_rollout", {"my_rollout": rollout_with(reverse=True)}, 0, "layer order", True, True),
    "always the mean": ("ch10_rollout", {"my_rollout": rollout_with(fusion_of="mean")}, 1, "maximum over the heads",
                        True, True),
    "weight on the attention": ("ch10_rollout", {"my_rollout": rollout_with(step_of=lambda f, eye, w: w * f + eye)},
                                0, "multiplies the identity", True, True),
    "not renormalised": ("ch10_cls_map", {"cls_map": cls_map_with(renormalise=False)}, 0, "renormalise", True, True),
    "column 0": ("ch10_cls_map", {"cls_map": cls_map_with(keys=lambda f, prefix, n: f[:, prefix:, 0])}, 0, "row 0",
                 True, True),
    "always the last layer": ("ch10_cls_map", {"cls_map": cls_map_with(layer_of=-1)}, 1, "the layer asked", True, True),
    "one prefix token": ("ch10_cls_map", {"cls_map": cls_map_with(keys=lambda f, prefix, n: f[:, 0, 1:1 + n])}, 1,
                         "prefix tokens", True, True),
    "not centred": ("ch11_centred_similarity", {"centred_similarity": similarity_with(
        centre=lambda rows, pos: rows)}, 0, "subtract the mean patch row", True, True),
    "each row's own mean": ("ch11_centred_similarity", {"centred_similarity": similarity_with(
        centre=lambda rows, pos: rows - rows.mean(1, keepdim=True))}, 0, "not each row's own mean", True, True),
    "dot product": ("ch11_centred_similarity", {"centred_similarity": similarity_with(cosine=False)}, 0,
                    "cosine, not the plain dot product", True, True),
    "prefix rows kept": ("ch11_centred_similarity", {"centred_similarity": similarity_with(
        rows_of=lambda pos, prefix: pos[0])}, 1, "prefix row(s) first", True, True),
    "mean with the prefix rows": ("ch11_centred_similarity", {"centred_similarity": similarity_with(
        centre=lambda rows, pos: rows - pos[0].mean(0))}, 1, "without the prefix rows", True, True),
    "distances in patches": ("ch11_centre_distances", {"centre_distances": distances_with(pixels=False)}, 0,
                             "multiply by the patch size", True, True),
    "column by column": ("ch11_centre_distances", {"centre_distances": distances_with(column_major=True)}, 0,
                         "row by row", True, True),
    "no prefix rows": ("ch12_new_table_shape", {"new_table_shape": table_shape_with(prefix_rows=False)}, 0,
                       "prefix token", True, True),
    "grid swapped": ("ch12_new_table_shape", {"new_table_shape": table_shape_with(swapped=True)}, 0,
                     "(rows, columns)", True, True),
    "align_corners=True": ("ch12_interpolate", {"my_interpolate": interpolate_with(rule="corners")}, 0,
                           "half-pixel centres", True, True),
    "no half-pixel shift": ("ch12_interpolate", {"my_interpolate": interpolate_with(rule="no shift")}, 0,
                            "the centre of a cell", True, True),
    "no clamping": ("ch12_interpolate", {"my_interpolate": interpolate_with(clamp=False)}, 0, "clamp the old coordinate",
                    True, True),
    "channels first": ("ch12_interpolate", {"my_interpolate": interpolate_with(channels_first=True)}, 0,
                       "transpose first", True, True),
    "one prefix row always": ("ch12_interpolate", {"my_interpolate": interpolate_with(prefix_of=1)}, 0,
                              "raised RuntimeError", True, False),
    "smoothing floor": ("ch13_first_loss", {"first_loss": smoothing_floor}, 0, "lowest loss the smoothed target",
                        False, True),
}


def value_mistakes(ns: dict, unweighted: dict) -> dict:
    """Wrong values made from the master's (label: question, answers changed, points, hint words); ``unweighted``:
    the scores of a rollout that ignores its weight."""
    runs, scores, flips = ns["lr_runs"], ns["rollout_scores"], ns["tile_flips"]
    growth, accuracy = ns["decay_growth"], ns["resized_acc"]
    return {
        "runs in percent": ("ch09_lr_seeds", {"lr_runs": {lr: [100 * v for v in r] for lr, r in runs.items()}}, 0,
                            "not percentages"),
        "runs swapped": ("ch09_lr_seeds", {"lr_runs": {3e-4: runs[3e-3], 3e-3: runs[3e-4]}}, 0,
                         "the runs at that rate"),
        "one run off by 9 images": ("ch09_lr_seeds", {"lr_runs": {**runs, 3e-3: [runs[3e-3][0] + 9 / 400,
                                                                               *runs[3e-3][1:]]}}, 1, ""),
        "another reading": ("ch09_lr_reading", {"lr_reading": "d"}, 0, ""),
        "a capital letter": ("ch09_lr_reading", {"lr_reading": "C"}, 0, ""),
        "weight ignored": ("ch10_rollout_scores", {"rollout_scores": unweighted}, 1, "did my_rollout get the weight"),
        "weights swapped": ("ch10_rollout_scores", {"rollout_scores": {
            **scores, "mean": scores["mean"][::-1], "max": scores["max"][::-1]}}, 1, "weight 0.5 first"),
        "another baseline": ("ch10_rollout_scores",
                             {"rollout_scores": {**scores, "baseline": scores["baseline"] + 0.01}}, 1, ""),
        "another map reading": ("ch10_rollout_reading", {"rollout_reading": "a"}, 0, ""),
        "no half": ("ch11_tile_flips", {"tile_flips": {**flips, "tv": 2 * flips["tv"]}}, 1, "half the sum"),
        "flips off by 8 pairs": ("ch11_tile_flips", {"tile_flips": {**flips, "flips": flips["flips"] + 8 / 5000}}, 1,
                                 ""),
        "accuracy in percent": ("ch12_resized_acc", {"resized_acc": {s: 100 * v for s, v in accuracy.items()}}, 0,
                                "not percentages"),
        "growth swapped": ("ch13_decay_growth", {"decay_growth": dict(zip(growth, reversed(growth.values())))}, 0,
                           "which ratio belongs to which run"),
        "growth inverted": ("ch13_decay_growth", {"decay_growth": {lr: 1 / g for lr, g in growth.items()}}, 0,
                            "divided by the one after step 3"),
        "growth 12% high": ("ch13_decay_growth", {"decay_growth": {**growth, 30: 1.12 * growth[30]}}, 1, ""),
        "one cause wrong": ("ch13_diagnose", {"diagnosis": {**ns["diagnosis"], "a": "cls_width"}}, 1, ""),
    }


# ---------------------------------------------------------------- the layout


def test_points_and_questions(assignments):
    assignment = assignments[SECRETS[0]]
    points = {q.name: q.points for q in assignment.questions.values()}
    assert sum(points.values()) == 32
    assert sum(points[q] for q in CODE) == 16
    assert sum(points[q] for q in (*EXPERIMENTS, *READINGS)) == 12
    assert sum(points[q] for q in WARM_UPS) == 4
    assert points["ch10_rollout"] == points["ch12_interpolate"] == 3
    notebook = "".join(cell.source for cell in nbformat.read(MASTER, as_version=4).cells)
    for q in assignment.questions.values():
        assert f"check({q.name!r}, " + ", ".join(f"{a}={a}" for a in q.answers) + ")" in notebook, q.name


def test_experiments_may_run_for_their_training(assignments):
    questions = assignments[SECRETS[0]].questions
    assert questions["ch09_lr_seeds"].cell_seconds >= 60  # six training runs, about 6 s on one thread
    assert all(questions[q].cell_seconds >= 20 for q in EXPERIMENTS)
    assert questions["ch10_rollout_scores"].depends == ("ch10_rollout",)
    assert questions["ch12_resized_acc"].depends == ("ch12_interpolate",)


def test_references_name_the_books_definitions(assignments, tmp_path):
    references = {r for q in assignments[SECRETS[0]].questions.values() for r in q.references}
    strip_package(sorted(r for r in references if r.startswith("vit_edu.")), tmp_path / "vit_edu")  # raises if not
    for dotted in (r for r in references if not r.startswith("vit_edu.")):
        module, _, name = dotted.rpartition(".")
        assert hasattr(importlib.import_module(module), name), dotted


# ---------------------------------------------------------------- the public checks


def test_public_checks_pass_the_masters_answers(assignments, master):
    assignment = assignments[SECRETS[0]]
    for question in assignment.questions:
        check(question, **answers_of(assignment, question, master))


@pytest.mark.parametrize("label", [k for k, v in MISTAKES.items() if v[4]])
def test_public_check_names_the_classic_mistake(label, assignments, master):
    question, change, _, words, _, _ = MISTAKES[label]
    with pytest.raises(AssertionError) as e:
        check(question, **answers_of(assignments[SECRETS[0]], question, {**master, **change}))
    assert words in str(e.value), str(e.value)


def test_public_checks_of_values_check_their_form_only(assignments, master):
    values = {**{a: master[a] for a in (*EXPERIMENTS.values(), *READINGS.values())}, "diagnosis": master["diagnosis"]}
    made_up = {"lr_runs": {3e-4: [0.25, 0.5, 0.75], 3e-3: [1, 0, 0.5]},
               "rollout_scores": {"mean": [0.9, 0.1], "max": [0.2, 0.2], "baseline": 0.5},
               "tile_flips": {"flips": 0.5, "tv": 0.25}, "resized_acc": {24: 1.0, 56: 0.0},
               "decay_growth": {30: 9.0, 60: 1.0, 100: 0.5}, "lr_reading": "a", "rollout_reading": "d",
               "diagnosis": dict.fromkeys("abcdef", "patch_size")}
    for question in (*EXPERIMENTS, *READINGS, "ch13_diagnose"):
        check(question, **answers_of(assignments[SECRETS[0]], question, {**values, **made_up}))
    for question, answer, bad in (("ch09_lr_seeds", "lr_runs", {3e-4: [0.5, 0.5, 0.5]}),
                                  ("ch09_lr_seeds", "lr_runs", {3e-4: [0.5, 0.5], 3e-3: [0.5, 0.5, 0.5]}),
                                  ("ch10_rollout_scores", "rollout_scores", {**made_up["rollout_scores"], "max": 0.2}),
                                  ("ch11_tile_flips", "tile_flips", {"flips": "many", "tv": 0.25}),
                                  ("ch12_resized_acc", "resized_acc", {"24": 1.0, "56": 0.0}),
                                  ("ch13_diagnose", "diagnosis", {"a": "patch_size"}),
                                  ("ch09_lr_reading", "lr_reading", 3)):
        with pytest.raises(AssertionError, match=answer):
            check(question, **{answer: bad})


def test_the_public_data_holds_no_hidden_value(hidden, assignments, master):
    public = json.loads((PUBLIC / f"{NAME}.json").read_text())
    assert set(public) == {"assignment", "questions"}
    assert all(set(spec) == {"public"} for spec in public["questions"].values())
    values = {e["answer"]: e for spec in public["questions"].values() for e in spec["public"] if e["args"] is None}
    assert set(values) == {*EXPERIMENTS.values(), *READINGS.values(), "diagnosis"}
    assert all(e["form_only"] and not e["mistakes"] for e in values.values())
    for answer, e in values.items():
        assert decode(e["expect"]) != master[answer], answer
    typed = {"lr_reading": {"": master["lr_reading"]}, "rollout_reading": {"": master["rollout_reading"]},
             "diagnosis": master["diagnosis"]}
    for answer, right in typed.items():
        shown = decode(values[answer]["expect"])
        assert all((shown[k] if isinstance(shown, dict) else shown) != v for k, v in right.items()), answer
    measured = [v for runs in master["lr_runs"].values() for v in runs] + master["rollout_scores"]["mean"] + \
        master["rollout_scores"]["max"] + [master["rollout_scores"]["baseline"], *master["tile_flips"].values(),
                                           *master["resized_acc"].values(), *master["decay_growth"].values()]
    assert not any(math.isclose(x, v, rel_tol=1e-6) for x in _floats(public) for v in measured)
    text = json.dumps(public)
    hidden_inputs = [json.dumps(e.to_data()["args"]) for a in assignments.values() for q in a.questions.values()
                     for c in q.checks for e in c.examples if e.args]
    assert not any(args in text for args in hidden_inputs)


def _floats(data) -> list[float]:
    """Every float in a JSON-ready structure (not inside tensors)."""
    if isinstance(data, float):
        return [data]
    if isinstance(data, dict):
        return [x for v in data.values() for x in _floats(v)]
    return [x for v in data for x in _floats(v)] if isinstance(data, list) else []


def _close(a, b, path: str = "") -> None:
    """Assert that two JSON-ready structures agree, tensors and floats within 1e-6."""
    if isinstance(a, dict) and "tensor" in a:
        x, y = decode(a), decode(b)
        assert x.shape == y.shape and x.dtype == y.dtype and torch.allclose(x.double(), y.double(), atol=1e-6), path
    elif isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(a, float):
        assert isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6), path
    else:
        assert a == b, path


def test_the_shipped_public_data_is_what_make_gives_now(hidden):
    shipped = json.loads((PUBLIC / f"{NAME}.json").read_text())
    _close(shipped, json.loads(json.dumps(hidden.make(public_draw).public_data())))


# ---------------------------------------------------------------- the hidden checks


def test_hidden_examples_differ_between_secrets(assignments):
    one, two = (a.data()["questions"] for a in assignments.values())
    for question in (*CODE, "ch12_new_table_shape", "ch13_first_loss"):
        assert one[question]["checks"] != two[question]["checks"], question
        assert one[question]["public"] == two[question]["public"], question


@pytest.mark.parametrize("secret", SECRETS)
def test_hidden_checks_give_the_master_full_marks(secret, assignments, master):
    assignment = assignments[secret]
    for question, q in assignment.questions.items():
        assert grade(assignment, question, master) == (q.points, []), question


@pytest.mark.parametrize("label", MISTAKES)
def test_hidden_checks_give_each_mistake_its_points_and_hint(label, assignments, master):
    question, change, points, words, _, named = MISTAKES[label]
    for assignment in assignments.values():
        score, hints = grade(assignment, question, {**master, **change})
        assert score == points, label
        assert any(words in h for h in hints) == named, hints


def test_hidden_checks_judge_wrong_values(hidden, assignments, master):
    wrong = value_mistakes(master, hidden.experiments()["unweighted_scores"])
    for label, (question, change, points, words) in wrong.items():
        score, hints = grade(assignments[SECRETS[0]], question, {**master, **change})
        assert score == points, label
        assert words in " ".join(hints), (label, hints)


def test_the_tolerances_allow_another_machine_but_not_another_recipe(assignments, master):
    assignment = assignments[SECRETS[0]]
    runs, flips = master["lr_runs"], master["tile_flips"]
    near = {"lr_runs": {lr: [v + (-1) ** i * 6 / 400 for i, v in enumerate(r)] for lr, r in runs.items()},
            "resized_acc": {s: v - 4 / 400 for s, v in master["resized_acc"].items()},
            "tile_flips": {"flips": flips["flips"] + 2 / 5000, "tv": flips["tv"] * 1.08},
            "rollout_scores": {k: [x + 0.002 for x in v] if isinstance(v, list) else v - 0.002
                               for k, v in master["rollout_scores"].items()},
            "decay_growth": {lr: 1.08 * g for lr, g in master["decay_growth"].items()}}
    for question, answer in EXPERIMENTS.items():
        assert grade(assignment, question, {**master, answer: near[answer]})[0] == 2, question
