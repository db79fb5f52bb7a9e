"""The shapes task with a spurious cue: a background hue that predicts the class in training but not at test.

Each class owns a band of the hue circle (:data:`HUE_CENTRES`, :data:`HUE_BAND` wide). :func:`make_spurious` draws
the images of :func:`vit_edu.data.make_shapes` and repaints every pixel outside the object mask: a dark, smooth
background of one hue, with a brightness gradient and pixel noise like the original's. The object's pixels are
kept exactly. Which class's band colours an image's background is the ``mode``:

* ``"label"``: the image's own class, so the background alone predicts the label perfectly (the cue);
* ``"independent"``: a class drawn independently of the label (no cue: the control, and a cue-free test);
* ``"swapped"``: always another class than the label (the cue points to a wrong class).

All three modes use the same random numbers for everything but the band, so for one ``(n, image_size, seed)``
they give the same objects on backgrounds that differ only in their hue band. :func:`replace_background` takes the
cue away as a whole: the object kept, the whole background one neutral grey.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from matplotlib.colors import rgb_to_hsv

from vit_edu.data.shapes import _NOISE, CLASS_NAMES, make_shapes


CUE_MODES: tuple[str, ...] = ("label", "independent", "swapped")


HUE_CENTRES: tuple[float, ...] = tuple(k / len(CLASS_NAMES) for k in range(len(CLASS_NAMES)))  # red, lime, cyan, violet


HUE_BAND = 0.15  # width of each class's band as a share of the hue circle; 0.1 of the circle separates two bands


_SATURATION = (0.5, 0.9)


_VALUE = (0.25, 0.4)  # the brightest channel of the background colour: dark, as in make_shapes


_BRIGHTNESS_GRADIENT = 0.3  # brightness changes by at most ±15% across the image


_SEED_OFFSET = 1_000_003  # the background generator's seed is seed + offset: a stream make_shapes never uses


@dataclass(frozen=True)
class SpuriousShapes:
    """Images ``(n, 3, H, W)``, labels ``(n,)``, object masks ``(n, H, W)``, and ``band`` ``(n,)``: the class whose
    hue band colours each background. ``classes`` is what :func:`vit_edu.training.train` reads."""

    images: torch.Tensor
    labels: torch.Tensor
    masks: torch.Tensor
    band: torch.Tensor
    classes: tuple[str, ...] = CLASS_NAMES

    def __len__(self) -> int:
        return len(self.labels)


def hsv_to_rgb(hue: torch.Tensor, saturation: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """HSV colours to RGB: three ``(n,)`` tensors in [0, 1] (hue wraps around) -> ``(n, 3)``."""
    h6 = (hue % 1.0)[:, None] * 6  # (n, 1)
    k = (torch.tensor([5.0, 3.0, 1.0]) + h6) % 6  # (n, 3): the standard HSV -> RGB formula
    return value[:, None] - value[:, None] * saturation[:, None] * (torch.minimum(k, 4 - k).clamp(0, 1))


def background_band(labels: torch.Tensor, mode: str, other: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """The class whose hue band colours each background: ``labels``, ``other`` (drawn independently of the labels)
    or ``labels + shift`` (shift in 1..K-1, so never the label), by ``mode``."""
    if mode not in CUE_MODES:
        raise ValueError(f"mode must be one of {CUE_MODES}, got {mode!r}")
    if mode == "label":
        return labels.clone()
    if mode == "independent":
        return other.clone()
    return (labels + shift) % len(CLASS_NAMES)


def make_spurious(n: int, mode: str = "label", *, image_size: int = 32, seed: int = 0) -> SpuriousShapes:
    """``make_shapes(n, image_size=image_size, seed=seed)`` with its background repainted in a hue band chosen by
    ``mode`` (see the module's docstring). Object pixels, labels and masks are those of ``make_shapes``."""
    if mode not in CUE_MODES:
        raise ValueError(f"mode must be one of {CUE_MODES}, got {mode!r}")
    images, labels, masks = make_shapes(n, image_size=image_size, seed=seed)  # checks n, image_size, seed
    gen = torch.Generator().manual_seed(seed + _SEED_OFFSET)
    k, size = len(CLASS_NAMES), image_size
    # Every mode draws the same numbers in the same order; only background_band's choice differs.
    other = torch.randint(0, k, (n,), generator=gen)
    shift = torch.randint(1, k, (n,), generator=gen)
    offset = (torch.rand(n, generator=gen) - 0.5) * HUE_BAND  # position inside the band
    saturation = _SATURATION[0] + (_SATURATION[1] - _SATURATION[0]) * torch.rand(n, generator=gen)
    value = _VALUE[0] + (_VALUE[1] - _VALUE[0]) * torch.rand(n, generator=gen)
    slope = (torch.rand(n, generator=gen) * 2 - 1) * _BRIGHTNESS_GRADIENT
    direction = torch.rand(n, generator=gen) * 2 * math.pi
    noise = _NOISE * torch.randn((n, 3, size, size), generator=gen)

    band = background_band(labels, mode, other, shift)
    colour = hsv_to_rgb(torch.tensor(HUE_CENTRES)[band] + offset, saturation, value)  # (n, 3)
    coords = (torch.arange(size, dtype=torch.float32) + 0.5) / size - 0.5  # pixel centres in [-0.5, 0.5]
    ys, xs = coords[None, :, None], coords[None, None, :]  # (1, H, 1), (1, 1, W)
    t = (xs * torch.cos(direction)[:, None, None] + ys * torch.sin(direction)[:, None, None]) / math.sqrt(2)
    shade = 1 + slope[:, None, None] * t  # (n, H, W): a brightness gradient that keeps the hue
    background = (colour[:, :, None, None] * shade[:, None] + noise).clamp(0.0, 1.0)  # (n, 3, H, W)
    images = torch.where(masks[:, None], images, background)
    return SpuriousShapes(images, labels, masks, band)


def background_hue(images: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """The hue of each image's mean background colour, in [0, 1): ``(n, 3, H, W)``, ``(n, H, W)`` -> ``(n,)``.

    What a model could read off the background; the tests use it to check the cue from the pixels alone.
    """
    if images.ndim != 4 or masks.shape != (images.shape[0], *images.shape[2:]):
        raise ValueError(f"images must be (n, 3, H, W) and masks (n, H, W) to match, got "
                         f"{tuple(images.shape)} and {tuple(masks.shape)}")
    outside = (~masks)[:, None].float()  # (n, 1, H, W)
    mean = (images * outside).sum((2, 3)) / outside.sum((2, 3)).clamp(min=1)  # (n, 3)
    return torch.from_numpy(rgb_to_hsv(mean.clamp(0, 1).numpy())[:, 0])  # (n,)


def replace_background(images: torch.Tensor, masks: torch.Tensor, fill: float = 0.3) -> torch.Tensor:
    """The images with the object kept and every background pixel set to the grey ``fill``:
    ``(n, 3, H, W)``, ``(n, H, W)`` -> ``(n, 3, H, W)``.

    A grey has no hue, so it belongs to no class's band; 0.3 lies inside the backgrounds' brightness range
    (:data:`_VALUE`), so only the colour changes, not how dark the surroundings are. Removing the whole background
    at once is what single-patch occlusion cannot do.
    """
    if images.ndim != 4 or masks.shape != (images.shape[0], *images.shape[2:]):
        raise ValueError(f"images must be (n, 3, H, W) and masks (n, H, W) to match, got "
                         f"{tuple(images.shape)} and {tuple(masks.shape)}")
    if masks.dtype != torch.bool:
        raise ValueError(f"masks must be boolean (True on the object), got dtype {masks.dtype}")
    if isinstance(fill, bool) or not isinstance(fill, (int, float)) or not 0.0 <= fill <= 1.0:
        raise ValueError(f"fill must be a grey level in [0, 1], got {fill!r}")
    return torch.where(masks[:, None], images, torch.tensor(fill, dtype=images.dtype))  # (n, 3, H, W)
