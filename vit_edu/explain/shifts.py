"""Translation equivariance (平移等变性) of feature maps and invariance of predictions, measured under shifts.

Equivariance: shifting the input shifts the feature map by the same amount, ``f(shift x) = shift(f x)``.
Invariance: the prediction does not change, ``g(shift x) = g(x)``. A convolution is equivariant by construction
(up to its borders); neither property is built into a ViT. Shifts here are circular (``torch.roll``), so no
pixel is invented; what leaves one side re-enters on the other.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from vit_edu._checks import check_ndim
from vit_edu.explain.receptive_field import FeatureFn


def shift_images(images: torch.Tensor, pixels: int) -> torch.Tensor:
    """``(B, C, H, W)`` images moved ``pixels`` to the right, circularly."""
    check_ndim("images", images, 4, "(B, C, H, W)")
    if isinstance(pixels, bool) or not isinstance(pixels, int) or not 0 <= pixels < images.shape[-1]:
        raise ValueError(f"pixels must be an integer in [0, {images.shape[-1]}), got {pixels!r}")
    return images.roll(pixels, dims=-1)


def shift_features(features: torch.Tensor, positions: float) -> tuple[torch.Tensor, int]:
    """``(B, D, h, w)`` moved right by ``positions`` map columns, a fraction interpolated linearly between columns.

    Returns the shifted map's columns that are defined, ``[first:]``, and ``first``: a shift of ``k + t`` columns
    (whole ``k``, fraction ``t``) takes column ``j`` from ``(1 − t)·f[j − k] + t·f[j − k − 1]``.
    """
    check_ndim("features", features, 4, "(B, D, h, w)")
    w = features.shape[-1]
    if not 0 <= positions < w - 1:
        raise ValueError(f"positions must be in [0, {w - 1}) for a map {w} columns wide, got {positions}")
    k = int(positions)
    t = positions - k
    first = k + (1 if t > 0 else 0)
    cols = torch.arange(first, w)
    shifted = (1 - t) * features[..., cols - k]
    if t > 0:
        shifted = shifted + t * features[..., cols - k - 1]
    return shifted, first  # (B, D, h, w - first)


def equivariance_error(features: FeatureFn, images: torch.Tensor, pixels: int) -> list[float]:
    """Per feature map: mean over images of ‖f(shift x) − shift(f x)‖ / ‖shift(f x)‖ on the columns both cover.

    A map with stride ``s`` (``W / w`` pixels per position, rounded) moves ``pixels / s`` positions; see
    :func:`shift_features`.
    """
    check_ndim("images", images, 4, "(B, C, H, W)")
    with torch.no_grad():
        plain, moved = features(images), features(shift_images(images, pixels))
    errors = []
    for f, g in zip(plain, moved, strict=True):
        stride = round(images.shape[-1] / f.shape[-1])  # pixels per map position (an unpadded conv: 1)
        reference, first = shift_features(f, pixels / stride)  # (B, D, h, w - first)
        diff = (g[..., first:] - reference).flatten(1).norm(dim=1)
        errors.append((diff / reference.flatten(1).norm(dim=1).clamp_min(1e-12)).mean().item())
    return errors


def prediction_changes(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, pixels: int) -> dict[str, float]:
    """Under a shift of ``pixels``: the share of predictions that change, and the mean |change| of the true class's probability."""
    check_ndim("images", images, 4, "(B, C, H, W)")
    if labels.shape != images.shape[:1]:
        raise ValueError(f"labels must have shape ({images.shape[0]},), got {tuple(labels.shape)}")
    with torch.no_grad():
        p = model(images).softmax(-1)  # (B, K)
        q = model(shift_images(images, pixels)).softmax(-1)
    true = labels[:, None]
    return {"flipped": (p.argmax(-1) != q.argmax(-1)).float().mean().item(),
            "true_prob_change": (q.gather(1, true) - p.gather(1, true)).abs().mean().item()}


def with_circular_padding(model: nn.Module) -> nn.Module:
    """A copy of ``model`` whose convolutions pad circularly instead of with zeros; the weights are the same.

    A control for :func:`equivariance_error`: with circular padding and a circular shift, no image border is left,
    so whatever error remains comes from strides and pooling, not from the padding.
    """
    twin = copy.deepcopy(model)
    convs = [m for m in twin.modules() if isinstance(m, nn.Conv2d)]
    if not convs:
        raise ValueError(f"{type(model).__name__} has no Conv2d layer to pad circularly")
    for conv in convs:
        conv.padding_mode = "circular"
    return twin


def shift_report(model: nn.Module, features: FeatureFn, images: torch.Tensor, labels: torch.Tensor,
                 shifts: tuple[int, ...] = (1, 8)) -> dict[str, dict]:
    """For each shift: the per-map equivariance errors and the prediction changes, keyed by ``"<n> px"``."""
    return {f"{s} px": {"equivariance_error": equivariance_error(features, images, s),
                        **prediction_changes(model, images, labels, s)} for s in shifts}
