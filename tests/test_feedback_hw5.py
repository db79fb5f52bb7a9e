"""Homework 5's checks as data: the public checks pass the master's answers and name each classic mistake; the
hidden checks, drawn from two secrets, give the master full marks and each mistake its hint and partial marks;
the shipped public data holds no hidden value and is what ``make()`` gives now.

The master's answers are the code cells of ``book/homework/hw5_tasks.ipynb`` (its set-up and solutions), run in
this process; the mistakes are written out below. Hidden examples are judged as the grader judges them: the
answer's output encoded and decoded, the example read back from its JSON. The references are the libraries' own
functions where the chapters use one (scipy's Hungarian algorithm, torchvision's GIoU, torchmetrics' Jaccard index).
"""

from __future__ import annotations

import importlib
import itertools
import json
from pathlib import Path

import nbformat
import pytest
import torch
from scipy.optimize import linear_sum_assignment
from torchmetrics.classification import MulticlassJaccardIndex
from torchvision.ops import box_convert

from vit_edu.homework import scan
from vit_edu.homework.assignment import drawer
from vit_edu.homework.build import load_module, public_draw
from vit_edu.homework.checks import PUBLIC, check
from vit_edu.homework.plain import decode
from vit_edu.homework.strip import strip_package

from homework_helpers import assert_close, in_process_grade as grade, master_namespace

ROOT = Path(__file__).resolve().parents[1]
NAME = "hw5_tasks"
MASTER = ROOT / "book" / "homework" / f"{NAME}.ipynb"
SECRETS = ("secret-one-xyz", "another-secret-42")
POINTS = {"ch18_tokens_to_grid": 2, "ch18_mean_iou": 2, "ch19_match": 3, "ch19_match_by_hand": 1, "ch19_giou": 2,
          "ch19_detr_cost": 2, "ch20_time_tokens": 2, "ch20_space_tokens": 1, "ch20_pairs": 1}
NUMBERS = ("ch19_match_by_hand", "ch20_pairs")  # fixed numbers: the same hidden check for every secret


# ---------------------------------------------------------------- fixtures: built once per module


@pytest.fixture(scope="module")
def hidden():
    """The instructor's module."""
    return load_module(f"hidden_{NAME}", ROOT / "book" / "homework" / "hidden" / f"{NAME}.py")


@pytest.fixture(scope="module")
def assignments(hidden):
    """The assignment built with each of two secrets."""
    return {secret: hidden.make(drawer(secret, NAME)) for secret in SECRETS}


@pytest.fixture(scope="module")
def master():
    """The master's answers: its set-up and solution cells run in one namespace, as in the notebook."""
    return master_namespace(MASTER)


def answers_of(assignment, question: str, ns: dict) -> dict:
    return {a: ns.get(a) for a in assignment.questions[question].answers}


# ---------------------------------------------------------------- the classic mistakes


def grid_with(slip: str):
    """A ``tokens_to_grid`` with one slip: a plain reshape, the last tokens dropped, the tokens read column by
    column, channels last, or H and W swapped."""
    def tokens_to_grid(tokens, grid, prefix):
        (h, w), (b, _, d) = grid, tokens.shape
        patches = tokens[:, :h * w] if slip == "last dropped" else tokens[:, prefix:]
        if slip == "plain":
            return patches.reshape(b, d, h, w)
        if slip == "channels last":
            return patches.reshape(b, h, w, d)
        if slip == "by column":
            return patches.transpose(1, 2).reshape(b, d, w, h).transpose(2, 3)
        if slip == "swapped":
            return patches.transpose(1, 2).reshape(b, d, w, h)
        return patches.transpose(1, 2).reshape(b, d, h, w)
    return tokens_to_grid


