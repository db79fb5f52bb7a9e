"""Homework 5's checks (instructor only): the public examples and the hidden checks, computed with the references.

``make(draw)`` builds every example: its inputs (hidden ones drawn from the course's secret through ``draw``),
what the right answer returns on them and what each classic mistake returns, with its hint. The right answers
come from the libraries the chapters use where one is the reference (``scipy.optimize.linear_sum_assignment`` for
the matching, ``torchvision.ops.generalized_box_iou`` for GIoU) and from the reference code below elsewhere (the
token reshapes, the mean IoU, DETR's matching cost). Nothing of this module enters the package, the site or a
grading sandbox: only the data it returns does. 16 points: 13 for code, 3 for numbers.
"""

import itertools
import random

import torch
import torch.nn.functional as F
from scipy.optimize import linear_sum_assignment
from torchvision.ops import box_convert, generalized_box_iou

from vit_edu.homework.assignment import Assignment, seeded
from vit_edu.homework.checks import Example, Mistake, difference

GRID_REFS = ("vit_edu.tasks.segmentation.tokens_to_grid",)
# torchmetrics' Jaccard index and mean IoU under every name that reaches them (the module, the class, the function).
TORCHMETRICS = ("torchmetrics.JaccardIndex", "torchmetrics.classification.JaccardIndex",
                "torchmetrics.classification.MulticlassJaccardIndex",
                "torchmetrics.classification.jaccard.MulticlassJaccardIndex",
                "torchmetrics.classification.jaccard.JaccardIndex",
                "torchmetrics.segmentation.MeanIoU", "torchmetrics.segmentation.mean_iou.MeanIoU",
                "torchmetrics.functional.jaccard_index", "torchmetrics.functional.classification.jaccard_index",
                "torchmetrics.functional.classification.multiclass_jaccard_index",
                "torchmetrics.functional.classification.jaccard.multiclass_jaccard_index",
                "torchmetrics.functional.classification.jaccard.jaccard_index",
                "torchmetrics.functional.classification.jaccard._jaccard_index_reduce",
                "torchmetrics.functional.segmentation.mean_iou",
                "torchmetrics.functional.segmentation.mean_iou.mean_iou",
                "torchmetrics.functional.segmentation.mean_iou._mean_iou_compute")
IOU_REFS = ("vit_edu.tasks.segmentation.jaccard", "vit_edu.tasks.segmentation.scores", *TORCHMETRICS)
MATCH_REFS = ("vit_edu.tasks.detection.hungarian_match", "vit_edu.tasks.detection.match",
              "scipy.optimize.linear_sum_assignment", "scipy.optimize._lsap.linear_sum_assignment",
              "scipy.sparse.csgraph.min_weight_full_bipartite_matching",
              "scipy.sparse.csgraph._matching.min_weight_full_bipartite_matching",
              "networkx.algorithms.bipartite.minimum_weight_full_matching",
              "networkx.algorithms.bipartite.matching.minimum_weight_full_matching",
              "networkx.min_weight_matching", "networkx.max_weight_matching",
              "networkx.algorithms.matching.min_weight_matching", "networkx.algorithms.matching.max_weight_matching")
GIOU_REFS = ("torchvision.ops.generalized_box_iou", "torchvision.ops.boxes.generalized_box_iou",
             "torchvision.ops.generalized_box_iou_loss", "torchvision.ops.giou_loss.generalized_box_iou_loss",
             "torchvision.ops.complete_box_iou", "torchvision.ops.boxes.complete_box_iou",
             "torchvision.ops.distance_box_iou", "torchvision.ops.boxes.distance_box_iou")
DETR_REFS = ("vit_edu.tasks.detection.match_cost", *GIOU_REFS)
# A reshape in one call: einops goes too, as in homework 1.
TIME_REFS = ("vit_edu.tasks.video.time_reshape", "vit_edu.tasks.video.time_unreshape",
             "vit_edu.tasks.video.space_reshape", "vit_edu.tasks.video.space_unreshape",
             "vit_edu.tasks.video.joint_reshape", "einops.rearrange", "einops.einops.rearrange")
