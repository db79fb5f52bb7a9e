"""A small image-classification task that ships with the code: coloured shapes on smooth gradient backgrounds.

Nothing is downloaded. Every image is drawn with vectorised tensor arithmetic from a seeded
``torch.Generator``, so the same seed gives bit-identical images on any machine, and 5000 images of 32×32
take well under a second. Each image holds one light object of a class in :data:`CLASS_NAMES` at a random
position, size, rotation and colour, on a dark, smooth colour gradient with a little pixel noise; optionally
a distractor (a small light blob or a short line, neither of the classes) is drawn behind it. The object's
pixel mask comes with every image, so chapters can ask whether a model (or an attention map) looks at the
object.
"""

from __future__ import annotations

import math

import torch
from torch.utils.data import Dataset

from vit_edu._checks import check_positive_int


CLASS_NAMES: tuple[str, ...] = ("circle", "square", "triangle", "cross")


SPLITS: tuple[str, ...] = ("train", "val", "test")


DEFAULT_SIZES: dict[str, int] = {"train": 5000, "val": 1000, "test": 1000}


MIN_IMAGE_SIZE = 16


# Object half-size r as a fraction of the image side, and the extent of the rotated shapes in units of r.
_RADIUS_RANGE = (0.16, 0.30)


_EXTENT = 1.25  # every class fits in a disc of radius 1.25·r around its centre, at any rotation


_MAX_ROTATION = 0.35  # radians, about ±20°


# Light objects on dark backgrounds: every channel of the object is at least 0.65 - 0.45 = 0.2 brighter than
# the background (before noise). Colours are random, but the contrast always has the same sign, which lets a
# small ViT learn the task in a few hundred steps.
_BACKGROUND_MEAN = (0.15, 0.35)  # per-channel mean colour of the background


_GRADIENT = 0.2  # the background colour changes by at most ±0.1 per channel around its mean


_OBJECT_COLOUR = (0.65, 1.0)  # per-channel colour of the object and of the distractor


_NOISE = 0.03  # standard deviation of the pixel noise


def split_seed(seed: int, split: str) -> int:
    """The generator seed of ``split``: distinct for every ``(seed, split)`` pair with ``seed ≥ 0``."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return len(SPLITS) * seed + SPLITS.index(split) + 1


def _check_args(n: int, image_size: int, seed: int) -> None:
    check_positive_int("n", n)
    if isinstance(image_size, bool) or not isinstance(image_size, int) or image_size < MIN_IMAGE_SIZE:
        raise ValueError(f"image_size must be an integer ≥ {MIN_IMAGE_SIZE}, got {image_size!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")


def _uniform(gen: torch.Generator, shape: tuple[int, ...], low: float, high: float) -> torch.Tensor:
    return low + (high - low) * torch.rand(shape, generator=gen)


def _backgrounds(gen: torch.Generator, n: int, size: int) -> torch.Tensor:
    """``(n, 3, size, size)`` dark backgrounds: a linear colour gradient in a random direction around a mean colour.

    Draws three tensors from ``gen`` (mean colour, gradient, direction), so every generator that uses it keeps its
    stream."""
    mean_bg = _uniform(gen, (n, 3), *_BACKGROUND_MEAN)
    delta = _uniform(gen, (n, 3), -_GRADIENT, _GRADIENT)
    direction = _uniform(gen, (n,), 0.0, 2 * math.pi)
    coords = torch.arange(size, dtype=torch.float32) + 0.5  # pixel centres
    ys, xs = coords[None, :, None], coords[None, None, :]  # (1, H, 1), (1, 1, W)
    cos_d, sin_d = torch.cos(direction)[:, None, None], torch.sin(direction)[:, None, None]
    t = ((xs / size - 0.5) * cos_d + (ys / size - 0.5) * sin_d) / math.sqrt(2)  # (n, H, W) in [-0.5, 0.5]
    return mean_bg[:, :, None, None] + delta[:, :, None, None] * t[:, None]  # (n, 3, H, W)


def _shape_masks(labels: torch.Tensor, u: torch.Tensor, v: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """Boolean ``(n, H, W)`` masks; ``u, v`` are the object's own (rotated) coordinates, ``r`` its half-size."""
    au, av = u.abs(), v.abs()
    shapes = (
        u**2 + v**2 <= r**2,  # circle
        torch.maximum(au, av) <= 0.85 * r,  # square, about the circle's area
        (v <= 0.7 * r) & (au <= (v + r) / 1.7),  # triangle, apex up at v = -r, base at v = 0.7 r
        ((au <= 0.3 * r) & (av <= r)) | ((av <= 0.3 * r) & (au <= r)),  # cross, arms 0.6 r wide
    )
    mask = torch.zeros_like(u, dtype=torch.bool)
    for k, shape in enumerate(shapes):
        mask |= (labels == k)[:, None, None] & shape
    return mask