def iou_with(slip: str):
    """A ``mean_iou`` with one slip: pixel accuracy, absent classes as 0 or 1, the pixels' pooled IoU, the target's
    classes only, one mean per image, or a float."""
    def per_class(pred, target, k):
        p = torch.stack([pred.flatten() == c for c in range(k)])  # (K, pixels)
        t = torch.stack([target.flatten() == c for c in range(k)])
        return (p & t).sum(1).float(), (p | t).sum(1).float(), t.any(1)

    def mean_iou(pred, target, num_classes):
        if slip == "accuracy":
            return (pred == target).float().mean()
        if slip == "per image":
            return torch.stack([iou_with("")(p, t, num_classes) for p, t in zip(pred, target)]).mean()
        inter, union, in_target = per_class(pred, target, num_classes)
        iou = inter / union.clamp(min=1)
        if slip == "pooled":
            return inter.sum() / union.sum()
        if slip in ("absent 0", "absent 1"):
            return torch.where(union > 0, iou, torch.tensor(float(slip[-1]))).mean()
        out = iou[in_target].mean() if slip == "target only" else iou[union > 0].mean()
        return out.item() if slip == "float" else out
    return mean_iou


def match_with(slip: str):
    """A ``match`` with one slip: each target's cheapest query, greedy target by target or by the smallest entry,
    the largest total, each matched query's target, the matched queries in query order, or floats."""
    def match(cost):
        q, m = cost.shape
        if slip == "argmin":
            return cost.argmin(0)
        if slip in ("greedy", "greedy entry"):
            out, used_q, used_t = torch.zeros(m, dtype=torch.int64), set(), set()
            pairs = sorted(itertools.product(range(q), range(m)), key=lambda p: cost[p].item()) \
                if slip == "greedy entry" else [(None, j) for j in range(m)]
            for i, j in pairs:
                if j in used_t:
                    continue
                if i is None:
                    i = min((i for i in range(q) if i not in used_q), key=lambda i: cost[i, j].item())
                elif i in used_q:
                    continue
                out[j] = i
                used_q.add(i)
                used_t.add(j)
            return out
        rows, cols = linear_sum_assignment(cost.numpy(), maximize=slip == "largest")
        if slip == "targets":
            return torch.as_tensor(cols)
        if slip == "sorted":
            return torch.as_tensor(rows)
        out = torch.empty(m, dtype=torch.int64)
        out[torch.as_tensor(cols)] = torch.as_tensor(rows, dtype=torch.int64)
        return out.float() if slip == "float" else out
    return match


def giou_with(slip: str):
    """A ``giou`` with one slip: the plain IoU, the hull term added or divided by the union, no clamp, or the pairs
    (boxes1[i], boxes2[i]) only."""
    def giou(boxes1, boxes2):
        a, b = (boxes1, boxes2) if slip == "elementwise" else (boxes1[:, None], boxes2[None])
        area = lambda x: (x[..., 2] - x[..., 0]) * (x[..., 3] - x[..., 1])  # noqa: E731
        wh = torch.minimum(a[..., 2:], b[..., 2:]) - torch.maximum(a[..., :2], b[..., :2])
        inter = (wh if slip == "unclamped" else wh.clamp(min=0)).prod(-1)
        union = area(a) + area(b) - inter
        hull = (torch.maximum(a[..., 2:], b[..., 2:]) - torch.minimum(a[..., :2], b[..., :2])).prod(-1)
        if slip == "iou":
            return inter / union
        if slip == "added":
            return inter / union + (hull - union) / hull
        return inter / union - (hull - union) / (union if slip == "over union" else hull)
    return giou


def detr_with(slip: str, giou):
    """A ``detr_cost`` with one slip: log-probabilities, GIoU on (cx, cy, w, h), the L2 distance, a term's sign,
    the no-object logit left out of the softmax, or the table transposed."""
    def detr_cost(logits, pred_boxes, labels, boxes, w_class, w_l1, w_giou):
        probs = {"log": logits.log_softmax(-1), "no object": logits[:, :-1].softmax(-1)}.get(slip, logits.softmax(-1))
        cls = probs[:, labels] if slip == "class sign" else -probs[:, labels]
        dist = torch.cdist(pred_boxes, boxes, p=2 if slip == "l2" else 1)
        xyxy = (lambda b: b) if slip == "cxcywh" else (lambda b: box_convert(b, "cxcywh", "xyxy"))
        g = giou(xyxy(pred_boxes), xyxy(boxes))
        cost = w_class * cls + w_l1 * dist + w_giou * (g if slip == "giou sign" else -g)
        return cost.T if slip == "transposed" else cost
    return detr_cost


