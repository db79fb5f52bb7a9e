"""Batch augmentations for training: random crop with flip, torchvision's RandAugment, and its CutMix / MixUp."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from vit_edu.training.config import TrainConfig


def crop_flip(x: torch.Tensor, generator: torch.Generator | None = None, padding: int = 4) -> torch.Tensor:
    """Random crop after edge padding + random horizontal flip, one draw per image: ``(B, C, H, W)`` -> same.

    The batch version of torchvision's ``RandomCrop(H, padding=4, padding_mode="edge")`` + ``RandomHorizontalFlip``.
    """
    if x.ndim != 4:
        raise ValueError(f"expected images (B, C, H, W), got shape {tuple(x.shape)}")
    if padding < 0:
        raise ValueError(f"padding must be >= 0, got {padding}")
    b, _, h, w = x.shape
    padded = nn.functional.pad(x, (padding,) * 4, mode="replicate")  # (B, C, H+2p, W+2p)
    dy = torch.randint(0, 2 * padding + 1, (b,), generator=generator)
    dx = torch.randint(0, 2 * padding + 1, (b,), generator=generator)
    flip = torch.rand(b, generator=generator) < 0.5
    rows = dy[:, None] + torch.arange(h)  # (B, H)
    cols = dx[:, None] + torch.arange(w)  # (B, W)
    cols = torch.where(flip[:, None], cols.flip(1), cols)
    out = padded[torch.arange(b)[:, None, None], :, rows[:, :, None], cols[:, None, :]]  # (B, H, W, C)
    return out.permute(0, 3, 1, 2).contiguous()


def rand_augment(x: torch.Tensor, num_ops: int = 2, magnitude: int = 9) -> torch.Tensor:
    """torchvision's ``RandAugment(num_ops, magnitude)`` drawn afresh for each image of ``(B, C, H, W)`` in [0, 1].

    Seed 003's setting (2 operations at magnitude 9 of 31), applied as torchvision intends: on uint8 pixels, so
    posterize, solarize and equalize see 8-bit values; the result comes back as floats in [0, 1].
    """
    if x.ndim != 4:
        raise ValueError(f"expected images (B, C, H, W), got shape {tuple(x.shape)}")
    from torchvision.transforms import v2  # here, not at the top: torchvision takes seconds to import

    augment = v2.RandAugment(num_ops=num_ops, magnitude=magnitude)
    pixels = (x.clamp(0, 1) * 255).round().to(torch.uint8)  # (B, C, H, W) uint8
    return torch.stack([augment(image) for image in pixels]).float() / 255


def make_mixer(cfg: TrainConfig, num_classes: int) -> Callable | None:
    """The batch-level CutMix / MixUp transform from ``torchvision.transforms.v2``, or None."""
    if cfg.mix == "none":
        return None
    from torchvision.transforms import v2  # here, not at the top: torchvision takes seconds to import

    options = {"cutmix": [v2.CutMix(num_classes=num_classes)], "mixup": [v2.MixUp(num_classes=num_classes)],
               "both": [v2.CutMix(num_classes=num_classes), v2.MixUp(num_classes=num_classes)]}[cfg.mix]
    return options[0] if len(options) == 1 else v2.RandomChoice(options)