PAIRS_REFS = ("vit_edu.tasks.video.attention_macs",)
# The matrix of exercise 19.2, printed in the master: 4 queries (rows) × 3 targets (columns). Its smallest total
# is unique (10; the next is 12); greedy target by target gives 16, greedy by smallest entry 12, the sum of the
# column minima (which reuses query 1) 9, the largest total 22.
BY_HAND = ((9, 9, 5), (4, 8, 1), (4, 8, 5), (3, 5, 5))
PAIR_T, PAIR_N = 8, 196  # TimeSformer's clip: 8 frames of 14×14 patches (224×224, patch 16)


def example(*args, **kwargs) -> Example:
    """An ``Example`` without the mistakes that give the right output on its inputs, or the right shape where a
    mistake is known by its shape alone (they would name nothing, or every wrong answer)."""
    ex = Example(*args, **kwargs)
    shape = tuple(getattr(ex.expect, "shape", ()))
    ex.mistakes = [m for m in ex.mistakes if (
        m.shape != shape if m.output is None else m.sort_dim is not None or difference(m.output, ex.expect, ex))]
    return ex


def index_tokens(*shape: int, seed: int) -> torch.Tensor:
    """``(B, L, D)`` whose channel 0 is the token's index, the others seeded noise: a misplaced token shows."""
    x = seeded(*shape, seed=seed)
    b, n = shape[:2]
    x[..., 0] = torch.arange(b * n, dtype=torch.float32).reshape(b, n)
    return x


# ---------------------------------------------------------------- chapter 18: segmentation


def to_grid(tokens: torch.Tensor, grid: tuple[int, int], prefix: int) -> torch.Tensor:
    """``(B, prefix + H·W, D)`` -> ``(B, D, H, W)``: SETR's reshape of the patch tokens into a feature map."""
    h, w = grid
    return tokens[:, prefix:].transpose(1, 2).reshape(tokens.shape[0], -1, h, w)


def grid_example(b: int, h: int, w: int, d: int, prefix: int, seed: int) -> Example:
    """``tokens_to_grid(tokens, (H, W), prefix)`` on index tokens."""
    tokens = index_tokens(b, prefix + h * w, d, seed=seed)
    patches = tokens[:, prefix:]
    mistakes = [Mistake("a plain reshape cuts each token's D numbers across the map: move D in front first (the "
                        "tokens' axis becomes the channel axis), then reshape", patches.reshape(b, d, h, w)),
                Mistake(f"the first {prefix} token(s) are the prefix (CLS, ...): drop them, and keep the last H·W",
                        to_grid(tokens[:, :h * w], (h, w), 0)),
                Mistake("the tokens run row by row: token i sits in row i // W, column i % W (grid = (H, W))",
                        to_grid(tokens, (w, h), prefix).transpose(2, 3)),
                Mistake("that is (B, H, W, D), channels last: the feature map is (B, D, H, W)", shape=(b, h, w, d))]
    mistakes.append(Mistake("grid = (H, W): H rows, W columns; the map is (B, D, H, W)", shape=(b, d, w, h)))
    return example("tokens_to_grid", to_grid(tokens, (h, w), prefix), [tokens, (h, w), prefix],
                   what=f"tokens_to_grid(tokens of shape {tuple(tokens.shape)}, grid {(h, w)}, prefix={prefix})",
                   shape_hint=" (B, D, H, W)", mistakes=mistakes)


