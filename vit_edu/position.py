"""Position embeddings: the fixed 2-D sin-cos table, and resampling a learned table to a new patch grid."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from vit_edu._checks import check_ndim, check_positive_int, pair


def _sincos_1d(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """(L,) positions -> (L, dim): dim/2 sines then dim/2 cosines at geometric frequencies."""
    freqs = 1.0 / 10000 ** (torch.arange(dim // 2, dtype=torch.float64) / (dim // 2))  # (dim/2,)
    angles = positions.double()[:, None] * freqs[None, :]  # (L, dim/2)
    return torch.cat([angles.sin(), angles.cos()], dim=1)


def sincos_2d(grid_size: int | tuple[int, int], dim: int) -> torch.Tensor:
    """Fixed 2-D sin-cos position table ``(gh·gw, dim)``, row-major like the patch tokens.

    The first half of the features encodes the patch's row, the second half its column (MAE's code uses the
    opposite order, column first).
    """
    grid_h, grid_w = pair(grid_size, "grid size")
    check_positive_int("dim", dim)
    if dim % 4:
        raise ValueError(f"a 2-D sin-cos table needs dim divisible by 4, got {dim}")
    rows = torch.arange(grid_h).repeat_interleave(grid_w)  # (N,) 0,0,..,1,1,..
    cols = torch.arange(grid_w).repeat(grid_h)  # (N,) 0,1,..,0,1,..
    table = torch.cat([_sincos_1d(rows, dim // 2), _sincos_1d(cols, dim // 2)], dim=1)  # (N, dim)
    return table.float()


def interpolate_pos_embed(
    pos_embed: torch.Tensor,
    new_grid: int | tuple[int, int],
    *,
    old_grid: int | tuple[int, int] | None = None,
    num_prefix_tokens: int = 1,
    mode: str = "bicubic",
    align_corners: bool | None = None,
) -> torch.Tensor:
    """Resample ``(1, prefix+N, D)`` position embeddings to a new patch grid; prefix (CLS) rows untouched.

    The grid part is reshaped to an image ``(1, D, gh, gw)`` and resized. The defaults (bicubic, and
    ``align_corners=True`` for the modes that take it) reproduce torchvision's ``interpolate_embeddings``; an unchanged grid is returned
    as an exact copy. ``old_grid`` defaults to a square grid and must be given for a non-square one.
    """
    check_ndim("pos_embed", pos_embed, 3, "(1, prefix+N, D)")
    if pos_embed.shape[0] != 1:
        raise ValueError(f"pos_embed must have batch size 1, got shape {tuple(pos_embed.shape)}")
    if isinstance(num_prefix_tokens, bool) or not isinstance(num_prefix_tokens, int) or num_prefix_tokens < 0:
        raise ValueError(f"num_prefix_tokens must be a non-negative integer, got {num_prefix_tokens!r}")
    _, length, dim = pos_embed.shape
    num_patches = length - num_prefix_tokens
    if old_grid is None:
        side = math.isqrt(max(num_patches, 0))
        if num_patches <= 0 or side * side != num_patches:
            raise ValueError(
                f"pos_embed has {length} rows = {num_prefix_tokens} prefix + {num_patches} patches, "
                f"which is not a square grid; pass old_grid=(gh, gw)"
            )
        old_grid = (side, side)
    old_h, old_w = pair(old_grid, "old_grid")
    if old_h * old_w != num_patches:
        raise ValueError(
            f"old_grid {old_h}×{old_w} = {old_h * old_w} patches, but pos_embed has {length} rows = "
            f"{num_prefix_tokens} prefix + {num_patches} patches"
        )
    new_h, new_w = pair(new_grid, "new_grid")
    if (new_h, new_w) == (old_h, old_w):
        return pos_embed.clone()
    prefix, grid = pos_embed[:, :num_prefix_tokens], pos_embed[:, num_prefix_tokens:]  # (1, p, D), (1, N, D)
    image = grid.transpose(1, 2).reshape(1, dim, old_h, old_w)  # (1, D, gh, gw)
    if align_corners is None and mode in ("linear", "bilinear", "bicubic", "trilinear"):
        align_corners = True
    image = F.interpolate(image, size=(new_h, new_w), mode=mode, align_corners=align_corners)
    grid = image.reshape(1, dim, new_h * new_w).transpose(1, 2)  # (1, N', D)
    return torch.cat([prefix, grid], dim=1)
