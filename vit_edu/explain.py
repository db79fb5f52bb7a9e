"""Reading a trained ViT: CLS attention, attention rollout, occlusion, localisation scores, position similarity,
the logit lens.

These are measurements, not explanations. Attention weights say how tokens are mixed inside one layer; what the
model does with the mixture (values, MLPs, residual paths) is not in them. The localisation score and occlusion
sensitivity turn "the map looks right" into numbers that can be compared with a baseline.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from vit_edu._checks import check_ndim, check_positive_int
from vit_edu.model import VisionTransformer

HEAD_FUSIONS = ("mean", "max", "min")


def _check_attentions(attentions: list[torch.Tensor]) -> None:
    if not attentions:
        raise ValueError("attentions is empty: pass the list the model returns with return_attention=True")
    shape = attentions[0].shape
    for i, a in enumerate(attentions):
        check_ndim(f"attentions[{i}]", a, 4, "(B, h, S, S)")
        if a.shape != shape or a.shape[-1] != a.shape[-2]:
            raise ValueError(f"attentions[{i}] has shape {tuple(a.shape)}; every layer needs the same (B, h, S, S), "
                             f"layer 0 has {tuple(shape)}")


def cls_attention(attentions: list[torch.Tensor], num_prefix_tokens: int = 1) -> torch.Tensor:
    """How much the CLS query takes from each patch: ``L × (B, h, S, S)`` -> ``(L, B, h, N)``.

    Row 0 of every map, without the prefix columns, so the N numbers sum to slightly less than 1 (the rest
    went to the CLS token itself).
    """
    _check_attentions(attentions)
    if num_prefix_tokens < 1:
        raise ValueError(f"cls_attention needs a CLS token (num_prefix_tokens ≥ 1), got {num_prefix_tokens}; "
                         f"a mean-pooled model has none")
    return torch.stack([a[:, :, 0, num_prefix_tokens:] for a in attentions])  # (L, B, h, N)


def fuse_heads(attention: torch.Tensor, head_fusion: Literal["mean", "max", "min"] = "mean", dim: int = 1) -> torch.Tensor:
    """Combine the heads of an attention map (along ``dim``) by their mean, maximum or minimum."""
    if head_fusion not in HEAD_FUSIONS:
        raise ValueError(f"head_fusion must be one of {HEAD_FUSIONS}, got {head_fusion!r}")
    if head_fusion == "mean":
        return attention.mean(dim)
    return attention.amax(dim) if head_fusion == "max" else attention.amin(dim)


def attention_rollout(
    attentions: list[torch.Tensor],
    head_fusion: Literal["mean", "max", "min"] = "mean",
    discard_ratio: float = 0.0,
) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema, 2020): ``L × (B, h, S, S)`` -> ``(B, S, S)``.

    Per layer: fuse the heads, optionally zero the smallest ``discard_ratio`` of each row's weights (never a
    token's weight on itself), add the identity for the residual path, renormalise every row to sum to 1, and
    multiply the layers in order: ``R = Â_L ⋯ Â_2 Â_1``. ``R[b, i, j]`` estimates how much of input token j
    reaches output token i.
    """
    _check_attentions(attentions)
    if head_fusion not in HEAD_FUSIONS:
        raise ValueError(f"head_fusion must be one of {HEAD_FUSIONS}, got {head_fusion!r}")
    if not 0.0 <= discard_ratio < 1.0:
        raise ValueError(f"discard_ratio must be in [0, 1), got {discard_ratio}")
    b, _, s, _ = attentions[0].shape
    eye = torch.eye(s, dtype=attentions[0].dtype, device=attentions[0].device)
    rollout = eye.expand(b, s, s)
    for a in attentions:
        fused = fuse_heads(a, head_fusion)  # (B, S, S)
        if discard_ratio > 0:
            k = int(discard_ratio * s)
            if k:
                smallest = fused.topk(k, dim=-1, largest=False).indices  # (B, S, k)
                drop = torch.zeros_like(fused, dtype=torch.bool).scatter_(-1, smallest, True) & ~eye.bool()
                fused = fused.masked_fill(drop, 0.0)
        step = fused + eye  # the residual connection carries each token on unchanged
        step = step / step.sum(dim=-1, keepdim=True)  # keepdim: divide each row by its own sum
        rollout = step @ rollout
    return rollout


def object_fraction(masks: torch.Tensor, patch_size: int) -> torch.Tensor:
    """The share of each patch's pixels that belong to the object: ``(B, H, W)`` masks -> ``(B, N)`` in [0, 1]."""
    check_ndim("masks", masks, 3, "(B, H, W)")
    check_positive_int("patch_size", patch_size)
    h, w = masks.shape[-2:]
    if h % patch_size or w % patch_size:
        raise ValueError(f"mask size {h}×{w} is not divisible by patch_size {patch_size}")
    pooled = F.avg_pool2d(masks[:, None].float(), patch_size)  # (B, 1, H/P, W/P)
    return pooled.flatten(1)  # (B, N), row-major like the patch tokens


