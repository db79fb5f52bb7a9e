"""Relative position bias: one learned score per head for each offset between two patches, added before the softmax.

Instead of adding a position vector to every token (chapter 11's tables), each attention layer keeps a table with
one entry per head for every offset (Δrow, Δcol) a pair of patches on a gh×gw grid can have, (2gh − 1)(2gw − 1)
of them, as Swin does within a window. With prefix tokens (CLS), three more entries per head, as in BEiT: prefix
to patch, patch to prefix and prefix to prefix; a prefix token has no place on the grid.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from vit_edu._checks import check_ndim, pair


def relative_position_index(grid: int | tuple[int, int], num_prefix: int = 1) -> torch.Tensor:
    """``(S, S)`` indices into the bias table, with ``S = num_prefix + gh·gw``.

    Patch i at (ri, ci) and patch j at (rj, cj) get entry ``(ri − rj + gh − 1)·(2gw − 1) + (ci − cj + gw − 1)``:
    every pair with the same offset shares one entry. With prefix tokens, the last three entries are prefix → patch,
    patch → prefix and prefix → prefix.
    """
    gh, gw = pair(grid, "grid")
    if num_prefix < 0:
        raise ValueError(f"num_prefix must be >= 0, got {num_prefix}")
    rows, cols = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")
    rows, cols = rows.flatten(), cols.flatten()  # (N,) each, row-major like the patch order
    d_row = rows[:, None] - rows[None, :] + gh - 1  # (N, N) in [0, 2gh − 2]
    d_col = cols[:, None] - cols[None, :] + gw - 1  # (N, N) in [0, 2gw − 2]
    patches = d_row * (2 * gw - 1) + d_col  # (N, N)
    if num_prefix == 0:
        return patches
    offsets = (2 * gh - 1) * (2 * gw - 1)
    s = num_prefix + gh * gw
    index = torch.full((s, s), offsets + 2, dtype=torch.long)  # prefix → prefix
    index[:num_prefix, num_prefix:] = offsets  # prefix → patch
    index[num_prefix:, :num_prefix] = offsets + 1  # patch → prefix
    index[num_prefix:, num_prefix:] = patches
    return index


def table_size(grid: int | tuple[int, int], num_prefix: int = 1) -> int:
    """Entries per head: every offset on the grid, plus three for the prefix tokens if there are any."""
    gh, gw = pair(grid, "grid")
    return (2 * gh - 1) * (2 * gw - 1) + (3 if num_prefix else 0)


class RelativePositionBias(nn.Module):
    """A learned ``(entries, heads)`` table read out as the ``(heads, S, S)`` bias that one attention layer adds to its
    scores. Initialised N(0, 0.02²) cut at ±2σ, as Swin does."""

    def __init__(self, grid: int | tuple[int, int], num_heads: int, num_prefix: int = 1) -> None:
        super().__init__()
        self.grid = pair(grid, "grid")
        self.num_prefix = num_prefix
        self.table = nn.Parameter(torch.empty(table_size(self.grid, num_prefix), num_heads))
        nn.init.trunc_normal_(self.table, std=0.02, a=-0.04, b=0.04)
        self.register_buffer("index", relative_position_index(self.grid, num_prefix), persistent=False)

    def forward(self) -> torch.Tensor:
        """The bias, ``(h, S, S)``: entry [head, i, j] is the table's row for the offset from token j to token i."""
        return self.table[self.index].permute(2, 0, 1)  # (S, S, h) -> (h, S, S)

    def extra_repr(self) -> str:
        return f"grid={self.grid}, entries={self.table.shape[0]}, heads={self.table.shape[1]}"


def resize_bias_table(table: torch.Tensor, old_grid: int | tuple[int, int], new_grid: int | tuple[int, int],
                      num_prefix: int = 1) -> torch.Tensor:
    """A bias table for another grid: the offsets resampled bicubically (Swin's recipe), prefix entries kept.

    A 4×4 grid has offsets −3 … +3 in each direction; a 6×6 grid needs −5 … +5, which a trained table never saw.
    Interpolating stretches the learned offsets over the wider range, as chapter 12 does for absolute tables.
    """
    check_ndim("table", table, 2, "(entries, heads)")
    (oh, ow), (nh, nw) = pair(old_grid, "old_grid"), pair(new_grid, "new_grid")
    if table.shape[0] != table_size((oh, ow), num_prefix):
        raise ValueError(f"table has {table.shape[0]} entries, but a {oh}×{ow} grid with {num_prefix} prefix tokens "
                         f"needs {table_size((oh, ow), num_prefix)}")
    offsets = (2 * oh - 1) * (2 * ow - 1)
    grid = table[:offsets].T.reshape(1, -1, 2 * oh - 1, 2 * ow - 1)  # (1, h, 2oh − 1, 2ow − 1)
    grid = F.interpolate(grid, size=(2 * nh - 1, 2 * nw - 1), mode="bicubic", align_corners=False)
    resized = grid.reshape(table.shape[1], -1).T  # (new offsets, h)
    return torch.cat([resized, table[offsets:]]) if num_prefix else resized
