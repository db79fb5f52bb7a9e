"""Detection as set prediction (chapter 19): DETR's object queries and YOLOS's detection tokens on a small ViT.

Both detectors answer with a fixed set of ``Q`` predictions per image, each a class (one of the shapes or "no
object") and a box ``(cx, cy, w, h)`` as fractions of the image side. Training pairs predictions with objects by
Hungarian matching on DETR's cost (Carion et al., 2020), then scores the pairs with cross-entropy, L1 and GIoU.

* :class:`DETR`: a ViT encoder, then a small decoder in which ``Q`` learned object queries attend to each other
  and, by cross-attention, to the patch tokens;
* :class:`YOLOS`: ``Q`` detection tokens appended to a plain ViT's sequence, with their own position embeddings,
  and no decoder (Fang et al., 2021).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from scipy.optimize import linear_sum_assignment
from torch import nn
from torchvision.ops import box_convert, box_iou, generalized_box_iou

from vit_edu._checks import check_ndim, check_positive_int
from vit_edu.attention import MultiHeadSelfAttention
from vit_edu.block import MLP
from vit_edu.config import ViTConfig
from vit_edu.data import CLASS_NAMES
from vit_edu.model import VisionTransformer

NUM_CLASSES = len(CLASS_NAMES)
NO_OBJECT = NUM_CLASSES  # the extra class index: "this query found nothing"
MATCHERS = ("hungarian", "fixed")


@dataclass(frozen=True)
class CostWeights:
    """DETR's weights, used both in the matching cost and in the loss: class 1, box L1 5, GIoU 2; and the
    "no object" class's weight 0.1 in the cross-entropy, so the many empty queries do not drown the few matched."""

    cls: float = 1.0
    l1: float = 5.0
    giou: float = 2.0
    no_object: float = 0.1


# ---------------------------------------------------------------- boxes and matching

def to_cxcywh(boxes: torch.Tensor, image_size: int) -> torch.Tensor:
    """``(M, 4)`` pixel boxes ``(x0, y0, x1, y1)`` -> ``(M, 4)`` ``(cx, cy, w, h)`` as fractions of the image side."""
    check_ndim("boxes", boxes, 2, "(M, 4)")
    return box_convert(boxes / image_size, "xyxy", "cxcywh")


def to_xyxy(boxes: torch.Tensor, image_size: int) -> torch.Tensor:
    """``(..., 4)`` normalised ``(cx, cy, w, h)`` -> pixel ``(x0, y0, x1, y1)``, as the metric and the plots take."""
    return box_convert(boxes, "cxcywh", "xyxy") * image_size


def match_cost(logits: torch.Tensor, boxes: torch.Tensor, labels: torch.Tensor, targets: torch.Tensor,
               weights: CostWeights = CostWeights()) -> torch.Tensor:
    """DETR's matching cost ``(Q, M)`` between Q predictions and M objects:
    −p(object's class) + λ_L1·L1 − λ_giou·GIoU.

    ``logits`` ``(Q, K+1)``, ``boxes`` ``(Q, 4)`` normalised cxcywh, ``labels`` ``(M,)``, ``targets`` ``(M, 4)`` cxcywh.
    """
    check_ndim("logits", logits, 2, "(Q, K+1)")
    check_ndim("boxes", boxes, 2, "(Q, 4)")
    if len(labels) != len(targets):
        raise ValueError(f"labels has {len(labels)} objects but targets has {len(targets)}")
    prob = logits.softmax(-1)[:, labels]  # (Q, M): each query's probability of each object's class
    l1 = torch.cdist(boxes, targets, p=1)  # (Q, M)
    giou = generalized_box_iou(box_convert(boxes, "cxcywh", "xyxy"), box_convert(targets, "cxcywh", "xyxy"))
    return -weights.cls * prob + weights.l1 * l1 - weights.giou * giou  # (Q, M)


