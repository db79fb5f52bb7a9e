"""Translation equivariance (平移等变性) of feature maps and invariance of predictions, measured under shifts.

Equivariance: shifting the input shifts the feature map by the same amount, ``f(shift x) = shift(f x)``.
Invariance: the prediction does not change, ``g(shift x) = g(x)``. A convolution is equivariant by construction
(up to its borders, strides and pooling); neither property is built into a ViT.

Two kinds of shift, chosen with ``mode``:

* ``"circular"`` (``torch.roll``): what leaves one side re-enters on the other. By a whole patch this only
  reorders a ViT's patch tokens, and for a zero-padded CNN it puts a seam into the image (the right edge now
  touches the left one): a transformation that favours the ViT by construction.
* ``"translation"``: an ordinary move. What leaves the image on the right is lost, and the new columns on the
  left repeat the image's first column (edge fill, as ``F.pad(mode="replicate")``). Edge fill needs no knowledge
  of the image (no mask, no background model), and on the shapes task, whose objects keep clear of the border,
  it continues the smooth background at that edge. The new strip is still content neither model trained on:
  each row is one colour, without the background's pixel noise.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from vit_edu._checks import check_ndim
from vit_edu.explain.receptive_field import FeatureFn

SHIFT_MODES = ("circular", "translation")


def shift_images(images: torch.Tensor, pixels: int, mode: str = "circular") -> torch.Tensor:
    """``(B, C, H, W)`` images moved ``pixels`` to the right, circularly or as a translation with edge fill."""
    check_ndim("images", images, 4, "(B, C, H, W)")
    if isinstance(pixels, bool) or not isinstance(pixels, int) or not 0 <= pixels < images.shape[-1]:
        raise ValueError(f"pixels must be an integer in [0, {images.shape[-1]}), got {pixels!r}")
    if mode not in SHIFT_MODES:
        raise ValueError(f"mode must be one of {SHIFT_MODES}, got {mode!r}")
    if mode == "circular":
        return images.roll(pixels, dims=-1)
    moved = torch.empty_like(images)
    moved[..., pixels:] = images[..., : images.shape[-1] - pixels]  # the last `pixels` columns leave the image
    moved[..., :pixels] = images[..., :1]  # edge fill: the first column, repeated
    return moved


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


def map_stride(image_width: int, map_width: int) -> int:
    """Pixels per map position along the width (``W / w``, rounded): 1 for a stride-1 conv, P for patch tokens."""
    return round(image_width / map_width)


def _relative_errors(plain: list[torch.Tensor], candidates: list[torch.Tensor], pixels: int,
                     image_width: int) -> list[float]:
    """Per map: mean over images of ‖candidate − shift(plain)‖ / ‖shift(plain)‖ on the columns the shift defines."""
    errors = []
    for f, g in zip(plain, candidates, strict=True):
        reference, first = shift_features(f, pixels / map_stride(image_width, f.shape[-1]))  # (B, D, h, w - first)
        diff = (g[..., first:] - reference).flatten(1).norm(dim=1)  # (B,)
        errors.append((diff / reference.flatten(1).norm(dim=1).clamp_min(1e-12)).mean().item())
    return errors


def equivariance_error(features: FeatureFn, images: torch.Tensor, pixels: int, mode: str = "circular") -> list[float]:
    """Per feature map: mean over images of ‖f(shift x) − shift(f x)‖ / ‖shift(f x)‖ on the columns both cover.

    A map with stride ``s`` (:func:`map_stride`) moves ``pixels / s`` positions; see :func:`shift_features`. The
    number is an equivariance error only where ``pixels`` is a multiple of ``s``. For a smaller shift the reference
    is an interpolation that is mostly the unshifted map, so the number says how much the features change; read it
    beside :func:`unmoved_error`, the score of a map that did not move at all.
    """
    check_ndim("images", images, 4, "(B, C, H, W)")
    with torch.no_grad():
        plain, moved = features(images), features(shift_images(images, pixels, mode))
    return _relative_errors(plain, moved, pixels, images.shape[-1])


def unmoved_error(features: FeatureFn, images: torch.Tensor, pixels: int) -> list[float]:
    """The control for :func:`equivariance_error`: per map, the score of the *unshifted* ``f(x)`` against the same
    reference ``shift(f x)``, i.e. the error of a feature map that ignored the shift altogether."""
    check_ndim("images", images, 4, "(B, C, H, W)")
    if isinstance(pixels, bool) or not isinstance(pixels, int) or not 0 < pixels < images.shape[-1]:
        raise ValueError(f"pixels must be an integer in [1, {images.shape[-1]}), got {pixels!r}")
    with torch.no_grad():
        plain = features(images)
    return _relative_errors(plain, plain, pixels, images.shape[-1])


def prediction_changes(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, pixels: int,
                       mode: str = "circular") -> dict[str, float]:
    """Under a shift of ``pixels``: the share of predictions that change, and the mean |change| of the true class's probability."""
    check_ndim("images", images, 4, "(B, C, H, W)")
    if labels.shape != images.shape[:1]:
        raise ValueError(f"labels must have shape ({images.shape[0]},), got {tuple(labels.shape)}")
    with torch.no_grad():
        p = model(images).softmax(-1)  # (B, K)
        q = model(shift_images(images, pixels, mode)).softmax(-1)
    true = labels[:, None]
    return {"flipped": (p.argmax(-1) != q.argmax(-1)).float().mean().item(),
            "true_prob_change": (q.gather(1, true) - p.gather(1, true)).abs().mean().item()}


def with_circular_padding(model: nn.Module) -> nn.Module:
    """A copy of ``model`` whose convolutions pad circularly instead of with zeros; the weights are the same.

    A control for :func:`equivariance_error` under circular shifts: with circular padding no image border is left,
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
                 shifts: tuple[int, ...] = (1, 8), mode: str = "circular") -> dict[str, dict]:
    """For each shift: the per-map errors and the prediction changes, keyed by ``"<n> px"``."""
    return {f"{s} px": {"equivariance_error": equivariance_error(features, images, s, mode),
                        **prediction_changes(model, images, labels, s, mode)} for s in shifts}
