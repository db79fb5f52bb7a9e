"""Swin's window attention on a ``(B, H, W, C)`` grid of tokens: windows, the shifted windows' mask, patch merging.

Global self-attention compares every token with every other one: N² scores for N tokens. Swin (Liu et al.,
2021) lets each token attend only inside its non-overlapping M×M window, N·M² scores, and alternates regular
and shifted windows so that information crosses the window borders from one block to the next. Between
stages, patch merging joins 2×2 neighbouring tokens, which halves the grid and doubles the width.

The attention inside a window is :class:`vit_edu.MultiHeadSelfAttention`'s, with its weights: only which
tokens may see which changes. Left out, and said so in chapter 14: Swin's relative position bias, padding of a
grid that the window does not divide (this module refuses it), and the full model (stages, depths, classifier).
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

from vit_edu._checks import check_ndim, check_positive_int
from vit_edu.attention import MultiHeadSelfAttention, attention_weights
from vit_edu.block import MLP

GRID = "(B, H, W, C)"
REGIONS = 9  # a shifted grid splits into 3 × 3 regions (see region_labels)


def check_window(height: int, width: int, window_size: int, shift: int = 0) -> tuple[int, int]:
    """The window grid ``(H/M, W/M)``; raises if M does not divide the token grid or the shift is not in [0, M)."""
    check_positive_int("window size", window_size)
    for side, size in (("height", height), ("width", width)):
        if size % window_size:
            raise ValueError(
                f"token grid {side} {size} is not divisible by window size {window_size} "
                f"({size} = {size // window_size}×{window_size} + {size % window_size}); "
                f"choose a window that divides {height}×{width}, or pad the grid"
            )
    if isinstance(shift, bool) or not isinstance(shift, int) or not 0 <= shift < window_size:
        raise ValueError(f"shift must be a whole number with 0 <= shift < window size {window_size}, got {shift!r}")
    return height // window_size, width // window_size


def window_partition(x: torch.Tensor, window_size: int) -> torch.Tensor:
    """``(B, H, W, C)`` -> ``(B·nW, M·M, C)``: each M×M window becomes one short sequence, windows row by row."""
    check_ndim("x", x, 4, GRID)
    check_window(x.shape[1], x.shape[2], window_size)
    # Window (i, j) holds the tokens of rows i·M … i·M+M-1 and columns j·M … j·M+M-1, in raster order.
    return rearrange(x, "b (nh m1) (nw m2) c -> (b nh nw) (m1 m2) c", m1=window_size, m2=window_size)


def window_reverse(windows: torch.Tensor, window_size: int, height: int, width: int) -> torch.Tensor:
    """``(B·nW, M·M, C)`` -> ``(B, H, W, C)``: the inverse of :func:`window_partition`."""
    check_ndim("windows", windows, 3, "(B·nW, M·M, C)")
    nh, nw = check_window(height, width, window_size)
    if windows.shape[1] != window_size**2 or windows.shape[0] % (nh * nw):
        raise ValueError(
            f"windows of shape {tuple(windows.shape)} do not tile a {height}×{width} grid with window size "
            f"{window_size}: need {window_size ** 2} tokens per window and a multiple of {nh * nw} windows"
        )
    return rearrange(windows, "(b nh nw) (m1 m2) c -> b (nh m1) (nw m2) c", nh=nh, nw=nw, m1=window_size)


def cyclic_shift(x: torch.Tensor, shift: int, *, undo: bool = False) -> torch.Tensor:
    """Roll a ``(B, H, W, C)`` grid up and left by ``shift`` tokens (``undo=True``: down and right), wrapping around."""
    check_ndim("x", x, 4, GRID)
    if isinstance(shift, bool) or not isinstance(shift, int) or shift < 0:
        raise ValueError(f"shift must be a whole number >= 0, got {shift!r}")
    return torch.roll(x, shifts=(shift, shift) if undo else (-shift, -shift), dims=(1, 2))


def region_labels(height: int, width: int, window_size: int, shift: int) -> torch.Tensor:
    """``(H, W)`` labels 0…8 of the rolled grid: tokens with different labels were not neighbours before the roll.

    Along each axis the rolled grid has three spans: ``[0, H-M)`` (never wrapped), ``[H-M, H-s)`` and ``[H-s, H)``
    (the s rows that wrapped around from the top). Label = 3·(row span) + (column span), as in the Swin paper's code.
    With ``shift == 0`` nothing wrapped and every label is 0.
    """
    check_window(height, width, window_size, shift)
    labels = torch.zeros(height, width, dtype=torch.long)
    if shift == 0:
        return labels
    spans = (slice(0, -window_size), slice(-window_size, -shift), slice(-shift, None))
    for i, rows in enumerate(spans):
        for j, cols in enumerate(spans):
            labels[rows, cols] = 3 * i + j
    return labels


def shifted_window_mask(height: int, width: int, window_size: int, shift: int) -> torch.Tensor:
    """``(nW, M², M²)`` booleans, True where query and key of a window of the rolled grid share a region label."""
    labels = region_labels(height, width, window_size, shift)  # (H, W)
    per_window = window_partition(labels[None, :, :, None], window_size)[..., 0]  # (nW, M²)
    return per_window[:, :, None] == per_window[:, None, :]  # (nW, M², M²)


def window_groups(height: int, width: int, window_size: int, shift: int = 0) -> torch.Tensor:
    """``(H, W)`` group ids on the ORIGINAL grid: two tokens attend to each other exactly when their ids are equal.

    A group is a (window of the rolled grid, region label) pair, moved back to where its tokens came from.
    """
    nh, nw = check_window(height, width, window_size, shift)
    window_id = (torch.arange(height) // window_size)[:, None] * nw + (torch.arange(width) // window_size)[None, :]
    rolled = window_id * REGIONS + region_labels(height, width, window_size, shift)  # (H, W), rolled frame
    return cyclic_shift(rolled[None, :, :, None], shift, undo=True)[0, :, :, 0]  # (H, W), original frame


def global_window_mask(height: int, width: int, window_size: int, shift: int = 0) -> torch.Tensor:
    """``(N, N)`` booleans over the grid's N = H·W tokens in raster order: may query i attend to key j?

    Global attention with this mask computes exactly what (shifted) window attention computes.
    """
    groups = window_groups(height, width, window_size, shift).flatten()  # (N,)
    return groups[:, None] == groups[None, :]  # (N, N)


def masked_self_attention(
    attn: MultiHeadSelfAttention, x: torch.Tensor, mask: torch.Tensor | None = None, *, need_weights: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``attn``'s self-attention on ``(B, S, D)`` where key j is visible to query i only if ``mask[..., i, j]``.

    ``mask``: None (every key visible: the same as ``attn(x)``), ``(S, S)`` or ``(G, S, S)`` booleans with B a
    multiple of G (mask g applies to sequences g, G+g, 2G+g, …: the windows of each image, in order). The Q, K,
    V and output projections are ``attn``'s own. Returns the output ``(B, S, D)`` and, if asked, the weights.
    """
    check_ndim("x", x, 3, "(B, S, D)")
    b, s, d = x.shape
    h, hd = attn.num_heads, attn.head_dim
    if d != h * hd:
        raise ValueError(f"token width {d} does not match the attention width {h * hd}")
    if mask is not None:
        if mask.dtype != torch.bool or mask.shape[-2:] != (s, s) or mask.ndim not in (2, 3) or (
                mask.ndim == 3 and b % mask.shape[0]):
            raise ValueError(
                f"mask must be booleans of shape ({s}, {s}) or (G, {s}, {s}) with {b} divisible by G, "
                f"got {mask.dtype} of shape {tuple(mask.shape)}")
        if not bool(mask.any(dim=-1).all()):
            raise ValueError("every query must see at least one key: a mask row is all False")
    qkv = attn.qkv(x).reshape(b, s, 3, h, hd)  # (B, S, 3, h, d)
    q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each (B, h, S, d), as in MultiHeadSelfAttention
    if mask is not None and mask.ndim == 3:
        # (G, S, S) -> (B, 1, S, S): sequence i gets mask i mod G, the same for every head. Kept 4-D, so that
        # scaled_dot_product_attention can use its fused kernel (with 5-D inputs it falls back to the math path).
        mask = mask.repeat(b // mask.shape[0], 1, 1)[:, None]
    if need_weights:
        if mask is None:
            weights = attention_weights(q, k)  # (B, h, S, S)
        else:
            scores = q @ k.transpose(-2, -1) / hd**0.5  # (B, h, S, S)
            weights = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        out = weights @ v  # (B, h, S, d)
    else:
        weights = None
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, h, S, d)
    out = out.transpose(1, 2).reshape(b, s, d)  # (B, S, h·d): heads side by side again
    return attn.proj(out), weights