def _distractor_masks(gen: torch.Generator, n: int, ys: torch.Tensor, xs: torch.Tensor, size: int) -> torch.Tensor:
    """A small disc (radius ≤ 0.08·size, far smaller than any circle) or a thin short line, per image."""
    is_line = torch.rand(n, generator=gen) < 0.5
    cy = _uniform(gen, (n, 1, 1), 0.1 * size, 0.9 * size)
    cx = _uniform(gen, (n, 1, 1), 0.1 * size, 0.9 * size)
    blob_r = _uniform(gen, (n, 1, 1), 0.05 * size, 0.08 * size)
    angle = _uniform(gen, (n, 1, 1), 0.0, math.pi)
    half_len = _uniform(gen, (n, 1, 1), 0.12 * size, 0.2 * size)
    dy, dx = ys - cy, xs - cx
    blob = dy**2 + dx**2 <= blob_r**2
    along = dx * torch.cos(angle) + dy * torch.sin(angle)
    across = -dx * torch.sin(angle) + dy * torch.cos(angle)
    line = (along.abs() <= half_len) & (across.abs() <= 0.75)
    return torch.where(is_line[:, None, None], line, blob)


def make_shapes(
    n: int, *, image_size: int = 32, seed: int = 0, distractor: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``n`` images with one shape each: ``(images (n, 3, H, W) in [0, 1], labels (n,), masks (n, H, W))``.

    Labels index :data:`CLASS_NAMES` and are balanced (counts differ by at most one). ``masks`` marks the
    object's pixels (never the distractor's). The same arguments always give identical tensors, and
    ``distractor=True`` only adds the distractor to the images ``distractor=False`` gives. A different ``n``
    gives different images (the labels come from one permutation of ``n``): take a slice for fewer.
    """
    _check_args(n, image_size, seed)
    gen = torch.Generator().manual_seed(seed)
    size = image_size
    k = len(CLASS_NAMES)
    labels = torch.randperm(n, generator=gen) % k  # balanced, shuffled

    images = _backgrounds(gen, n, size)  # (n, 3, H, W); pixel noise is added below
    coords = torch.arange(size, dtype=torch.float32) + 0.5  # pixel centres
    ys, xs = coords[None, :, None], coords[None, None, :]  # (1, H, 1), (1, 1, W)

    # Object: half-size r, centre far enough from the border that the rotated shape fits, rotation θ.
    r = _uniform(gen, (n,), *_RADIUS_RANGE) * size
    margin = _EXTENT * r + 0.5
    cy = margin + (size - 2 * margin) * torch.rand(n, generator=gen)
    cx = margin + (size - 2 * margin) * torch.rand(n, generator=gen)
    theta = _uniform(gen, (n,), -_MAX_ROTATION, _MAX_ROTATION)
    dy, dx = ys - cy[:, None, None], xs - cx[:, None, None]
    cos, sin = torch.cos(theta)[:, None, None], torch.sin(theta)[:, None, None]
    u, v = cos * dx + sin * dy, -sin * dx + cos * dy
    masks = _shape_masks(labels, u, v, r[:, None, None])
    colour = _uniform(gen, (n, 3), *_OBJECT_COLOUR)
    noise = _NOISE * torch.randn((n, 3, size, size), generator=gen)

    if distractor:  # drawn after everything else, so the other random numbers do not change
        d_mask = _distractor_masks(gen, n, ys, xs, size) & ~masks
        d_colour = _uniform(gen, (n, 3), *_OBJECT_COLOUR)
        images = torch.where(d_mask[:, None], d_colour[:, :, None, None], images)

    images = torch.where(masks[:, None], colour[:, :, None, None], images)
    images = (images + noise).clamp(0.0, 1.0)
    return images.float(), labels.long(), masks


class ShapesDataset(Dataset):
    """A split of the shapes task, generated once in ``__init__``; items are ``(image, label, mask)``.

    ``split`` picks a seed derived from ``(seed, split)`` (see :func:`split_seed`), so train, val and test
    never share a generator stream. ``size`` defaults to 5000 / 1000 / 1000 images.
    """

    def __init__(
        self,
        split: str = "train",
        *,
        size: int | None = None,
        image_size: int = 32,
        seed: int = 0,
        distractor: bool = False,
    ) -> None:
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        self.split = split
        self.classes = CLASS_NAMES
        n = DEFAULT_SIZES[split] if size is None else size
        self.images, self.labels, self.masks = make_shapes(
            n, image_size=image_size, seed=split_seed(seed, split), distractor=distractor
        )

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.images[index], self.labels[index], self.masks[index]

    def __repr__(self) -> str:
        h, w = self.images.shape[-2:]
        return f"ShapesDataset(split={self.split!r}, size={len(self)}, image_size={h}×{w}, classes={self.classes})"
