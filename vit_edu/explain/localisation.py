"""Does a map point at the object? Object share per patch, attention mass on it against a uniform baseline,
and occlusion sensitivity (what covering each patch costs the prediction).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from vit_edu._checks import check_ndim, check_positive_int


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