def hungarian_match(cost: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The one-to-one pairing of rows (queries) and columns (objects) with the least total cost.

    ``cost`` ``(Q, M)`` with ``Q >= M``; returns the matched query indices and object indices, ``(M,)`` each,
    ordered by object. Every object gets exactly one query; the other ``Q - M`` queries get "no object".
    """
    check_ndim("cost", cost, 2, "(Q, M)")
    if cost.shape[0] < cost.shape[1]:
        raise ValueError(f"need at least as many queries as objects, got {cost.shape[0]} queries and "
                         f"{cost.shape[1]} objects")
    rows, cols = linear_sum_assignment(cost.detach().cpu().numpy())
    order = cols.argsort()
    return torch.as_tensor(rows[order], dtype=torch.long), torch.as_tensor(cols[order], dtype=torch.long)


def fixed_match(num_queries: int, num_objects: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The control: query j is paired with the j-th listed object, whatever either looks like."""
    if num_queries < num_objects:
        raise ValueError(f"need at least as many queries as objects, got {num_queries} queries and "
                         f"{num_objects} objects")
    index = torch.arange(num_objects)
    return index, index


# ---------------------------------------------------------------- the models

class CrossAttention(nn.Module):
    """Queries ``(B, Q, D)`` attend to memory tokens ``(B, N, D)``: Q from the queries, K and V from the memory.

    The same arithmetic as self-attention, only the keys and values come from another sequence. With
    ``need_weights`` the weights are computed step by step and returned (B, h, Q, N); otherwise the fused kernel runs.
    """

    def __init__(self, dim: int, num_heads: int) -> None:
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"dim {dim} is not divisible by num_heads {num_heads}")
        self.num_heads, self.head_dim = num_heads, dim // num_heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.proj = nn.Linear(dim, dim)
        for layer in (self.q, self.kv):
            nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)
        nn.init.zeros_(self.proj.bias)

    def forward(self, queries: torch.Tensor, memory: torch.Tensor, *,
                need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(B, Q, D)``, ``(B, N, D)`` -> ``((B, Q, D), weights (B, h, Q, N) or None)``."""
        check_ndim("queries", queries, 3, "(B, Q, D)")
        check_ndim("memory", memory, 3, "(B, N, D)")
        b, nq, d = queries.shape
        n = memory.shape[1]
        q = self.q(queries).reshape(b, nq, self.num_heads, self.head_dim).transpose(1, 2)  # (B, h, Q, d)
        k, v = self.kv(memory).reshape(b, n, 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)  # (B, h, N, d)
        if need_weights:
            weights = (q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)).softmax(-1)  # (B, h, Q, N)
            out = weights @ v  # (B, h, Q, d)
        else:
            weights = None
            out = F.scaled_dot_product_attention(q, k, v)  # (B, h, Q, d)
        return self.proj(out.transpose(1, 2).reshape(b, nq, d)), weights  # (B, Q, D)


class DecoderLayer(nn.Module):
    """Pre-LN: queries attend to each other, then to the patch tokens, then an MLP; each step residual."""

    def __init__(self, dim: int, num_heads: int, mlp_dim: int) -> None:
        super().__init__()
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(dim, eps=1e-6) for _ in range(3))
        self.self_attn = MultiHeadSelfAttention(dim, num_heads)
        self.cross_attn = CrossAttention(dim, num_heads)
        self.mlp = MLP(dim, mlp_dim)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, *,
                need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(B, Q, D)`` queries, ``(B, N, D)`` patch tokens -> ``(B, Q, D)`` and the cross-attention
        ``(B, h, Q, N)``."""
        x = x + self.self_attn(self.norm1(x), need_weights=need_weights)[0]  # (B, Q, D): queries see each other
        attended, weights = self.cross_attn(self.norm2(x), memory, need_weights=need_weights)
        x = x + attended  # (B, Q, D): each query gathers from the patches
        return x + self.mlp(self.norm3(x)), weights


class BoxHead(nn.Module):
    """DETR's heads on ``(B, Q, D)`` tokens: a linear class head over K shapes + "no object", and a 3-layer MLP for the
    box, squashed by a sigmoid into ``(cx, cy, w, h)`` fractions of the image side."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.cls = nn.Linear(dim, NUM_CLASSES + 1)
        self.box = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, 4))

    def forward(self, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"logits": self.cls(tokens), "boxes": self.box(tokens).sigmoid()}  # (B, Q, K+1), (B, Q, 4)


def _backbone(config: ViTConfig) -> VisionTransformer:
    """A ViT without CLS token (``pool="mean"``): detection reads the patch tokens, not a summary."""
    if config.pool != "mean":
        raise ValueError("a detection backbone has no CLS token: give a config with pool='mean', "
                         f"got pool={config.pool!r}")
    return VisionTransformer(config)


class DETR(nn.Module):
    """ViT encoder -> ``decoder_depth`` decoder layers of ``num_queries`` learned object queries -> class and box
    heads."""

    def __init__(self, backbone: ViTConfig, num_queries: int = 8, decoder_depth: int = 2) -> None:
        super().__init__()
        check_positive_int("num_queries", num_queries)
        check_positive_int("decoder_depth", decoder_depth)
        self.backbone = _backbone(backbone)
        dim = backbone.embed_dim
        self.queries = nn.Parameter(torch.randn(1, num_queries, dim) * 0.02)  # (1, Q, D): learned, one per slot
        self.decoder = nn.ModuleList(DecoderLayer(dim, backbone.num_heads, backbone.mlp_dim)
                                     for _ in range(decoder_depth))
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = BoxHead(dim)

    def forward(self, images: torch.Tensor, *, need_weights: bool = False) -> dict[str, torch.Tensor]:
        """``(B, C, H, W)`` -> ``logits (B, Q, K+1)``, ``boxes (B, Q, 4)``; with ``need_weights`` also ``attention``:
        the last decoder layer's cross-attention averaged over heads, ``(B, Q, N)``."""
        memory = self.backbone.forward_features(images)  # (B, N, D)
        x = self.queries.expand(len(images), -1, -1)  # (B, Q, D)
        for layer in self.decoder:
            x, weights = layer(x, memory, need_weights=need_weights)
        out = self.head(self.norm(x))
        if need_weights:
            out["attention"] = weights.mean(1)  # (B, Q, N)
        return out


class YOLOS(nn.Module):
    """A plain ViT whose sequence gets ``num_queries`` learned detection tokens appended (each with its own learned
    position embedding); the heads read those tokens after the last block. No decoder."""

    def __init__(self, backbone: ViTConfig, num_queries: int = 8) -> None:
        super().__init__()
        check_positive_int("num_queries", num_queries)
        self.backbone = _backbone(backbone)
        dim = backbone.embed_dim
        self.det_tokens = nn.Parameter(torch.randn(1, num_queries, dim) * 0.02)  # (1, Q, D)
        self.det_pos_embed = nn.Parameter(torch.randn(1, num_queries, dim) * 0.02)  # (1, Q, D)
        self.head = BoxHead(dim)

    def forward(self, images: torch.Tensor, *, need_weights: bool = False) -> dict[str, torch.Tensor]:
        """As :meth:`DETR.forward`; ``attention`` is the last block's attention from the detection tokens to the patch
        tokens, averaged over heads, ``(B, Q, N)`` (its rows also give weight to the detection tokens, so they sum to
        less than 1)."""
        patches = self.backbone.embed(images)  # (B, N, D): no CLS token
        b, n, _ = patches.shape
        det = (self.det_tokens + self.det_pos_embed).expand(b, -1, -1)  # (B, Q, D)
        x = torch.cat([patches, det], dim=1)  # (B, N+Q, D)
        for block in self.backbone.blocks:
            x, weights = block(x, need_weights=need_weights)
        out = self.head(self.backbone.norm(x)[:, n:])  # heads on the Q detection tokens
        if need_weights:
            out["attention"] = weights.mean(1)[:, n:, :n]  # (B, Q, N)
        return out


# ---------------------------------------------------------------- the loss

def match(outputs: dict[str, torch.Tensor], labels: list[torch.Tensor], boxes: list[torch.Tensor],
          matcher: str = "hungarian", weights: CostWeights = CostWeights()) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """For each image, (query indices, object indices) paired by ``matcher``: "hungarian" or "fixed"."""
    if matcher not in MATCHERS:
        raise ValueError(f"matcher must be one of {MATCHERS}, got {matcher!r}")
    num_queries = outputs["logits"].shape[1]
    if matcher == "fixed":
        return [fixed_match(num_queries, len(c)) for c in labels]
    with torch.no_grad():
        return [hungarian_match(match_cost(lo, bo, c, t, weights))
                for lo, bo, c, t in zip(outputs["logits"], outputs["boxes"], labels, boxes)]


def set_loss(outputs: dict[str, torch.Tensor], labels: list[torch.Tensor], boxes: list[torch.Tensor],
             matcher: str = "hungarian", weights: CostWeights = CostWeights()) -> dict[str, torch.Tensor]:
    """DETR's loss: match, then cross-entropy over all queries (unmatched ones aim at "no object", weighted
    ``weights.no_object``), and L1 + (1 − GIoU) over the matched pairs, each averaged per object.

    ``labels[i]`` ``(M_i,)`` and ``boxes[i]`` ``(M_i, 4)`` normalised cxcywh are image i's objects. Returns the
    weighted ``total`` and its three parts.
    """
    logits, pred = outputs["logits"], outputs["boxes"]  # (B, Q, K+1), (B, Q, 4)
    if len(labels) != len(logits) or len(boxes) != len(logits):
        raise ValueError(f"{len(logits)} images of predictions but {len(labels)} label and {len(boxes)} box lists")
    pairs = match(outputs, labels, boxes, matcher, weights)
    target_class = torch.full(logits.shape[:2], NO_OBJECT, dtype=torch.long)  # (B, Q)
    for i, (q, j) in enumerate(pairs):
        target_class[i, q] = labels[i][j]
    class_weight = torch.ones(NUM_CLASSES + 1)
    class_weight[NO_OBJECT] = weights.no_object
    ce = F.cross_entropy(logits.transpose(1, 2), target_class, weight=class_weight)
    matched = torch.cat([pred[i, q] for i, (q, _) in enumerate(pairs)])  # (ΣM, 4)
    wanted = torch.cat([boxes[i][j] for i, (_, j) in enumerate(pairs)])  # (ΣM, 4)
    count = max(len(wanted), 1)
    l1 = F.l1_loss(matched, wanted, reduction="sum") / count
    giou = torch.diag(generalized_box_iou(box_convert(matched, "cxcywh", "xyxy"),
                                          box_convert(wanted, "cxcywh", "xyxy")))
    giou_loss = (1 - giou).sum() / count
    total = weights.cls * ce + weights.l1 * l1 + weights.giou * giou_loss
    return {"total": total, "class": ce, "l1": l1, "giou": giou_loss}


# ---------------------------------------------------------------- predictions and what they contain

@torch.no_grad()
def predict(model: nn.Module, images: torch.Tensor, batch_size: int = 250) -> dict[str, torch.Tensor]:
    """Every query's answer on ``images`` ``(n, C, H, W)``: ``scores`` and ``labels`` ``(n, Q)`` (the best real class
    and its probability) and ``boxes`` ``(n, Q, 4)`` in pixels, xyxy; and ``no_object`` ``(n, Q)``, p("no object")."""
    check_ndim("images", images, 4, "(n, C, H, W)")
    was_training = model.training
    model.eval()
    parts = [model(images[s : s + batch_size]) for s in range(0, len(images), batch_size)]
    model.train(was_training)
    prob = torch.cat([p["logits"] for p in parts]).softmax(-1)  # (n, Q, K+1)
    scores, labels = prob[..., :NO_OBJECT].max(-1)
    boxes = to_xyxy(torch.cat([p["boxes"] for p in parts]), images.shape[-1])
    return {"scores": scores, "labels": labels, "boxes": boxes, "no_object": prob[..., NO_OBJECT]}


def as_detections(predictions: dict[str, torch.Tensor]) -> list[dict[str, torch.Tensor]]:
    """One ``{"boxes", "scores", "labels"}`` dict per image, as torchmetrics' ``MeanAveragePrecision`` takes."""
    return [{"boxes": b, "scores": s, "labels": c}
            for b, s, c in zip(predictions["boxes"], predictions["scores"], predictions["labels"])]


def average_precision(predictions: dict[str, torch.Tensor], targets: list[dict[str, torch.Tensor]]) -> dict[str, float]:
    """COCO's mAP (IoU 0.50:0.95) and AP@0.5 by torchmetrics with the pycocotools backend; every query's box counts,
    ranked by its score (DETR has no non-maximum suppression)."""
    from torchmetrics.detection import MeanAveragePrecision

    metric = MeanAveragePrecision(box_format="xyxy", iou_type="bbox", backend="pycocotools")
    metric.update(as_detections(predictions), targets)
    result = metric.compute()
    return {"map": float(result["map"]), "map_50": float(result["map_50"])}


def count_duplicates(predictions: dict[str, torch.Tensor], targets: list[dict[str, torch.Tensor]],
                     threshold: float = 0.5, iou: float = 0.5) -> dict[str, int]:
    """Duplicates: for each object, the confident predictions (score > ``threshold``) of its class that overlap it with
    IoU > ``iou``, beyond the first. Returns the number of objects, of objects found at least once, and of
    duplicates."""
    if not (0 < threshold < 1 and 0 < iou < 1):
        raise ValueError(f"threshold and iou must lie in (0, 1), got threshold={threshold}, iou={iou}")
    objects = found = duplicates = 0
    for boxes, scores, labels, target in zip(predictions["boxes"], predictions["scores"], predictions["labels"],
                                             targets):
        if len(target["labels"]) == 0:
            continue
        confident = scores > threshold  # (Q,)
        hits = ((box_iou(target["boxes"], boxes) > iou) & (target["labels"][:, None] == labels[None, :])
                & confident[None, :]).sum(1)  # (M,): confident, same-class, overlapping predictions per object
        objects += len(hits)
        found += int((hits > 0).sum())
        duplicates += int((hits - 1).clamp(min=0).sum())
    return {"objects": objects, "found": found, "duplicates": duplicates}