def segment_maps(b: int, h: int, w: int, k: int, seed: int, absent: tuple[int, ...],
                 pred_only: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded ``pred, target (B, H, W)`` class maps with blobs (2×2 blocks), some pixels wrong; the classes
    ``absent`` are in neither map, those of ``pred_only`` only in the prediction."""
    g = torch.Generator().manual_seed(seed)
    present = torch.tensor([c for c in range(k) if c not in absent and c not in pred_only])
    coarse = present[torch.randint(len(present), (b, (h + 1) // 2, (w + 1) // 2), generator=g)]
    target = coarse.repeat_interleave(2, 1).repeat_interleave(2, 2)[:, :h, :w].contiguous()
    pred = target.clone()
    flip = torch.rand(b, h, w, generator=g) < 0.3
    pred[flip] = present[torch.randint(len(present), (int(flip.sum()),), generator=g)]
    if pred_only:
        extra = torch.rand(b, h, w, generator=g) < 0.1
        extra.view(-1)[0] = True  # at least one pixel
        pred[extra] = torch.tensor(pred_only)[torch.randint(len(pred_only), (int(extra.sum()),), generator=g)]
    return pred, target


def class_iou(pred: torch.Tensor, target: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per class, the pixels of ``pred ∩ target`` and of ``pred ∪ target``, over every pixel: ``(K,)`` each."""
    p = F.one_hot(pred.flatten(), k).bool()  # (pixels, K)
    t = F.one_hot(target.flatten(), k).bool()
    return (p & t).sum(0), (p | t).sum(0)


def miou(pred: torch.Tensor, target: torch.Tensor, k: int, absent: str = "skip") -> torch.Tensor:
    """Mean over the classes of |P∩T| / |P∪T|; a class with an empty union is skipped (``absent="skip"``), or
    counted as 0 or 1 (two classic mistakes)."""
    inter, union = class_iou(pred, target, k)
    seen = union > 0
    iou = inter.float() / union.clamp(min=1).float()
    if absent == "skip":
        return iou[seen].mean()
    return torch.where(seen, iou, torch.tensor(1.0 if absent == "one" else 0.0)).mean()


def iou_example(b: int, h: int, w: int, k: int, seed: int, absent: tuple[int, ...] = (),
                pred_only: tuple[int, ...] = ()) -> Example:
    """``mean_iou(pred, target, num_classes)``."""
    pred, target = segment_maps(b, h, w, k, seed, absent, pred_only)
    want = miou(pred, target, k)
    inter, union = class_iou(pred, target, k)
    in_target = torch.bincount(target.flatten(), minlength=k) > 0
    per_image = torch.stack([miou(p, t, k) for p, t in zip(pred, target)]).mean()
    return example("mean_iou", want, [pred, target, k], atol=1e-5, rtol=0,
                   what=f"mean_iou(pred and target of shape {tuple(pred.shape)}, num_classes={k})",
                   shape_hint=": the mean IoU is one number, a 0-d tensor", mistakes=[
                       Mistake("that is the pixel accuracy (the share of right pixels): the mean IoU is, per class, "
                               "|P∩T| / |P∪T|, averaged over the classes", (pred == target).float().mean()),
                       Mistake("a class in neither map (empty union) is left out of the mean, not counted as 0",
                               miou(pred, target, k, absent="zero")),
                       Mistake("a class in neither map (empty union) is left out of the mean, not counted as 1",
                               miou(pred, target, k, absent="one")),
                       Mistake("that is the IoU of all the pixels pooled (the classes' intersections summed over the "
                               "summed unions): compute one IoU per class, then average them",
                               inter.sum().float() / union.sum().float()),
                       Mistake("a class the prediction has and the target lacks counts too (its IoU is 0): average "
                               "over every class whose union is not empty",
                               (inter.float() / union.clamp(min=1).float())[in_target].mean()),
                       Mistake("count the pixels of the whole batch together, then average over the classes (not one "
                               "mean IoU per image, averaged)", per_image),
                       Mistake("return a 0-d tensor, not a float", want.item())])


# ---------------------------------------------------------------- chapter 19: detection, the matching


def assignments(cost: torch.Tensor) -> list[tuple[float, tuple[int, ...]]]:
    """Every assignment of the ``M`` targets to distinct queries, as (total cost, query of each target), cheapest
    first (brute force: the costs of the checks are small)."""
    q, m = cost.shape
    return sorted((sum(cost[p, j].item() for j, p in enumerate(perm)), perm)
                  for perm in itertools.permutations(range(q), m))


def greedy(cost: torch.Tensor, by_entry: bool = False) -> torch.Tensor:
    """Greedy matching, target by target (each takes its cheapest free query), or by the smallest entry left."""
    q, m = cost.shape
    out, used_q, used_t = torch.full((m,), -1), set(), set()
    if by_entry:
        for flat in cost.flatten().argsort().tolist():
            i, j = divmod(flat, m)
            if i not in used_q and j not in used_t:
                out[j] = i
                used_q.add(i)
                used_t.add(j)
        return out
    for j in range(m):
        free = [i for i in range(q) if i not in used_q]
        out[j] = min(free, key=lambda i: cost[i, j].item())
        used_q.add(int(out[j]))
    return out


def hungarian(cost: torch.Tensor, maximize: bool = False) -> torch.Tensor:
    """``(Q, M)`` -> ``(M,)``: the query matched to each target (scipy's ``linear_sum_assignment``)."""
    targets, queries = linear_sum_assignment(cost.T.numpy(), maximize=maximize)
    return torch.as_tensor(queries, dtype=torch.int64)[torch.as_tensor(targets).argsort()]


def match_example(cost: torch.Tensor) -> Example:
    """``match(cost)``."""
    want = hungarian(cost)
    rows, cols = linear_sum_assignment(cost.numpy())
    return example("match", want, [cost], what=f"match(cost of shape {tuple(cost.shape)})",
                   shape_hint=" (M,): the query of each target", mistakes=[
                       Mistake("each query may be matched to one target at most: cost.argmin(0) gives two targets "
                               "the same query", cost.argmin(0)),
                       Mistake("greedy, target by target, is not the smallest total: a cheap pair taken first can "
                               "force dear ones later; search the assignments (all of them, or the Hungarian "
                               "algorithm's way)", greedy(cost)),
                       Mistake("greedy, the smallest entry first, is not the smallest total either: search the "
                               "assignments", greedy(cost, by_entry=True)),
                       Mistake("the matching MINIMISES the total cost", hungarian(cost, maximize=True)),
                       Mistake("that lists the target of each matched query (in query order); entry j is the query "
                               "matched to target j", torch.as_tensor(cols, dtype=torch.int64)),
                       Mistake("the right queries, in the wrong order: entry j is the query matched to target j",
                               want, sort_dim=0),
                       Mistake("return a tensor of integers (torch.int64): the query indices", want.float())])


def drawn_cost(r: random.Random, q: int, m: int, margin: float = 0.2, distinct: bool = False) -> torch.Tensor:
    """A ``(Q, M)`` cost (DETR's can be negative) with a unique cheapest assignment (the next one at least
    ``margin`` dearer), on which the per-target argmin repeats a query and greedy matching loses (with
    ``distinct``, the two greedy matchings each their own way; with two targets they cannot: both take the query
    that both targets want most, and so does the cheapest assignment)."""
    while True:
        cost = torch.tensor([[round(r.uniform(-2, 3), 2) for _ in range(m)] for _ in range(q)])
        ranked = assignments(cost)
        by_target, by_entry = (tuple(greedy(cost, by_entry=e).tolist()) for e in (False, True))
        if (ranked[1][0] - ranked[0][0] >= margin and len(set(cost.argmin(0).tolist())) < m
                and ranked[0][1] not in (by_target, by_entry) and (by_target != by_entry or not distinct)):
            return cost


# ---------------------------------------------------------------- chapter 19: detection, GIoU and DETR's cost


def giou_matrix(a: torch.Tensor, b: torch.Tensor, slip: str = "") -> torch.Tensor:
    """``(N, 4)``, ``(M, 4)`` xyxy -> ``(N, M)`` GIoU, written out; ``slip`` gives a classic mistake: "iou" (no hull
    term), "added" (the hull term added), "over union" (divided by the union), "unclamped" (no clamp at 0)."""
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])  # (N,)
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])  # (M,)
    wh = torch.minimum(a[:, None, 2:], b[None, :, 2:]) - torch.maximum(a[:, None, :2], b[None, :, :2])  # (N, M, 2)
    if slip != "unclamped":
        wh = wh.clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    union = area_a[:, None] + area_b[None, :] - inter
    hull_wh = torch.maximum(a[:, None, 2:], b[None, :, 2:]) - torch.minimum(a[:, None, :2], b[None, :, :2])
    hull = hull_wh[..., 0] * hull_wh[..., 1]  # (N, M): the smallest box around both
    iou = inter / union
    if slip == "iou":
        return iou
    extra = (hull - union) / (union if slip == "over union" else hull)
    return iou + extra if slip == "added" else iou - extra


