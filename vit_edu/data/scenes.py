"""Scenes for segmentation and detection (Part V): 0 to 4 shapes per image, each with its class, box and pixel mask.

The shapes are the classification task's four classes (:data:`~vit_edu.data.CLASS_NAMES`), smaller, drawn one over
another in a random order, so later shapes hide parts of earlier ones. A shape that would keep less than half of its
pixels visible is left out of the picture altogether, so every shape a scene lists can be seen and named. Boxes and
masks describe what is visible: a box is the tightest rectangle around a shape's visible pixels, as in COCO.

Everything is drawn from a seeded ``torch.Generator``: the same arguments give identical tensors on any machine.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from vit_edu._checks import check_positive_int
from vit_edu.data.shapes import (
    _EXTENT,
    _MAX_ROTATION,
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

MAX_OBJECTS = 4  # the most shapes a scene can hold (the 0–4)


SCENE_RADIUS = (0.10, 0.19)  # a shape's half-size as a fraction of the image side: 3–6 px at 32 px


MIN_VISIBLE = 0.5  # a shape must keep at least this fraction of its own pixels, or it is left out


SCENE_SIZES: dict[str, int] = {"train": 4000, "val": 500, "test": 500}


BACKGROUND = 0  # the semantic map's value for pixels that belong to no shape; class k is k + 1


@dataclass
class Scenes:
    """A batch of scenes: pictures, per-pixel targets, and per-shape boxes and classes.

    ``semantic[i, y, x]`` is 0 for background and ``k + 1`` for a pixel of class ``k``; ``instances[i, y, x]`` is 0
    for background and ``j + 1`` for the ``j``-th listed shape of image ``i``. ``boxes[i]`` is ``(m_i, 4)`` in pixels,
    ``(x0, y0, x1, y1)`` with ``x1, y1`` one past the last visible pixel; ``labels[i]`` is ``(m_i,)``, back to front.
    """

    images: torch.Tensor  # (n, 3, H, W) in [0, 1]
    semantic: torch.Tensor  # (n, H, W) int64 in 0..len(CLASS_NAMES)
    instances: torch.Tensor  # (n, H, W) int64 in 0..MAX_OBJECTS
    boxes: list[torch.Tensor]  # n tensors (m_i, 4), float32, xyxy in pixels
    labels: list[torch.Tensor]  # n tensors (m_i,), int64 class indices

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: slice) -> Scenes:
        """The scenes ``index`` selects (a slice), as another :class:`Scenes`."""
        if not isinstance(index, slice):
            raise TypeError(f"index Scenes with a slice, got {type(index).__name__}")
        return Scenes(self.images[index], self.semantic[index], self.instances[index], self.boxes[index],
                      self.labels[index])

    def targets(self) -> list[dict[str, torch.Tensor]]:
        """One ``{"boxes", "labels"}`` dict per image, as torchmetrics' and torchvision's detection code take."""
        return [{"boxes": b, "labels": c} for b, c in zip(self.boxes, self.labels)]


def _check_args(n: int, image_size: int, seed: int, max_objects: int) -> None:
    check_positive_int("n", n)
    if isinstance(image_size, bool) or not isinstance(image_size, int) or image_size < MIN_IMAGE_SIZE:
        raise ValueError(f"image_size must be an integer ≥ {MIN_IMAGE_SIZE}, got {image_size!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if isinstance(max_objects, bool) or not isinstance(max_objects, int) or not 1 <= max_objects <= MAX_OBJECTS:
        raise ValueError(f"max_objects must be an integer from 1 to {MAX_OBJECTS}, got {max_objects!r}")


def _visible(masks: torch.Tensor, wanted: torch.Tensor) -> torch.Tensor:
    """Which of the ``wanted`` shapes stay in the scene, deciding front to back.

    ``masks`` ``(n, m, H, W)`` are the shapes' full masks in drawing order (the last drawn is in front); a shape is
    kept when at least :data:`MIN_VISIBLE` of it is not covered by the kept shapes in front of it. Leaving a shape out
    uncovers the ones behind it, so deciding from the front keeps every remaining shape's share exact.
    """
    n, m = wanted.shape
    keep = torch.zeros_like(wanted)
    cover = torch.zeros_like(masks[:, 0])  # (n, H, W): pixels taken by kept shapes in front
    for j in reversed(range(m)):
        area = masks[:, j].sum((1, 2))
        seen = (masks[:, j] & ~cover).sum((1, 2))
        keep[:, j] = wanted[:, j] & (seen >= MIN_VISIBLE * area) & (area > 0)
        cover |= masks[:, j] & keep[:, j, None, None]
    return keep


def make_scenes(n: int, *, image_size: int = 32, seed: int = 0, max_objects: int = MAX_OBJECTS) -> Scenes:
    """``n`` scenes of 0 to ``max_objects`` shapes each (the number drawn uniformly, then heavily hidden shapes left out).

    Backgrounds, colours and noise are drawn as in :func:`~vit_edu.data.make_shapes`, but each shape is smaller
    (:data:`SCENE_RADIUS`) and anywhere it fits. The same arguments always give identical scenes.
    """
    _check_args(n, image_size, seed, max_objects)
    gen = torch.Generator().manual_seed(seed)
    size, m = image_size, max_objects
    count = torch.randint(0, m + 1, (n,), generator=gen)
    wanted = torch.arange(m)[None, :] < count[:, None]  # (n, m)

    images = _backgrounds(gen, n, size)  # (n, 3, H, W)
    coords = torch.arange(size, dtype=torch.float32) + 0.5  # pixel centres
    ys, xs = coords[None, None, :, None], coords[None, None, None, :]  # (1, 1, H, 1), (1, 1, 1, W)

    classes = torch.randint(0, len(CLASS_NAMES), (n, m), generator=gen)
    r = _uniform(gen, (n, m), *SCENE_RADIUS) * size
    margin = _EXTENT * r + 0.5
    cy = margin + (size - 2 * margin) * torch.rand((n, m), generator=gen)
    cx = margin + (size - 2 * margin) * torch.rand((n, m), generator=gen)
    theta = _uniform(gen, (n, m), -_MAX_ROTATION, _MAX_ROTATION)
    colour = _uniform(gen, (n, m, 3), *_OBJECT_COLOUR)
    noise = _NOISE * torch.randn((n, 3, size, size), generator=gen)

    dy, dx = ys - cy[..., None, None], xs - cx[..., None, None]  # (n, m, H, W)
    cos, sin = torch.cos(theta)[..., None, None], torch.sin(theta)[..., None, None]
    u, v = cos * dx + sin * dy, -sin * dx + cos * dy
    full = _shape_masks(classes.reshape(-1), u.reshape(-1, size, size), v.reshape(-1, size, size),
                        r.reshape(-1, 1, 1)).reshape(n, m, size, size)  # (n, m, H, W)
    keep = _visible(full, wanted)

    semantic = torch.zeros((n, size, size), dtype=torch.long)
    order = torch.zeros((n, size, size), dtype=torch.long)  # the drawing slot (1-based) on top of each pixel
    for j in range(m):  # back to front: later shapes cover earlier ones
        drawn = full[:, j] & keep[:, j, None, None]
        images = torch.where(drawn[:, None], colour[:, j, :, None, None], images)
        semantic = torch.where(drawn, classes[:, j, None, None] + 1, semantic)
        order = torch.where(drawn, torch.full_like(order, j + 1), order)
    images = (images + noise).clamp(0.0, 1.0)

    instances = torch.zeros_like(order)
    boxes, labels = [], []
    for i in range(n):
        slots = keep[i].nonzero().flatten().tolist()
        image_boxes = []
        for listed, j in enumerate(slots, start=1):
            seen = order[i] == j + 1  # (H, W)
            instances[i][seen] = listed
            rows, cols = seen.any(1).nonzero().flatten(), seen.any(0).nonzero().flatten()
            image_boxes.append([cols[0].item(), rows[0].item(), cols[-1].item() + 1, rows[-1].item() + 1])
        boxes.append(torch.tensor(image_boxes, dtype=torch.float32).reshape(-1, 4))
        labels.append(classes[i, slots].clone())
    return Scenes(images.float(), semantic, instances, boxes, labels)


def scene_split(split: str, *, size: int | None = None, image_size: int = 32, seed: int = 0) -> Scenes:
    """One split of the scenes (default sizes :data:`SCENE_SIZES`); train, val and test never share a generator."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    n = SCENE_SIZES[split] if size is None else size
    return make_scenes(n, image_size=image_size, seed=split_seed(seed, split))
