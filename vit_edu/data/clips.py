"""Short clips whose label needs time (Part V's video chapter): does the moving shape go left or right?

Each clip has ``frames`` frames of one scene: a still background with a still distractor shape, and one shape that
moves in a straight line at a steady speed, in a direction drawn uniformly around the circle. The label is whether it
moves towards the right (0 ``"left"``, 1 ``"right"``). Any clip played backwards is an equally likely clip with the
other label, and it holds the same frames: so a model that sees the frames as an unordered set (one at a time, then
averaged) cannot beat chance, 50%, whatever it learns. Only the frames' order tells the answer.

Drawn from a seeded ``torch.Generator``, as the shapes task: the same arguments give identical tensors anywhere.
"""

from __future__ import annotations

import math

import torch

from vit_edu._checks import check_positive_int
from vit_edu.data.shapes import (
    _EXTENT,
    _NOISE,
    _OBJECT_COLOUR,
    CLASS_NAMES,
    MIN_IMAGE_SIZE,
    SPLITS,
    _backgrounds,
    _shape_masks,
    _uniform,
    split_seed,
)

DIRECTIONS: tuple[str, ...] = ("left", "right")


CLIP_RADIUS = (0.09, 0.15)  # the shapes' half-size as a fraction of the image side: 3–5 px at 32 px


TRAVEL = (0.25, 0.45)  # how far the moving shape goes from the first frame to the last, as a fraction of the side


CLIP_SIZES: dict[str, int] = {"train": 4000, "val": 500, "test": 500}


MIN_FRAMES = 2


def _check_args(n: int, frames: int, image_size: int, seed: int) -> None:
    check_positive_int("n", n)
    if isinstance(frames, bool) or not isinstance(frames, int) or frames < MIN_FRAMES:
        raise ValueError(f"frames must be an integer ≥ {MIN_FRAMES}, got {frames!r}")
    if isinstance(image_size, bool) or not isinstance(image_size, int) or image_size < MIN_IMAGE_SIZE:
        raise ValueError(f"image_size must be an integer ≥ {MIN_IMAGE_SIZE}, got {image_size!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")


def make_clips(
    n: int, *, frames: int = 8, image_size: int = 32, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(clips (n, T, 3, H, W) in [0, 1], labels (n,))``: labels index :data:`DIRECTIONS` and are balanced.

    The moving shape covers the same distance (:data:`TRAVEL`) whatever the number of frames, in equal steps; its path
    is placed where it fits at every frame. The still distractor is drawn behind it. Each frame has its own noise.
    """
    _check_args(n, frames, image_size, seed)
    gen = torch.Generator().manual_seed(seed)
    size, T = image_size, frames
    labels = torch.randperm(n, generator=gen) % len(DIRECTIONS)  # balanced, shuffled

    background = _backgrounds(gen, n, size)  # (n, 3, H, W)
    coords = torch.arange(size, dtype=torch.float32) + 0.5
    ys, xs = coords[None, :, None], coords[None, None, :]  # (1, H, 1), (1, 1, W)

    # The motion: an angle whose horizontal part points the label's way (never straight up or down), a speed.
    angle = _uniform(gen, (n,), -math.pi / 3, math.pi / 3) + math.pi * (labels == 0)
    speed = _uniform(gen, (n,), *TRAVEL) * size / (T - 1)
    vx, vy = speed * torch.cos(angle), speed * torch.sin(angle)  # pixels per frame

    classes = torch.randint(0, len(CLASS_NAMES), (n, 2), generator=gen)  # the mover's and the distractor's
    r = _uniform(gen, (n, 2), *CLIP_RADIUS) * size
    margin = _EXTENT * r + 0.5  # (n, 2)
    half_x = (T - 1) / 2 * vx.abs()
    half_y = (T - 1) / 2 * vy.abs()
    low_x = torch.stack([margin[:, 0] + half_x, margin[:, 1]], 1)
    low_y = torch.stack([margin[:, 0] + half_y, margin[:, 1]], 1)
    cx = low_x + (size - 2 * low_x) * torch.rand((n, 2), generator=gen)  # the mover's mid-path centre, the still one's
    cy = low_y + (size - 2 * low_y) * torch.rand((n, 2), generator=gen)
    colour = _uniform(gen, (n, 2, 3), *_OBJECT_COLOUR)
    noise = _NOISE * torch.randn((n, T, 3, size, size), generator=gen)

    steps = torch.arange(T, dtype=torch.float32) - (T - 1) / 2  # (T,) frames from the path's middle
    clips = torch.empty((n, T, 3, size, size))

    def drawn(k: int, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Shape ``k``'s (n, H, W) mask, upright, centred at ``(x, y)``."""
        u = (xs - x[:, None, None]).expand(n, size, size)
        v = (ys - y[:, None, None]).expand(n, size, size)
        return _shape_masks(classes[:, k], u, v, r[:, k, None, None])

    still = drawn(1, cx[:, 1], cy[:, 1])
    for f in range(T):
        moving = drawn(0, cx[:, 0] + steps[f] * vx, cy[:, 0] + steps[f] * vy)
        frame = torch.where(still[:, None], colour[:, 1, :, None, None], background)
        clips[:, f] = torch.where(moving[:, None], colour[:, 0, :, None, None], frame)
    clips = (clips + noise).clamp(0.0, 1.0)
    return clips, labels.long()


def clip_split(
    split: str, *, size: int | None = None, frames: int = 8, image_size: int = 32, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """One split of the clips (default sizes :data:`CLIP_SIZES`); train, val and test never share a generator."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    n = CLIP_SIZES[split] if size is None else size
    return make_clips(n, frames=frames, image_size=image_size, seed=split_seed(seed, split))