def drawn_boxes(n: int, seed: int, scale: float = 10.0) -> torch.Tensor:
    """``(N, 4)`` xyxy boxes with corners in ``[0, scale]``, sides at least a tenth of it."""
    g = torch.Generator().manual_seed(seed)
    corner = torch.rand(n, 2, generator=g) * 0.7 * scale
    size = (0.1 + 0.5 * torch.rand(n, 2, generator=g)) * scale
    return torch.cat([corner, corner + size], dim=1)


def spread_pairs(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The boxes, with two more pairs that the checks must hold: a box equal to one of the other set, and a pair
    apart along both axes (where an unclamped intersection turns positive)."""
    far = a[:1] + torch.tensor([[1.5, 1.5, 1.5, 1.5]]) * (a[:1, 2:] - a[:1, :2]).repeat(1, 2)
    return torch.cat([a, b[:1]]), torch.cat([b, far])


def giou_example(a: torch.Tensor, b: torch.Tensor) -> Example:
    """``giou(boxes1, boxes2)``."""
    mistakes = [Mistake("that is the plain IoU: GIoU subtracts (hull − union) / hull, the share of the smallest box "
                        "around both that neither covers", giou_matrix(a, b, "iou")),
                Mistake("the hull term is subtracted: GIoU = IoU − (hull − union) / hull, at most the IoU",
                        giou_matrix(a, b, "added")),
                Mistake("divide the empty part of the hull by the hull's area, not by the union's",
                        giou_matrix(a, b, "over union")),
                Mistake("boxes that do not overlap have no intersection: clamp its width and height at 0 (two "
                        "negative sides multiply to a positive area)", giou_matrix(a, b, "unclamped"))]
    if len(a) == len(b):  # the pairs (boxes1[i], boxes2[i]) only
        mistakes.append(Mistake("every box of boxes1 against every box of boxes2: an (N, M) table, not N pairs",
                                shape=(len(a),)))
    return example("giou", generalized_box_iou(a, b), [a, b], atol=1e-5, rtol=0,
                   what=f"giou(boxes1 of shape {tuple(a.shape)}, boxes2 of shape {tuple(b.shape)})",
                   shape_hint=" (N, M): one value per pair", mistakes=mistakes)


def detr_inputs(q: int, m: int, c: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded ``logits (Q, C+1)``, ``pred_boxes (Q, 4)``, ``labels (M,)``, ``boxes (M, 4)``, boxes ``(cx, cy, w, h)``
    normalised to the image, inside it."""
    g = torch.Generator().manual_seed(seed)

    def boxes(n: int) -> torch.Tensor:
        wh = 0.1 + 0.4 * torch.rand(n, 2, generator=g)
        centre = wh / 2 + (1 - wh) * torch.rand(n, 2, generator=g)
        return torch.cat([centre, wh], dim=1)

    logits = 2 * torch.randn(q, c + 1, generator=g)
    return logits, boxes(q), torch.randint(0, c, (m,), generator=g), boxes(m)


def detr_terms(logits, pred, labels, boxes, slip: str = "") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """DETR's three cost terms ``(Q, M)`` each (class, L1, GIoU), signs included; ``slip`` gives a mistake."""
    probs = logits.log_softmax(-1) if slip == "log" else logits.softmax(-1)  # (Q, C+1)
    if slip == "no object dropped":
        probs = logits[:, :-1].softmax(-1)
    cls = -probs[:, labels]
    l1 = torch.cdist(pred, boxes, p=2 if slip == "l2" else 1)
    if slip == "cxcywh":
        g = giou_matrix(pred, boxes)
    else:
        g = generalized_box_iou(box_convert(pred, "cxcywh", "xyxy"), box_convert(boxes, "cxcywh", "xyxy"))
    return (-cls if slip == "class sign" else cls), l1, (g if slip == "giou sign" else -g)


def detr_example(args: tuple, weights: tuple[float, float, float]) -> Example:
    """``detr_cost(logits, pred_boxes, labels, boxes, w_class, w_l1, w_giou)``."""
    logits, pred, labels, boxes = args
    q, m = len(pred), len(boxes)

    def total(slip: str = "") -> torch.Tensor:
        return sum(w * t for w, t in zip(weights, detr_terms(*args, slip=slip)))

    return example("detr_cost", total(), [*args, *weights], atol=1e-5, rtol=0,
                   what=f"detr_cost(Q = {q}, M = {m}, C = {logits.shape[1] - 1}, weights {weights})",
                   shape_hint=" (Q, M): one cost per query and target", mistakes=[
                       Mistake("the class term is minus the predicted probability of the target's class (softmax), "
                               "not its log-probability", total("log")),
                       Mistake("the boxes are (cx, cy, w, h): convert them to (x1, y1, x2, y2) before GIoU",
                               total("cxcywh")),
                       Mistake("the box term is the L1 distance (the sum of the four absolute differences), not the "
                               "Euclidean one", total("l2")),
                       Mistake("a better overlap must cost less: the GIoU term is −GIoU", total("giou sign")),
                       Mistake("a likelier class must cost less: the class term is −probability",
                               total("class sign")),
                       Mistake("the softmax runs over all C + 1 logits, the no-object class included",
                               total("no object dropped")),
                       Mistake("the cost pairs every query with every target: a (Q, M) table", shape=(m, q))])


# ---------------------------------------------------------------- chapter 20: video


def time_tokens(x: torch.Tensor, frames: int) -> torch.Tensor:
    """``(B, T·N, D)`` frame-major -> ``(B·N, T, D)``: one sequence per place, over time."""
    b, length, d = x.shape
    return x.reshape(b, frames, length // frames, d).transpose(1, 2).reshape(-1, frames, d)


def untime(y: torch.Tensor, batch: int) -> torch.Tensor:
    """``(B·N, T, D)`` -> ``(B, T·N, D)``: undoes :func:`time_tokens`."""
    bn, t, d = y.shape
    return y.reshape(batch, bn // batch, t, d).transpose(1, 2).reshape(batch, -1, d)


def to_time_example(b: int, t: int, n: int, d: int, seed: int) -> Example:
    """``to_time(x, frames)`` on index tokens."""
    x = index_tokens(b, t * n, d, seed=seed)
    want = time_tokens(x, t)
    return example("to_time", want, [x, t], what=f"to_time(x of shape {tuple(x.shape)}, frames={t})",
                   shape_hint=" (B·N, T, D): one sequence of T tokens per place", mistakes=[
                       Mistake("a plain reshape cuts runs of T consecutive tokens of one frame: split the frames "
                               "from the places (B, T, N, D), bring the places next to the batch, then merge",
                               x.reshape(b * n, t, d)),
                       Mistake("the right sequences in the wrong order: image 0's N places first, then image 1's",
                               want, sort_dim=0),
                       Mistake("inside a sequence the tokens go in time order: frame 0's first", want, sort_dim=1),
                       Mistake("that is (B·T, N, D), one sequence per frame (the space reshape): the time reshape "
                               "gives one sequence per place", shape=(b * t, n, d))])


def from_time_example(b: int, t: int, n: int, d: int, seed: int) -> Example:
    """``from_time(y, batch)`` on the time sequences of index tokens."""
    y = time_tokens(index_tokens(b, t * n, d, seed=seed), t)
    want = untime(y, b)
    return example("from_time", want, [y, b], what=f"from_time(y of shape {tuple(y.shape)}, batch={b})",
                   shape_hint=" (B, T·N, D): the clip's tokens, frame by frame",
                   mistakes=[Mistake("a plain reshape does not undo the time reshape: split the batch from the places, "
                                     "put the frames back before the places, then merge", y.reshape(b, t * n, d)),
                             Mistake("every token is there, some in the wrong place: from_time(to_time(x, T), B) gives "
                                     "x back", want, sort_dim=1)])


def to_space_example(b: int, t: int, n: int, d: int, seed: int) -> Example:
    """``to_space(x, frames)`` on index tokens."""
    x = index_tokens(b, t * n, d, seed=seed)
    want = x.reshape(b * t, n, d)
    mistakes = [Mistake("the tokens are frame-major: frame 0's N tokens, then frame 1's; a frame's tokens are "
                        "consecutive", x.reshape(b, n, t, d).transpose(1, 2).reshape(b * t, n, d)),
                Mistake("the right frames in the wrong order: image 0's T frames first, then image 1's", want,
                        sort_dim=0)]
    mistakes.append(Mistake("that is (B·N, T, D), one sequence per place (the time reshape): the space reshape "
                            "gives one sequence per frame", shape=(b * n, t, d)))
    return example("to_space", want, [x, t], what=f"to_space(x of shape {tuple(x.shape)}, frames={t})",
                   shape_hint=" (B·T, N, D): one sequence of N tokens per frame", mistakes=mistakes)


def pair_counts(t: int = PAIR_T, n: int = PAIR_N) -> dict[str, float]:
    """Query–key pairs of one layer on one clip: joint attention over all T·N tokens, and divided attention (time
    over T tokens at each place, then space over N tokens in each frame)."""
    return {"joint": float((t * n) ** 2), "divided": float(n * t**2 + t * n**2)}


def pairs_example() -> Example:
    """The number: both counts, exactly (within ½)."""
    want = pair_counts()
    t, n = PAIR_T, PAIR_N
    return example("pairs_per_layer", want, what="pairs_per_layer", atol=0.5, rtol=0, mistakes=[
        Mistake("divided attention runs both steps in every layer: time (N sequences of T tokens) and then space "
                "(T sequences of N tokens); add their pairs", {**want, "divided": float(t * n**2)}),
        Mistake("divided attention runs both steps in every layer: time (N sequences of T tokens) and then space "
                "(T sequences of N tokens); add their pairs", {**want, "divided": float(n * t**2)}),
        Mistake("a pair is one query and one key: in a sequence of L tokens attention scores L² pairs, not L",
                {"joint": float(t * n), "divided": float(n * t + t * n)}),
        Mistake("joint attention takes every token of the clip as a query against every token as a key: (T·N)²",
                {**want, "joint": float(t * n**2)})])


# ---------------------------------------------------------------- the assignment


def make(draw):
    """Homework 5's questions, public examples and hidden checks (``draw(label)``: a seed from the secret)."""
    a = Assignment("hw5_tasks")

    q = a.question("ch18_tokens_to_grid", ("tokens_to_grid",), references=GRID_REFS)
    q.public = [grid_example(1, 2, 3, 4, 1, 30)]
    r = random.Random(draw("grid"))
    h, w = r.sample(range(2, 7), 2)
    q.check("a CLS token, non-square grids", [grid_example(2, h, w, 5, 1, draw("grid/1")),
                                             grid_example(1, w, h + 1, 3, 1, draw("grid/2"))])
    q.check("no prefix token, or two (CLS and distillation), several images", [
        grid_example(3, r.randint(2, 5), r.randint(2, 5), 6, 0, draw("grid/3")),
        grid_example(2, 4, r.randint(5, 7), 3, 2, draw("grid/4"))])

    q = a.question("ch18_mean_iou", ("mean_iou",), references=IOU_REFS)
    q.public = [iou_example(2, 4, 4, 4, 31, absent=(3,), pred_only=(2,))]
    r = random.Random(draw("iou"))
    k = r.randint(4, 6)
    q.check("no class absent from both maps", [iou_example(2, 6, 8, 3, draw("iou/1")),
                                    iou_example(3, 5, 5, k, draw("iou/2"), pred_only=(k - 1,))])
    k = r.randint(5, 7)
    q.check("classes absent from both maps", [
        iou_example(2, 8, 6, k, draw("iou/3"), absent=tuple(r.sample(range(k), 2)), pred_only=()),
        iou_example(4, 4, 6, k, draw("iou/4"), absent=(0,), pred_only=(k - 1,))])

    q = a.question("ch19_match", ("match",), references=MATCH_REFS)
    q.public = [match_example(drawn_cost(random.Random(36), 4, 3, distinct=True))]
    r = random.Random(draw("match"))
    q.check("as many queries as targets", [match_example(drawn_cost(r, s, s)) for s in (3, r.randint(4, 5))])
    q.check("more queries than targets", [match_example(drawn_cost(r, r.randint(5, 7), m)) for m in (2, 4)])
    q.check("DETR's scale: 7 queries, 5 targets", [match_example(drawn_cost(r, 7, 5))])

    q = a.question("ch19_match_by_hand", ("smallest_total",), references=MATCH_REFS)
    q.public = [Example("smallest_total", 0.0, form_only=True, what="smallest_total")]
    cost = torch.tensor(BY_HAND, dtype=torch.float32)
    best = float(assignments(cost)[0][0])
    q.check("the smallest total cost of the printed matrix", [example("smallest_total", best, what="smallest_total",
                                                                      atol=1e-6, rtol=0, mistakes=[
        Mistake("that is the greedy total, target by target: a cheap pair taken first forced dear ones later",
                float(cost.gather(0, greedy(cost)[None]).sum())),
        Mistake("that is the greedy total, smallest entry first: it is not the smallest total either",
                float(cost.gather(0, greedy(cost, by_entry=True)[None]).sum())),
        Mistake("that sums each target's cheapest query, and uses one query twice: each query takes one target "
                "at most", float(cost.min(0).values.sum())),
        Mistake("that is the largest total: the matching minimises", float(assignments(cost)[-1][0]))])])

    q = a.question("ch19_giou", ("giou",), references=GIOU_REFS)
    q.public = [giou_example(torch.tensor([[0.0, 0.0, 2.0, 2.0], [1.0, 1.0, 3.0, 4.0], [5.0, 5.0, 6.0, 6.0]]),
                             torch.tensor([[0.0, 0.0, 2.0, 2.0], [3.0, 3.0, 4.0, 5.0]]))]
    r = random.Random(draw("giou"))
    n, m = r.randint(3, 6), r.randint(2, 5)
    q.check("boxes that overlap, contain each other or lie apart", [
        giou_example(*spread_pairs(drawn_boxes(n, draw("giou/1")), drawn_boxes(m, draw("giou/2")))),
        giou_example(*spread_pairs(drawn_boxes(4, draw("giou/3"), 1.0), drawn_boxes(4, draw("giou/4"), 1.0)))])
    q.check("one set against itself, and a single box", [
        giou_example(*(2 * [drawn_boxes(r.randint(3, 5), draw("giou/5"), 50.0)])),
        giou_example(*spread_pairs(drawn_boxes(1, draw("giou/6")), drawn_boxes(m + 1, draw("giou/7"))))])

    q = a.question("ch19_detr_cost", ("detr_cost",), references=DETR_REFS, depends=("ch19_giou",))
    q.public = [detr_example(detr_inputs(4, 2, 3, 32), (1.0, 5.0, 2.0))]
    r = random.Random(draw("detr"))
    detr_weights = (1.0, 5.0, 2.0)
    q.check("DETR's weights (1, 5, 2)", [
        detr_example(detr_inputs(r.randint(5, 8), r.randint(2, 4), 4, draw("d/1")), detr_weights),
        detr_example(detr_inputs(6, 3, r.randint(5, 7), draw("d/2")), detr_weights)])
    q.check("other weights", [detr_example(detr_inputs(r.randint(4, 7), 3, 5, draw("d/3")), (2.0, 1.0, 1.0)),
                              detr_example(detr_inputs(5, r.randint(1, 4), 3, draw("d/4")), (0.5, 2.0, 4.0))])

    q = a.question("ch20_time_tokens", ("to_time", "from_time"), references=TIME_REFS)
    q.public = [to_time_example(2, 3, 4, 2, 33), from_time_example(2, 3, 4, 2, 34)]
    r = random.Random(draw("time"))
    q.check("to_time on clips of several lengths", [
        to_time_example(2, r.randint(2, 5), r.randint(4, 9), 3, draw("time/1")),
        to_time_example(3, 8, r.randint(3, 6), 2, draw("time/2"))])
    q.check("from_time undoes it", [from_time_example(3, r.randint(2, 5), r.randint(4, 9), 3, draw("time/3")),
                                    from_time_example(2, 8, r.randint(3, 6), 4, draw("time/4"))])

    q = a.question("ch20_space_tokens", ("to_space",), references=TIME_REFS)
    q.public = [to_space_example(2, 3, 4, 2, 35)]
    r = random.Random(draw("space"))
    q.check("clips of several lengths", [to_space_example(2, r.randint(2, 5), r.randint(6, 9), 3, draw("space/1")),
                                         to_space_example(3, 8, r.randint(3, 5), 2, draw("space/2"))])

    q = a.question("ch20_pairs", ("pairs_per_layer",), references=PAIRS_REFS)
    q.public = [Example("pairs_per_layer", {"joint": 1.0, "divided": 1.0}, form_only=True, what="pairs_per_layer")]
    q.check("query–key pairs of joint and divided attention at T = 8, N = 196", [pairs_example()])
    return a