def time_with(slip: str):
    """``to_time`` and ``from_time`` with one slip: plain reshapes, the sequences' order, time reversed, the space
    reshape, or the frames and places mixed up on the way back."""
    def to_time(x, frames):
        b, length, d = x.shape
        n = length // frames
        if slip == "plain":
            return x.reshape(b * n, frames, d)
        if slip == "space":
            return x.reshape(b * frames, n, d)
        y = x.reshape(b, frames, n, d)
        if slip == "clips interleaved":
            return y.permute(2, 0, 1, 3).reshape(b * n, frames, d)
        y = y.permute(0, 2, 1, 3).reshape(b * n, frames, d)
        return y.flip(1) if slip == "reversed" else y

    def from_time(y, batch):
        bn, frames, d = y.shape
        n = bn // batch
        if slip == "plain back":
            return y.reshape(batch, frames * n, d)
        if slip == "places first back":
            return y.reshape(batch, n * frames, d).reshape(batch, frames, n, d).transpose(1, 2).reshape(batch, -1, d)
        return y.reshape(batch, n, frames, d).transpose(1, 2).reshape(batch, frames * n, d)
    return {"to_time": to_time, "from_time": from_time}


def space_with(slip: str):
    """A ``to_space`` with one slip: the tokens read place by place, the clips' frames interleaved, or the time
    reshape."""
    def to_space(x, frames):
        b, length, d = x.shape
        n = length // frames
        if slip == "place-major":
            return x.reshape(b, n, frames, d).transpose(1, 2).reshape(b * frames, n, d)
        if slip == "interleaved":
            return x.reshape(b, frames, n, d).transpose(0, 1).reshape(b * frames, n, d)
        return x.reshape(b, frames, n, d).transpose(1, 2).reshape(b * n, frames, d)  # "time"
    return to_space


