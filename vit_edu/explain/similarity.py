"""Do attention weights follow how alike two patches look? (chapter 5)

A layer's attention weights come from dot products of *learned* queries and keys. If attention were raw
look-alikeness, a patch would weigh the others by how similar their pixels are to its own. This module puts the
two side by side for one query patch: its attention row over the other patches, and the cosine similarity of its
pixels to theirs, compared by rank (Spearman's ρ, ties averaged), image by image.

Three rows are compared with the pixel similarity:

- ``"learned"``: the model's own layer-1 attention, per head;
- ``"identity, tokens"``: layer 1 with W_Q = W_K = I, that is softmax(zᵢ·zⱼ/√D) of the tokens the layer receives
  (after the learned patch embedding, position embedding and LayerNorm), no learned matching;
- ``"identity, pixels"``: softmax(pᵢ·pⱼ/√(C·P·P)) of the standardised pixel patches themselves: raw
  similarity as attention, the reference a learned row would match if it only followed look-alikeness.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from scipy.stats import rankdata

from vit_edu._checks import check_ndim
from vit_edu.model import VisionTransformer
from vit_edu.patches import patchify


def spearman_rows(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Spearman's ρ between ``a`` and ``b`` along the last axis: ``(..., N)`` and ``(..., N)`` -> ``(...)``.

    Ranks 1..N with tied values sharing the average of their places, then the Pearson correlation of the ranks.
    A row whose values are all equal has no order to compare: its ρ is NaN.
    """
    if a.shape != b.shape or a.ndim < 1 or a.shape[-1] < 2:
        raise ValueError(f"a and b need the same shape (..., N) with N ≥ 2, got {tuple(a.shape)} and "
                         f"{tuple(b.shape)}")
    ra = torch.from_numpy(rankdata(a.detach().double().numpy(), axis=-1))  # (..., N)
    rb = torch.from_numpy(rankdata(b.detach().double().numpy(), axis=-1))
    ra, rb = ra - ra.mean(-1, keepdim=True), rb - rb.mean(-1, keepdim=True)
    return ((ra * rb).sum(-1) / (ra.norm(dim=-1) * rb.norm(dim=-1))).float()  # 0/0 -> NaN for a constant row


def central_patches(grid: tuple[int, int]) -> list[int]:
    """Row-major indices of the patches at the centre of a ``(rows, columns)`` grid: 4 for a 4×4 grid, 1 for 3×3."""
    rows, cols = grid
    if rows < 1 or cols < 1:
        raise ValueError(f"grid must have at least one row and column, got {grid}")
    mid = lambda n: [n // 2 - 1, n // 2] if n % 2 == 0 else [n // 2]  # noqa: E731
    return [r * cols + c for r in mid(rows) for c in mid(cols)]


def _others(x: torch.Tensor, queries: Sequence[int], n: int) -> torch.Tensor:
    """``(..., Q, N)`` rows over all N patches -> ``(..., Q, N - 1)``, each query's own patch left out."""
    keep = torch.stack([torch.tensor([j for j in range(n) if j != q]) for q in queries])  # (Q, N - 1)
    return x.gather(-1, keep.expand(*x.shape[:-2], *keep.shape))


@torch.no_grad()
def attention_vs_pixel_similarity(model: VisionTransformer, images: torch.Tensor,
                                  queries: Sequence[int] | None = None) -> dict[str, torch.Tensor]:
    """Spearman ρ between each query patch's layer-1 attention row and its pixel similarity to the other patches.

    ``images`` ``(B, C, H, W)`` in the model's input range; ``queries``: patch indices (row-major, 0-based; default
    the central patches). Keys are the other N − 1 patches: the CLS column and the query's own patch are left out
    of both rows, since a patch is trivially most similar to itself. Pixels are compared after the model's own
    input standardisation (``config.input_norm``), as the patch embedding receives them.

    Returns ``{"learned": (B, Q, h), "identity, tokens": (B, Q), "identity, pixels": (B, Q)}``.
    """
    check_ndim("images", images, 4, "(B, C, H, W)")
    cfg = model.config
    if tuple(images.shape[1:]) != (cfg.in_channels, *cfg.image_size):
        raise ValueError(f"images must be (B, {cfg.in_channels}, {cfg.image_size[0]}, {cfg.image_size[1]}) for "
                         f"this model, got {tuple(images.shape)}")
    grid = (cfg.image_size[0] // cfg.patch_size, cfg.image_size[1] // cfg.patch_size)
    n = grid[0] * grid[1]
    queries = central_patches(grid) if queries is None else list(queries)
    bad = [q for q in queries if isinstance(q, bool) or not isinstance(q, int) or not 0 <= q < n]
    if not queries or bad:
        raise ValueError(f"queries must be patch indices in [0, {n}), got {queries!r}")
    prefix = 1 if model.cls_token is not None else 0  # the CLS column, left out
    model.eval()

    pixels = images if cfg.input_norm is None else (images - cfg.input_norm[0]) / cfg.input_norm[1]
    patches = patchify(pixels, cfg.patch_size)  # (B, N, C·P·P)
    unit = patches / patches.norm(dim=-1, keepdim=True)
    cosine = _others((unit[:, queries] @ unit.transpose(1, 2)), queries, n)  # (B, Q, N - 1)

    raw = (patches[:, queries] @ patches.transpose(1, 2) / patches.shape[-1] ** 0.5).softmax(-1)  # (B, Q, N)
    x = model.embed(images)  # (B, S, D): what block 1 receives
    z = model.blocks[0].norm1(x)[:, prefix:]  # (B, N, D): patch tokens after block 1's LayerNorm
    tokens = (z[:, queries] @ z.transpose(1, 2) / z.shape[-1] ** 0.5).softmax(-1)  # (B, Q, N)
    _, attentions = model(images, return_attention=True)
    learned = _others(attentions[0][:, :, [prefix + q for q in queries], prefix:], queries, n)  # (B, h, Q, N - 1)
    return {
        "learned": spearman_rows(learned, cosine[:, None].expand_as(learned)).transpose(1, 2),  # (B, Q, h)
        "identity, tokens": spearman_rows(_others(tokens, queries, n), cosine),  # (B, Q)
        "identity, pixels": spearman_rows(_others(raw, queries, n), cosine),  # (B, Q)
    }
