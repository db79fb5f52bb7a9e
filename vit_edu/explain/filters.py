"""What a patch embedding has learned (chapter 3; the ViT paper's Fig. 7, left): principal components of its filters.

Each of the D rows of the projection is a filter of shape ``(C, P, P)``. PCA over the D filters finds the few
pixel patterns that most of the filters are built from; the paper draws the top ones as small RGB tiles. A random
start has no such structure (its variance is spread over many components), so an untrained model of the same
configuration is the control to compare with.

A second control comes from the data. The gradient of a linear first layer is built from the input patches, so
whatever the task, training tends to move the filters along the patches' own dominant patterns. The images' own
patch PCA (:func:`patch_components`) gives those patterns, and :func:`subspace_energy_share` measures how much of
what training changed lies inside them, against random subspaces of the same size (:func:`random_subspace_shares`).
"""

from __future__ import annotations

import torch

from vit_edu._checks import check_ndim, check_positive_int
from vit_edu.patches import patchify


def _fix_signs(components: torch.Tensor) -> torch.Tensor:
    """Flip each row of ``(k, M)`` so that its largest-magnitude entry is positive (reproducible components)."""
    peak = components.abs().argmax(dim=1, keepdim=True)  # (k, 1)
    return components * torch.sign(components.gather(1, peak))


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
    components = _fix_signs(vh[:k])  # (k, C·P·P)
    return components.reshape(k, c, p, q).float(), explained.float()


def patch_components(images: torch.Tensor, patch_size: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Top ``k`` principal components of the images' own patches: ``((k, C, P, P), (k,))``.

    ``images`` ``(B, C, H, W)`` are cut with :func:`vit_edu.patchify` into B·N patches of C·P·P numbers, in the
    order a patch-embedding filter reads them; the patches are centred and their ``(C·P·P, C·P·P)`` covariance is
    diagonalised in float64 (cheaper than an SVD of all B·N patches). ``explained[i]`` is component ``i``'s share
    of the patches' total variance. Signs are fixed as in :func:`embedding_components`, so the tiles can be
    compared with the filters' components and scored with the same :func:`spatial_roughness` and
    :func:`grey_share`.
    """
    check_ndim("images", images, 4, "(B, C, H, W)")
    check_positive_int("k", k)
    flat = patchify(images.detach(), patch_size).reshape(-1, images.shape[1] * patch_size**2)  # (B·N, C·P·P)
    n, m = flat.shape
    if k > min(n, m):
        raise ValueError(f"k must be at most min(patches, C·P·P) = min({n}, {m}) = {min(n, m)}, got {k}")
    flat = flat.to(torch.float64)
    flat = flat - flat.mean(dim=0, keepdim=True)
    variance, vectors = torch.linalg.eigh(flat.T @ flat)  # ascending: (M,), (M, M) with eigenvectors as columns
    explained = variance.flip(0)[:k] / variance.sum()  # (k,)
    components = _fix_signs(vectors.flip(1)[:, :k].T)  # (k, C·P·P)
    return components.reshape(k, images.shape[1], patch_size, patch_size).float(), explained.float()


def subspace_energy_share(weight: torch.Tensor, basis: torch.Tensor) -> float:
    """Share of the centred filters' energy that lies in the span of ``basis``: a number in [0, 1].

    ``weight`` ``(D, C, P, P)`` is centred over its D filters (as in :func:`embedding_components`); ``basis``
    ``(k, C, P, P)`` must have orthonormal rows once flattened, as the components returned above do. The share is
    ``‖F Bᵀ‖² / ‖F‖²`` for the centred, flattened filters F and basis B. A random k-dimensional subspace of the
    M = C·P·P numbers holds k/M of it on average; the filters' own top k components hold the most any k-dimensional
    subspace can.
    """
    check_ndim("weight", weight, 4, "(D, C, P, P)")
    check_ndim("basis", basis, 4, "(k, C, P, P)")
    if weight.shape[1:] != basis.shape[1:]:
        raise ValueError(f"basis tiles {tuple(basis.shape[1:])} do not match the filters {tuple(weight.shape[1:])}")
    flat = weight.detach().to(torch.float64).flatten(1)  # (D, M)
    flat = flat - flat.mean(dim=0, keepdim=True)
    b = basis.detach().to(torch.float64).flatten(1)  # (k, M)
    off = (b @ b.T - torch.eye(len(b), dtype=torch.float64)).abs().max().item()
    if off > 1e-4:
        raise ValueError(f"basis rows must be orthonormal; B·Bᵀ differs from the identity by up to {off:.3g}")
    energy = flat.pow(2).sum().item()
    if energy == 0:
        raise ValueError("the filters are all equal: after centring they have no energy to share out")
    return (flat @ b.T).pow(2).sum().item() / energy


def random_subspace_shares(weight: torch.Tensor, k: int, n: int = 100, seed: int = 0) -> torch.Tensor:
    """:func:`subspace_energy_share` of ``weight`` ``(D, C, P, P)`` for ``n`` random k-dimensional subspaces: ``(n,)``.

    Each subspace is the span of k Gaussian vectors (orthonormalised by QR), drawn from a generator seeded with
    ``seed``: the chance level against which a share inside a particular subspace is read. On average it is
    k/M for M = C·P·P numbers per filter.
    """
    check_ndim("weight", weight, 4, "(D, C, P, P)")
    check_positive_int("k", k)
    check_positive_int("n", n)
    m = weight[0].numel()
    if k > m:
        raise ValueError(f"k must be at most C·P·P = {m}, got {k}")
    flat = weight.detach().to(torch.float64).flatten(1)  # (D, M)
    flat = flat - flat.mean(dim=0, keepdim=True)
    energy = flat.pow(2).sum()
    if energy == 0:
        raise ValueError("the filters are all equal: after centring they have no energy to share out")
    gen = torch.Generator().manual_seed(seed)
    bases, _ = torch.linalg.qr(torch.randn(n, m, k, generator=gen, dtype=torch.float64))  # (n, M, k), orthonormal
    return ((flat @ bases).pow(2).sum(dim=(1, 2)) / energy).float()  # (n,): ‖F Bᵀ‖² / ‖F‖² per subspace


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


def grey_energy_share(tiles: torch.Tensor) -> float:
    """How colourless a whole set's variation is: ``(n, C, P, P)`` -> the share of its centred energy in the
    channel mean.

    The tiles (filters, or image patches) are centred over the set, and the energy of their channel-mean part is
    divided by their total energy. Unlike the mean of :func:`grey_share` over a few components, which counts a
    component holding 3% of the variance as much as one holding 50%, every direction counts here by its variance.
    """
    check_ndim("tiles", tiles, 4, "(n, C, P, P)")
    t = tiles.detach().to(torch.float64)
    t = t - t.mean(dim=0, keepdim=True)
    energy = t.pow(2).sum().item()
    if energy == 0:
        raise ValueError(f"the {len(t)} tiles are all equal: after centring they have no energy to share out")
    return t.mean(dim=1).pow(2).sum().item() * t.shape[1] / energy
