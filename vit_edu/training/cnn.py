"""A small convolutional baseline, sized to match a ViT's parameter count, for the inductive-bias comparison."""

from __future__ import annotations

import torch
from torch import nn

from vit_edu._checks import check_ndim, check_positive_int
from vit_edu.config import ViTConfig
from vit_edu.model import VisionTransformer


def _conv(c_in: int, c_out: int) -> list[nn.Module]:
    return [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True)]


class SmallCNN(nn.Module):
    """Five 3×3 conv layers (widths w, w, 2w, 2w, 4w) with two 2× max-poolings, global average pool, linear head.

    Locality (3×3 kernels) and translation equivariance (shared kernels) are built in: the inductive biases
    a ViT has to learn from data.
    """

    def __init__(self, num_classes: int, width: int = 32, in_channels: int = 3) -> None:
        super().__init__()
        check_positive_int("num_classes", num_classes)
        w = check_positive_int("width", width)
        self.features = nn.Sequential(
            *_conv(in_channels, w), *_conv(w, w), nn.MaxPool2d(2),
            *_conv(w, 2 * w), *_conv(2 * w, 2 * w), nn.MaxPool2d(2),
            *_conv(2 * w, 4 * w), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.head = nn.Linear(4 * w, num_classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        check_ndim("images", images, 4, "(B, C, H, W)")
        return self.head(self.features(images))  # (B, K)


def matching_cnn(num_parameters: int, num_classes: int) -> SmallCNN:
    """The :class:`SmallCNN` whose parameter count is closest to ``num_parameters``."""
    check_positive_int("num_parameters", num_parameters)

    def count(width: int) -> int:
        return sum(p.numel() for p in SmallCNN(num_classes, width).parameters())

    best = min(range(4, 257), key=lambda w: abs(count(w) - num_parameters))
    return SmallCNN(num_classes, best)


def seeded_model(model_cfg: ViTConfig, seed: int, kind: str = "ViT") -> nn.Module:
    """The ViT of ``model_cfg`` or (``kind="CNN"``) the :class:`SmallCNN` matched to its parameter count, each drawn
    right after ``torch.manual_seed(seed)`` as chapter 9's bench draws them: same seed, same initial weights."""
    if kind not in ("ViT", "CNN"):
        raise ValueError(f"kind must be 'ViT' or 'CNN', got {kind!r}")
    torch.manual_seed(seed)
    vit = VisionTransformer(model_cfg)
    if kind == "ViT":
        return vit
    torch.manual_seed(seed)
    return matching_cnn(sum(p.numel() for p in vit.parameters()), model_cfg.num_classes)
