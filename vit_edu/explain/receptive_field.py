"""Effective receptive fields from input gradients, and how much attention's mixing weights change per image.

A CNN's *theoretical* receptive field (感受野) is fixed by its kernels: a 3×3 conv sees 3×3 pixels, two of them
5×5, and so on. Which pixels an output actually depends on is measured here as in Luo et al. (2016): take one
output position near the centre of a feature map, back-propagate 1 from each of its channels, and read the
gradient's size at every input pixel. A ViT has no kernel; this measures its blocks the same way.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from vit_edu._checks import check_ndim
from vit_edu.model import VisionTransformer

FeatureFn = Callable[[torch.Tensor], list[torch.Tensor]]  # (B, C, H, W) images -> feature maps L × (B, D, h, w)


def vit_block_outputs(model: VisionTransformer, images: torch.Tensor) -> list[torch.Tensor]:
    """The patch tokens as maps ``(B, D, gh, gw)``: entering block 1 (patch + position embedding), then after each block.

    The CLS token, which has no place on the grid, is left out.
    """
    check_ndim("images", images, 4, "(B, C, H, W)")
    captured: list[torch.Tensor] = []
    hook = model.pos_embed.register_forward_hook(lambda _m, _i, out: captured.append(out))
    try:
        hidden, _ = model.forward_layers(images)  # L × (B, S, D)
    finally:
        hook.remove()
    gh, gw = model.config.grid_size
    skip = 1 if model.cls_token is not None else 0
    tokens = [captured[0]] + hidden
    return [t[:, skip:].transpose(1, 2).reshape(t.shape[0], -1, gh, gw) for t in tokens]  # (B, D, gh, gw) each


def cnn_stage_outputs(cnn: nn.Module, images: torch.Tensor) -> list[torch.Tensor]:
    """The feature maps ``(B, C, h, w)`` after each ReLU of ``cnn.features`` (one per conv stage of a SmallCNN)."""
    check_ndim("images", images, 4, "(B, C, H, W)")
    outputs, x = [], images
    for layer in cnn.features:
        x = layer(x)
        if isinstance(layer, nn.ReLU):
            outputs.append(x)
    if not outputs:
        raise ValueError(f"{type(cnn).__name__}.features has no ReLU, so it has no conv stages to measure")
    return outputs


def input_gradient_maps(features: FeatureFn, images: torch.Tensor, layer: int) -> torch.Tensor:
    """``(B, H, W)``: the size of d(central output of ``layer``)/d(pixel), summed over colour channels.

    The central output is the position ``(h // 2, w // 2)`` of the layer's ``(B, D, h, w)`` map, all its channels
    summed; each image's gradient is its own, since images in a batch do not interact in evaluation mode.
    """
    check_ndim("images", images, 4, "(B, C, H, W)")
    x = images.detach().clone().requires_grad_(True)
    maps = features(x)
    if not -len(maps) <= layer < len(maps):
        raise ValueError(f"layer {layer} is out of range for {len(maps)} feature maps")
    out = maps[layer]
    check_ndim(f"feature map {layer}", out, 4, "(B, D, h, w)")
    h, w = out.shape[-2:]
    (grad,) = torch.autograd.grad(out[:, :, h // 2, w // 2].sum(), x)  # (B, C, H, W)
    return grad.abs().sum(dim=1)  # (B, H, W)


def unit_centre(image_size: tuple[int, int], map_size: tuple[int, int]) -> tuple[float, float]:
    """Pixel coordinates (row, column) of the centre of the footprint of map position ``(h // 2, w // 2)``."""
    (height, width), (h, w) = image_size, map_size
    return (h // 2 + 0.5) * height / h - 0.5, (w // 2 + 0.5) * width / w - 0.5


def receptive_field_stats(grad_maps: torch.Tensor, centre: tuple[float, float], threshold: float = 0.01,
                          mass: float = 0.9) -> dict[str, float]:
    """Mean over images of two sizes of an input-gradient map ``(B, H, W)``.

    ``share``: the fraction of pixels whose gradient exceeds ``threshold`` × that image's largest; ``radius``: the
    smallest distance in pixels from ``centre`` within which ``mass`` of the image's gradient lies.
    """
    check_ndim("grad_maps", grad_maps, 3, "(B, H, W)")
    if not 0 <= threshold < 1:
        raise ValueError(f"threshold must be in [0, 1), got {threshold}")
    if not 0 < mass <= 1:
        raise ValueError(f"mass must be in (0, 1], got {mass}")
    b, height, width = grad_maps.shape
    peak = grad_maps.flatten(1).amax(dim=1)  # (B,)
    if not (peak > 0).all():
        raise ValueError(f"images {(peak <= 0).nonzero().flatten().tolist()} have an all-zero gradient map")
    share = (grad_maps > threshold * peak[:, None, None]).float().mean(dim=(1, 2))  # (B,)
    rows = torch.arange(height, dtype=torch.float64)[:, None] - centre[0]
    cols = torch.arange(width, dtype=torch.float64)[None, :] - centre[1]
    distance = (rows**2 + cols**2).sqrt().flatten()  # (H·W,)
    order = distance.argsort()
    cumulative = grad_maps.double().flatten(1)[:, order].cumsum(dim=1)  # (B, H·W), nearest pixels first
    cumulative = cumulative / cumulative[:, -1:]
    first = (cumulative >= mass - 1e-12).float().argmax(dim=1)  # (B,) index of the pixel that reaches the mass
    radius = distance[order][first]
    return {"share": share.mean().item(), "radius": radius.mean().item()}


def effective_receptive_field(features: FeatureFn, images: torch.Tensor, threshold: float = 0.01,
                              mass: float = 0.9) -> list[dict[str, float]]:
    """For every feature map of ``features``: :func:`receptive_field_stats` of its central output's gradient."""
    check_ndim("images", images, 4, "(B, C, H, W)")
    with torch.no_grad():
        sizes = [m.shape[-2:] for m in features(images[:1])]
    out = []
    for layer, size in enumerate(sizes):
        grads = input_gradient_maps(features, images, layer)  # (B, H, W)
        centre = unit_centre(tuple(images.shape[-2:]), tuple(size))
        out.append(receptive_field_stats(grads, centre, threshold, mass))
    return out


def mean_total_variation(rows: torch.Tensor) -> float:
    """Mean total-variation distance ½·Σ|p − q| over all pairs of rows of ``(B, K)`` probability vectors.

    0 when every row is the same; 1 when no two rows share any weight.
    """
    check_ndim("rows", rows, 2, "(B, K)")
    if rows.shape[0] < 2:
        raise ValueError(f"need at least 2 rows to compare, got {rows.shape[0]}")
    sums = rows.sum(dim=1)
    if (rows < 0).any() or not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
        raise ValueError(f"rows must be non-negative and sum to 1, got sums {sums.min().item():.4g}…{sums.max().item():.4g}")
    pairwise = 0.5 * (rows[:, None, :] - rows[None, :, :]).abs().sum(dim=-1)  # (B, B)
    b = rows.shape[0]
    return (pairwise.sum() / (b * (b - 1))).item()


def attention_row_variation(model: VisionTransformer, images: torch.Tensor, query: int | None = None) -> list[float]:
    """Per block: :func:`mean_total_variation` of one query token's attention row (mean over heads) across images.

    ``query`` indexes the token sequence (CLS included); by default the patch at the grid's centre ``(gh//2, gw//2)``.
    """
    check_ndim("images", images, 4, "(B, C, H, W)")
    gh, gw = model.config.grid_size
    skip = 1 if model.cls_token is not None else 0
    query = skip + (gh // 2) * gw + gw // 2 if query is None else query
    seq = skip + gh * gw
    if not 0 <= query < seq:
        raise ValueError(f"query {query} is out of range for {seq} tokens")
    with torch.no_grad():
        _, attentions = model.forward_layers(images)  # L × (B, h, S, S)
    return [mean_total_variation(a[:, :, query].mean(dim=1)) for a in attentions]  # row over keys, (B, S)
