"""How far attention reaches (mean attention distance, in pixels) and how alike the position embeddings are."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from vit_edu._checks import check_ndim
from vit_edu.explain.attention_maps import check_attentions


def patch_distances(grid_size: tuple[int, int], patch_size: int) -> torch.Tensor:
    """Euclidean distance in pixels between every pair of patch centres: ``(N, N)``."""
    gh, gw = grid_size
    ys, xs = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")
    centres = torch.stack([ys.flatten(), xs.flatten()], dim=1).float() * patch_size  # (N, 2)
    return torch.cdist(centres, centres)


def mean_attention_distance(
    attentions: list[torch.Tensor], grid_size: tuple[int, int], patch_size: int, num_prefix_tokens: int = 1
) -> torch.Tensor:
    """Paper Fig. 7 (right): per layer and head, the attention-weighted pixel distance between query and key
    patches, averaged over query patches and images: ``L × (B, h, S, S)`` -> ``(L, h)``.

    Only patch-to-patch weights count, renormalised over the patch keys (the CLS token has no position).
    """
    check_attentions(attentions)
    n = grid_size[0] * grid_size[1]
    s = attentions[0].shape[-1]
    if s != n + num_prefix_tokens:
        raise ValueError(f"attention maps have S = {s} tokens, but a {grid_size[0]}×{grid_size[1]} grid plus "
                         f"{num_prefix_tokens} prefix token(s) makes {n + num_prefix_tokens}")
    dist = patch_distances(grid_size, patch_size).to(attentions[0])  # (N, N)
    result = []
    for a in attentions:
        patch = a[:, :, num_prefix_tokens:, num_prefix_tokens:]  # (B, h, N, N)
        patch = patch / patch.sum(dim=-1, keepdim=True)
        result.append((patch * dist).sum(-1).mean(dim=(0, 2)))  # (h,)
    return torch.stack(result)  # (L, h)


def position_similarity(pos_embed: torch.Tensor) -> torch.Tensor:
    """Cosine similarity between the position embeddings of every pair of patches: ``(N, D)`` -> ``(N, N)``.

    Pass the patch rows only (drop the CLS row first). Paper Fig. 7 (centre) draws row i as a grid map.
    """
    check_ndim("pos_embed", pos_embed, 2, "(N, D)")
    unit = F.normalize(pos_embed, dim=-1)
    return unit @ unit.T
