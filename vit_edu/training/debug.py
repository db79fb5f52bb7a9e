"""Debugging habits for a model that does not learn: gradient norms per part, overfitting one batch, accumulation.

Three cheap checks come before any long run. :func:`grad_norms` says which parts of the model receive a gradient
at all (a detached graph or a frozen block shows as an exact 0). :func:`overfit_batch` trains on one fixed batch:
a working model and pipeline drive its loss towards 0, even with shuffled labels, so a loss that stays up points
at the code, not at the data. :func:`flat_grad` computes the gradient of one batch, whole or accumulated over
micro-batches, so the two can be compared (equal for LayerNorm, not for BatchNorm in train mode).
:func:`attention_stats` summarises each layer's attention weights by their largest entry and their mean entropy,
the two numbers that show attention collapsing onto single tokens when its scores blow up.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from vit_edu._checks import check_ndim, check_positive_int


def _group(name: str) -> str:
    # "blocks.1.attn.qkv.weight" -> "blocks.1"; "patch_embed.proj.weight" -> "patch_embed"; "cls_token" -> itself.
    parts = name.split(".")
    if len(parts) > 2 and parts[1].isdigit():  # a member of a ModuleList or Sequential: one entry per member
        return ".".join(parts[:2])
    return parts[0]


def grad_norms(model: nn.Module) -> dict[str, float]:
    """The L2 norm of the gradient of each top-level part (each block of a ModuleList on its own), in model order.

    Read after ``loss.backward()``. A parameter without a gradient (frozen, or cut off from the loss by a
    ``.detach()``) counts as 0, so a part that gets no gradient at all shows exactly 0.0.
    """
    squares: dict[str, float] = {}
    for name, p in model.named_parameters():
        group = _group(name)
        g = 0.0 if p.grad is None else p.grad.detach().double().pow(2).sum().item()
        squares[group] = squares.get(group, 0.0) + g
    return {group: s**0.5 for group, s in squares.items()}


@dataclass(frozen=True)
class OverfitRun:
    """The loss of each step of :func:`overfit_batch`, and each part's gradient norm averaged over the steps.

    The average, not the first step's norms: with a zero-initialised head, the first backward pass gives every
    part but the head a zero gradient, whatever else is wrong.
    """

    losses: tuple[float, ...]
    mean_grad_norms: dict[str, float]

    @property
    def final_loss(self) -> float:
        return self.losses[-1]


def overfit_batch(
    model: nn.Module, images: torch.Tensor, labels: torch.Tensor, *, steps: int = 100, lr: float = 1e-3
) -> OverfitRun:
    """Train ``model`` in place on one fixed batch with Adam for ``steps`` steps; record every loss.

    Only parameters with ``requires_grad`` are optimised (a frozen part stays as it is). No augmentation, no
    weight decay, no schedule: the only question is whether the loss on these ``(B, C, H, W)`` images can fall.
    """
    check_ndim("images", images, 4, "(B, C, H, W)")
    check_positive_int("steps", steps)
    if labels.shape != images.shape[:1]:
        raise ValueError(f"labels must have shape ({len(images)},), got {tuple(labels.shape)}")
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr}")
    trainable = [p for p in model.parameters() if p.requires_grad]
    if not trainable:
        raise ValueError("model has no parameter with requires_grad=True: nothing to train")
    optimizer = torch.optim.Adam(trainable, lr=lr)
    model.train()
    losses, norm_sums = [], {}
    for _ in range(steps):
        loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        for part, norm in grad_norms(model).items():
            norm_sums[part] = norm_sums.get(part, 0.0) + norm
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    return OverfitRun(tuple(losses), {part: total / steps for part, total in norm_sums.items()})


def flat_grad(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, micro_batches: int = 1) -> torch.Tensor:
    """The gradient of the mean cross-entropy over the batch as one vector, accumulated over ``micro_batches``.

    The batch is split into ``micro_batches`` equal parts; each part's loss is divided by ``micro_batches`` before
    ``backward()``, so the summed gradients are the whole batch's mean-loss gradient whenever the model treats
    each image on its own. The model's train/eval mode is left as the caller set it.
    """
    check_ndim("images", images, 4, "(B, C, H, W)")
    check_positive_int("micro_batches", micro_batches)
    if len(images) % micro_batches:
        raise ValueError(f"batch of {len(images)} does not split into {micro_batches} equal micro-batches")
    model.zero_grad(set_to_none=True)
    for x, y in zip(images.chunk(micro_batches), labels.chunk(micro_batches), strict=True):
        (F.cross_entropy(model(x), y) / micro_batches).backward()  # gradients add up across the calls
    grads = [p.grad.flatten() for p in model.parameters() if p.grad is not None]
    model.zero_grad(set_to_none=True)
    return torch.cat(grads)


@dataclass(frozen=True)
class AttentionStats:
    """One layer's attention weights in two numbers: the largest weight anywhere, and the mean entropy of a row.

    A row of S weights has entropy between 0 (all weight on one token) and ln S (uniform). Scores that grow
    without bound push the softmax towards one-hot rows: the largest weight goes to 1 and the entropy to 0, and a
    single inf among the scores makes a row NaN, which shows here as NaN.
    """

    max_weight: float
    entropy: float


def attention_stats(attentions: list[torch.Tensor]) -> list[AttentionStats]:
    """Per layer, the largest weight and the mean row entropy (in nats) of ``L × (B, h, S, S)`` attention weights,
    as ``VisionTransformer(..., return_attention=True)`` returns them. The mean runs over images, heads and query
    tokens; a weight of exactly 0 adds 0 to the entropy (``xlogy``)."""
    if not attentions:
        raise ValueError("attention_stats needs at least one layer's attention weights, got none")
    stats = []
    for i, a in enumerate(attentions):
        check_ndim(f"attention of layer {i}", a, 4, "(B, h, S, S)")
        if a.shape[-1] != a.shape[-2]:
            raise ValueError(f"attention of layer {i} must be square in its last two dimensions (S, S), "
                             f"got shape {tuple(a.shape)}")
        a = a.detach().double()
        entropy = -torch.special.xlogy(a, a).sum(-1)  # (B, h, S): one value per query row
        stats.append(AttentionStats(a.max().item(), entropy.mean().item()))  # max and mean both propagate NaN
    return stats
