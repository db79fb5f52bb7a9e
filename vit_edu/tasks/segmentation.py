"""SETR (Zheng et al., 2021): a plain ViT's patch tokens put back on their grid and decoded to a class per pixel.

The encoder is the book's :class:`~vit_edu.VisionTransformer` unchanged; only the head is new. The final tokens
``(B, 1+N, D)`` lose their CLS token, are laid out as a ``(B, D, H/P, W/P)`` feature map in the order the patch
embedding read them, and one of two heads turns that map into ``(B, K, H, W)`` logits: the naive head (a 1×1
projection to the classes, then bilinear upsampling by P) or the progressive one (PUP: 3×3 convolution and 2×
upsampling, repeated until the map is back at full resolution). Masks are scored with torchmetrics' Jaccard index,
over all pixels or over those near a class boundary and those inside a region.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn
from torchmetrics.classification import MulticlassJaccardIndex

from vit_edu.config import ViTConfig
from vit_edu.data import CLASS_NAMES
from vit_edu.model import VisionTransformer

NUM_CLASSES = len(CLASS_NAMES) + 1  # background + the four shapes, as in ``Scenes.semantic``
SEGMENT_NAMES = ("background", *CLASS_NAMES)  # the semantic map's values 0..4 by name
HEADS = ("naive", "pup")
IGNORE = 255  # the target value torchmetrics skips: pixels outside the region being scored


def tokens_to_grid(tokens: torch.Tensor, grid_size: tuple[int, int], num_prefix_tokens: int = 1) -> torch.Tensor:
    """``(B, prefix+N, D)`` tokens -> ``(B, D, H/P, W/P)``: drop the prefix (CLS) tokens, lay the N patch tokens out
    row by row, as the patch embedding read them, so that token ``i`` lands on row ``i // (W/P)``, column ``i % (W/P)``.
    """
    grid_h, grid_w = grid_size
    if tokens.ndim != 3 or tokens.shape[1] != num_prefix_tokens + grid_h * grid_w:
        raise ValueError(f"tokens of shape {tuple(tokens.shape)} do not hold {num_prefix_tokens} prefix token(s) "
                         f"and a {grid_h}×{grid_w} grid of patch tokens (B, {num_prefix_tokens + grid_h * grid_w}, D)")
    patches = tokens[:, num_prefix_tokens:]  # (B, N, D)
    return patches.transpose(1, 2).reshape(tokens.shape[0], tokens.shape[2], grid_h, grid_w)  # (B, D, H/P, W/P)


class NaiveHead(nn.Module):
    """SETR-Naive, reduced to its core: a 1×1 convolution (the same linear map at every patch) to K class scores,
    then bilinear upsampling by the patch size. Each patch's scores come from its own token only."""

    def __init__(self, dim: int, num_classes: int, patch_size: int) -> None:
        super().__init__()
        self.patch_size = patch_size
        self.classify = nn.Conv2d(dim, num_classes, kernel_size=1)

    def forward(self, grid: torch.Tensor) -> torch.Tensor:
        """``(B, D, h, w)`` -> ``(B, K, h·P, w·P)`` logits."""
        scores = self.classify(grid)  # (B, K, h, w)
        return F.interpolate(scores, scale_factor=self.patch_size, mode="bilinear", align_corners=False)


class ProgressiveHead(nn.Module):
    """SETR-PUP, small: log2(P) stages of 3×3 convolution + ReLU + 2× bilinear upsampling, then a 1×1 convolution to
    K classes at full resolution. Each stage mixes neighbouring positions, so a pixel's score can use nearby tokens."""

    def __init__(self, dim: int, num_classes: int, patch_size: int, channels: int = 32) -> None:
        super().__init__()
        stages = math.log2(patch_size)
        if patch_size < 2 or stages != int(stages):
            raise ValueError(f"the progressive head doubles the map's size per stage: patch_size must be a power of 2 "
                             f"≥ 2, got {patch_size}")
        self.stages = nn.ModuleList(
            nn.Conv2d(dim if i == 0 else channels, channels, kernel_size=3, padding=1) for i in range(int(stages))
        )
        self.classify = nn.Conv2d(channels, num_classes, kernel_size=1)

    def forward(self, grid: torch.Tensor) -> torch.Tensor:
        """``(B, D, h, w)`` -> ``(B, K, h·P, w·P)`` logits, doubling the map's size once per stage."""
        x = grid
        for conv in self.stages:
            x = F.interpolate(F.relu(conv(x)), scale_factor=2, mode="bilinear", align_corners=False)  # (B, c, 2h, 2w)
        return self.classify(x)  # (B, K, H, W)