def localisation_score(weights: torch.Tensor, fraction: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention mass on the object, and what a uniform map would give: ``(B, N)``, ``(B, N)`` -> ``(B,)``, ``(B,)``.

    ``weights`` are renormalised over the patches; a patch counts by the share of it the object covers. The
    baseline is the object's share of the image, so ``mass / baseline`` is 1 for a map that ignores the object.
    """
    check_ndim("weights", weights, 2, "(B, N)")
    if weights.shape != fraction.shape:
        raise ValueError(f"weights {tuple(weights.shape)} and object fractions {tuple(fraction.shape)} must match")
    totals = weights.sum(dim=-1, keepdim=True)  # (B, 1)
    if (totals <= 0).any():
        rows = (totals[:, 0] <= 0).nonzero().flatten().tolist()
        raise ValueError(f"weights of row(s) {rows[:10]} sum to {totals[rows[0], 0].item():g}: a map needs positive mass")
    weights = weights / totals
    return (weights * fraction).sum(-1), fraction.mean(-1)


@torch.no_grad()
def occlusion_sensitivity(
    model: nn.Module, images: torch.Tensor, labels: torch.Tensor, patch_size: int, fill: float | None = None
) -> torch.Tensor:
    """Drop in the true class's probability when each patch is covered: ``(B, C, H, W)`` -> ``(B, N)``.

    Each of the N patches is replaced in turn by ``fill`` (default: the image's own mean colour), one forward
    pass per patch position with the whole batch. Positive = covering the patch hurt the prediction.
    """
    check_ndim("images", images, 4, "(B, C, H, W)")
    check_positive_int("patch_size", patch_size)
    b, c, h, w = images.shape
    if h % patch_size or w % patch_size:
        raise ValueError(f"image size {h}×{w} is not divisible by patch_size {patch_size}")
    if labels.shape != (b,):
        raise ValueError(f"labels must have shape ({b},), got {tuple(labels.shape)}")
    model.eval()
    rows = torch.arange(b)
    base = model(images).softmax(-1)[rows, labels]  # (B,)
    colour = images.mean(dim=(2, 3), keepdim=True) if fill is None else torch.full((b, c, 1, 1), fill)
    drops = []
    for top in range(0, h, patch_size):
        for left in range(0, w, patch_size):
            covered = images.clone()
            covered[:, :, top : top + patch_size, left : left + patch_size] = colour
            drops.append(base - model(covered).softmax(-1)[rows, labels])
    return torch.stack(drops, dim=1)  # (B, N)


def patch_distances(grid_size: tuple[int, int], patch_size: int) -> torch.Tensor:
    """Euclidean distance in pixels between every pair of patch centres: ``(N, N)``."""
    gh, gw = grid_size
    ys, xs = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")
    centres = torch.stack([ys.flatten(), xs.flatten()], dim=1).float() * patch_size  # (N, 2)
    return torch.cdist(centres, centres)


def mean_attention_distance(
    attentions: list[torch.Tensor], grid_size: tuple[int, int], patch_size: int, num_prefix_tokens: int = 1
) -> torch.Tensor:
    """Paper Fig. 7 (right): per layer and head, the attention-weighted pixel distance between query and key
    patches, averaged over query patches and images: ``L × (B, h, S, S)`` -> ``(L, h)``.

    Only patch-to-patch weights count, renormalised over the patch keys (the CLS token has no position).
    """
    _check_attentions(attentions)
    n = grid_size[0] * grid_size[1]
    s = attentions[0].shape[-1]
    if s != n + num_prefix_tokens:
        raise ValueError(f"attention maps have S = {s} tokens, but a {grid_size[0]}×{grid_size[1]} grid plus "
                         f"{num_prefix_tokens} prefix token(s) makes {n + num_prefix_tokens}")
    dist = patch_distances(grid_size, patch_size).to(attentions[0])  # (N, N)
    result = []
    for a in attentions:
        patch = a[:, :, num_prefix_tokens:, num_prefix_tokens:]  # (B, h, N, N)
        patch = patch / patch.sum(dim=-1, keepdim=True)
        result.append((patch * dist).sum(-1).mean(dim=(0, 2)))  # (h,)
    return torch.stack(result)  # (L, h)


def position_similarity(pos_embed: torch.Tensor) -> torch.Tensor:
    """Cosine similarity between the position embeddings of every pair of patches: ``(N, D)`` -> ``(N, N)``.

    Pass the patch rows only (drop the CLS row first). Paper Fig. 7 (centre) draws row i as a grid map.
    """
    check_ndim("pos_embed", pos_embed, 2, "(N, D)")
    unit = F.normalize(pos_embed, dim=-1)
    return unit @ unit.T


def logit_lens(model: VisionTransformer, images: torch.Tensor) -> torch.Tensor:
    """What the final LayerNorm and head would predict after each block: ``(B, C, H, W)`` -> ``(L, B, K)`` logits.

    The "logit lens" (nostalgebraist, 2020) reads the residual stream early, through the model's own readout.
    The last layer's row is the model's output; earlier rows show when the answer becomes readable, which is not
    the same as when it is computed (the readout was trained on the last layer only).
    """
    check_ndim("images", images, 4, "(B, C, H, W)")
    hidden, _ = model.forward_layers(images)  # L × (B, S, D)
    return torch.stack([model.head(model.pool(model.norm(h))) for h in hidden])  # (L, B, K)
