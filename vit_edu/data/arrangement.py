"""A task whose answer is *where* a thing is, for chapter 11's question: when do positions matter?

The shapes task can be solved from a bag of patches: what an object is shows inside the patches it covers.
In ``"quadrant"`` the images are the shapes task's own (:func:`~vit_edu.data.make_shapes`), but the label is the
quarter of the image that holds the centre of the object's mask: a place, which a patch's contents alone do not
give. The same arguments give identical tensors, as for the shapes task.
"""

from __future__ import annotations

import torch

from vit_edu.data.cifar import ImageSplit
from vit_edu.data.shapes import make_shapes, split_seed

ARRANGEMENT_TASKS: dict[str, tuple[str, ...]] = {
    "quadrant": ("top left", "top right", "bottom left", "bottom right"),
}


def make_quadrant(n: int, *, image_size: int = 32, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``(images (n, 3, H, W), labels (n,))``: the shapes task's images, labelled by the quarter that holds the
    centre of the object's mask (0 top left, 1 top right, 2 bottom left, 3 bottom right)."""
    images, _, masks = make_shapes(n, image_size=image_size, seed=seed)
    coords = torch.arange(image_size, dtype=torch.float32) + 0.5
    area = masks.sum((1, 2)).float()  # (n,)
    cy = (masks.sum(2).float() * coords).sum(1) / area  # row of the mask's centre
    cx = (masks.sum(1).float() * coords).sum(1) / area
    labels = 2 * (cy >= image_size / 2).long() + (cx >= image_size / 2).long()
    return images, labels


def arrangement_split(task: str, split: str, size: int, *, image_size: int = 32, seed: int = 0) -> ImageSplit:
    """``size`` images of ``task`` for one split; train, val and test never share a generator (as for shapes)."""
    if task not in ARRANGEMENT_TASKS:
        raise ValueError(f"task must be one of {sorted(ARRANGEMENT_TASKS)}, got {task!r}")
    images, labels = make_quadrant(size, image_size=image_size, seed=split_seed(seed, split))
    return ImageSplit(images, labels, ARRANGEMENT_TASKS[task])