def make_head(head: str, dim: int, num_classes: int, patch_size: int) -> nn.Module:
    """The head called ``head`` ("naive" or "pup")."""
    if head not in HEADS:
        raise ValueError(f"head must be one of {HEADS}, got {head!r}")
    return NaiveHead(dim, num_classes, patch_size) if head == "naive" else ProgressiveHead(dim, num_classes, patch_size)


class SegmentationViT(nn.Module):
    """A ViT encoder and a SETR head: ``(B, C, H, W)`` images -> ``(B, K, H, W)`` per-pixel class logits."""

    def __init__(self, config: ViTConfig, head: Literal["naive", "pup"] = "naive",
                 num_classes: int = NUM_CLASSES) -> None:
        super().__init__()
        self.config, self.head_name = config, head
        self.encoder = VisionTransformer(config)
        self.encoder.head = nn.Identity()  # the classification head is not used: the tokens go to the SETR head
        self.head = make_head(head, config.embed_dim, num_classes, config.patch_size)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        tokens = self.encoder.forward_features(images)  # (B, 1+N, D)
        grid = tokens_to_grid(tokens, self.config.grid_size, self.config.num_prefix_tokens)  # (B, D, H/P, W/P)
        return self.head(grid)  # (B, K, H, W)


def load_encoder(model: SegmentationViT, classifier: VisionTransformer) -> None:
    """Copy a trained classifier's encoder (everything but its classification head) into ``model``'s encoder.

    The two must share every shape; a mismatch names the parameters, rather than loading part of the weights.
    """
    source = {k: v for k, v in classifier.state_dict().items() if not k.startswith("head.")}
    target = model.encoder.state_dict()
    reshaped = [k for k in source if k in target and source[k].shape != target[k].shape]
    wrong = sorted(set(source) ^ set(target)) + reshaped
    if wrong:
        raise ValueError(f"the classifier's encoder does not fit the segmenter's: {wrong}")
    model.encoder.load_state_dict(source)


def boundary_band(semantic: torch.Tensor, width: int = 1) -> torch.Tensor:
    """``(n, H, W)`` class map -> ``(n, H, W)`` bool: pixels with a pixel of another class within ``width`` pixels
    (in the (2·width+1)² square around them). The picture's own edge is not a boundary."""
    if semantic.ndim != 3:
        raise ValueError(f"semantic must be (n, H, W), got shape {tuple(semantic.shape)}")
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise ValueError(f"width must be a positive integer, got {width!r}")
    k = 2 * width + 1
    padded = F.pad(semantic[:, None].float(), (width,) * 4, mode="replicate")  # (n, 1, H+2w, W+2w)
    high = F.max_pool2d(padded, k, stride=1)  # (n, 1, H, W): the largest class in the square
    low = -F.max_pool2d(-padded, k, stride=1)  # the smallest
    return (high != low)[:, 0]


def jaccard(pred: torch.Tensor, target: torch.Tensor, region: torch.Tensor | None = None) -> torch.Tensor:
    """Per-class IoU ``(K,)`` over every pixel of ``(n, H, W)`` class maps (or only those where ``region`` is True),
    from torchmetrics' :class:`MulticlassJaccardIndex`: each class's intersection and union summed over all images."""
    if pred.shape != target.shape or (region is not None and region.shape != target.shape):
        raise ValueError(f"pred {tuple(pred.shape)}, target {tuple(target.shape)} and region "
                         f"{None if region is None else tuple(region.shape)} must have one shape")
    metric = MulticlassJaccardIndex(num_classes=NUM_CLASSES, average="none", ignore_index=IGNORE)
    scored = target if region is None else torch.where(region, target, torch.full_like(target, IGNORE))
    return metric(pred, scored)


@torch.no_grad()
def predict(model: nn.Module, images: torch.Tensor, batch_size: int = 250) -> torch.Tensor:
    """``(n, C, H, W)`` images -> ``(n, H, W)`` predicted classes, in eval mode, in batches."""
    was_training = model.training
    model.eval()
    out = torch.cat([model(images[i : i + batch_size]).argmax(1) for i in range(0, len(images), batch_size)])
    model.train(was_training)
    return out


def scores(pred: torch.Tensor, semantic: torch.Tensor, width: int = 1) -> dict:
    """mIoU over all pixels, over the boundary band and over the interior (the rest), and the per-class IoU."""
    band = boundary_band(semantic, width)
    per_class = jaccard(pred, semantic)
    return {"miou": per_class.mean().item(), "boundary_miou": jaccard(pred, semantic, band).mean().item(),
            "interior_miou": jaccard(pred, semantic, ~band).mean().item(),
            "per_class": dict(zip(SEGMENT_NAMES, per_class.tolist()))}