T, N = 8, 196
# label: (question, answers changed, points its hidden checks then give, hint words, whether the public check names
# it: True, False (it passes) or "fails" (without the hint))
MISTAKES = {
    "grid: plain reshape": ("ch18_tokens_to_grid", {"tokens_to_grid": grid_with("plain")}, 0, "a plain reshape", True),
    "grid: last tokens dropped": ("ch18_tokens_to_grid", {"tokens_to_grid": grid_with("last dropped")}, 0,
                                  "are the prefix (CLS, ...)", True),
    "grid: tokens by column": ("ch18_tokens_to_grid", {"tokens_to_grid": grid_with("by column")}, 0,
                               "token i sits in row i // W", True),
    "grid: channels last": ("ch18_tokens_to_grid", {"tokens_to_grid": grid_with("channels last")}, 0,
                            "channels last", True),
    "grid: H and W swapped": ("ch18_tokens_to_grid", {"tokens_to_grid": grid_with("swapped")}, 0,
                              "H rows, W columns", True),
    "iou: pixel accuracy": ("ch18_mean_iou", {"mean_iou": iou_with("accuracy")}, 0, "pixel accuracy", True),
    "iou: absent classes as 0": ("ch18_mean_iou", {"mean_iou": iou_with("absent 0")}, 1, "not counted as 0", True),
    "iou: absent classes as 1": ("ch18_mean_iou", {"mean_iou": iou_with("absent 1")}, 1, "not counted as 1", True),
    "iou: pooled pixels": ("ch18_mean_iou", {"mean_iou": iou_with("pooled")}, 0, "all the pixels pooled", True),
    "iou: the target's classes only": ("ch18_mean_iou", {"mean_iou": iou_with("target only")}, 0,
                                       "the target lacks counts too", True),
    "iou: one mean per image": ("ch18_mean_iou", {"mean_iou": iou_with("per image")}, 0,
                                "count the pixels of the whole batch together", True),
    "iou: a float": ("ch18_mean_iou", {"mean_iou": iou_with("float")}, 0, "not a float", True),
    "match: argmin per target": ("ch19_match", {"match": match_with("argmin")}, 0, "one target at most", True),
    "match: greedy by target": ("ch19_match", {"match": match_with("greedy")}, 0, "greedy, target by target", True),
    "match: greedy by entry": ("ch19_match", {"match": match_with("greedy entry")}, 0, "the smallest entry first",
                               True),
    "match: maximised": ("ch19_match", {"match": match_with("largest")}, 0, "MINIMISES", True),
    "match: per query": ("ch19_match", {"match": match_with("targets")}, 0, "the target of each matched query",
                         True),
    "match: queries in query order": ("ch19_match", {"match": match_with("sorted")}, 0,
                                      "the right queries, in the wrong order", True),
    "match: floats": ("ch19_match", {"match": match_with("float")}, 0, "tensor of integers", True),
    "by hand: greedy by target": ("ch19_match_by_hand", {"smallest_total": 16}, 0, "target by target", False),
    "by hand: greedy by entry": ("ch19_match_by_hand", {"smallest_total": 12}, 0, "smallest entry first", False),
    "by hand: a query used twice": ("ch19_match_by_hand", {"smallest_total": 9}, 0, "uses one query twice", False),
    "by hand: the largest": ("ch19_match_by_hand", {"smallest_total": 22.0}, 0, "the largest total", False),
    "giou: plain IoU": ("ch19_giou", {"giou": giou_with("iou")}, 0, "that is the plain IoU", True),
    "giou: hull term added": ("ch19_giou", {"giou": giou_with("added")}, 0, "the hull term is subtracted", True),
    "giou: over the union": ("ch19_giou", {"giou": giou_with("over union")}, 0, "by the hull's area", True),
    "giou: not clamped": ("ch19_giou", {"giou": giou_with("unclamped")}, 0, "clamp its width and height", True),
    "giou: pairs only": ("ch19_giou", {"giou": giou_with("elementwise")}, 0, "an (N, M) table, not N pairs",
                         "fails"),  # the public boxes are 3 and 2: the shape shows, not the hint
    "detr: log-probabilities": ("ch19_detr_cost", {"detr_cost": "log"}, 0, "not its log-probability", True),
    "detr: GIoU of (cx, cy, w, h)": ("ch19_detr_cost", {"detr_cost": "cxcywh"}, 0, "convert them to (x1, y1, x2, y2)",
                                     True),
    "detr: L2 distance": ("ch19_detr_cost", {"detr_cost": "l2"}, 0, "not the Euclidean one", True),
    "detr: GIoU's sign": ("ch19_detr_cost", {"detr_cost": "giou sign"}, 0, "the GIoU term is −GIoU", True),
    "detr: the class term's sign": ("ch19_detr_cost", {"detr_cost": "class sign"}, 0,
                                    "the class term is −probability", True),
    "detr: no-object left out": ("ch19_detr_cost", {"detr_cost": "no object"}, 0, "the no-object class included",
                                 True),
    "detr: transposed": ("ch19_detr_cost", {"detr_cost": "transposed"}, 0, "a (Q, M) table", True),
    "time: plain reshape": ("ch20_time_tokens", time_with("plain"), 1, "a plain reshape cuts runs", True),
    "time: clips interleaved": ("ch20_time_tokens", time_with("clips interleaved"), 1,
                                "the right sequences in the wrong order", True),
    "time: time reversed": ("ch20_time_tokens", time_with("reversed"), 1, "the tokens go in time order", True),
    "time: the space reshape": ("ch20_time_tokens", time_with("space"), 1, "(the space reshape)", True),
    "time: plain reshape back": ("ch20_time_tokens", time_with("plain back"), 1, "does not undo the time reshape",
                                 True),
    "time: places first back": ("ch20_time_tokens", time_with("places first back"), 1,
                                "some in the wrong place", True),
    "space: place-major": ("ch20_space_tokens", {"to_space": space_with("place-major")}, 0,
                           "the tokens are frame-major", True),
    "space: clips interleaved": ("ch20_space_tokens", {"to_space": space_with("interleaved")}, 0,
                                 "the right frames in the wrong order", True),
    "space: the time reshape": ("ch20_space_tokens", {"to_space": space_with("time")}, 0, "(the time reshape)", True),
    "pairs: space step only": ("ch20_pairs", {"pairs_per_layer": {"joint": (T * N) ** 2, "divided": T * N**2}}, 0,
                               "add their pairs", False),
    "pairs: time step only": ("ch20_pairs", {"pairs_per_layer": {"joint": (T * N) ** 2, "divided": N * T**2}}, 0,
                              "add their pairs", False),
    "pairs: tokens, not pairs": ("ch20_pairs", {"pairs_per_layer": {"joint": T * N, "divided": 2 * T * N}}, 0,
                                 "scores L² pairs", False),
    "pairs: joint as T·N²": ("ch20_pairs", {"pairs_per_layer": {"joint": T * N**2, "divided": N * T**2 + T * N**2}},
                             0, "(T·N)²", False),
}