class WindowAttention(nn.Module):
    """Multi-head self-attention inside the M×M windows of a ``(B, H, W, C)`` grid; with ``shift``, shifted windows.

    Shifted: roll the grid up-left by ``shift``, attend inside the windows of the rolled grid with
    :func:`shifted_window_mask` (so tokens that were not neighbours before the roll ignore each other), roll back.
    """

    def __init__(self, dim: int, num_heads: int, window_size: int, shift: int = 0, *, qkv_bias: bool = True) -> None:
        super().__init__()
        check_window(window_size, window_size, window_size, shift)  # window size > 0, 0 <= shift < window size
        self.window_size, self.shift = window_size, shift
        self.attn = MultiHeadSelfAttention(dim, num_heads, qkv_bias=qkv_bias)

    def forward(self, x: torch.Tensor, *, need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(B, H, W, C)`` -> ``((B, H, W, C), weights (B·nW, h, M², M²) or None)``."""
        check_ndim("x", x, 4, GRID)
        _, height, width, _ = x.shape
        m, s = self.window_size, self.shift
        check_window(height, width, m, s)
        if s:
            x = cyclic_shift(x, s)  # (B, H, W, C), rolled
        windows = window_partition(x, m)  # (B·nW, M², C)
        mask = shifted_window_mask(height, width, m, s) if s else None  # (nW, M², M²)
        out, weights = masked_self_attention(self.attn, windows, mask, need_weights=need_weights)  # (B·nW, M², C)
        out = window_reverse(out, m, height, width)  # (B, H, W, C)
        return (cyclic_shift(out, s, undo=True) if s else out), weights


@dataclasses.dataclass(frozen=True)
class SwinBlockConfig:
    """One Swin block: token width, heads, window size M, shift (0 or, in every second block, M // 2), MLP ratio."""

    dim: int = 96
    num_heads: int = 3
    window_size: int = 7
    shift: int = 0
    mlp_ratio: int = 4

    def __post_init__(self) -> None:
        check_positive_int("dim", self.dim)
        check_positive_int("num_heads", self.num_heads)
        check_positive_int("mlp_ratio", self.mlp_ratio)
        if self.dim % self.num_heads:
            raise ValueError(f"dim {self.dim} is not divisible by num_heads {self.num_heads}")
        check_window(self.window_size, self.window_size, self.window_size, self.shift)


class SwinBlock(nn.Module):
    """Pre-LN block on a ``(B, H, W, C)`` grid: x + WindowAttention(LN(x)), then x + MLP(LN(x)), as in ViT."""

    def __init__(self, config: SwinBlockConfig) -> None:
        super().__init__()
        self.config = config
        self.norm1 = nn.LayerNorm(config.dim)  # eps 1e-5, as Swin's code
        self.attn = WindowAttention(config.dim, config.num_heads, config.window_size, config.shift)
        self.norm2 = nn.LayerNorm(config.dim)
        self.mlp = MLP(config.dim, config.mlp_ratio * config.dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, H, W, C)`` -> ``(B, H, W, C)``."""
        x = x + self.attn(self.norm1(x))[0]
        return x + self.mlp(self.norm2(x))


def merge_neighbours(x: torch.Tensor) -> torch.Tensor:
    """``(B, H, W, C)`` -> ``(B, H/2, W/2, 4C)``: each 2×2 group's tokens side by side, in Swin's order.

    The order is top-left, bottom-left, top-right, bottom-right (``x[0::2, 0::2]``, ``x[1::2, 0::2]``,
    ``x[0::2, 1::2]``, ``x[1::2, 1::2]``), as in the Swin paper's code and torchvision.
    """
    check_ndim("x", x, 4, GRID)
    _, height, width, _ = x.shape
    if height % 2 or width % 2:
        raise ValueError(f"patch merging needs an even token grid, got {height}×{width}")
    corners = (x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2])  # each (B, H/2, W/2, C)
    return torch.cat(corners, dim=-1)  # (B, H/2, W/2, 4C)


class PatchMerging(nn.Module):
    """``(B, H, W, C)`` -> ``(B, H/2, W/2, 2C)``: merge 2×2 neighbours (4C), LayerNorm, ``Linear(4C, 2C)``, no bias."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        check_positive_int("dim", dim)
        self.dim = dim
        self.norm = nn.LayerNorm(4 * dim)
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, H, W, C)`` -> ``(B, H/2, W/2, 2C)``; H and W must be even."""
        check_ndim("x", x, 4, GRID)
        if x.shape[-1] != self.dim:
            raise ValueError(f"token width {x.shape[-1]} does not match PatchMerging's dim {self.dim}")
        return self.reduction(self.norm(merge_neighbours(x)))  # (B, H/2, W/2, 2C)


def receptive_field(
    height: int, width: int, window_size: int, layers: int, row: int, col: int, *, shifted: bool = True
) -> torch.Tensor:
    """``(layers, H, W)`` booleans: entry l marks the input tokens the output of token (row, col) depends on
    after l + 1 window-attention layers (layer 1 regular windows; with ``shifted``, layers 2, 4, … shifted by M//2).

    Through a layer, a token's output depends on the tokens it may attend to (:func:`global_window_mask`), itself
    included; through several, on the tokens those depend on in the layer below.
    """
    check_positive_int("layers", layers)
    check_window(height, width, window_size)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (row, col)) or not (
            0 <= row < height and 0 <= col < width):
        raise ValueError(f"token (row {row}, column {col}) is outside the {height}×{width} grid")
    masks = [global_window_mask(height, width, window_size, window_size // 2 if shifted and k % 2 else 0)
             for k in range(layers)]  # (N, N) each; k = 0 is layer 1
    fields = []
    for depth in range(1, layers + 1):
        reach = torch.zeros(height * width, dtype=torch.bool)
        reach[row * width + col] = True
        for mask in reversed(masks[:depth]):  # from the last layer down to the first
            reach = (reach.float() @ mask.float()) > 0  # (N,): every token a reached token attends to
        fields.append(reach.reshape(height, width))
    return torch.stack(fields)  # (layers, H, W)
