"""What a patch embedding has learned (chapter 3; the ViT paper's Fig. 7, left): principal components of its filters.

Each of the D rows of the projection is a filter of shape ``(C, P, P)``. PCA over the D filters finds the few
pixel patterns that most of the filters are built from; the paper draws the top ones as small RGB tiles. A random
start has no such structure (its variance is spread over many components), so an untrained model of the same
configuration is the control to compare with.
"""

from __future__ import annotations

import torch

from vit_edu._checks import check_ndim, check_positive_int


def embedding_components(weight: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Top ``k`` principal components of the filters ``weight`` ``(D, C, P, P)``: ``((k, C, P, P), (k,))``.

    The filters are centred (their mean filter subtracted) and decomposed with an SVD in float64. ``explained[i]``
    is component ``i``'s share of the total variance across the D filters (so it sums to at most 1). Each
    component is a unit vector; its sign is fixed so that its largest-magnitude entry is positive, which makes
    the result reproducible. Raises ``ValueError`` if ``k`` exceeds the number of components, ``min(D, C·P·P)``.
    """
    check_ndim("weight", weight, 4, "(D, C, P, P)")
    check_positive_int("k", k)
    d, c, p, q = weight.shape
    n_max = min(d, c * p * q)
    if k > n_max:
        raise ValueError(f"k must be at most min(D, C·P·P) = min({d}, {c * p * q}) = {n_max}, got {k}")
    flat = weight.detach().to(torch.float64).reshape(d, -1)  # (D, C·P·P)
    flat = flat - flat.mean(dim=0, keepdim=True)
    _, s, vh = torch.linalg.svd(flat, full_matrices=False)  # s (n_max,), vh (n_max, C·P·P)
    variance = s**2
    explained = variance[:k] / variance.sum()  # (k,)
    components = vh[:k]  # (k, C·P·P)
    peak = components.abs().argmax(dim=1, keepdim=True)  # (k, 1)
    components = components * torch.sign(components.gather(1, peak))
    return components.reshape(k, c, p, q).float(), explained.float()


def spatial_roughness(tiles: torch.Tensor) -> torch.Tensor:
    """How unlike its neighbours each pixel of a tile is: ``(k, C, P, P)`` -> ``(k,)``.

    The mean squared difference between horizontally and vertically adjacent pixels (all channels), divided by
    twice the tile's variance. Independent random pixels give 1 on average; a smooth tile (a slow gradient, a
    blob, a broad edge) gives much less; a checkerboard gives up to 2.
    """
    check_ndim("tiles", tiles, 4, "(k, C, P, P)")
    if tiles.shape[-1] < 2 or tiles.shape[-2] < 2:
        raise ValueError(f"tiles must be at least 2×2 pixels, got {tuple(tiles.shape[-2:])}")
    t = tiles.detach().to(torch.float64)
    dx = (t[..., :, 1:] - t[..., :, :-1]).pow(2).flatten(1)  # (k, C·P·(P-1))
    dy = (t[..., 1:, :] - t[..., :-1, :]).pow(2).flatten(1)
    neighbour = torch.cat([dx, dy], dim=1).mean(dim=1)  # (k,)
    return (neighbour / (2 * t.flatten(1).var(dim=1))).float()


def grey_share(tiles: torch.Tensor) -> torch.Tensor:
    """How colourless each tile is: ``(k, C, P, P)`` -> ``(k,)``, the share of its energy in the channel mean.

    A tile that is the same in every channel (a grey pattern) gives 1; independent random channels give about
    ``1/C``; a pure colour contrast (red minus green, say, with the same spatial pattern) gives 0.
    """
    check_ndim("tiles", tiles, 4, "(k, C, P, P)")
    t = tiles.detach().to(torch.float64)
    grey = t.mean(dim=1, keepdim=True).expand_as(t)  # (k, C, P, P): the channel mean in every channel
    return (grey.pow(2).flatten(1).sum(1) / t.pow(2).flatten(1).sum(1)).float()