def with_mistake(ns: dict, change: dict) -> dict:
    """The master's answers with one mistake (a DETR slip by name: it calls the master's ``giou``)."""
    if isinstance(change.get("detr_cost"), str):
        change = {"detr_cost": detr_with(change["detr_cost"], ns["giou"])}
    return {**ns, **change}


# ---------------------------------------------------------------- the layout


def test_questions_and_points(assignments):
    for assignment in assignments.values():
        assert {q: p.points for q, p in assignment.questions.items()} == POINTS
        assert sum(POINTS.values()) == 16


def test_references_resolve(assignments, tmp_path):
    """The package's references exist (stripping them raises otherwise); the libraries' are attributes of their
    modules, which the harness replaces by functions that raise."""
    questions = assignments[SECRETS[0]].questions.values()
    assert all(q.references for q in questions)
    references = {r for q in questions for r in q.references}
    strip_package(sorted(r for r in references if r.startswith("vit_edu.")), tmp_path / "vit_edu")
    for dotted in (r for r in references if not r.startswith("vit_edu.")):
        module, _, name = dotted.rpartition(".")
        assert hasattr(importlib.import_module(module), name), dotted


def test_the_library_functions_are_taken_away(assignments):
    """Each question's library reference is among its references under every name the exercise forbids."""
    refs = {q: set(p.references) for q, p in assignments[SECRETS[0]].questions.items()}
    assert {"scipy.optimize.linear_sum_assignment", "scipy.optimize._lsap.linear_sum_assignment",
            "scipy.sparse.csgraph.min_weight_full_bipartite_matching"} <= refs["ch19_match"]
    assert {"torchvision.ops.generalized_box_iou", "torchvision.ops.boxes.generalized_box_iou",
            "torchvision.ops.generalized_box_iou_loss"} <= refs["ch19_giou"] & refs["ch19_detr_cost"]
    assert {"torchmetrics.classification.MulticlassJaccardIndex", "torchmetrics.segmentation.MeanIoU",
            "torchmetrics.functional.classification.multiclass_jaccard_index"} <= refs["ch18_mean_iou"]


def test_the_references_agree_with_the_libraries(hidden):
    """The hidden module's own code agrees with the libraries where their conventions meet: the mean IoU with
    torchmetrics' macro Jaccard index when every class is in a map, GIoU written out with torchvision's, the
    brute-force matching with scipy's; the matching tables have one cheapest assignment; the by-hand table's
    answer is what the exercise says."""
    for k, seed in ((3, 1), (5, 2)):
        pred, target = hidden.segment_maps(3, 8, 8, k, seed, absent=(), pred_only=())
        assert (torch.bincount(target.flatten(), minlength=k) > 0).all()
        jaccard = MulticlassJaccardIndex(num_classes=k, average="macro")(pred, target)
        torch.testing.assert_close(hidden.miou(pred, target, k), jaccard)
    a, b = hidden.spread_pairs(hidden.drawn_boxes(5, 3), hidden.drawn_boxes(4, 4))
    torch.testing.assert_close(hidden.giou_matrix(a, b), hidden.generalized_box_iou(a, b))
    assert (hidden.giou_matrix(a, b) < 0).any() and (hidden.giou_matrix(a, b, "unclamped") > 0).any()
    import random

    r = random.Random(5)
    for q, m in ((4, 4), (7, 5), (6, 2)):
        cost = hidden.drawn_cost(r, q, m)
        ranked = hidden.assignments(cost)
        assert ranked[1][0] - ranked[0][0] >= 0.2
        assert hidden.hungarian(cost).tolist() == list(ranked[0][1])
    cost = torch.tensor(hidden.BY_HAND, dtype=torch.float32)
    assert hidden.assignments(cost)[0] == (10.0, (2, 3, 1)) and hidden.assignments(cost)[1][0] == 12.0


