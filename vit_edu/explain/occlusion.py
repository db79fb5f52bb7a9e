"""Occlusion read through the logits: what covering each patch does to every class score, not only to one
probability.

:func:`vit_edu.explain.occlusion_sensitivity` returns the drop of one class's probability. That number has two
blind spots. On an image where that probability is already about 0 (the true class of an image the model gets
wrong), it has nothing left to lose, whatever the patch did. And near a probability of 1 the softmax saturates, so a
large change of the logits moves the probability very little. The logits of the covered images answer both:
whether the prediction changes, and by how much the winning class's lead over the runner-up (the logit margin)
shrinks.
"""

from __future__ import annotations

import torch
from torch import nn

from vit_edu._checks import check_divisible, check_ndim


@torch.no_grad()
def occlusion_logits(
    model: nn.Module, images: torch.Tensor, patch_size: int, fill: float | None = None
) -> torch.Tensor:
    """The model's logits with each patch covered in turn: ``(B, C, H, W)`` -> ``(B, N, K)``.

    Covering is that of :func:`vit_edu.explain.occlusion_sensitivity`: patch ``j`` (row-major, like the patch
    tokens) is set to ``fill``, or to the image's own mean colour when ``fill`` is None; one forward pass per
    patch position with the whole batch.
    """
    check_ndim("images", images, 4, "(B, C, H, W)")
    b, c, h, w = images.shape
    check_divisible(h, w, patch_size)
    if fill is not None and (isinstance(fill, bool) or not isinstance(fill, (int, float))):
        raise ValueError(f"fill must be a number or None (the image's mean colour), got {fill!r}")
    model.eval()
    colour = images.mean(dim=(2, 3), keepdim=True) if fill is None else torch.full((b, c, 1, 1), float(fill))
    out = []
    for top in range(0, h, patch_size):
        for left in range(0, w, patch_size):
            covered = images.clone()
            covered[:, :, top : top + patch_size, left : left + patch_size] = colour
            out.append(model(covered))  # (B, K)
    return torch.stack(out, dim=1)  # (B, N, K)


def logit_margin(logits: torch.Tensor, classes: torch.Tensor) -> torch.Tensor:
    """How far ``classes`` leads the best other class: ``(..., K)`` logits, ``(...)`` class indices -> ``(...)``.

    Positive when the class is the prediction, negative when another class wins. Unlike a probability, the
    margin does not saturate: a confident model's margin can shrink a lot while its probability stays near 1.
    """
    if logits.ndim < 1 or logits.shape[-1] < 2:
        raise ValueError(f"logits must end in an axis of at least 2 classes, got shape {tuple(logits.shape)}")
    if classes.shape != logits.shape[:-1]:
        raise ValueError(f"classes {tuple(classes.shape)} must have the logits' shape without the class axis, "
                         f"{tuple(logits.shape[:-1])}")
    k = logits.shape[-1]
    if classes.dtype in (torch.bool,) or classes.is_floating_point() or bool(((classes < 0) | (classes >= k)).any()):
        raise ValueError(f"classes must be integer indices in 0..{k - 1}, got {classes.flatten()[:10].tolist()}")
    own = logits.gather(-1, classes[..., None])[..., 0]  # (...)
    others = logits.scatter(-1, classes[..., None], float("-inf")).amax(-1)  # (...): the best of the rest
    return own - others
