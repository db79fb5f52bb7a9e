"""What the CLS token reads, and attention rollout: attention maps combined across heads and layers."""

from __future__ import annotations

from typing import Literal

import torch

from vit_edu._checks import check_ndim


HEAD_FUSIONS = ("mean", "max", "min")


def check_attentions(attentions: list[torch.Tensor]) -> None:
    if not attentions:
        raise ValueError("attentions is empty: pass the list the model returns with return_attention=True")
    shape = attentions[0].shape
    for i, a in enumerate(attentions):
        check_ndim(f"attentions[{i}]", a, 4, "(B, h, S, S)")
        if a.shape != shape or a.shape[-1] != a.shape[-2]:
            raise ValueError(f"attentions[{i}] has shape {tuple(a.shape)}; every layer needs the same (B, h, S, S), "
                             f"layer 0 has {tuple(shape)}")


def cls_attention(attentions: list[torch.Tensor], num_prefix_tokens: int = 1) -> torch.Tensor:
    """How much the CLS query takes from each patch: ``L × (B, h, S, S)`` -> ``(L, B, h, N)``.

    Row 0 of every map, without the prefix columns, so the N numbers sum to slightly less than 1 (the rest
    went to the CLS token itself).
    """
    check_attentions(attentions)
    if num_prefix_tokens < 1:
        raise ValueError(f"cls_attention needs a CLS token (num_prefix_tokens ≥ 1), got {num_prefix_tokens}; "
                         f"a mean-pooled model has none")
    return torch.stack([a[:, :, 0, num_prefix_tokens:] for a in attentions])  # (L, B, h, N)


def fuse_heads(attention: torch.Tensor, head_fusion: Literal["mean", "max", "min"] = "mean", dim: int = 1) -> torch.Tensor:
    """Combine the heads of an attention map (along ``dim``) by their mean, maximum or minimum."""
    if head_fusion not in HEAD_FUSIONS:
        raise ValueError(f"head_fusion must be one of {HEAD_FUSIONS}, got {head_fusion!r}")
    if head_fusion == "mean":
        return attention.mean(dim)
    return attention.amax(dim) if head_fusion == "max" else attention.amin(dim)


def attention_rollout(
    attentions: list[torch.Tensor],
    head_fusion: Literal["mean", "max", "min"] = "mean",
    discard_ratio: float = 0.0,
) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema, 2020): ``L × (B, h, S, S)`` -> ``(B, S, S)``.

    Per layer: fuse the heads, optionally zero the smallest ``discard_ratio`` of each row's weights (never a
    token's weight on itself), add the identity for the residual path, renormalise every row to sum to 1, and
    multiply the layers in order: ``R = Â_L ⋯ Â_2 Â_1``. ``R[b, i, j]`` estimates how much of input token j
    reaches output token i.
    """
    check_attentions(attentions)
    if head_fusion not in HEAD_FUSIONS:
        raise ValueError(f"head_fusion must be one of {HEAD_FUSIONS}, got {head_fusion!r}")
    if not 0.0 <= discard_ratio < 1.0:
        raise ValueError(f"discard_ratio must be in [0, 1), got {discard_ratio}")
    b, _, s, _ = attentions[0].shape
    eye = torch.eye(s, dtype=attentions[0].dtype, device=attentions[0].device)
    rollout = eye.expand(b, s, s)
    for a in attentions:
        fused = fuse_heads(a, head_fusion)  # (B, S, S)
        if discard_ratio > 0:
            k = int(discard_ratio * s)
            if k:
                smallest = fused.topk(k, dim=-1, largest=False).indices  # (B, S, k)
                drop = torch.zeros_like(fused, dtype=torch.bool).scatter_(-1, smallest, True) & ~eye.bool()
                fused = fused.masked_fill(drop, 0.0)
        step = fused + eye  # the residual connection carries each token on unchanged
        step = step / step.sum(dim=-1, keepdim=True)  # keepdim: divide each row by its own sum
        rollout = step @ rollout
    return rollout