def test_the_detr_reference_is_detrs_cost(hidden):
    """DETR's matcher: −softmax probability of the class, L1 distance of the (cx, cy, w, h) boxes, −GIoU of the
    corners, weighted; written out here with a loop over the pairs."""
    logits, pred, labels, boxes = hidden.detr_inputs(5, 3, 4, seed=6)
    want = torch.empty(5, 3)
    xyxy = lambda b: torch.cat([b[:2] - b[2:] / 2, b[:2] + b[2:] / 2])  # noqa: E731
    for i in range(5):
        for j in range(3):
            g = hidden.giou_matrix(xyxy(pred[i])[None], xyxy(boxes[j])[None])[0, 0]
            want[i, j] = -logits[i].softmax(-1)[labels[j]] + 5 * (pred[i] - boxes[j]).abs().sum() - 2 * g
    torch.testing.assert_close(hidden.detr_example((logits, pred, labels, boxes), (1.0, 5.0, 2.0)).expect, want)


def test_the_pair_counts(hidden):
    assert hidden.pair_counts() == {"joint": 1568.0**2, "divided": 196.0 * 64 + 8 * 196.0**2}
    assert hidden.pair_counts(2, 3) == {"joint": 36.0, "divided": 3 * 4 + 2 * 9.0}


# ---------------------------------------------------------------- the public checks


def test_public_checks_pass_the_masters_answers(assignments, master):
    assignment = assignments[SECRETS[0]]
    for question in assignment.questions:
        check(question, **answers_of(assignment, question, master))


@pytest.mark.parametrize("label", MISTAKES)
def test_public_check_names_the_classic_mistake(label, assignments, master):
    question, change, _, words, shown = MISTAKES[label]
    answers = answers_of(assignments[SECRETS[0]], question, with_mistake(master, change))
    if not shown:
        check(question, **answers)  # the public example cannot show it (a number's form)
        return
    with pytest.raises(AssertionError) as e:
        check(question, **answers)
    assert shown == "fails" or words in str(e.value), str(e.value)


def test_public_checks_of_the_numbers_check_their_form_only(assignments, master):
    check("ch19_match_by_hand", smallest_total=3)
    check("ch19_match_by_hand", smallest_total=7.5)
    check("ch20_pairs", pairs_per_layer={"joint": 1, "divided": 2.0})
    for question, answers, words in (("ch19_match_by_hand", {"smallest_total": "10"}, "float"),
                                     ("ch19_match_by_hand", {"smallest_total": ...}, "still `...`"),
                                     ("ch20_pairs", {"pairs_per_layer": {"joint": 1}}, "keys"),
                                     ("ch20_pairs", {"pairs_per_layer": {"joint": 1, "divided": "2"}}, "float")):
        with pytest.raises(AssertionError, match=words):
            check(question, **answers)


def test_the_public_data_holds_no_hidden_value(hidden, assignments):
    public = json.loads((PUBLIC / f"{NAME}.json").read_text())
    assert set(public) == {"assignment", "questions"} and set(public["questions"]) == set(POINTS)
    assert all(set(spec) == {"public"} for spec in public["questions"].values())
    (by_hand,) = public["questions"]["ch19_match_by_hand"]["public"]
    (pairs,) = public["questions"]["ch20_pairs"]["public"]
    assert by_hand["form_only"] and not by_hand["mistakes"] and pairs["form_only"] and not pairs["mistakes"]
    assert decode(by_hand["expect"]) != 10
    counts = hidden.pair_counts()
    assert all(decode(pairs["expect"])[k] != v for k, v in counts.items())
    text = json.dumps(public)
    assert all(str(int(v)) not in text for v in counts.values())
    for assignment in assignments.values():  # the public data does not depend on the secret
        assert json.loads(json.dumps(assignment.public_data())) == json.loads(json.dumps(
            hidden.make(public_draw).public_data()))


def test_the_committed_public_data_is_what_make_gives(hidden):
    committed = json.loads((PUBLIC / f"{NAME}.json").read_text())
    assert_close(committed, json.loads(json.dumps(hidden.make(public_draw).public_data())), "public")


# ---------------------------------------------------------------- the hidden checks


def test_hidden_examples_differ_between_secrets(assignments):
    one, two = (a.data()["questions"] for a in assignments.values())
    for question in POINTS:
        if question not in NUMBERS:
            assert one[question]["checks"] != two[question]["checks"], question
        assert one[question]["public"] == two[question]["public"], question


@pytest.mark.parametrize("secret", SECRETS)
def test_hidden_checks_give_the_master_full_marks(secret, assignments, master):
    assignment = assignments[secret]
    for question, q in assignment.questions.items():
        assert grade(assignment, question, master) == (q.points, []), question


@pytest.mark.parametrize("secret", SECRETS)
@pytest.mark.parametrize("label", MISTAKES)
def test_hidden_checks_give_the_mistake_its_hint_and_partial_marks(label, secret, assignments, master):
    question, change, points, words, _ = MISTAKES[label]
    score, hints = grade(assignments[secret], question, with_mistake(master, change))
    assert score == points, (score, hints)
    assert any(words in h for h in hints) if words else hints, hints


def test_a_rounded_or_whole_number_answer_still_passes(assignments, master):
    assignment = assignments[SECRETS[0]]
    assert grade(assignment, "ch19_match_by_hand", {**master, "smallest_total": 10.0})[0] == 1
    whole = {k: int(v) for k, v in master["pairs_per_layer"].items()}
    assert grade(assignment, "ch20_pairs", {**master, "pairs_per_layer": whole})[0] == 1


# ---------------------------------------------------------------- the scan of the references


REFERENCE_CALLS = {
    "ch18_tokens_to_grid": "from vit_edu.tasks.segmentation import tokens_to_grid as t2g\n"
                           "def tokens_to_grid(tokens, grid, prefix):\n    return t2g(tokens, grid, prefix)",
    "ch18_mean_iou": "from torchmetrics.classification import MulticlassJaccardIndex\n"
                     "def mean_iou(pred, target, num_classes):\n"
                     "    return MulticlassJaccardIndex(num_classes)(pred, target)",
    "ch19_match": "import scipy.optimize\ndef match(cost):\n"
                  "    return torch.as_tensor(scipy.optimize.linear_sum_assignment(cost.T)[1])",
    "ch19_giou": "from torchvision.ops import generalized_box_iou\n"
                 "def giou(boxes1, boxes2):\n    return generalized_box_iou(boxes1, boxes2)",
    "ch19_detr_cost": "from vit_edu.tasks import detection\n"
                      "def detr_cost(logits, pred_boxes, labels, boxes, w_class, w_l1, w_giou):\n"
                      "    return detection.match_cost(logits, pred_boxes, labels, boxes)",
    "ch20_time_tokens": "import einops\ndef to_time(x, frames):\n"
                        "    return einops.rearrange(x, 'b (t n) d -> (b n) t d', t=frames)",
    "ch20_space_tokens": "from vit_edu.tasks.video import space_reshape\ndef to_space(x, frames):\n"
                         "    return space_reshape(x.reshape(x.shape[0], frames, -1, x.shape[-1]))",
}


def test_the_scan_sees_a_reference_named_in_an_answer(assignments):
    assignment = assignments[SECRETS[0]]
    answers = {q: p.answers for q, p in assignment.questions.items()}
    references = {q: p.references for q, p in assignment.questions.items()}
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(REFERENCE_CALLS[q]) for q in sorted(REFERENCE_CALLS)]
    found = scan.reference_uses(nb, answers, references)
    assert set(REFERENCE_CALLS) <= set(found), found
    clean = nbformat.read(MASTER, as_version=4)
    assert scan.reference_uses(clean, answers, references) == {}


def test_the_harness_takes_torchmetrics_away_whole():
    """Mean IoU's references name a few torchmetrics functions; the harness takes the whole library away, so another
    of its names (``torchmetrics.functional.jaccard_index``, not in the list) raises too."""
    import subprocess
    import sys

    code = ("import importlib, torch\n"
            "from vit_edu.homework import harness\n"
            "assert 'torchmetrics' in harness.WHOLE_PACKAGES\n"
            "importlib.import_module('torchmetrics'); harness.take_away_package('torchmetrics')\n"
            "from torchmetrics.functional import jaccard_index\n"
            "x = torch.zeros(4, dtype=torch.long)\n"
            "try:\n"
            "    jaccard_index(x, x, task='multiclass', num_classes=2)\n"
            "except RuntimeError as error:\n"
            "    print('taken away' if harness.TAKEN_AWAY in str(error) else error)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "taken away", out.stdout + out.stderr
